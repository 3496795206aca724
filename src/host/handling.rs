//! The exception an `except` handler is handling, for the calls the handler makes, and the
//! re-raise of an exception no handler matched.
//!
//! While a handler runs, CPython's thread state holds the caught exception as the *handled*
//! exception: `sys.exc_info()`, `logging.exception`, a bare `raise` in a helper and the
//! `__context__` of every exception raised meanwhile come from it. A compiled handler's calls
//! run on the evaluator thread (synchronous externals), on a blocking thread (`pool.rs`) or as
//! tasks on an event loop (async externals), so the host sets the handled exception around each
//! of them (`PyErr_SetHandledException`, new in 3.11) and restores the previous one after:
//! `with_handled` for a call made here or on a blocking thread, `Handling` for a coroutine (each
//! step the event loop makes runs with it set).
//!
//! `reraise` fails with an exception object as it is: no Python `raise` statement (which would
//! add an entry to its traceback and set its `__context__` from whatever is handled at that
//! point), the error restored from the object with the traceback it carries.
use crate::pyobj::Obj;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

extern "C" {
    // CPython 3.11+ (not in pyo3-ffi 0.22). Get returns a new reference (NULL for none); Set
    // takes a borrowed one (None or NULL clears).
    fn PyErr_GetHandledException() -> *mut pyo3::ffi::PyObject;
    fn PyErr_SetHandledException(exc: *mut pyo3::ffi::PyObject);
}

/// The thread's handled exception (None when there is none).
pub fn handled(py: Python<'_>) -> Option<Obj> {
    // SAFETY: the GIL is held (`py`); the result is a new reference or NULL.
    unsafe { Bound::from_owned_ptr_or_opt(py, PyErr_GetHandledException()).map(|b| b.unbind()) }
        .filter(|e| !e.is_none(py))
}

fn set_handled(py: Python<'_>, exc: Option<&Obj>) {
    let _ = py;
    // SAFETY: the GIL is held; the object (if any) is alive for the call, which takes its own
    // reference.
    unsafe { PyErr_SetHandledException(exc.map_or(std::ptr::null_mut(), |e| e.as_ptr())) }
}

/// The exception of a handler's `handling` value: a `poppy_jit._rt.Caught` (what a catching
/// call's failure became) or the exception itself.
fn exception_of(py: Python<'_>, v: &Obj) -> Obj {
    let b = v.bind(py);
    let caught = crate::pyobj::rt_module(py).and_then(|m| m.getattr("Caught")).ok();
    match caught {
        Some(c) if b.get_type().is(&c) => b.getattr("exception").map(|e| e.unbind()).unwrap_or_else(|_| v.clone_ref(py)),
        _ => v.clone_ref(py),
    }
}

/// Run `f` with `exc` (an exception or the `Caught` holding it) as the thread's handled
/// exception, then put back the one there was (`f` runs Python code; a `None` `exc` leaves the
/// thread state alone).
pub fn with_handled<R>(py: Python<'_>, exc: Option<&Obj>, f: impl FnOnce() -> R) -> R {
    let Some(exc) = exc else { return f() };
    let exc = &exception_of(py, exc);
    let before = handled(py);
    set_handled(py, Some(exc));
    let r = f();
    set_handled(py, before.as_ref());
    r
}

/// `_core._reraise(exc)`: fails with `exc` itself (see the module comment).
#[pyfunction]
fn _reraise(exc: Bound<'_, PyAny>) -> PyResult<()> {
    Err(PyErr::from_value_bound(exc))
}

/// `_core._handled()`: the thread's handled exception as the C API sees it (for tests).
#[pyfunction]
fn _handled(py: Python<'_>) -> Option<Obj> {
    handled(py)
}

/// `_core._with_handled(exc, f, *args)`: `f(*args)` with `exc` handled (for tests; the host
/// calls `with_handled` directly).
#[pyfunction]
#[pyo3(signature = (exc, f, *args))]
fn _with_handled(py: Python<'_>, exc: Obj, f: Bound<'_, PyAny>, args: Bound<'_, PyTuple>) -> PyResult<Obj> {
    with_handled(py, Some(&exc), || f.call1(args).map(|v| v.unbind()))
}

/// A coroutine stepped with an exception handled: each `send`/`throw`/`close` of the event
/// loop's task runs the wrapped coroutine with `exc` as the thread's handled exception.
#[pyclass(module = "poppy_jit._core")]
pub struct Handling {
    coro: Obj,
    exc: Obj,
}

impl Handling {
    pub fn wrap(py: Python<'_>, coro: Obj, exc: Obj) -> PyResult<Bound<'_, Handling>> {
        let exc = exception_of(py, &exc);
        Bound::new(py, Handling { coro, exc })
    }

    fn step(&self, py: Python<'_>, f: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<Obj>) -> PyResult<Obj> {
        let coro = self.coro.bind(py);
        with_handled(py, Some(&self.exc), || f(coro))
    }
}

#[pymethods]
impl Handling {
    #[new]
    fn new(coro: Obj, exc: Obj) -> Self {
        Handling { coro, exc }
    }

    fn send(&self, py: Python<'_>, value: Obj) -> PyResult<Obj> {
        self.step(py, |c| c.call_method1("send", (value,)).map(|v| v.unbind()))
    }

    #[pyo3(signature = (typ, val=None, tb=None))]
    fn throw(&self, py: Python<'_>, typ: Obj, val: Option<Obj>, tb: Option<Obj>) -> PyResult<Obj> {
        self.step(py, |c| {
            let args: Vec<Obj> = [Some(typ), val, tb].into_iter().flatten().collect();
            c.call_method1("throw", PyTuple::new_bound(py, args)).map(|v| v.unbind())
        })
    }

    fn close(&self, py: Python<'_>) -> PyResult<Obj> {
        self.step(py, |c| c.call_method0("close").map(|v| v.unbind()))
    }

    fn __await__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Obj> {
        self.send(py, py.None())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<poppy handling {}>", self.coro.bind(py).repr().map(|r| r.to_string()).unwrap_or_default())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_reraise, m)?)?;
    m.add_function(wrap_pyfunction!(_handled, m)?)?;
    m.add_function(wrap_pyfunction!(_with_handled, m)?)?;
    m.add_class::<Handling>()?;
    Ok(())
}
