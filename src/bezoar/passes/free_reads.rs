//! Comprehensions (and generator expressions) inlined as loops, reading an enclosing local that
//! may be unbound there. CPython raises NameError ("cannot access free variable") where the
//! comprehension has a code object of its own (every one on 3.11; generator expressions always)
//! and UnboundLocalError where it runs in the function's frame (list, set and dict
//! comprehensions from 3.12 on, PEP 709). The inlined load raises the error of the local's
//! unbound value, so a local read both ways where it may be unbound falls back; one read only as
//! a free variable there gets NameError as its unbound error (`Function::free_unbound`).
use super::always_leaves;
use super::defined::DefinedSet;
use crate::bezoar::ir::*;
use std::collections::BTreeMap;

/// How a load reads a local that may be unbound.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Read {
    /// As the function's own local (UnboundLocalError): outside comprehensions, or in one that
    /// CPython runs in the function's frame; also `del x`.
    Local,
    /// As a free variable of a comprehension's own code object (NameError).
    Free,
    /// In a loop of inlined code that is not a known comprehension: no rule, the caller falls back.
    Unknown,
}

/// The locals a comprehension reads, where they may be unbound, as free variables and that are
/// read nowhere else where they may be unbound: their unbound error must be NameError. `Err`:
/// a local read both ways (or in inlined code of unknown kind) — its name and the line of the
/// first such read; the caller falls back. `comp_free(k)`: for the inlined code numbered `k`
/// (its locals are `$cK.x`), whether it is a comprehension reading enclosing locals as free
/// variables (Some(true)), in its function's frame (Some(false)), or not a comprehension (None).
///
/// Definite assignment as lowering tracks it: parameters; stores; `del` unbinds; after an `if`
/// what both branches assign (a branch that always leaves counts as assigning everything); a
/// loop may run zero times, so what it assigns is not definitely assigned after it.
pub fn free_unbound(f: &Function, comp_free: &dyn Fn(u32) -> Option<bool>) -> Result<Vec<VarName>, (String, u32)> {
    let mut defined = DefinedSet::default();
    for p in &f.params {
        defined.insert(p);
    }
    let mut reads = Vec::new();
    walk(&f.body, &mut defined, Read::Local, comp_free, &mut reads);
    let mut kinds: BTreeMap<&VarName, (Read, bool)> = BTreeMap::new(); // (first kind, mixed)
    for (v, _, r) in &reads {
        let e = kinds.entry(v).or_insert((*r, false));
        if e.0 != *r {
            e.1 = true;
        }
    }
    // The first read, other than as the function's own local, of a local read both ways.
    if let Some((v, line, _)) = reads.iter().find(|(v, _, r)| {
        let (first, mixed) = kinds[v];
        *r != Read::Local && (mixed || first == Read::Unknown)
    }) {
        return Err((v.as_str().to_string(), *line));
    }
    Ok(kinds.into_iter().filter(|(_, (r, _))| *r == Read::Free).map(|(v, _)| v.clone()).collect())
}

/// The kind of a loop whose body stores inlined code's locals, from the number of that code.
fn comprehension_loop(body: &[Stmt], comp_free: &dyn Fn(u32) -> Option<bool>) -> Option<Read> {
    body.iter().find_map(|s| match &s.kind {
        StmtKind::Store(v, _) => match v.kind() {
            VarKind::Inlined { ctx, .. } => Some(match comp_free(*ctx) {
                Some(true) => Read::Free,
                Some(false) => Read::Local,
                None => Read::Unknown,
            }),
            _ => None,
        },
        _ => None,
    })
}

/// A comprehension inside another reads an enclosing local as a free variable if either
/// level does (3.12 inlines a list comprehension into a generator expression's code object).
fn nest(outer: Read, inner: Option<Read>) -> Read {
    match (outer, inner) {
        (o, None) => o,
        (Read::Unknown, _) | (_, Some(Read::Unknown)) => Read::Unknown,
        (Read::Free, _) | (_, Some(Read::Free)) => Read::Free,
        _ => Read::Local,
    }
}

type Reads = Vec<(VarName, u32, Read)>;

fn walk(b: &[Stmt], defined: &mut DefinedSet, ctx: Read, cf: &dyn Fn(u32) -> Option<bool>, out: &mut Reads) {
    for s in b {
        match &s.kind {
            StmtKind::Let(_, Expr::Load(v)) => {
                if matches!(v.kind(), VarKind::Local(_)) && !defined.contains(v) {
                    out.push((v.clone(), s.line, ctx));
                }
            }
            StmtKind::Store(v, _) => defined.insert(v),
            StmtKind::Delete(v) => {
                if matches!(v.kind(), VarKind::Local(_)) && !defined.contains(v) {
                    out.push((v.clone(), s.line, Read::Local));
                }
                defined.remove(v)
            }
            StmtKind::Unbind(v) => defined.remove(v),
            StmtKind::If { then_body, else_body, .. } => {
                let mut t = defined.clone();
                let mut e = defined.clone();
                walk(then_body, &mut t, ctx, cf, out);
                walk(else_body, &mut e, ctx, cf, out);
                *defined = match (always_leaves(then_body), always_leaves(else_body)) {
                    (true, true) => t.meet(&e),
                    (true, false) => e,
                    (false, true) => t,
                    (false, false) => t.meet(&e),
                };
            }
            StmtKind::For { body, .. } => {
                let mut inner = defined.clone();
                walk(body, &mut inner, nest(ctx, comprehension_loop(body, cf)), cf, out);
            }
            StmtKind::Loop { body } => {
                let mut inner = defined.clone();
                walk(body, &mut inner, ctx, cf, out);
            }
            StmtKind::Try { body, handlers, orelse, .. } => {
                // A handler starts at any raising point of the body: what is defined there is
                // what was before the try less what the body may delete.
                let mut at_raise = defined.clone();
                for x in super::deleted(body) {
                    at_raise.remove(&x);
                }
                let mut normal = defined.clone();
                walk(body, &mut normal, ctx, cf, out);
                walk(orelse, &mut normal, ctx, cf, out);
                let mut after = normal;
                for h in handlers {
                    let mut d = at_raise.clone();
                    if let Some((test, _)) = &h.test {
                        walk(test, &mut d, ctx, cf, out);
                    }
                    if let Some(x) = &h.name {
                        d.insert(x);
                    }
                    walk(&h.body, &mut d, ctx, cf, out);
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
}
