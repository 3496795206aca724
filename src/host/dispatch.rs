//! Making one external call: a global load or a decorated external on a Rust fast path (the
//! undecorated function, called through vectorcall), `async def` externals as tasks,
//! `blocking=True` externals and `time.sleep` on the executor, anything else inline. A
//! KeyboardInterrupt or SystemExit from a synchronous call aborts the run.
use super::callee::Callee;
use super::{pool, PyErrRef, PyHost};
use crate::lambda_o::{Dispatch, TaskId};
use crate::pyobj::{GlobalLoader, Obj};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

/// Split λO call arguments into Python positional args and keyword args.
fn call_args<'py>(
    py: Python<'py>,
    args: &[Obj],
    kwnames: &[String],
) -> PyResult<(Bound<'py, PyTuple>, Option<Bound<'py, PyDict>>)> {
    let npos = args.len() - kwnames.len();
    let pos = PyTuple::new_bound(py, args[..npos].iter().map(|a| a.bind(py)));
    if kwnames.is_empty() {
        return Ok((pos, None));
    }
    let kw = PyDict::new_bound(py);
    for (k, v) in kwnames.iter().zip(&args[npos..]) {
        kw.set_item(k, v.bind(py))?;
    }
    Ok((pos, Some(kw)))
}

/// `f(*positional, **keywords)` through the vectorcall protocol: no argument tuple or keyword
/// dict is built (the last `kwnames.len()` of `args` are the keyword values).
fn vcall<'py>(py: Python<'py>, f: &Bound<'py, PyAny>, args: &[Obj], kwnames: &[String]) -> PyResult<Bound<'py, PyAny>> {
    let mut small = [std::ptr::null_mut::<pyo3::ffi::PyObject>(); 8];
    let mut big = Vec::new();
    let ptrs: &[*mut pyo3::ffi::PyObject] = if args.len() <= small.len() {
        for (slot, a) in small.iter_mut().zip(args) {
            *slot = a.as_ptr();
        }
        &small[..args.len()]
    } else {
        big.extend(args.iter().map(|a| a.as_ptr()));
        &big
    };
    let kw = (!kwnames.is_empty()).then(|| PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k))));
    let npos = args.len() - kwnames.len();
    // SAFETY: the argument pointers are borrowed from `args`, alive for the whole call; the
    // kwnames tuple (if any) is alive until the end of this function; the GIL is held (`py`).
    unsafe {
        let r = pyo3::ffi::PyObject_Vectorcall(
            f.as_ptr(),
            ptrs.as_ptr(),
            npos,
            kw.as_ref().map_or(std::ptr::null_mut(), |k| k.as_ptr()),
        );
        Bound::from_owned_ptr_or_err(py, r)
    }
}

pub(super) fn dispatch<'py>(h: &mut PyHost<'py>, task: TaskId, f: &Obj, args: &[Obj], kwnames: &[String]) -> Dispatch<Obj, PyErrRef> {
    if let Some(e) = &h.abort {
        return Dispatch::Done(Err(e.clone()));
    }
    let d = match h.try_dispatch(task, f, args, kwnames) {
        Ok(d) => d,
        Err(e) => Dispatch::Done(Err(PyErrRef::new(e))),
    };
    if let Dispatch::Done(Err(e)) = &d {
        let py = h.py;
        let v = e.0.value_bound(py);
        if v.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>() || v.is_instance_of::<pyo3::exceptions::PySystemExit>() {
            h.abort = Some(e.clone());
        }
    }
    d
}

impl<'py> PyHost<'py> {
    fn try_dispatch(
        &mut self,
        task: TaskId,
        f: &Obj,
        args: &[Obj],
        kwnames: &[String],
    ) -> PyResult<Dispatch<Obj, PyErrRef>> {
        let py = self.py;
        let callee = self.callee(f);
        if let Callee::Loader = &*callee {
            let loader = f.bind(py).downcast::<GlobalLoader>()?.get();
            return Ok(Dispatch::Done(loader.lookup(py, args[0].bind(py)).map_err(PyErrRef::new)));
        }
        if let Callee::External { inner, is_async, blocking, .. } = &*callee {
            // Call the undecorated function directly (the decorator's wrapper would block).
            let inner = inner.bind(py);
            if *is_async {
                let coro = match vcall(py, inner, args, kwnames) {
                    Ok(c) => c,
                    Err(e) => return Ok(Dispatch::Done(Err(PyErrRef::new(e)))),
                };
                let ex = self.executor()?;
                let t = ex.create_task.call1((coro,))?;
                ex.watch(py, task, t)?;
                return Ok(Dispatch::Pending);
            }
            if *blocking {
                // On a runtime-owned worker thread (pool.rs); inline once the pool is closed.
                let (pos, kw) = call_args(py, args, kwnames)?;
                let ex = self.executor()?;
                let call = Bound::new(py, pool::BlockingCall::new())?;
                if pool::submit(py, inner, pos.clone(), kw.clone(), &ex.loop_, &call)? {
                    ex.watch(py, task, call.into_any())?;
                    return Ok(Dispatch::Pending);
                }
            }
            return Ok(Dispatch::Done(vcall(py, inner, args, kwnames).map(|v| v.unbind()).map_err(PyErrRef::new)));
        }
        if let Some(dur) = pool::timer_duration(py, f, args, kwnames) {
            // `time.sleep(x)`: a timer task (pool.rs) instead of stalling this thread; inline once
            // the executor is closed.
            let ex = self.executor()?;
            let call = Bound::new(py, pool::BlockingCall::new())?;
            if pool::start_timer(py, dur, &ex.loop_, &call)? {
                ex.watch(py, task, call.into_any())?;
                return Ok(Dispatch::Pending);
            }
        }
        Ok(Dispatch::Done(vcall(py, f.bind(py), args, kwnames).map(|v| v.unbind()).map_err(PyErrRef::new)))
    }
}
