//! The `poppy_jit._core` module: the Python-facing functions (enable/disable, mark_poppy, stats,
//! explain, and the private helpers of `poppy_jit._traceback` and `_decorators`) and the classes
//! it exports (`Prologue` from `hook`, `GlobalLoader` from `pyobj`, the executor's from
//! `host::pool`). The top of the crate: it uses the rooms below and nothing uses it.
use crate::lambda_o::eval;
use crate::stats as counters;
use crate::{hook, host, pipeline, pyobj};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

#[pyfunction]
fn enable() -> PyResult<()> {
    pipeline::ensure_init()?;
    hook::set_enabled(true);
    Ok(())
}

#[pyfunction]
fn disable() -> PyResult<()> {
    hook::set_enabled(false);
    Ok(())
}

#[pyfunction]
fn is_enabled() -> bool {
    hook::is_enabled()
}

/// Flag a code object as internal (@poppy).
#[pyfunction]
fn mark_poppy(py: Python<'_>, code: &Bound<'_, PyAny>) -> PyResult<()> {
    pipeline::mark_poppy(py, code)
}

/// Record that a @poppy function cannot be run by the runtime (it then runs plainly).
#[pyfunction]
fn _note_fallback(function: String, reason: String) {
    counters::record_fallback(function, reason);
}

/// A frame object standing for a @poppy function's frame stopped at byte offset `lasti` with
/// `args` bound (used by `poppy_jit._traceback` for the traceback entry of a replaced frame).
#[pyfunction]
fn _frame(py: Python<'_>, func: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>, lasti: i32) -> PyResult<PyObject> {
    hook::stand_in_frame(py, func, args, lasti)
}

#[pyfunction]
fn stats(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let t = &counters::totals();
    let d = PyDict::new_bound(py);
    d.set_item("functions_compiled", t.functions_compiled)?;
    d.set_item("compile_ms", t.compile_ns as f64 / 1e6)?;
    let fb = PyList::empty_bound(py);
    for (f, r) in &t.fallbacks {
        let e = PyDict::new_bound(py);
        e.set_item("function", f)?;
        e.set_item("reason", r)?;
        fb.append(e)?;
    }
    d.set_item("fallbacks", fb)?;
    let ct = PyList::empty_bound(py);
    for (f, ns, ok) in &t.compile_times {
        let e = PyDict::new_bound(py);
        e.set_item("function", f)?;
        e.set_item("ms", *ns as f64 / 1e6)?;
        e.set_item("compiled", *ok)?;
        ct.append(e)?;
    }
    d.set_item("compile_times", ct)?;
    d.set_item("runs", t.runs)?;
    // Wall time of runs (including waiting for externals).
    // CPU time of the calling thread during runs (evaluator, controllers, sync externals).
    d.set_item("runtime_ms", t.runtime_cpu_ns as f64 / 1e6)?;
    d.set_item("runtime_wall_ms", t.runtime_ns as f64 / 1e6)?;
    d.set_item("reductions", t.run.reductions)?;
    d.set_item("inlined_calls", t.run.inlined_calls)?;
    let ext = PyDict::new_bound(py);
    for class in pyobj::contract::CLASSES {
        ext.set_item(class.name(), t.run.dispatched_of(class))?;
    }
    d.set_item("external_calls", ext)?;
    d.set_item("peak_in_flight", t.run.peak_in_flight)?;
    d.set_item("queue_wait_ms", t.run.queue_wait_ns as f64 / 1e6)?;
    // Memory of the evaluator: most λO variables alive at once in a run, and the fixed
    // bytes of one variable / statement / controller (reclaimed variables are reused).
    d.set_item("peak_slots", t.run.peak_slots)?;
    let (slot, work, ctrl) = eval::layout::<host::PyHost>();
    let mem = PyDict::new_bound(py);
    mem.set_item("slot_bytes", slot)?;
    mem.set_item("statement_bytes", work)?;
    mem.set_item("controller_bytes", ctrl)?;
    d.set_item("runtime_layout", mem)?;
    d.set_item("term_resolutions", t.run.term_resolutions)?;
    d.set_item("cancelled_calls", t.run.cancelled_calls)?;
    d.set_item("speculative_calls", t.run.speculative_calls)?;
    d.set_item("object_local_calls", t.run.object_local_calls)?;
    d.set_item("object_escapes", t.run.object_escapes)?;
    d.set_item("fold_parks", t.run.fold_parks)?;
    d.set_item("nested_plain_runs", t.declined_nested)?;
    // Blocking externals and timers on the runtime's executor (docs/observability.md).
    let w = counters::worker_totals();
    d.set_item("blocking_calls", w.jobs)?;
    d.set_item("gil_wait_ms", w.gil_wait_ns as f64 / 1e6)?;
    d.set_item("blocking_handoff_ms", w.handoff_ns as f64 / 1e6)?;
    d.set_item("timer_tasks", w.timers)?;
    // The Cranelift tier does not exist yet: nothing is compiled to machine code.
    let jit = PyDict::new_bound(py);
    jit.set_item("tier", "none")?;
    jit.set_item("functions", 0u64)?;
    jit.set_item("ms", 0.0f64)?;
    d.set_item("jit", jit)?;
    Ok(d.unbind())
}

#[pyfunction]
fn reset_stats() {
    counters::reset();
}

/// Bezoar and λO text of a function, or why it falls back.
#[pyfunction]
fn explain(py: Python<'_>, func: &Bound<'_, PyAny>) -> PyResult<Py<PyDict>> {
    let d = PyDict::new_bound(py);
    match pipeline::compile_function(py, func) {
        Ok(c) => {
            d.set_item("bezoar", &c.bezoar)?;
            d.set_item("lambda_o", pipeline::program_text(py, &c.program))?;
            d.set_item("regions", c.regions.clone())?;
            d.set_item("fallback", py.None())?;
        }
        Err(reason) => {
            d.set_item("bezoar", py.None())?;
            d.set_item("lambda_o", py.None())?;
            d.set_item("regions", pyo3::types::PyList::empty_bound(py))?;
            d.set_item("fallback", reason)?;
        }
    }
    Ok(d.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    pyobj::contract::init(m.py())?;
    m.add_class::<pyobj::GlobalLoader>()?;
    host::pool::register(m)?;
    host::handling::register(m)?;
    m.add_function(wrap_pyfunction!(enable, m)?)?;
    m.add_function(wrap_pyfunction!(disable, m)?)?;
    m.add_function(wrap_pyfunction!(is_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(mark_poppy, m)?)?;
    m.add_function(wrap_pyfunction!(stats, m)?)?;
    m.add_function(wrap_pyfunction!(reset_stats, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(_frame, m)?)?;
    m.add_function(wrap_pyfunction!(_note_fallback, m)?)?;
    m.add_class::<hook::Prologue>()?;
    m.add_class::<hook::AsyncRun>()?;
    m.add_class::<hook::Waker>()?;
    Ok(())
}
