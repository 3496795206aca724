//! Where external calls that do not finish inside `dispatch` run: `async def` externals as tasks
//! on this thread's event loop, blocking ones and timers on the runtime's executor (`pool`). Every
//! future gets a done-callback that queues its completion and stops the loop, so `wait` returns as
//! soon as something finished (no polling). Also cancelling a call and reaping an aborted run.
//!
//! A run of a compiled `async def` (`PyHost::set_async`) uses its caller's running loop instead:
//! the done-callbacks call the run's waker (which completes the future the run awaits) instead
//! of stopping the loop, and the run takes what finished with `take_finished` (no `wait`).
use super::{pool, PyErrRef, PyHost};
use crate::lambda_o::TaskId;
use crate::pyobj::Obj;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::cell::RefCell;
use std::rc::Rc;

/// Completions of asynchronous externals, queued by done-callbacks on this thread's loop.
type DoneQueue = Rc<RefCell<Vec<(TaskId, Obj)>>>;

/// The done-callback of one task: queues its completion and stops the loop so the evaluator
/// regains control (no polling).
#[pyclass(unsendable)]
struct DoneCallback {
    task: TaskId,
    queue: DoneQueue,
    stop: Obj,
}

#[pymethods]
impl DoneCallback {
    fn __call__(&self, py: Python<'_>, fut: Bound<'_, PyAny>) -> PyResult<()> {
        let first = {
            let mut q = self.queue.borrow_mut();
            q.push((self.task, fut.unbind()));
            q.len() == 1
        };
        // One stop per batch: the loop finishes its current iteration (running every other
        // callback already scheduled) before returning to the evaluator.
        if first {
            self.stop.call0(py)?;
        }
        Ok(())
    }
}

/// Runs async externals as tasks on this thread's event loop and blocking ones on worker threads.
pub(super) struct Executor<'py> {
    pub(super) create_task: Bound<'py, PyAny>,
    run_forever: Bound<'py, PyAny>,
    stop: Obj,
    queue: DoneQueue,
    running: Running,
    pub(super) loop_: Bound<'py, PyAny>,
    /// `_loop.release_runtime_loop`, called when the executor is dropped (the run is over);
    /// None on a caller's running loop (an async run), which it never marked.
    release: Option<Bound<'py, PyAny>>,
}

impl Drop for Executor<'_> {
    fn drop(&mut self) {
        // However the run ended (finished, or an error before `finish`), the loop is free again.
        if let Some(release) = &self.release {
            if let Err(e) = release.call0() {
                e.print(release.py());
            }
        }
    }
}

impl<'py> Executor<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let loops = py.import_bound("poppy_jit._loop")?;
        let loop_ = loops.call_method0("get_loop")?;
        if loop_.call_method0("is_running")?.is_truthy()? {
            return Err(PyRuntimeError::new_err("poppy_jit: event loop already running"));
        }
        let release = loops.getattr("release_runtime_loop")?;
        // Marked in use while the executor lives (released by `Drop`): a plain call of an async
        // external made meanwhile (by a helper the run calls) must not run this loop, whose
        // done-callbacks stop it.
        loops.call_method0("runtime_loop")?;
        Ok(Executor {
            release: Some(release),
            create_task: loop_.getattr("create_task")?,
            run_forever: loop_.getattr("run_forever")?,
            stop: loop_.getattr("stop")?.unbind(),
            queue: Rc::new(RefCell::new(Vec::new())),
            running: Running::default(),
            loop_,
        })
    }

    /// On the caller's running loop `loop_`: completions call `waker` (an async run).
    fn on_running_loop(loop_: Bound<'py, PyAny>, waker: Obj) -> PyResult<Self> {
        Ok(Executor {
            release: None,
            create_task: loop_.getattr("create_task")?,
            run_forever: loop_.getattr("run_forever")?,
            stop: waker,
            queue: Rc::new(RefCell::new(Vec::new())),
            running: Running::default(),
            loop_,
        })
    }

    pub(super) fn watch(&mut self, py: Python<'py>, task: TaskId, fut: Bound<'py, PyAny>) -> PyResult<()> {
        let cb = DoneCallback { task, queue: self.queue.clone(), stop: self.stop.clone_ref(py) };
        fut.call_method1("add_done_callback", (Py::new(py, cb)?,))?;
        self.running.insert(task, fut.unbind());
        Ok(())
    }
}

/// Futures of the calls in flight, by task id (task ids are dense: the evaluator's controller
/// indices), so that no hashing is on the per-call path.
#[derive(Default)]
struct Running {
    futs: Vec<Option<Obj>>,
    count: usize,
}

impl Running {
    fn insert(&mut self, task: TaskId, fut: Obj) {
        let i = task as usize;
        if self.futs.len() <= i {
            self.futs.resize_with(i + 1, || None);
        }
        if self.futs[i].replace(fut).is_none() {
            self.count += 1;
        }
    }
    fn remove(&mut self, task: &TaskId) -> Option<Obj> {
        let r = self.futs.get_mut(*task as usize).and_then(Option::take);
        if r.is_some() {
            self.count -= 1;
        }
        r
    }
    fn get(&self, task: &TaskId) -> Option<&Obj> {
        self.futs.get(*task as usize).and_then(Option::as_ref)
    }
    fn is_empty(&self) -> bool {
        self.count == 0
    }
    fn drain(&mut self) -> Vec<Obj> {
        self.count = 0;
        self.futs.drain(..).flatten().collect()
    }
}

