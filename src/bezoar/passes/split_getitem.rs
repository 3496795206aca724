//! Fusing `s.split(...)[k]` into one operation (`split_getitem`).
use super::use_counts;
use crate::bezoar::ir::*;

/// Fuses `m := getattr.split(x); l := m(consts...); r := getitem(l, k)` — the list used for
/// nothing but the subscript — into `r := split_getitem.split(x, consts..., k)`, for the methods
/// split, rsplit and splitlines. The same getattr, call and subscript happen in the same order
/// (the arguments are constants, so nothing runs between them); as one operation on a str, the
/// intermediate list, which nothing else can see, does not order it as a read of a mutable
/// object (`line.split(": ", 1)[1]` no longer waits for every earlier sequential call).
pub fn fuse_split_getitem(f: &mut Function) {
    use std::collections::HashMap;
    let uses = use_counts(f);
    fn block(b: &mut Vec<Stmt>, uses: &HashMap<Reg, u32>) {
        for s in b.iter_mut() {
            for inner in s.kind.blocks_mut() {
                block(inner, uses);
            }
        }
        let mut defs: HashMap<Reg, usize> = HashMap::new();
        for (i, s) in b.iter().enumerate() {
            if let StmtKind::Let(r, _) = &s.kind {
                defs.insert(*r, i);
            }
        }
        let is_const = |b: &Vec<Stmt>, r: &Reg| {
            defs.get(r).is_some_and(|&i| matches!(b[i].kind, StmtKind::Let(_, Expr::Const(_))))
        };
        let mut remove: Vec<usize> = Vec::new();
        for i in 0..b.len() {
            let StmtKind::Let(_, Expr::Op(Intrinsic::GetItem, args)) = &b[i].kind else { continue };
            let (l, k) = (args[0], args[1]);
            let Some(&li) = defs.get(&l) else { continue };
            let StmtKind::Let(_, Expr::Call { func: m, args: cargs, kwnames }) = &b[li].kind else { continue };
            if !kwnames.is_empty() || uses.get(&l) != Some(&1) || !cargs.iter().all(|a| is_const(b, a)) {
                continue;
            }
            let Some(&mi) = defs.get(m) else { continue };
            let StmtKind::Let(_, Expr::Op(Intrinsic::GetAttr(name), recv)) = &b[mi].kind else { continue };
            if !matches!(name.as_str(), "split" | "rsplit" | "splitlines") || uses.get(m) != Some(&1) {
                continue;
            }
            let k_ok = is_const(b, &k)
                || defs.get(&k).is_some_and(|&ki| matches!(b[ki].kind, StmtKind::Let(_, Expr::Load(_))));
            if !k_ok || mi > li || li > i {
                continue;
            }
            let mut operands = vec![recv[0]];
            operands.extend(cargs.iter().copied());
            operands.push(k);
            let op = Intrinsic::SplitGetItem(name.clone());
            let StmtKind::Let(dst, _) = b[i].kind.clone() else { unreachable!() };
            b[i].kind = StmtKind::Let(dst, Expr::Op(op, operands));
            remove.push(li);
            remove.push(mi);
        }
        remove.sort_unstable();
        for i in remove.into_iter().rev() {
            b.remove(i);
        }
    }
    block(&mut f.body, &uses);
}
