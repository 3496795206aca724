//! Interception of @poppy frames (Rust side): running an intercepted frame or declining it.
//!
//! A @poppy function gets a copy of its code with a prologue (`poppy_jit._prologue`, sharing the
//! original's co_extra mark, `pipeline::CodeEntry`) that first evaluates `Prologue[None]`: we take
//! the function's translation from the pipeline (compiled on first call, or its fallback) and run
//! the λO program with the arguments CPython bound in the frame. Declining (fallback, nested run,
//! tracing, running event loop) lets the original body run in that same frame, so the function is
//! then one sequential external of whatever called it; a fallback, a decline for a running event
//! loop and a run whose calls all went one at a time are reported to `poppy_jit._warnings` (the
//! user's warnings). No PEP 523 eval-frame function is
//! installed: on CPython 3.11 any such function slows every Python-to-Python call (see
//! docs/benchmarks.md). Also here: the frame primitives of the shim (stand-in frames for
//! tracebacks). A compiled `async def` is run by `async_run` (an awaitable on the caller's
//! running loop) instead of `run_frame`.
//!
//! Uses `pipeline` (translations) and `host` (running them); the `_core` functions are in `api`.
//! Shared state is only touched with the GIL held (every `_core` function and slot holds it),
//! which is what makes the `Cell`s and `RefCell`s below sound.
mod async_run;
pub use async_run::{AsyncRun, Waker};

use crate::host::PyHost;
use crate::lambda_o::eval;
use crate::pipeline::{entry_rc, set_mark, take_new_fallbacks, CodeEntry};
use crate::control::Class;
use crate::pyobj::{qualname, Obj};
use crate::stats::{self as counters, RunStats};
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::os::raw::c_int;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::time::Instant;

extern "C" {
    fn poppy_shim_frame(func: *mut ffi::PyObject, args: *const *mut ffi::PyObject, nargs: ffi::Py_ssize_t, lasti: c_int) -> *mut ffi::PyObject;
    fn poppy_shim_current_frame(func: *mut *mut ffi::PyObject, code: *mut *mut ffi::PyObject, locals: *mut *const *mut ffi::PyObject) -> c_int;
    fn poppy_shim_point_frame_at(code: *mut ffi::PyObject, offset: c_int);
    fn poppy_shim_frame_offset(code: *mut ffi::PyObject) -> c_int;
}

thread_local! {
    /// A λO run is in progress on this thread (externals that call @poppy code run it plainly).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
}

/// Why a compiled frame should still run plainly, if it should.
fn decline_reason(py: Python<'_>) -> PyResult<Option<&'static str>> {
    if ACTIVE.with(|a| a.get()) {
        return Ok(Some("nested"));
    }
    let sys = py.import_bound("sys")?;
    if !sys.call_method0("gettrace")?.is_none() || !sys.call_method0("getprofile")?.is_none() {
        return Ok(Some("tracing"));
    }
    let running = py.import_bound("asyncio")?.call_method0("_get_running_loop")?;
    if !running.is_none() {
        return Ok(Some("running event loop"));
    }
    Ok(None)
}

/// Clears ACTIVE when a run ends, however it ends (including a panic caught by pyo3).
struct ActiveGuard;

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(false));
    }
}

/// Run a @poppy frame's function on the runtime, or decline (Ok(None)). `on_stack`: the
/// function's real frame is on the interpreter stack (the prologue path); then, on failure at
/// a known line of it, `site` receives (line, offset of the CALL there or -1).
fn run_frame(
    py: Python<'_>,
    entry: &CodeEntry,
    func: &Bound<'_, PyAny>,
    locals: *const *mut ffi::PyObject,
    on_stack: bool,
    site: &mut Option<(u32, i32)>,
) -> PyResult<Option<Obj>> {
    if let Some(why) = decline_reason(py)? {
        if why == "nested" {
            counters::record_declined_nested();
        } else if why == "running event loop" {
            notify(py, "declined_in_running_loop", (func,))?;
        }
        return Ok(None);
    }
    let compiled = entry.get_or_compile(py, func);
    for (f, reason) in take_new_fallbacks() {
        notify(py, "fallback", (f, reason))?;
    }
    let Some(compiled) = compiled else {
        return Ok(None);
    };
    let nargs = compiled.argcount - compiled.nfree;
    // How many references each parameter has before the run takes its own: 1 is the frame's
    // slot alone (an argument the caller built for the call and keeps nowhere).
    let refcnts: Vec<isize> = (0..nargs).map(|i| unsafe { ffi::Py_REFCNT(*locals.add(i)) }).collect();
    let Some(args) = frame_args(py, &compiled, func, locals)? else {
        return Ok(None);
    };
    let mut host = PyHost::new(py, &qualname(func))?;
    for i in 0..nargs {
        if !compiled.cell_params[i] {
            host.note_private_arg(&args[i], refcnts[i]);
        }
    }
    host.set_frame(func.clone().unbind(), args[..nargs].iter().map(|a| a.clone_ref(py)).collect(), on_stack);
    let mut stats = RunStats::default();
    let time = py.import_bound("time")?;
    let cpu0: f64 = time.call_method0("thread_time")?.extract()?;
    ACTIVE.with(|a| a.set(true));
    let guard = ActiveGuard;
    let start = Instant::now();
    let result = eval::run(&mut host, compiled.program.clone(), args, &mut stats);
    let finished = host.finish();
    let ns = start.elapsed().as_nanos() as u64;
    drop(guard);
    *site = host.top_site();
    let cpu1: f64 = time.call_method0("thread_time")?.extract()?;
    counters::record_run(&stats, ns, ((cpu1 - cpu0).max(0.0) * 1e9) as u64);
    let value = result.map_err(|e| e.to_pyerr(py))?;
    finished?;
    if stats.peak_in_flight <= 1 && stats.dispatched_of(Class::Sequential) >= 2 {
        notify(py, "one_at_a_time", (func, stats.peak_in_flight))?;
    }
    Ok(Some(value))
}

