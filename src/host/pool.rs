//! Worker threads for `blocking=True` externals, owned by the runtime (no Python thread pool).
//!
//! The evaluator thread queues a job here with a `BlockingCall` future; a worker takes the GIL,
//! calls the external, and hands the outcome back with `loop.call_soon_threadsafe`, which wakes
//! the evaluator's event loop (its self-pipe); the future's done-callback then stops the loop, so
//! the evaluator's `wait` returns. Nobody polls: workers sleep on a condition variable
//! without the GIL, the evaluator sleeps in the loop's selector.
//!
//! - **Size.** One thread per blocking call in flight, up to `MAX_WORKERS`. Blocking externals
//!   are waits (HTTP clients, subprocesses, disk), not CPU work, so the cap bounds threads, not
//!   cores: a smaller cap (ThreadPoolExecutor's min(32, cpus + 4) is 6 on a 2-core machine) would
//!   serialise the very calls the runtime exists to overlap. Beyond the cap jobs queue in FIFO order.
//! - **Lifetime.** A worker that has had nothing to do for `IDLE_TIMEOUT` exits. At interpreter
//!   exit (`threading._register_atexit`, as concurrent.futures does) the pool closes: idle workers
//!   exit at once, busy ones after their current call (threads cannot be cancelled), and the exit
//!   waits for them, so no worker touches Python during finalization. After closing, blocking
//!   externals run inline on the evaluator thread. So does a blocking call made from a worker
//!   (a blocking external running a @poppy function) when every thread is busy: queueing it
//!   could deadlock, every worker waiting for a call queued behind them.
//! - **Thread state.** A worker keeps one Python thread state for its life (taken with the GIL
//!   when it starts, released only while it waits for work), so a callee's `threading.local`
//!   data survive from one call to the next like on any worker thread.
//! - **GIL waits** (`crate::stats`). `GIL_WAIT_NS` sums, over jobs, the time from a worker having
//!   its job to it holding the GIL to run it (for a new worker, including the first acquisition
//!   that creates its thread state). The result is handed back within that same hold, so delivery
//!   takes no second acquisition. Waits inside the callee (e.g. re-acquiring after `time.sleep`)
//!   are the callee's own and not counted. `HANDOFF_NS` sums the time from handing a result over
//!   to the evaluator's loop running `deliver` (the evaluator's wake-up and GIL re-acquisition,
//!   or the rest of its busy stretch if it was not waiting).
//! - **Aborted runs.** The run's futures are cancelled at once (`PyHost::finish`); a result that
//!   arrives later finds its future done and is dropped. A callee's exception is delivered as
//!   raised (with its traceback), `StopIteration` included.
use super::Obj;
use crate::stats::{BLOCKING_JOBS, GIL_WAIT_NS, HANDOFF_NS};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Most worker threads at once.
pub const MAX_WORKERS: usize = 32;
/// A worker idle this long exits.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(2);

struct Job {
    func: Obj,
    args: Py<PyTuple>,
    kwargs: Option<Py<PyDict>>,
    loop_: Obj,
    fut: Py<BlockingCall>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    /// Threads that exist (decremented by a worker as the last thing it does with the GIL).
    live: usize,
    /// Threads that still take jobs (decremented when a worker decides to exit).
    workers: usize,
    /// Workers waiting for a job.
    idle: usize,
    /// Interpreter exit began: no new jobs, workers exit when done.
    closed: bool,
    /// The exit hook is registered.
    hooked: bool,
}

