//! Inlining calls of @poppy functions into the run (their translation from `pipeline`), bounded
//! so that recursion still reaches CPython's recursion limit.
use super::PyHost;
use crate::lambda_o::ProgramRef;
use crate::pyobj::Obj;
use pyo3::prelude::*;

pub(super) fn inline_target<'py>(h: &mut PyHost<'py>, f: &Obj, nargs: usize, kwnames: &[String]) -> Option<ProgramRef<Obj>> {
    if !kwnames.is_empty() {
        return None;
    }
    let py = h.py;
    let program = crate::pipeline::inline_program(py, f.bind(py), nargs)?;
    // Inlining does not use the interpreter's stack, so unbounded recursion would never
    // raise RecursionError. The evaluator does not say how deep an inlined call is, so the
    // count of inlined calls of one function in a run stands for its depth: past
    // sys.getrecursionlimit() for a function that may call itself (through @poppy functions
    // it names: `_prologue.recursive`), further calls go through CPython (a nested plain
    // run), where the limit applies. Other functions (a helper called from a loop) get 100
    // times that, a safety net for recursion the name check cannot see.
    let limit = *h.recursion_limit.get_or_insert_with(|| {
        py.import_bound("sys")
            .and_then(|s| s.call_method0("getrecursionlimit"))
            .and_then(|l| l.extract())
            .unwrap_or(1000)
    });
    match h.inlined.iter_mut().find(|(g, _, _)| g.is(f)) {
        Some((_, n, max)) if *n >= *max => return None,
        Some((_, n, _)) => *n += 1,
        None => {
            let recursive = py
                .import_bound("poppy_jit._prologue")
                .and_then(|m| m.call_method1("recursive", (f.bind(py),)))
                .and_then(|r| r.is_truthy())
                .unwrap_or(true);
            let max = if recursive { limit } else { limit.saturating_mul(100) };
            h.inlined.push((f.clone_ref(py), 1, max));
        }
    }
    Some(program)
}
