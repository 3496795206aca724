//! Comprehensions (and generator expressions, inlined inner functions' loops) reading an
//! enclosing local that may be unbound there: CPython raises NameError for such a free
//! variable, an inlined loop would raise UnboundLocalError, so the function falls back.
use super::always_leaves;
use super::defined::DefinedSet;
use crate::bezoar::ir::*;

/// The first load, inside an inlined comprehension's loop, of an enclosing function's local
/// (a free variable of the comprehension's code) that is not definitely assigned there: its
/// name and line. CPython raises `NameError: cannot access free variable 'x' where it is not
/// associated with a value in enclosing scope` for it; inlined, the load would raise
/// UnboundLocalError, so the caller falls back. A comprehension's loop is a `for` whose body
/// stores an inlined variable (`$cK.x`); the function's own loops store its locals.
///
/// Definite assignment as lowering tracks it: parameters; stores; `del` unbinds; after an `if`
/// what both branches assign (a branch that always leaves counts as assigning everything); a
/// loop may run zero times, so what it assigns is not definitely assigned after it.
pub fn unbound_free_read(f: &Function) -> Option<(String, u32)> {
    let mut defined = DefinedSet::default();
    for p in &f.params {
        defined.insert(p);
    }
    walk(&f.body, &mut defined, false)
}

fn is_comprehension_loop(body: &[Stmt]) -> bool {
    body.iter().any(|s| matches!(&s.kind, StmtKind::Store(v, _) if matches!(v.kind(), VarKind::Inlined { .. })))
}

fn walk(b: &[Stmt], defined: &mut DefinedSet, in_comp: bool) -> Option<(String, u32)> {
    for s in b {
        match &s.kind {
            StmtKind::Let(_, Expr::Load(v)) => {
                if in_comp && matches!(v.kind(), VarKind::Local(_)) && !defined.contains(v) {
                    return Some((v.as_str().to_string(), s.line));
                }
            }
            StmtKind::Store(v, _) => defined.insert(v),
            StmtKind::Delete(v) | StmtKind::Unbind(v) => defined.remove(v),
            StmtKind::If { then_body, else_body, .. } => {
                let mut t = defined.clone();
                let mut e = defined.clone();
                if let Some(found) = walk(then_body, &mut t, in_comp) {
                    return Some(found);
                }
                if let Some(found) = walk(else_body, &mut e, in_comp) {
                    return Some(found);
                }
                *defined = match (always_leaves(then_body), always_leaves(else_body)) {
                    (true, true) => t.meet(&e),
                    (true, false) => e,
                    (false, true) => t,
                    (false, false) => t.meet(&e),
                };
            }
            StmtKind::For { body, .. } => {
                let mut inner = defined.clone();
                if let Some(found) = walk(body, &mut inner, in_comp || is_comprehension_loop(body)) {
                    return Some(found);
                }
            }
            StmtKind::Loop { body } => {
                let mut inner = defined.clone();
                if let Some(found) = walk(body, &mut inner, in_comp) {
                    return Some(found);
                }
            }
            StmtKind::Try { body, handlers, orelse } => {
                // A handler starts at any raising point of the body: what is defined there is
                // what was before the try less what the body may delete.
                let mut at_raise = defined.clone();
                for x in super::deleted(body) {
                    at_raise.remove(&x);
                }
                let mut normal = defined.clone();
                if let Some(found) = walk(body, &mut normal, in_comp) {
                    return Some(found);
                }
                if let Some(found) = walk(orelse, &mut normal, in_comp) {
                    return Some(found);
                }
                let mut after = normal;
                for h in handlers {
                    let mut d = at_raise.clone();
                    if let Some((test, _)) = &h.test {
                        if let Some(found) = walk(test, &mut d, in_comp) {
                            return Some(found);
                        }
                    }
                    if let Some(x) = &h.name {
                        d.insert(x);
                    }
                    if let Some(found) = walk(&h.body, &mut d, in_comp) {
                        return Some(found);
                    }
                    if let Some(x) = &h.name {
                        d.remove(x);
                    }
                    after = after.meet(&d);
                }
                *defined = after;
            }
            _ => {}
        }
    }
    None
}