/// The arguments CPython bound in the frame (`locals`), as the compiled program takes them:
/// parameters, then a closure's free variables. None: run plainly (an empty free cell).
fn frame_args(
    py: Python<'_>,
    compiled: &crate::pipeline::Compiled,
    func: &Bound<'_, PyAny>,
    locals: *const *mut ffi::PyObject,
) -> PyResult<Option<Vec<Obj>>> {
    let nargs = compiled.argcount - compiled.nfree;
    let mut args: Vec<Obj> = (0..nargs)
        .map(|i| {
            let slot = unsafe { Bound::from_borrowed_ptr(py, *locals.add(i)) };
            if compiled.cell_params[i] {
                slot.getattr("cell_contents").map(|v| v.unbind())
            } else {
                Ok(slot.unbind())
            }
        })
        .collect::<PyResult<_>>()?;
    if compiled.nfree > 0 {
        // A closure's free variables: the cells themselves where the function writes them or a
        // real inner function captures them (`$cell.x` parameters), else their values, read now
        // (an empty cell: run plainly, so that CPython raises its NameError where it would).
        let closure = func.getattr("__closure__")?;
        for (c, name) in closure.iter()?.zip(&compiled.free_params) {
            let c = c?;
            if matches!(name.kind(), crate::bezoar::VarKind::Cell(_)) {
                args.push(c.unbind());
            } else {
                match c.getattr("cell_contents") {
                    Ok(v) => args.push(v.unbind()),
                    Err(_) => return Ok(None),
                }
            }
        }
        if args.len() != compiled.argcount {
            return Ok(None);
        }
    }
    Ok(Some(args))
}

/// Tell `poppy_jit._warnings` what the user should hear of (a fallback, a frame declined because
/// an event loop is running, a run whose external calls all ran one at a time); it warns once
/// per function and reason. Its error (a warning made an exception by `-W error`) is the call's.
fn notify(py: Python<'_>, what: &str, args: impl IntoPy<Py<PyTuple>>) -> PyResult<()> {
    py.import_bound("poppy_jit._warnings")?.call_method1(what, args)?;
    Ok(())
}

/// The runtime takes @poppy frames (their prologues answer "decline" otherwise).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Switch interception on or off (`poppy_jit.enable()`/`disable()`).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// A frame object standing for a @poppy function's frame stopped at byte offset `lasti` with
/// `args` bound (for the traceback entry of a frame a run replaced).
pub fn stand_in_frame(py: Python<'_>, func: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>, lasti: i32) -> PyResult<PyObject> {
    let argv: Vec<*mut ffi::PyObject> = args.iter().map(|a| a.as_ptr()).collect();
    let f = unsafe { poppy_shim_frame(func.as_ptr(), argv.as_ptr(), argv.len() as ffi::Py_ssize_t, lasti) };
    if f.is_null() {
        return Err(PyErr::fetch(py));
    }
    Ok(unsafe { PyObject::from_owned_ptr(py, f) })
}

/// The interception prologue's runtime object (see `poppy_jit._prologue`): a @poppy function's
/// code copy evaluates `prologue[None]` first; this runs the frame's function on the runtime with
/// the arguments CPython bound in the frame, or answers the decline sentinel.
#[pyclass(module = "poppy_jit._core")]
pub struct Prologue {
    inner: GilOnly<PrologueState>,
}