struct Pool {
    state: Mutex<State>,
    /// Signalled when a job is queued or the pool closes.
    work: Condvar,
    /// Signalled when a worker thread ends.
    ended: Condvar,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking worker never holds the lock (its jobs run outside it); recover regardless.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The current pool; replaced by a fresh one in a forked child (the parent's workers do not
/// exist there). Pools are leaked: a worker holds `&'static` to its own.
static POOL: AtomicPtr<Pool> = AtomicPtr::new(std::ptr::null_mut());

fn new_pool() -> &'static Pool {
    Box::leak(Box::new(Pool { state: Mutex::new(State::default()), work: Condvar::new(), ended: Condvar::new() }))
}

/// The current pool (created under the GIL, so two threads never race to create it).
fn pool(_py: Python<'_>) -> &'static Pool {
    let p = POOL.load(Ordering::Acquire);
    if !p.is_null() {
        return unsafe { &*p };
    }
    let fresh = new_pool();
    POOL.store(fresh as *const Pool as *mut Pool, Ordering::Release);
    fresh
}

/// Queue `func(*args, **kwargs)` for a worker; its outcome completes `fut` (a future of `loop_`).
/// Returns false when the pool no longer takes jobs (interpreter exit began, or no thread could
/// be started): the caller then runs the call itself.
pub fn submit(
    py: Python<'_>,
    func: &Bound<'_, PyAny>,
    args: Bound<'_, PyTuple>,
    kwargs: Option<Bound<'_, PyDict>>,
    loop_: &Bound<'_, PyAny>,
    fut: &Bound<'_, BlockingCall>,
) -> PyResult<bool> {
    let pool = pool(py);
    if !pool.lock().hooked {
        register_exit_hook(py, pool)?;
    }
    let job = Job {
        func: func.clone().unbind(),
        args: args.unbind(),
        kwargs: kwargs.map(|k| k.unbind()),
        loop_: loop_.clone().unbind(),
        fut: fut.clone().unbind(),
    };
    let mut st = pool.lock();
    if st.closed {
        return Ok(false);
    }
    if IS_WORKER.with(|w| w.get()) && st.idle <= st.queue.len() && st.workers >= MAX_WORKERS {
        // A blocking external running a @poppy function that makes blocking calls, with every
        // thread busy: queueing could wait for this very thread (all of them could be doing the
        // same). Run it here instead.
        return Ok(false);
    }
    st.queue.push_back(job);
    if st.idle >= st.queue.len() {
        pool.work.notify_one();
    } else if st.workers < MAX_WORKERS {
        st.workers += 1;
        st.live += 1;
        let spawned = std::thread::Builder::new()
            .name("poppy-blocking".into())
            .stack_size(stack_size(py))
            .spawn(move || worker_main(pool));
        if spawned.is_err() {
            st.workers -= 1;
            st.live -= 1;
            if st.workers == 0 {
                // Nobody would ever take it: hand the job back.
                let job = st.queue.pop_back();
                drop(st);
                drop(job);
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Worker stack size: `threading.stack_size()` when set, else 8 MiB, the usual size of a Python
/// thread's stack on Linux (Rust's default, 2 MiB, is less than C-level recursion in a callee, e.g.
/// `json.dumps` of deeply nested data, may need).
fn stack_size(py: Python<'_>) -> usize {
    const DEFAULT: usize = 8 << 20;
    py.import_bound("threading")
        .and_then(|t| t.call_method0("stack_size"))
        .and_then(|s| s.extract::<usize>())
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(DEFAULT)
}

/// Close the pool when the interpreter exits, before finalization (threading._shutdown runs
/// these hooks, as it does for concurrent.futures).
fn register_exit_hook(py: Python<'_>, pool: &'static Pool) -> PyResult<()> {
    let hook = wrap_pyfunction_bound!(shutdown, py)?;
    let threading = py.import_bound("threading")?;
    let registered = match threading.getattr("_register_atexit") {
        Ok(reg) => reg.call1((hook,)).is_ok(),
        Err(_) => py.import_bound("atexit")?.call_method1("register", (hook,)).is_ok(),
    };
    let mut st = pool.lock();
    st.hooked = true;
    if !registered {
        // Exit already began (`_register_atexit` refuses then): take no jobs.
        st.closed = true;
    }
    Ok(())
}

/// The next job, or None when this worker should exit (idle too long, or the pool closed).
fn next_job(pool: &Pool) -> Option<Job> {
    let mut st = pool.lock();
    loop {
        if let Some(job) = st.queue.pop_front() {
            return Some(job);
        }
        if st.closed {
            st.workers -= 1;
            return None;
        }
        st.idle += 1;
        let (guard, timeout) = pool.work.wait_timeout(st, IDLE_TIMEOUT).unwrap_or_else(|e| e.into_inner());
        st = guard;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            st.workers -= 1;
            return None;
        }
    }
}

thread_local! {
    /// This thread is one of the pool's workers.
    static IS_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn worker_main(pool: &'static Pool) {
    IS_WORKER.with(|w| w.set(true));
    let started = Instant::now();
    Python::with_gil(|py| {
        let mut waited = started.elapsed();
        loop {
            let next = py.allow_threads(|| next_job(pool).map(|j| (j, Instant::now())));
            let Some((job, got)) = next else { break };
            waited += got.elapsed();
            GIL_WAIT_NS.fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
            BLOCKING_JOBS.fetch_add(1, Ordering::Relaxed);
            waited = Duration::ZERO;
            run_job(py, job);
        }
        forget_thread(py);
        // Drop this thread's Python thread-local data (threading.local values, e.g. the event
        // loop of a @poppy run made by a callee) while it still counts as live: their __del__
        // may run Python code and let the GIL go. Once `live` says this thread is gone, the
        // interpreter may be finalizing, and taking the GIL again would kill the thread
        // (pthread_exit through Rust frames: abort). Deleting the thread state afterwards
        // (end of with_gil) frees nothing that runs Python code.
        unsafe {
            let d = pyo3::ffi::PyThreadState_GetDict();
            if !d.is_null() {
                pyo3::ffi::PyDict_Clear(d);
            }
        }
        let mut st = pool.lock();
        st.live -= 1;
        pool.ended.notify_all();
    });
}

fn run_job(py: Python<'_>, job: Job) {
    let outcome = job.func.bind(py).call(job.args.bind(py), job.kwargs.as_ref().map(|k| k.bind(py)));
    let (ok, value): (bool, Obj) = match outcome {
        Ok(v) => (true, v.unbind()),
        Err(e) => (false, e.into_value(py).into_any()),
    };
    let deliver = match deliver_fn(py) {
        Ok(d) => d,
        Err(e) => {
            e.write_unraisable_bound(py, None);
            return;
        }
    };
    // A closed loop (its thread ended) raises: nobody waits for this result any more.
    let sent = since_anchor();
    let _ = job.loop_.bind(py).call_method1("call_soon_threadsafe", (deliver, job.fut, ok, value, sent));
}

/// The future of one blocking call, completed on the evaluator's loop thread. Not an asyncio
/// future: those refuse `StopIteration` as an exception, which a plain call may raise; the host
/// only needs `add_done_callback`, `cancel`, `cancelled`, `exception` and `result`.
#[pyclass(module = "poppy_jit._core")]
pub struct BlockingCall {
    state: CallState,
    callbacks: Vec<Obj>,
}

enum CallState {
    Pending,
    Cancelled,
    Returned(Obj),
    Raised(Obj),
}

impl BlockingCall {
    pub fn new() -> Self {
        BlockingCall { state: CallState::Pending, callbacks: Vec::new() }
    }
}

#[pymethods]
impl BlockingCall {
    fn done(&self) -> bool {
        !matches!(self.state, CallState::Pending)
    }

    fn cancelled(&self) -> bool {
        matches!(self.state, CallState::Cancelled)
    }

    /// Give up on the call (an aborted run): its result will be dropped. Callbacks are not run
    /// (the run that registered them is over).
    fn cancel(&mut self) -> bool {
        if let CallState::Pending = self.state {
            self.state = CallState::Cancelled;
            self.callbacks.clear();
            return true;
        }
        false
    }

    fn add_done_callback(slf: &Bound<'_, Self>, cb: Obj) -> PyResult<()> {
        if slf.borrow().done() {
            cb.call1(slf.py(), (slf,))?;
        } else {
            slf.borrow_mut().callbacks.push(cb);
        }
        Ok(())
    }

    fn result(&self, py: Python<'_>) -> PyResult<Obj> {
        match &self.state {
            CallState::Returned(v) => Ok(v.clone_ref(py)),
            CallState::Raised(e) => Err(PyErr::from_value_bound(e.bind(py).clone())),
            CallState::Cancelled => Err(pyo3::exceptions::asyncio::CancelledError::new_err(())),
            CallState::Pending => Err(pyo3::exceptions::asyncio::InvalidStateError::new_err("result is not set")),
        }
    }

    fn exception(&self, py: Python<'_>) -> PyResult<Obj> {
        match &self.state {
            CallState::Returned(_) => Ok(py.None()),
            CallState::Raised(e) => Ok(e.clone_ref(py)),
            CallState::Cancelled => Err(pyo3::exceptions::asyncio::CancelledError::new_err(())),
            CallState::Pending => Err(pyo3::exceptions::asyncio::InvalidStateError::new_err("exception is not set")),
        }
    }
}

/// Nanoseconds since a fixed instant of this process (timestamps passed through Python).
fn since_anchor() -> u64 {
    static ANCHOR: OnceLock<Instant> = OnceLock::new();
    ANCHOR.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Runs on the evaluator's loop: complete the call unless the run gave up on it. `sent` is when
/// the worker handed the outcome over (`since_anchor`).
#[pyfunction]
fn deliver(call: &Bound<'_, BlockingCall>, ok: bool, value: Obj, sent: u64) {
    let callbacks = {
        let mut c = call.borrow_mut();
        if c.done() {
            return; // cancelled by an aborted run: the result is dropped
        }
        HANDOFF_NS.fetch_add(since_anchor().saturating_sub(sent), Ordering::Relaxed);
        c.state = if ok { CallState::Returned(value) } else { CallState::Raised(value) };
        std::mem::take(&mut c.callbacks)
    };
    let py = call.py();
    for cb in callbacks {
        if let Err(e) = cb.call1(py, (call,)) {
            e.write_unraisable_bound(py, Some(cb.bind(py)));
        }
    }
}

fn deliver_fn(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static DELIVER: GILOnceCell<Obj> = GILOnceCell::new();
    Ok(DELIVER.get_or_try_init(py, || wrap_pyfunction_bound!(deliver, py).map(|f| f.into_any().unbind()))?.bind(py))
}

/// A callee that asked `threading.current_thread()` made the threading module register this
/// thread as a `_DummyThread`, which 3.11 never removes: remove it as the thread ends.
fn forget_thread(py: Python<'_>) {
    let r = (|| -> PyResult<()> {
        let threading = py.import_bound("threading")?;
        let ident = threading.call_method0("get_ident")?;
        let active = threading.getattr("_active")?;
        if let Some(t) = active.call_method1("get", (&ident,)).ok().filter(|t| !t.is_none()) {
            if t.is_instance(&threading.getattr("_DummyThread")?)? {
                active.call_method1("pop", (ident, py.None()))?;
            }
        }
        Ok(())
    })();
    if let Err(e) = r {
        e.write_unraisable_bound(py, None);
    }
}

/// Interpreter exit: stop taking jobs, let idle workers go, and wait (without the GIL) for busy
/// ones to finish their call. A KeyboardInterrupt stops the wait (signals are checked every
/// 100 ms, only here); a worker still running then may be stopped by CPython when it next asks
/// for the GIL during finalization, as a daemon thread would.
#[pyfunction]
fn shutdown(py: Python<'_>) -> PyResult<()> {
    let pool = pool(py);
    pool.lock().closed = true;
    pool.work.notify_all();
    loop {
        let done = py.allow_threads(|| {
            let st = pool.lock();
            let (st, _) = pool
                .ended
                .wait_timeout_while(st, Duration::from_millis(100), |s| s.live > 0)
                .unwrap_or_else(|e| e.into_inner());
            st.live == 0
        });
        if done {
            return Ok(());
        }
        py.check_signals()?;
    }
}

/// In a forked child the parent's workers do not exist: start over with an empty pool.
#[pyfunction]
fn after_fork_in_child() {
    POOL.store(std::ptr::null_mut(), Ordering::Release);
}

/// Debugging/tests: the pool's threads and queue.
#[pyfunction]
fn blocking_pool_info(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let st = pool(py).lock();
    let d = PyDict::new_bound(py);
    d.set_item("live", st.live)?;
    d.set_item("workers", st.workers)?;
    d.set_item("idle", st.idle)?;
    d.set_item("queued", st.queue.len())?;
    d.set_item("closed", st.closed)?;
    d.set_item("max_workers", MAX_WORKERS)?;
    d.set_item("idle_timeout_s", IDLE_TIMEOUT.as_secs_f64())?;
    Ok(d.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BlockingCall>()?;
    m.add_function(wrap_pyfunction!(blocking_pool_info, m)?)?;
    m.add_function(wrap_pyfunction!(after_fork_in_child, m)?)?;
    let py = m.py();
    let hook = m.getattr("after_fork_in_child")?;
    let kw = PyDict::new_bound(py);
    kw.set_item("after_in_child", hook)?;
    py.import_bound("os")?.getattr("register_at_fork")?.call((), Some(&kw))?;
    Ok(())
}
