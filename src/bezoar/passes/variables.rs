//! Which mutable variables a function or block mentions, stores and deletes, and which of them
//! lowering keeps as SSA values (`promotable`: every Bezoar local is accessed only by the
//! function's own code — a Python local captured by an inner function is a real cell held in
//! `$cell.x`, and inlined code's locals are renamed locals — so all are, unless M-threading is
//! forced for differential testing of lowering). `assigned` gives the values an `ite`/`fold` must
//! thread out.
use super::visit;
use crate::bezoar::ir::*;
use std::collections::BTreeSet;

/// Names of mutable variables stored or loaded anywhere in `f` (parameters included).
pub fn variables(f: &Function) -> BTreeSet<VarName> {
    let mut out: BTreeSet<VarName> = f.params.iter().cloned().collect();
    visit(&f.body, &mut |k| {
        if let StmtKind::Let(_, Expr::Load(x)) | StmtKind::Store(x, _) | StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
        out.extend(handler_names(k).cloned());
    });
    out
}

/// The `as` names of a `try`'s handlers (each assigned, then deleted, by its handler).
fn handler_names(k: &StmtKind) -> impl Iterator<Item = &VarName> {
    let handlers: &[Handler] = match k {
        StmtKind::Try { handlers, .. } => handlers,
        _ => &[],
    };
    handlers.iter().filter_map(|h| h.name.as_ref())
}

/// Variables that lowering keeps as SSA values (all of them unless `force_memory`).
pub fn promotable(f: &Function, force_memory: bool) -> BTreeSet<VarName> {
    if force_memory {
        BTreeSet::new()
    } else {
        variables(f)
    }
}

/// Variables a block may store (or delete), in a deterministic order.
pub fn assigned(b: &[Stmt]) -> BTreeSet<VarName> {
    let mut out = BTreeSet::new();
    visit(b, &mut |k| {
        if let StmtKind::Store(x, _) | StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
        out.extend(handler_names(k).cloned());
    });
    out
}

/// Variables a block may delete (`del x`).
pub fn deleted(b: &[Stmt]) -> BTreeSet<VarName> {
    let mut out = BTreeSet::new();
    visit(b, &mut |k| {
        if let StmtKind::Delete(x) | StmtKind::Unbind(x) = k {
            out.insert(x.clone());
        }
        out.extend(handler_names(k).cloned());
    });
    out
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
}
