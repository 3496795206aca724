//! Internal regions, host side: the lists, dicts and sets a region run made itself and returned
//! (`poppy_jit._regions.Outputs.fresh`) are owned by the run from the region call on, exactly as
//! if the compiled code had built them (per-object ordering, `objects`).
//!
//! Uses `pyobj` only; the region objects themselves are made by `pipeline::factory`.
use super::PyHost;
use crate::pyobj::Obj;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyList, PySet, PyTuple, PyType};

/// `poppy_jit._regions.Region` and `.Outputs`.
fn types(py: Python<'_>) -> Option<&(Py<PyType>, Py<PyType>)> {
    static T: GILOnceCell<(Py<PyType>, Py<PyType>)> = GILOnceCell::new();
    T.get_or_try_init(py, || -> PyResult<_> {
        let m = py.import_bound("poppy_jit._regions")?;
        let region = m.getattr("Region")?.downcast_into::<PyType>()?.unbind();
        let outputs = m.getattr("Outputs")?.downcast_into::<PyType>()?.unbind();
        Ok((region, outputs))
    })
    .ok()
}

/// The keys of the fresh containers among a region call's outputs (None: `result` is not a
/// region's outputs; then the call is judged like any other). The host keeps them alive.
pub(super) fn fresh_outputs<'py>(h: &mut PyHost<'py>, f: &Obj, result: &Obj) -> Option<Vec<u64>> {
    let py = h.py;
    let r = result.bind(py);
    // Only a tuple subclass can be region outputs: every other result costs this one check.
    if !r.is_instance_of::<PyTuple>() || r.is_exact_instance_of::<PyTuple>() {
        return None;
    }
    let (region, outputs) = types(py)?;
    if !r.get_type().is(outputs.bind(py)) || !f.bind(py).get_type().is(region.bind(py)) {
        return None;
    }
    let fresh = r.getattr(pyo3::intern!(py, "fresh")).ok()?;
    let fresh = fresh.downcast_exact::<PyTuple>().ok()?;
    let mut keys = Vec::with_capacity(fresh.len());
    for o in fresh.iter() {
        // `Outputs.fresh` holds exact lists, dicts and sets only; checked again, cheaply.
        if o.is_exact_instance_of::<PyList>() || o.is_exact_instance_of::<PyDict>() || o.is_exact_instance_of::<PySet>() {
            keys.push(o.as_ptr() as u64);
            h.owned.push(o.unbind());
        }
    }
    Some(keys)
}

/// The containers among `args` region `f` may read (`Region.reached`; None if asking fails).
pub(super) fn reached(f: &Bound<'_, PyAny>, args: &[Obj]) -> Option<Vec<Obj>> {
    let py = f.py();
    let t = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
    let r = f.call_method1(pyo3::intern!(py, "reached"), (t,)).ok()?;
    let r = r.downcast_into_exact::<PyTuple>().ok()?;
    Some(r.iter().map(|x| x.unbind()).collect())
}
