//! What lowering (`crate::lower`) decides from the shape of the IR, decided the same way here,
//! and the values of operations the oracle does not resolve.
use super::*;

/// `$c0.x` (an inlined comprehension's local) reads as `x`.
pub(super) fn shown_name(x: &str) -> &str {
    match x.strip_prefix("$c").and_then(|r| r.split_once('.')) {
        Some((k, name)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => x,
    }
}

pub(super) fn const_aval(c: Option<&bz::Const>) -> AVal {
    match c {
        Some(bz::Const::Tuple(items)) => AVal::Tuple(items.iter().map(|i| const_aval(Some(i))).collect()),
        Some(bz::Const::Opaque { .. } | bz::Const::Nested { .. } | bz::Const::Globals) | None => AVal::any(),
        Some(_) => AVal::Atom,
    }
}

/// The value of an operation whose result the oracle did not resolve.
pub(super) fn op_result(op: &Intrinsic, args: &[Val]) -> AVal {
    let arg = |i: usize| args.get(i).map_or(AVal::any(), |v| v.av.clone());
    match op {
        Intrinsic::BuildTuple => AVal::Tuple(args.iter().map(|v| v.av.clone()).collect()),
        Intrinsic::ListToTuple | Intrinsic::IterSnapshot | Intrinsic::IterPrivate => AVal::Items(Box::new(arg(0).element())),
        Intrinsic::GetItem => match arg(0) {
            AVal::Tuple(items) => match args.get(1).and_then(|v| v.int) {
                Some(i) => {
                    let n = items.len() as i64;
                    let i = if i < 0 { i + n } else { i };
                    items.get(i as usize).cloned().unwrap_or_else(AVal::any)
                }
                None => AVal::Tuple(items).element(),
            },
            AVal::Items(e) => *e,
            AVal::Atom | AVal::Obj(..) | AVal::Foreign(_) => AVal::Atom,
            _ => AVal::any(),
        },
        Intrinsic::UnpackSequence(n) => match arg(0) {
            AVal::Tuple(items) if items.len() == *n as usize => AVal::Tuple(items),
            other => AVal::Tuple(vec![other.element(); *n as usize]),
        },
        Intrinsic::UnpackEx { before, after } => {
            let e = arg(0).element();
            let mut items = vec![e.clone(); *before as usize];
            items.push(AVal::Foreign(Ctype::List));
            items.extend(vec![e; *after as usize]);
            AVal::Tuple(items)
        }
        Intrinsic::GetAttr(name) => AVal::Method(Box::new(arg(0)), name.clone()),
        Intrinsic::MakeFunction | Intrinsic::StarCall | Intrinsic::MakeGenexpr | Intrinsic::MakeCell | Intrinsic::CellGet { .. } => AVal::any(),
        _ => AVal::Atom,
    }
}

