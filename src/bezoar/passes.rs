//! Analyses over Bezoar used by lowering (PopPy §7).
//!
//! - `promotable`: which mutable variables can be promoted to SSA values instead of living in the
//!   memory M. A variable qualifies when it is only accessed by this function's own code. Every
//!   Bezoar local does: a Python local that an inner function captures is not a Bezoar local but
//!   a real cell object (held in the local `$cell.x`, read and written by intrinsics), and the
//!   locals of inlined comprehensions are renamed locals of the function. The set is still
//!   computed so that M-threading can be forced (for differential testing of lowering).
//! - `assigned`: the variables a block may store (the values an `ite`/`fold` must thread out).
//! - `DefinedSet`: forward "definitely assigned" analysis, so that a load that may hit an unbound
//!   local raises UnboundLocalError exactly where CPython would.
use super::ir::*;
use std::collections::BTreeSet;

/// Call `f` on every statement of `b`, nested blocks included (pre-order).
pub fn visit(b: &[Stmt], f: &mut impl FnMut(&StmtKind)) {
    for s in b {
        f(&s.kind);
        match &s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                visit(then_body, f);
                visit(else_body, f);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => visit(body, f),
            _ => {}
        }
    }
}

/// Names of mutable variables stored or loaded anywhere in `f` (parameters included).
pub fn variables(f: &Function) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = f.params.iter().cloned().collect();
    visit(&f.body, &mut |k| {
        if let StmtKind::Let(_, Expr::Load(x)) | StmtKind::Store(x, _) | StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
    });
    out
}

/// Variables that lowering keeps as SSA values (all of them unless `force_memory`).
pub fn promotable(f: &Function, force_memory: bool) -> BTreeSet<String> {
    if force_memory {
        BTreeSet::new()
    } else {
        variables(f)
    }
}

/// Variables a block may store (or delete), in a deterministic order.
pub fn assigned(b: &[Stmt]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    visit(b, &mut |k| {
        if let StmtKind::Store(x, _) | StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
    });
    out
}

/// The set of variables definitely assigned at a program point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DefinedSet(pub BTreeSet<String>);

impl DefinedSet {
    pub fn contains(&self, x: &str) -> bool {
        self.0.contains(x)
    }
    pub fn insert(&mut self, x: &str) {
        self.0.insert(x.to_string());
    }
    pub fn remove(&mut self, x: &str) {
        self.0.remove(x);
    }
    /// After an `if`: assigned on both paths.
    pub fn meet(&self, other: &DefinedSet) -> DefinedSet {
        DefinedSet(self.0.intersection(&other.0).cloned().collect())
    }
}

/// Variables a block may delete (`del x`).
pub fn deleted(b: &[Stmt]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    visit(b, &mut |k| {
        if let StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
    });
    out
}

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
            StmtKind::Store(_, r) | StmtKind::Return(r) => mark(r),
            StmtKind::If { cond, .. } => mark(cond),
            StmtKind::For { iter, .. } => mark(iter),
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
            match &mut s.kind {
                StmtKind::If { then_body, else_body, .. } => {
                    sweep(then_body, used);
                    sweep(else_body, used);
                }
                StmtKind::For { body, .. } | StmtKind::Loop { body } => sweep(body, used),
                _ => {}
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
    fn assigned_sees_nested_blocks() {
        let b = vec![
            st(StmtKind::Store("a".into(), 0)),
            st(StmtKind::If {
                cond: 0,
                then_body: vec![st(StmtKind::Store("b".into(), 0))],
                else_body: vec![st(StmtKind::For {
                    iter: 0,
                    item: 1,
                    body: vec![st(StmtKind::Store("c".into(), 1))],
                })],
            }),
        ];
        let got: Vec<_> = assigned(&b).into_iter().collect();
        assert_eq!(got, vec!["a", "b", "c"]);
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
        };
        remove_dead_pure_lets(&mut f);
        assert_eq!(f.body.len(), 4);
        assert!(matches!(f.body[0].kind, StmtKind::Let(1, _)));
    }

    #[test]
    fn defined_meet_is_intersection() {
        let mut a = DefinedSet::default();
        a.insert("x");
        a.insert("y");
        let mut b = DefinedSet::default();
        b.insert("y");
        assert!(a.meet(&b).contains("y"));
        assert!(!a.meet(&b).contains("x"));
    }
}