impl<'py> PyHost<'py> {
    pub(super) fn executor(&mut self) -> PyResult<&mut Executor<'py>> {
        if self.executor.is_none() {
            self.executor = Some(match &self.running_loop {
                Some((lp, waker)) => Executor::on_running_loop(lp.bind(self.py).clone(), waker.clone_ref(self.py))?,
                None => Executor::new(self.py)?,
            });
        }
        Ok(self.executor.as_mut().unwrap())
    }
}

pub(super) fn cancel<'py>(h: &mut PyHost<'py>, task: TaskId) {
    let py = h.py;
    let Some(ex) = h.executor.as_mut() else { return };
    let Some(fut) = ex.running.get(&task) else { return };
    let fut = fut.bind(py);
    // Blocking calls run to completion on their threads (they report as usual); timers and
    // asyncio tasks are cancelled and report CancelledError through their done-callback.
    match fut.downcast::<pool::BlockingCall>() {
        Ok(call) => {
            let _ = pool::interrupt(call, &ex.loop_);
        }
        Err(_) => {
            let _ = fut.call_method0("cancel");
        }
    }
}

pub(super) fn wait<'py>(h: &mut PyHost<'py>) -> Result<Vec<(TaskId, Result<Obj, PyErrRef>)>, PyErrRef> {
    let py = h.py;
    if let Some(e) = &h.abort {
        return Err(e.clone());
    }
    let rt = h.rt.clone();
    let ex = h.executor().map_err(PyErrRef::new)?;
    if ex.queue.borrow().is_empty() {
        // An exception out of the loop itself (KeyboardInterrupt while waiting) aborts the run.
        ex.run_forever.call0().map_err(PyErrRef::new)?;
        if ex.queue.borrow().is_empty() {
            // Woken with nothing finished: was the run cancelled (`await poppy_jit.run`'s
            // caller was)? Then abort; `finish` cancels what is in flight.
            let cancelled = rt.call_method0("take_cancel").and_then(|c| c.is_truthy()).map_err(PyErrRef::new)?;
            if cancelled {
                let e = pyo3::exceptions::asyncio::CancelledError::new_err("poppy_jit.run was cancelled");
                return Err(PyErrRef::new(e));
            }
        }
    }
    let done: Vec<(TaskId, Obj)> = std::mem::take(&mut *ex.queue.borrow_mut());
    let mut out = Vec::with_capacity(done.len());
    for (task, fut) in done {
        ex.running.remove(&task);
        // `result()` returns the value, or raises the call's exception (CancelledError for a
        // cancelled task): either way, that is the call's outcome.
        let r = fut.bind(py).call_method0(pyo3::intern!(py, "result")).map(|v| v.unbind()).map_err(PyErrRef::new);
        out.push((task, r));
    }
    if !out.is_empty() {
        h.guard_after_tasks()?;
    }
    Ok(out)
}

/// An async run: the calls that finished since the last time (their done-callbacks ran).
pub(super) fn take_finished(h: &mut PyHost<'_>) -> Vec<(TaskId, Result<Obj, PyErrRef>)> {
    let py = h.py;
    let Some(ex) = h.executor.as_mut() else { return Vec::new() };
    let done: Vec<(TaskId, Obj)> = std::mem::take(&mut *ex.queue.borrow_mut());
    let done: Vec<(TaskId, Result<Obj, PyErrRef>)> = done
        .into_iter()
        .map(|(task, fut)| {
            ex.running.remove(&task);
            let r = fut.bind(py).call_method0(pyo3::intern!(py, "result")).map(|v| v.unbind()).map_err(PyErrRef::new);
            (task, r)
        })
        .collect();
    if done.is_empty() {
        return done;
    }
    match h.guard_after_tasks() {
        Ok(()) => done,
        // One of them rebound a name the run had read: the run fails with the guard's error.
        Err(e) => done.into_iter().map(|(task, _)| (task, Err(e.clone()))).collect(),
    }
}

/// An async run that ends early: cancel what is in flight; the asyncio futures among them,
/// for the caller to await (so no task of the run outlives it).
pub(super) fn cancel_in_flight(h: &mut PyHost<'_>) -> PyResult<Vec<Obj>> {
    let py = h.py;
    let mut left = Vec::new();
    if let Some(mut ex) = h.executor.take() {
        let asyncio = py.import_bound("asyncio")?;
        for fut in ex.running.drain() {
            fut.bind(py).call_method0("cancel")?;
            if asyncio.call_method1("isfuture", (fut.bind(py),))?.is_truthy()? {
                left.push(fut);
            }
        }
        ex.queue.borrow_mut().clear();
    }
    Ok(left)
}

/// End of a run: cancel and reap what is still in flight (see `PyHost::finish`).
pub(super) fn finish(h: &mut PyHost<'_>) -> PyResult<()> {
    if let Some(mut ex) = h.executor.take() {
        if !ex.running.is_empty() {
            let pending: Vec<Obj> = ex.running.drain();
            h.rt.call_method1("cancel_all", (ex.loop_.clone(), pending))?;
        }
        ex.queue.borrow_mut().clear();
    }
    Ok(())
}
