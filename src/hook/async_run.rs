//! A compiled `@poppy async def` on its caller's running event loop.
//!
//! The coroutine's prologue (`poppy_jit._prologue`) runs at its first `send` and evaluates
//! `Prologue[None]`; for an `async def` that is an `AsyncRun` (or the decline sentinel), which
//! the prologue then awaits with CPython's own `SEND`/`YIELD_VALUE` loop: `return await run`.
//! `AsyncRun` is the awaitable's iterator. Each `send` delivers the external calls that finished
//! and reduces the λO program (`lambda_o::eval::start`/`resume`) until it waits again; then it
//! yields an asyncio future that the run's waker completes when a call finishes (the task that
//! awaits the coroutine sleeps meanwhile, other tasks run). No nested loop, no other thread: async
//! externals are tasks on the caller's loop, blocking ones report through it.
//!
//! A failure raises from `send`, with the coroutine's frame pointed at the failing call's line (as
//! the sync prologue does). `throw` (the awaiting task was cancelled) raises what was thrown at
//! the running call earliest in program order: when that call is in a try or with body the run
//! goes on with it as that call's exception (its handlers, `__aexit__`, finally clauses run);
//! otherwise it cancels the calls in flight, waits for them to finish, then raises what was
//! thrown. Used by `hook` only.
use super::{frame_args, notify, ActiveGuard, PrologueState, ACTIVE};
use crate::control::Class;
use crate::host::PyHost;
use crate::lambda_o::eval::{self, Parked, Progress, RunOptions};
use crate::pyobj::{qualname, Obj};
use crate::stats::{self as counters, RunStats};
use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::cell::RefCell;
use std::os::raw::c_int;
use std::time::{Duration, Instant};

type StaticHost = PyHost<'static>;

/// Completes the future an `AsyncRun` awaits (called by the done-callbacks of its calls).
#[pyclass(unsendable, module = "poppy_jit._core")]
pub struct Waker {
    fut: RefCell<Option<Obj>>,
}

#[pymethods]
impl Waker {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        if let Some(f) = self.fut.borrow_mut().take() {
            let f = f.bind(py);
            if !f.call_method0("done")?.is_truthy()? {
                f.call_method1("set_result", (py.None(),))?;
            }
        }
        Ok(())
    }
}

struct Running {
    host: StaticHost,
    parked: Option<Parked<StaticHost>>,
    stats: RunStats,
    /// Not started yet: the program and its arguments.
    start: Option<(crate::lambda_o::ProgramRef<Obj>, Vec<Obj>)>,
    began: Instant,
    busy: Duration,
}

enum State {
    Running(Box<Running>),
    /// Cancelled: waiting for the calls it cancelled (`gather`), then raising `error`.
    Reaping { gather: Obj, error: PyErr },
    Over,
}

/// The iterator a compiled `async def`'s prologue awaits (module doc).
#[pyclass(unsendable, module = "poppy_jit._core")]
pub struct AsyncRun {
    state: RefCell<State>,
    waker: Py<Waker>,
    loop_: Obj,
    func: Obj,
    /// The code object with the prologue (address) and its traceback sites.
    code: usize,
    sites: Option<Py<PyDict>>,
}

/// The prologue of a compiled `async def`: an `AsyncRun`, or None to decline (run the body).
pub(super) fn enter(
    py: Python<'_>,
    st: &PrologueState,
    func: &Bound<'_, PyAny>,
    locals: *const *mut ffi::PyObject,
) -> PyResult<Option<Obj>> {
    if ACTIVE.with(|a| a.get()) {
        counters::record_declined_nested();
        return Ok(None);
    }
    let sys = py.import_bound("sys")?;
    if !sys.call_method0("gettrace")?.is_none() || !sys.call_method0("getprofile")?.is_none() {
        return Ok(None);
    }
    // Only under an asyncio task on a running loop (what the futures it yields need).
    let asyncio = py.import_bound("asyncio")?;
    let loop_ = asyncio.call_method0("_get_running_loop")?;
    if loop_.is_none() || asyncio.call_method0("current_task")?.is_none() {
        return Ok(None);
    }
    let compiled = st.entry.get_or_compile(py, func);
    for (f, reason) in crate::pipeline::take_new_fallbacks() {
        notify(py, "fallback", (f, reason))?;
    }
    let Some(compiled) = compiled else { return Ok(None) };
    let nargs = compiled.argcount - compiled.nfree;
    // (see `hook::run`: 1 is the frame's slot alone)
    let refcnts: Vec<isize> = (0..nargs).map(|i| unsafe { pyo3::ffi::Py_REFCNT(*locals.add(i)) }).collect();
    let Some(args) = frame_args(py, &compiled, func, locals)? else { return Ok(None) };
    // SAFETY: the host lives in this unsendable object and is only used by its methods, which
    // hold the GIL (so `'static` stands for "whenever the GIL is held on this thread").
    let spy: Python<'static> = unsafe { Python::assume_gil_acquired() };
    let mut host = PyHost::new(spy, &qualname(func))?;
    for i in 0..nargs {
        if !compiled.cell_params[i] {
            host.note_private_arg(&args[i], refcnts[i]);
        }
    }
    host.set_frame(func.clone().unbind(), args[..nargs].iter().map(|a| a.clone_ref(py)).collect(), true);
    let waker = Py::new(py, Waker { fut: RefCell::new(None) })?;
    host.set_async(loop_.clone().unbind(), waker.clone_ref(py).into_any());
    let run = Running {
        host,
        parked: None,
        stats: RunStats::default(),
        start: Some((compiled.program.clone(), args)),
        began: Instant::now(),
        busy: Duration::ZERO,
    };
    let obj = AsyncRun {
        state: RefCell::new(State::Running(Box::new(run))),
        waker,
        loop_: loop_.unbind(),
        func: func.clone().unbind(),
        code: st.code.get(),
        sites: st.sites.borrow().as_ref().map(|d| d.clone_ref(py)),
    };
    Ok(Some(Py::new(py, obj)?.into_any()))
}

