//! Tracing (PYTHONPOPPY_TRACE): a run's external-call records, with Rust instants put on
//! Python's clock, handed to `poppy_jit._trace`.
use super::PyHost;
use crate::pyobj::{Clock, Obj};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

pub(super) fn record_calls<'py>(h: &mut PyHost<'py>, records: Vec<crate::lambda_o::CallRecord<Obj>>) {
    let py = h.py;
    let Some((m, name)) = &h.trace else { return };
    let Ok(clock) = Clock::new(py) else { return };
    let opt = |t: Option<std::time::Instant>| t.map(|t| clock.at(t));
    // The diagnosis of waits (`poppy_jit._why`, on with `run --why`) gets the source line of
    // each call and whether per-object ordering held it, and the run's function.
    let why = py.import_bound("poppy_jit._why").ok().filter(|m| m.getattr("active").and_then(|a| a.is_truthy()).unwrap_or(false));
    if let Some(why) = &why {
        let extra: Vec<PyObject> = records
            .iter()
            .map(|r| {
                let times = (clock.at(r.queued), clock.at(r.ready), opt(r.dispatched), opt(r.done));
                (r.position, r.func.clone_ref(py), r.class.name(), times, r.ok, r.line, r.object_ordered).into_py(py)
            })
            .collect();
        let func = h.frame.as_ref().map(|(f, _)| f.clone_ref(py));
        if let Err(e) = why.call_method1("note_run", (name.as_str(), func, extra)) {
            e.print(py);
        }
    }
    let recs: Vec<PyObject> = records
        .into_iter()
        .map(|r| {
            let args = PyTuple::new_bound(py, r.args.iter().map(|a| a.bind(py)));
            (
                r.position,
                r.func,
                args,
                r.class.name(),
                clock.at(r.queued),
                clock.at(r.ready),
                opt(r.dispatched),
                opt(r.done),
                r.ok,
            )
                .into_py(py)
        })
        .collect();
    let end = clock.at(std::time::Instant::now());
    if let Err(e) = m.call_method1("record_run", (name.as_str(), h.run_start, end, recs)) {
        e.print(py);
    }
}