struct PrologueState {
    entry: Rc<CodeEntry>,
    /// The function is an `async def`: the prologue awaits an `AsyncRun` (async_run.rs).
    is_async: bool,
    decline: Obj,
    /// Address of the code object with the prologue (set by `_bind`).
    code: Cell<usize>,
    /// {(line, CALL offset in the original code or -1): byte offset of the NOP at that position}.
    sites: RefCell<Option<Py<PyDict>>>,
    /// Byte offset of the NOP at the `def` line: where the frame points while the run is in
    /// progress (so `f_lineno` of the frame, seen from externals, is a line of the function).
    home: Cell<c_int>,
}

/// State only touched with the GIL held (every `Prologue` method takes `Python`), so sharing it
/// between threads is sound although `Rc`/`Cell` are not thread-safe by themselves.
struct GilOnly<T>(T);
unsafe impl<T> Send for GilOnly<T> {}
unsafe impl<T> Sync for GilOnly<T> {}

#[pymethods]
impl Prologue {
    #[new]
    fn new(code: &Bound<'_, PyAny>, decline: Obj) -> PyResult<Self> {
        let entry = entry_rc(code).ok_or_else(|| PyRuntimeError::new_err("poppy_jit: code is not marked"))?;
        let flags: u32 = code.getattr("co_flags")?.extract()?;
        let is_async = flags & crate::py311::CO_COROUTINE != 0;
        let state = PrologueState { entry, is_async, decline, code: Cell::new(0), sites: RefCell::new(None), home: Cell::new(-1) };
        Ok(Prologue { inner: GilOnly(state) })
    }

    /// Attach the code object carrying this prologue (it shares the original's mark) and its
    /// traceback sites.
    fn _bind(&self, py: Python<'_>, code: &Bound<'_, PyAny>, sites: Bound<'_, PyDict>, home: c_int) -> PyResult<()> {
        let st = &self.inner.0;
        set_mark(py, code, &st.entry)?;
        st.code.set(code.as_ptr() as usize);
        st.home.set(home);
        *st.sites.borrow_mut() = Some(sites.unbind());
        Ok(())
    }

    /// Code objects are pickled by value by some libraries (cloudpickle, dill): a copy of the
    /// prologue elsewhere is inert (the function runs plainly there).
    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Obj, Py<pyo3::types::PyTuple>)> {
        let inert = py.import_bound("poppy_jit._prologue")?.getattr("Inert")?.unbind();
        Ok((inert, pyo3::types::PyTuple::empty_bound(py).unbind()))
    }

    fn __getitem__(&self, py: Python<'_>, _key: &Bound<'_, PyAny>) -> PyResult<Obj> {
        let st = &self.inner.0;
        if !ENABLED.load(Ordering::Relaxed) {
            return Ok(st.decline.clone_ref(py));
        }
        let (mut func, mut code, mut locals) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null());
        if unsafe { poppy_shim_current_frame(&mut func, &mut code, &mut locals) } != 0 || code as usize != st.code.get() {
            return Ok(st.decline.clone_ref(py));
        }
        let func = unsafe { Bound::from_borrowed_ptr(py, func) };
        if st.is_async {
            let run = std::panic::catch_unwind(AssertUnwindSafe(|| async_run::enter(py, st, &func, locals)));
            let run = run.unwrap_or_else(|_| Err(PyRuntimeError::new_err("poppy_jit: internal error (panic) while starting a @poppy async def")));
            return Ok(run?.unwrap_or_else(|| st.decline.clone_ref(py)));
        }
        // Only the instruction actually executed (next_instr) decides exception handling in
        // 3.11, so moving prev_instr for the duration of the run is safe.
        let at = unsafe { poppy_shim_frame_offset(code) };
        unsafe { poppy_shim_point_frame_at(code, st.home.get()) };
        let mut site = None;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| run_frame(py, &st.entry, &func, locals, true, &mut site)));
        let outcome = outcome.unwrap_or_else(|_| {
            Err(PyRuntimeError::new_err("poppy_jit: internal error (panic) while running a @poppy function"))
        });
        match outcome {
            Ok(Some(v)) => Ok(v),
            Ok(None) => {
                // Declined: the body runs now, from exactly where the prologue left the frame.
                unsafe { poppy_shim_point_frame_at(code, at) };
                Ok(st.decline.clone_ref(py))
            }
            Err(e) => {
                // The traceback entry CPython adds for this frame as the error leaves it shows
                // the failing call's position instead of the prologue's.
                let sites = st.sites.borrow();
                if let (Some((line, off)), Some(sites)) = (site, sites.as_ref()) {
                    let sites = sites.bind(py);
                    let at = sites.get_item((line, off)).ok().flatten().or_else(|| sites.get_item((line, -1)).ok().flatten());
                    if let Some(at) = at.and_then(|a| a.extract::<c_int>().ok()) {
                        unsafe { poppy_shim_point_frame_at(code, at) };
                    }
                }
                Err(e)
            }
        }
    }
}