/// What the coroutine raises for its body's failure `e`. A StopIteration escaping a coroutine's
/// body is CPython's `RuntimeError: coroutine raised StopIteration` (its `__cause__` and
/// `__context__` the StopIteration): raised as it is from `send`, the prologue's await would read
/// it as the run's return value and the coroutine would return its value silently.
fn coroutine_error(py: Python<'_>, e: PyErr) -> PyErr {
    if !e.is_instance_of::<PyStopIteration>(py) {
        return e;
    }
    let err = PyRuntimeError::new_err("coroutine raised StopIteration");
    let cause = e.value_bound(py).clone();
    let _ = err.value_bound(py).setattr("__context__", &cause);
    err.set_cause(py, Some(e));
    err
}

impl AsyncRun {
    /// Step the run: Ok(future to yield) while it waits, Err(StopIteration(value)) when it is
    /// done, Err(its exception) when it failed.
    fn advance(&self, py: Python<'_>) -> PyResult<Obj> {
        let mut state = self.state.borrow_mut();
        match &mut *state {
            State::Over => Err(PyRuntimeError::new_err("poppy_jit: a finished run was resumed")),
            State::Reaping { gather, .. } => {
                if !gather.bind(py).call_method0("done")?.is_truthy()? {
                    return self.blocking(py, gather.clone_ref(py));
                }
                let State::Reaping { error, .. } = std::mem::replace(&mut *state, State::Over) else { unreachable!() };
                Err(error)
            }
            State::Running(run) => {
                loop {
                    let finished = run.host.take_finished();
                    if run.parked.is_some() && finished.is_empty() {
                        if let Some(e) = run.host.aborted() {
                            drop(state);
                            return self.stop_with(py, e.to_pyerr(py));
                        }
                        let fut = self.loop_.bind(py).call_method0("create_future")?;
                        *self.waker.borrow(py).fut.borrow_mut() = Some(fut.clone().unbind());
                        return self.blocking(py, fut.unbind());
                    }
                    let t0 = Instant::now();
                    ACTIVE.with(|a| a.set(true));
                    let guard = ActiveGuard;
                    let progress = match (run.start.take(), run.parked.take()) {
                        (Some((program, args)), _) => {
                            let opts = RunOptions::default();
                            eval::start(&mut run.host, program, args, &mut run.stats, &opts)
                        }
                        (None, Some(parked)) => eval::resume(&mut run.host, parked, &mut run.stats, finished),
                        (None, None) => unreachable!("a running run is started or parked"),
                    };
                    drop(guard);
                    run.busy += t0.elapsed();
                    match progress {
                        Progress::Waiting(p) => run.parked = Some(p),
                        Progress::Done(result) => {
                            let State::Running(run) = std::mem::replace(&mut *state, State::Over) else { unreachable!() };
                            drop(state);
                            return self.done(py, run, result.map_err(|e| e.to_pyerr(py)));
                        }
                    }
                }
            }
        }
    }

    /// A future to yield to the awaiting task (as `Future.__await__` does).
    fn blocking(&self, py: Python<'_>, fut: Obj) -> PyResult<Obj> {
        fut.bind(py).setattr("_asyncio_future_blocking", true)?;
        Ok(fut)
    }

    fn done(&self, py: Python<'_>, mut run: Box<Running>, result: PyResult<Obj>) -> PyResult<Obj> {
        let finished = run.host.finish();
        counters::record_run(&run.stats, run.began.elapsed().as_nanos() as u64, run.busy.as_nanos() as u64);
        let site = run.host.top_site();
        let stats = std::mem::take(&mut run.stats);
        drop(run);
        match result.and_then(|v| finished.map(|()| v)) {
            Ok(v) => {
                if stats.peak_in_flight <= 1 && stats.dispatched_of(Class::Sequential) >= 2 {
                    notify(py, "one_at_a_time", (self.func.bind(py), stats.peak_in_flight))?;
                }
                Err(PyStopIteration::new_err((v,)))
            }
            Err(e) => {
                self.point_at(py, site);
                Err(coroutine_error(py, e))
            }
        }
    }

