//! Before translation: which inner functions are "known" (bound once to a local, so their
//! calls may be inlined) and which locals must live in real cells (captured by an inner function
//! that stays a real function object). Reads code objects only; emits nothing.
use crate::py311::decode::{instructions, Instr};
use crate::py311::opcode::*;
use super::super::state::KnownFunc;
use crate::py311::CodeInfo;
use std::collections::{HashMap, HashSet};

/// Locals of the @poppy function assigned exactly once, straight from `MAKE_FUNCTION` of an
/// inner function or lambda (`def g` / `g = lambda ...`, no decorator), never deleted and not
/// captured by an inner function (comprehensions may read them): their code object by local.
pub(in crate::lift) fn known_functions(ci: &CodeInfo, instrs: &[Instr]) -> HashMap<String, KnownFunc> {
    let owner = std::rc::Rc::new(ci.clone());
    let stores = |n: u32| {
        instrs
            .iter()
            .filter(|i| matches!(i.opcode, STORE_FAST | DELETE_FAST | STORE_DEREF | DELETE_DEREF) && i.arg == n)
            .count()
    };
    let lp = ci.localsplus();
    // Names nested code assigns through a cell (`nonlocal g` / a walrus in a comprehension).
    fn written_by_children(ci: &CodeInfo, out: &mut HashSet<String>) {
        for ch in ci.children.values() {
            let lp = ch.localsplus();
            let first_free = lp.len() - ch.freevars.len();
            for i in instructions(&ch.code, &ch.lines) {
                if matches!(i.opcode, STORE_DEREF | DELETE_DEREF) && i.arg as usize >= first_free {
                    out.extend(lp.get(i.arg as usize).cloned());
                }
            }
            written_by_children(ch, out);
        }
    }
    let mut rebound = HashSet::new();
    written_by_children(ci, &mut rebound);
    let mut out = HashMap::new();
    for w in instrs.windows(3) {
        let (k, mf, st) = (&w[0], &w[1], &w[2]);
        if k.opcode == LOAD_CONST
            && mf.opcode == MAKE_FUNCTION
            && matches!(st.opcode, STORE_FAST | STORE_DEREF)
            && stores(st.arg) == 1
            && ci.children.get(&k.arg).is_some_and(|c| !c.is_comprehension())
        {
            if let Some(name) = lp.get(st.arg as usize).filter(|n| !rebound.contains(*n)) {
                out.insert(name.clone(), (owner.clone(), Vec::new(), k.arg));
            }
        }
    }
    out
}

/// Whether the local `v` is surely bound wherever the function made from `co_consts[code]` can be
/// called: `v` is a parameter or is stored before any jump and before that `MAKE_FUNCTION`, and
/// is never deleted.
pub(in crate::lift) fn bound_before(ci: &CodeInfo, instrs: &[Instr], v: &str, code: u32) -> bool {
    let lp = ci.localsplus();
    let is_v = |i: &Instr| lp.get(i.arg as usize).is_some_and(|n| n == v);
    if instrs.iter().any(|i| matches!(i.opcode, DELETE_FAST | DELETE_DEREF) && is_v(i)) {
        return false;
    }
    if ci.varnames[..ci.nparams()].iter().any(|p| p == v) {
        return true;
    }
    for (n, i) in instrs.iter().enumerate() {
        if matches!(i.opcode, STORE_FAST | STORE_DEREF) && is_v(i) {
            return true;
        }
        let defines = i.opcode == MAKE_FUNCTION && n > 0 && instrs[n - 1].opcode == LOAD_CONST && instrs[n - 1].arg == code;
        if defines || i.jump_target().is_some() || matches!(i.opcode, RETURN_VALUE | FOR_ITER) {
            return false;
        }
    }
    false
}

/// Whether the local `name` of `ci` is captured by an inner function or lambda (directly, or
/// through inlined comprehensions or the `plain` inner functions among `ci`'s constants, which
/// are always inlined): it then needs a real cell.
pub(in crate::lift) fn captured_by_function(ci: &CodeInfo, name: &str, plain: &HashSet<u32>) -> bool {
    ci.children.iter().any(|(k, ch)| {
        ch.freevars.iter().any(|f| f == name)
            && (!(ch.is_comprehension() || plain.contains(k)) || captured_by_function(ch, name, &HashSet::new()))
    })
}

/// Whether a free variable of the function must stay a cell: written here or by inner code
/// (`nonlocal`), or captured by an inner function that is a real function object.
pub(in crate::lift) fn free_needs_cell(ci: &CodeInfo, name: &str, plain: &HashSet<u32>) -> bool {
    fn writes(ci: &CodeInfo, name: &str) -> bool {
        let lp = ci.localsplus();
        instructions(&ci.code, &ci.lines).any(|i| {
            matches!(i.opcode, STORE_DEREF | DELETE_DEREF) && lp.get(i.arg as usize).is_some_and(|n| n == name)
        }) || ci.children.values().any(|ch| ch.freevars.iter().any(|f| f == name) && writes(ch, name))
    }
    writes(ci, name) || captured_by_function(ci, name, plain)
}
