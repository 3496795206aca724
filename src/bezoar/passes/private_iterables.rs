//! Loops whose iterated container no code can reach while the loop runs but the function's own
//! reads: their `iter_snapshot` becomes `iter_private` (read at once when the run owns the
//! container, instead of one `next` per iteration).
use crate::bezoar::ir::*;
use std::collections::{HashMap, HashSet};

/// A `for` loop over a builtin container is iterated lazily, one `next` in program order
/// (`iter_snapshot`), because code the body runs may change the container — a helper appending
/// to a worklist it reaches through a global, a callee growing a dict it was given earlier.
/// Reading the items at once is faithful only when nothing can: the container is one the run
/// made and has handed to nobody (decided at run time: the `iter_private` read of it is ordered
/// against its object alone, see `control::objects`), and this pass has shown that the loop's
/// body hands it to nobody either.
///
/// The body hands it to nobody when every value that may be the container — the loop's operand,
/// the registers stored into the local it was read from and into every local a copy of it
/// reaches (`ys = xs`), and every load of those locals — is used inside the body only by another
/// loop over it (`iter_*`), a subscript of it (`xs[i]`), a membership test in it (`k in xs`), a
/// truth test, or a store into one of those locals. Anything else (an argument of any call, a
/// method of it, an attribute, an element of a display, a value returned) may let a callee
/// change it. The locals must be plain ones (a local in a real cell is read by inner functions
/// too), and what is stored into them must be a call's result, a display or a copy of one of
/// them (a global, an attribute or a cell may be reached by others at once; a call's result is
/// checked at run time: the run owns it only if a known builtin made it).
pub fn private_iterables(body: &mut Block) {
    let mut defs: HashMap<Reg, Expr> = HashMap::new();
    let mut stores: HashMap<VarName, Vec<Reg>> = HashMap::new();
    super::visit(body, &mut |k| match k {
        StmtKind::Let(r, e) => {
            defs.insert(*r, e.clone());
        }
        StmtKind::Store(v, r) => stores.entry(v.clone()).or_default().push(*r),
        _ => {}
    });
    let mut private = HashSet::new();
    find(body, &defs, &stores, &mut private);
    if !private.is_empty() {
        rewrite(body, &private);
    }
}

fn find(b: &Block, defs: &HashMap<Reg, Expr>, stores: &HashMap<VarName, Vec<Reg>>, out: &mut HashSet<Reg>) {
    for s in b {
        match &s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                find(then_body, defs, stores, out);
                find(else_body, defs, stores, out);
            }
            StmtKind::Loop { body } => find(body, defs, stores, out),
            StmtKind::Try { .. } => s.kind.blocks().into_iter().for_each(|b| find(b, defs, stores, out)),
            StmtKind::For { iter, body, .. } => {
                if let Some(Expr::Op(Intrinsic::IterSnapshot, x)) = defs.get(iter) {
                    if let Some(holders) = holders(x[0], defs, stores) {
                        if uses_only_read(body, &holders, defs) {
                            out.insert(*iter);
                        }
                    }
                }
                find(body, defs, stores, out);
            }
            _ => {}
        }
    }
}

