//! Loops over containers that code the loop body calls may change: their `iter_snapshot`
//! becomes `iter_live` (a builtin container is then iterated lazily, one `next` in program
//! order, instead of read at once).
use crate::bezoar::ir::*;
use std::collections::{HashMap, HashSet};

/// A `for` loop reads a builtin container at once (`iter_snapshot`), which is what CPython does
/// only while nothing changes it during the loop. The loop's own body changing it is
/// `loop_iterable_changed` (a fallback); this is the other way: a call in the body (a helper, a
/// `@sequential` external, an inlined `@poppy` callee) changing a container it can reach
/// without being given it — one the function reached through a global (`for x in WORK`,
/// `for k in REG.items()`, `for x in CFG["jobs"]`) or an attribute (`for t in self.queue`),
/// directly or through a local it was stored in, traced through
/// `enumerate`/`zip`/`reversed`/`iter` and `.items()/.keys()/.values()`. Such a loop's
/// `iter_snapshot` becomes `iter_live`: a builtin container is iterated lazily (a worklist a
/// helper appends to is processed to the end; a dict a helper grows raises CPython's
/// "dictionary changed size during iteration").
///
/// Containers reached otherwise (parameters, call results, displays) are still read at once.
pub fn live_iterables(body: &mut Block) {
    let mut defs: HashMap<Reg, Expr> = HashMap::new();
    let mut stores: HashMap<VarName, Vec<Reg>> = HashMap::new();
    super::visit(body, &mut |k| match k {
        StmtKind::Let(r, e) => {
            defs.insert(*r, e.clone());
        }
        StmtKind::Store(v, r) => stores.entry(v.clone()).or_default().push(*r),
        _ => {}
    });
    let live: HashSet<Reg> = defs
        .iter()
        .filter_map(|(r, e)| match e {
            Expr::Op(Intrinsic::IterSnapshot, x) if shared(x[0], &defs, &stores, &mut HashSet::new(), 0) => Some(*r),
            _ => None,
        })
        .collect();
    if !live.is_empty() {
        rewrite(body, &live);
    }
}

const PASS_THROUGH: [&str; 4] = ["enumerate", "zip", "reversed", "iter"];
const VIEWS: [&str; 3] = ["items", "keys", "values"];

/// Whether register `r` holds a container reached through a global or an attribute.
fn shared(r: Reg, defs: &HashMap<Reg, Expr>, stores: &HashMap<VarName, Vec<Reg>>, seen: &mut HashSet<VarName>, depth: u32) -> bool {
    if depth > 32 {
        return true; // too deep to follow: assume the worst (a lazy loop is always faithful)
    }
    match defs.get(&r) {
        Some(Expr::Global(_)) | Some(Expr::Op(Intrinsic::GetAttr(_), _)) | Some(Expr::Op(Intrinsic::LoadGlobal(_), _)) => true,
        Some(Expr::Op(Intrinsic::GetItem, args)) => shared(args[0], defs, stores, seen, depth + 1),
        Some(Expr::Load(v)) => {
            if !seen.insert(v.clone()) {
                return false;
            }
            stores.get(v).is_some_and(|rs| rs.iter().any(|&s| shared(s, defs, stores, seen, depth + 1)))
        }
        Some(Expr::Call { func, args, kwnames }) if kwnames.is_empty() => match defs.get(func) {
            Some(Expr::Global(g)) if PASS_THROUGH.contains(&g.as_str()) => {
                args.iter().any(|&a| shared(a, defs, stores, seen, depth + 1))
            }
            Some(Expr::Op(Intrinsic::GetAttr(m), obj)) if VIEWS.contains(&m.as_str()) && args.is_empty() => {
                shared(obj[0], defs, stores, seen, depth + 1)
            }
            _ => false,
        },
        _ => false,
    }
}

fn rewrite(b: &mut Block, live: &HashSet<Reg>) {
    for s in b.iter_mut() {
        match &mut s.kind {
            StmtKind::Let(r, Expr::Op(op @ Intrinsic::IterSnapshot, _)) if live.contains(r) => *op = Intrinsic::IterLive,
            StmtKind::If { then_body, else_body, .. } => {
                rewrite(then_body, live);
                rewrite(else_body, live);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => rewrite(body, live),
            _ => {}
        }
    }
}
