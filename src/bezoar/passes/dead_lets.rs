//! Dead pure `let`s: constants whose register nothing uses.
use super::visit;
use crate::bezoar::ir::*;

/// Remove `Let`s of pure expressions (constants, loads of promoted variables) whose register is
/// never used. External operations are never removed: they are observable.
pub fn remove_dead_pure_lets(f: &mut Function) {
    let mut used = vec![false; f.nregs as usize];
    visit(&f.body, &mut |k| {
        let mut mark = |r: &Reg| used[*r as usize] = true;
        match k {
            StmtKind::Let(_, Expr::Call { func, args, .. }) => {
                mark(func);
                args.iter().for_each(mark);
            }
            StmtKind::Let(_, Expr::Op(_, args)) => args.iter().for_each(mark),
            StmtKind::Store(_, r) | StmtKind::Return(r) | StmtKind::Raise(r) => mark(r),
            StmtKind::If { cond, .. } => mark(cond),
            StmtKind::For { iter, .. } => mark(iter),
            StmtKind::Try { handlers, .. } => handlers.iter().filter_map(|h| h.test.as_ref()).for_each(|t| mark(&t.1)),
            _ => {}
        }
    });
    fn sweep(b: &mut Block, used: &[bool]) {
        b.retain(|s| match &s.kind {
            // A load may raise UnboundLocalError, but only when its value is used by something
            // observable; an unused load of a definitely-unbound local is kept for that reason.
            StmtKind::Let(r, Expr::Const(_)) => used[*r as usize],
            _ => true,
        });
        for s in b.iter_mut() {
            for inner in s.kind.blocks_mut() {
                sweep(inner, used);
            }
        }
    }
    sweep(&mut f.body, &used);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(kind: StmtKind) -> Stmt {
        Stmt { kind, line: 0 }
    }

    #[test]
    fn dead_constants_are_removed_but_externals_kept() {
        let mut f = Function {
            name: "f".into(),
            qualname: "f".into(),
            filename: "t.py".into(),
            firstlineno: 1,
            params: vec![],
            consts: vec![Const::Int(1)],
            body: vec![
                st(StmtKind::Let(0, Expr::Const(0))),
                st(StmtKind::Let(1, Expr::Global("print".into()))),
                st(StmtKind::Let(2, Expr::Call { func: 1, args: vec![], kwnames: vec![] })),
                st(StmtKind::Let(3, Expr::Const(0))),
                st(StmtKind::Return(3)),
            ],
            nregs: 4,
            free_unbound: vec![],
        };
        remove_dead_pure_lets(&mut f);
        assert_eq!(f.body.len(), 4);
        assert!(matches!(f.body[0].kind, StmtKind::Let(1, _)));
    }
}
