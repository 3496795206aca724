//! Fresh display operands (a list/set/dict built for one operation and used nowhere else).
use super::{use_counts, visit};
use crate::bezoar::ir::*;
use std::collections::BTreeSet;

/// Operands of intrinsic operations that are *fresh displays*: a list/set/dict built right there
/// (`x in [a, b]`, `cache |= {state}`, `[a] + xs`) whose register has no other use. Nothing else
/// can refer to such an object while the operation runs, so its mutability cannot order the
/// operation: only its items can. Returns, per operation's result register, the bit mask of its
/// fresh operand positions (positions ≥ 32 are ignored).
pub fn fresh_operands(f: &Function) -> std::collections::HashMap<Reg, u32> {
    let uses = use_counts(f);
    let mut displays: BTreeSet<Reg> = BTreeSet::new();
    let mut ops: Vec<(Reg, Vec<Reg>)> = Vec::new();
    visit(&f.body, &mut |k| {
        if let StmtKind::Let(r, Expr::Op(op, args)) = k {
            match op {
                Intrinsic::BuildList | Intrinsic::BuildSet | Intrinsic::BuildMap => {
                    displays.insert(*r);
                }
                Intrinsic::Binary { .. } | Intrinsic::Contains { .. } | Intrinsic::Compare(_) | Intrinsic::GetItem => {
                    ops.push((*r, args.clone()))
                }
                _ => {}
            }
        }
    });
    let mut out = std::collections::HashMap::new();
    for (r, args) in ops {
        let mut mask = 0u32;
        for (i, a) in args.iter().enumerate().take(32) {
            if displays.contains(a) && uses.get(a) == Some(&1) {
                mask |= 1 << i;
            }
        }
        if mask != 0 {
            out.insert(r, mask);
        }
    }
    out
}