/// The registers that may hold the container in register `x` (see `private_iterables`), or
/// None when it may come from somewhere others can reach.
fn holders(x: Reg, defs: &HashMap<Reg, Expr>, stores: &HashMap<VarName, Vec<Reg>>) -> Option<HashSet<Reg>> {
    let fresh = |r: Reg| {
        matches!(
            defs.get(&r),
            Some(Expr::Call { .. }) | Some(Expr::Op(Intrinsic::BuildList | Intrinsic::BuildMap | Intrinsic::BuildSet, _))
        )
    };
    let plain = |v: &VarName| matches!(v.kind(), VarKind::Local(_) | VarKind::Inlined { .. });
    let mut regs: HashSet<Reg> = HashSet::from([x]);
    let mut vars: HashSet<VarName> = HashSet::new();
    let mut work: Vec<Reg> = vec![x];
    while let Some(r) = work.pop() {
        match defs.get(&r) {
            Some(Expr::Load(v)) => {
                if !plain(v) {
                    return None;
                }
                if vars.insert(v.clone()) {
                    for &s in stores.get(v).map(|v| v.as_slice()).unwrap_or(&[]) {
                        if regs.insert(s) {
                            work.push(s);
                        }
                    }
                    // every load of it (a copy stored elsewhere joins the set through `uses`)
                    for (&r2, e) in defs {
                        if matches!(e, Expr::Load(v2) if v2 == v) && regs.insert(r2) {
                            work.push(r2);
                        }
                    }
                }
            }
            _ if fresh(r) => {}
            _ => return None,
        }
        if vars.len() > 64 || regs.len() > 4096 {
            return None; // too many to follow: iterate lazily (always faithful)
        }
        // A holder stored into another local: that local holds it too.
        for (v, rs) in stores {
            if rs.contains(&r) && !vars.contains(v) {
                if !plain(v) {
                    return None;
                }
                vars.insert(v.clone());
                for &s in rs {
                    if regs.insert(s) {
                        work.push(s);
                    }
                }
                for (&r2, e) in defs {
                    if matches!(e, Expr::Load(v2) if v2 == v) && regs.insert(r2) {
                        work.push(r2);
                    }
                }
            }
        }
    }
    Some(regs)
}

/// Whether every use of a register of `holders` in `b` (nested blocks included) only reads the
/// container without handing it on.
fn uses_only_read(b: &Block, holders: &HashSet<Reg>, defs: &HashMap<Reg, Expr>) -> bool {
    let h = |r: &Reg| holders.contains(r);
    let _ = defs;
    b.iter().all(|s| match &s.kind {
        StmtKind::Let(_, e) => match e {
            Expr::Const(_) | Expr::Load(_) | Expr::Global(_) => true,
            Expr::Call { func, args, .. } => !h(func) && !args.iter().any(h),
            Expr::Op(op, args) => match op {
                Intrinsic::IterSnapshot | Intrinsic::IterPrivate | Intrinsic::Truth => true,
                Intrinsic::GetItem => !args[1..].iter().any(h),
                Intrinsic::Contains { .. } => !h(&args[0]),
                _ => !args.iter().any(h),
            },
        },
        StmtKind::Store(..) => true, // into a local of the set (holders are closed under stores)
        StmtKind::Delete(_) | StmtKind::Unbind(_) | StmtKind::Break | StmtKind::Continue => true,
        StmtKind::Return(r) | StmtKind::Raise(r) => !h(r),
        StmtKind::If { cond, then_body, else_body } => {
            !h(cond) && uses_only_read(then_body, holders, defs) && uses_only_read(else_body, holders, defs)
        }
        StmtKind::For { iter, item, body } => !h(iter) && !h(item) && uses_only_read(body, holders, defs),
        StmtKind::Loop { body } => uses_only_read(body, holders, defs),
        StmtKind::Try { handlers, .. } => {
            !handlers.iter().any(|hd| hd.test.as_ref().is_some_and(|t| h(&t.1)))
                && s.kind.blocks().into_iter().all(|b| uses_only_read(b, holders, defs))
        }
    })
}

fn rewrite(b: &mut Block, private: &HashSet<Reg>) {
    for s in b.iter_mut() {
        match &mut s.kind {
            StmtKind::Let(r, Expr::Op(op @ Intrinsic::IterSnapshot, _)) if private.contains(r) => *op = Intrinsic::IterPrivate,
            StmtKind::If { then_body, else_body, .. } => {
                rewrite(then_body, private);
                rewrite(else_body, private);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => rewrite(body, private),
            StmtKind::Try { .. } => s.kind.blocks_mut().into_iter().for_each(|b| rewrite(b, private)),
            _ => {}
        }
    }
}