    /// Show the failing call's line in the traceback entry of the coroutine's frame (the
    /// current frame while `send` runs from its `SEND`).
    fn point_at(&self, py: Python<'_>, site: Option<(u32, i32)>) {
        let (Some((line, off)), Some(sites)) = (site, self.sites.as_ref()) else { return };
        let sites = sites.bind(py);
        let at = sites.get_item((line, off)).ok().flatten().or_else(|| sites.get_item((line, -1)).ok().flatten());
        if let Some(at) = at.and_then(|a| a.extract::<c_int>().ok()) {
            let (mut f, mut code, mut locals) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null());
            if unsafe { super::poppy_shim_current_frame(&mut f, &mut code, &mut locals) } == 0 && code as usize == self.code {
                unsafe { super::poppy_shim_point_frame_at(code, at) };
            }
        }
    }

    /// End the run early with `error`: cancel what is in flight, raise `error` once it finished.
    fn stop_with(&self, py: Python<'_>, error: PyErr) -> PyResult<Obj> {
        let old = std::mem::replace(&mut *self.state.borrow_mut(), State::Over);
        let State::Running(mut run) = old else {
            return Err(error);
        };
        let pending = run.host.cancel_in_flight();
        if let Some(p) = run.parked.take() {
            let e = crate::host::PyErrRef::new(error.clone_ref(py));
            let _ = eval::abandon(&mut run.host, p, &mut run.stats, e);
        }
        counters::record_run(&run.stats, run.began.elapsed().as_nanos() as u64, run.busy.as_nanos() as u64);
        drop(run);
        let pending = pending?;
        if pending.is_empty() {
            return Err(error);
        }
        let futs = PyTuple::new_bound(py, pending.iter().map(|f| f.bind(py)));
        let kw = PyDict::new_bound(py);
        kw.set_item("return_exceptions", true)?;
        let gather = py.import_bound("asyncio")?.getattr("gather")?.call(futs, Some(&kw))?.unbind();
        *self.state.borrow_mut() = State::Reaping { gather: gather.clone_ref(py), error };
        self.blocking(py, gather)
    }
}

#[pymethods]
impl AsyncRun {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Obj> {
        self.advance(py)
    }

    fn send(&self, py: Python<'_>, _value: &Bound<'_, PyAny>) -> PyResult<Obj> {
        self.advance(py)
    }

    #[pyo3(signature = (typ, val=None, _tb=None))]
    fn throw(&self, py: Python<'_>, typ: &Bound<'_, PyAny>, val: Option<&Bound<'_, PyAny>>, _tb: Option<&Bound<'_, PyAny>>) -> PyResult<Obj> {
        let exc = if typ.is_instance_of::<pyo3::exceptions::PyBaseException>() {
            typ.clone()
        } else {
            match val {
                Some(v) if v.is_instance_of::<pyo3::exceptions::PyBaseException>() => v.clone(),
                Some(v) if !v.is_none() => typ.call1((v,))?,
                _ => typ.call0()?,
            }
        };
        let error = PyErr::from_value_bound(exc);
        if matches!(&*self.state.borrow(), State::Reaping { .. }) {
            // Thrown again while reaping: give up waiting.
            *self.state.borrow_mut() = State::Over;
            return Err(error);
        }
        // CPython raises it at the await the coroutine is suspended at: the running call earliest
        // in program order. When that call is in a try or with body, its handlers run (an `async
        // with`'s `__aexit__` gets the CancelledError, a `finally` clause runs) and the run goes
        // on (`eval::interrupt`); otherwise the run ends with it.
        {
            let mut state = self.state.borrow_mut();
            if let State::Running(run) = &mut *state {
                if let Some(parked) = run.parked.take() {
                    let e = crate::host::PyErrRef::new(error.clone_ref(py));
                    match eval::interrupt(&mut run.host, parked, &mut run.stats, e) {
                        Ok(Progress::Waiting(p)) => {
                            run.parked = Some(p);
                            drop(state);
                            return self.advance(py);
                        }
                        Ok(Progress::Done(result)) => {
                            let State::Running(run) = std::mem::replace(&mut *state, State::Over) else { unreachable!() };
                            drop(state);
                            return self.done(py, run, result.map_err(|e| e.to_pyerr(py)));
                        }
                        Err(p) => run.parked = Some(p),
                    }
                }
            }
        }
        self.stop_with(py, error)
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let old = std::mem::replace(&mut *self.state.borrow_mut(), State::Over);
        if let State::Running(mut run) = old {
            let _ = run.host.cancel_in_flight();
            if let Some(p) = run.parked.take() {
                let e = crate::host::PyErrRef::new(PyRuntimeError::new_err("closed"));
                let _ = eval::abandon(&mut run.host, p, &mut run.stats, e);
            }
        }
        let _ = py;
        Ok(())
    }
}

impl Drop for AsyncRun {
    fn drop(&mut self) {
        if let State::Running(run) = &mut *self.state.borrow_mut() {
            let _ = run.host.cancel_in_flight();
        }
    }
}
