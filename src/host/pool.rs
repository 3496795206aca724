//! The runtime's executor for what does not run on the evaluator thread: `blocking=True`
//! externals and timers (`time.sleep` called from @poppy code), on one tokio runtime built on
//! first use (current-thread scheduler, time driver, blocking pool). No Python thread pool.
//!
//! The evaluator thread hands a call over with a `BlockingCall` future; when the call is done the
//! executor takes the GIL and hands the outcome back with `loop.call_soon_threadsafe`, which wakes
//! the evaluator's event loop (its self-pipe); the future's done-callback then stops the loop, so
//! the evaluator's `wait` returns. Nobody polls: blocking threads sleep in tokio's pool without
//! the GIL, the timer driver sleeps in tokio's time driver, the evaluator in the loop's selector.
//!
//! Blocking externals run on tokio's blocking pool (`spawn_blocking`):
//!
//! - **Size.** One thread per blocking call in flight, up to `MAX_WORKERS`
//!   (`max_blocking_threads`). Blocking externals are waits (HTTP clients, subprocesses, disk),
//!   not CPU work, so the cap bounds threads, not cores: a smaller cap (ThreadPoolExecutor's
//!   min(32, cpus + 4) is 6 on a 2-core machine) would serialise the very calls the runtime
//!   exists to overlap. Beyond the cap calls queue in FIFO order (tokio's queue).
//! - **Lifetime.** A thread that has had nothing to do for `IDLE_TIMEOUT` exits
//!   (`thread_keep_alive`). At interpreter exit (`threading._register_atexit`, as
//!   concurrent.futures does) the executor closes: it waits (without the GIL, checking for
//!   KeyboardInterrupt) for the calls handed over to finish, and then drops the runtime, whose
//!   shutdown lets idle threads go at once and joins every thread (after their `on_thread_stop`),
//!   so no thread touches Python during finalization. Tokio's shutdown alone would also wait for
//!   running calls, and its busy threads keep taking queued ones, but it cannot be interrupted and
//!   it cancels a call handed to an idle thread that has not woken up yet when shutdown begins
//!   (tokio 1.54 `blocking/pool.rs`: `shutdown_or_run_if_mandatory`). After closing, blocking
//!   externals run inline on the evaluator thread. So does a blocking call made from a pool thread (a
//!   blocking external running a @poppy function) when `MAX_WORKERS` calls are already handed
//!   over: queueing it could deadlock, every thread waiting for a call queued behind them.
//!   Exception: when the program dies of an uncaught KeyboardInterrupt (Ctrl-C) with calls still
//!   running, exit does not wait for them — plain CPython would have been interrupted inside the
//!   call — but runs the rest of the exit a program can observe and ends the process by SIGINT
//!   at once (`exit_if_interrupted`).
//! - **Thread state.** A thread keeps one Python thread state for its life: its first call's
//!   `Python::with_gil` (`PyGILState_Ensure`) creates it and the thread takes one more
//!   `PyGILState_Ensure` reference, so that every later `with_gil` reuses it instead of creating
//!   and deleting one. A callee's `threading.local` data thus survive from one call to the next
//!   like on any worker thread; `on_thread_stop` drops them (while the interpreter surely still
//!   runs) and releases the reference, which deletes the thread state.
//! - **GIL waits** (`crate::stats`). `GIL_WAIT_NS` sums, over calls, the time from a thread
//!   starting a call to it holding the GIL to run it (for a new thread, including the acquisition
//!   that creates its thread state). The result is handed back within that same hold, so delivery
//!   takes no second acquisition. Waits inside the callee (e.g. re-acquiring after `time.sleep`)
//!   are the callee's own and not counted. `HANDOFF_NS` sums the time from handing a result over
//!   to the evaluator's loop running `deliver` (the evaluator's wake-up and GIL re-acquisition,
//!   or the rest of its busy stretch if it was not waiting).
//! - **Aborted runs.** The run's futures are cancelled at once (`PyHost::finish`); a result that
//!   arrives later finds its future done and is dropped. A callee's exception is delivered as
//!   raised (with its traceback), `StopIteration` included.
//!
//! Timers: a call of the real `time.sleep` with one non-negative int or float (`timer_duration`)
//! is not run inline, which would stall the evaluator thread (no other completion processed, no
//! other call dispatched) for its whole duration: it becomes a tokio `sleep_until` task whose
//! completion is delivered like a blocking call's (result None). The call keeps its place in
//! program order (it is sequential like any unannotated call); only how it waits changes. Tokio
//! timers have millisecond granularity (deadlines rounded up to the next tick), so a timer waits
//! on tokio until the tick before its deadline and sleeps the rest (under a millisecond) on the
//! driver thread: it fires no earlier than asked, like `time.sleep`, and not a tick later.
//! `time.sleep(0)` is completed on the event loop's next turn, without a task. The
//! tasks are driven by a "poppy-timers" thread that runs the runtime's `block_on` while timers are
//! pending and exits after `IDLE_TIMEOUT` without any. Cancelling the future (an aborted run,
//! `PyHost::cancel`) aborts the task. At interpreter exit a pending timer is not waited for (a
//! daemon thread's sleep must not hold up exit): its remaining time is slept inline on its
//! evaluator thread, as if the timer had never existed.
//!
//! Controllers are not tokio tasks: the evaluator steps them (O(1) state machines on its own
//! thread, touching λO state that lives there and Python objects under the GIL it holds), so
//! moving them would add a thread hop per call and gain nothing.
use crate::pyobj::Obj;
use crate::stats::{BLOCKING_JOBS, GIL_WAIT_NS, HANDOFF_NS, TIMER_TASKS};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyCFunction, PyDict, PyFloat, PyLong, PyTuple};
use std::collections::HashMap;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// Most blocking threads at once, by default (a setting: `set_blocking_threads`, the config's
/// `[poppy] blocking_threads`, PYTHONPOPPY_BLOCKING_THREADS).
pub const MAX_WORKERS: usize = 32;
static MAX_WORKERS_SET: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The cap in effect: the setting, else PYTHONPOPPY_BLOCKING_THREADS, else `MAX_WORKERS`. Read
/// once when the runtime is built (later changes do not resize a running pool).
pub fn max_workers() -> usize {
    match MAX_WORKERS_SET.load(Ordering::Relaxed) {
        0 => {
            let n = std::env::var("PYTHONPOPPY_BLOCKING_THREADS")
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|n| (1..=4096).contains(n))
                .unwrap_or(MAX_WORKERS);
            MAX_WORKERS_SET.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

/// Set the blocking pool's cap; False when the pool is already built with another one.
#[pyfunction]
fn set_blocking_threads(n: usize) -> PyResult<bool> {
    if !(1..=4096).contains(&n) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!("blocking_threads must be from 1 to 4096 (got {n})")));
    }
    if current().is_some() {
        return Ok(max_workers() == n);
    }
    MAX_WORKERS_SET.store(n, Ordering::Relaxed);
    Ok(true)
}
/// A blocking thread (or the timer driver) idle this long exits.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(2);
/// The granularity of tokio's timers.
const TIMER_TICK: Duration = Duration::from_millis(1);
/// Longest `time.sleep` run as a timer (tokio caps a sleep at about 2.2 years); longer ones run
/// inline, as they would without poppy.
const MAX_TIMER_SECS: f64 = 1e7;

struct Job {
    func: Obj,
    args: Py<PyTuple>,
    kwargs: Option<Py<PyDict>>,
    loop_: Obj,
    fut: Py<BlockingCall>,
    /// The exception being handled by the `except` handler that made the call, set as the
    /// worker thread's handled exception while the call runs (`handling.rs`).
    handling: Option<Obj>,
}

/// A job on its way to a blocking thread. Taken by whoever runs it: the thread, or the evaluator
/// when tokio could not start a thread (then the call runs inline and the queued task finds
/// nothing to do).
type JobSlot = Arc<Mutex<Option<Job>>>;

/// A pending timer; its Python objects are only touched (and released) under the GIL.
struct Timer {
    loop_: Obj,
    fut: Py<BlockingCall>,
    deadline: Instant,
    abort: AbortHandle,
}

#[derive(Default)]
struct State {
    /// Interpreter exit began: no new calls or timers.
    closed: bool,
    /// Blocking calls handed to tokio and not finished (queued or running).
    busy: usize,
    /// Of those, the ones a thread is running.
    running: usize,
    /// Blocking threads that exist (on_thread_start .. the end of on_thread_stop).
    live: usize,
    /// Pending timers by id.
    timers: HashMap<u64, Timer>,
    next_timer: u64,
    /// A timer driver thread runs (or is starting).
    driver: bool,
    /// Driver threads not joined yet (finished ones are joined when the next one starts).
    drivers: Vec<std::thread::JoinHandle<()>>,
    /// The runtime; taken (and dropped) when the executor closes.
    runtime: Option<Arc<Runtime>>,
}

/// Lock order: the GIL before `state`, never the other way round (nobody waits for the GIL while
/// holding `state`, and no Python object is released while holding it: its `__del__` could
/// release the GIL to a thread that then waits for `state`).
struct Exec {
    state: Mutex<State>,
    /// Signalled when `busy` drops to zero.
    idle: Condvar,
    /// Wakes the timer driver (the executor is closing).
    wake: Notify,
    handle: OnceLock<Handle>,
}

impl Exec {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock; recover regardless.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handle(&self) -> &Handle {
        self.handle.get().expect("runtime built")
    }

    /// A blocking call handed over is finished (its outcome delivered).
    fn job_done(&self, ran: bool) {
        let mut st = self.lock();
        st.busy -= 1;
        if ran {
            st.running -= 1;
        }
        if st.busy == 0 {
            self.idle.notify_all();
        }
    }
}

/// The current executor; replaced by a fresh one in a forked child (the parent's threads do not
/// exist there). Executors are leaked: the runtime's threads hold `&'static` to theirs.
static EXEC: AtomicPtr<Exec> = AtomicPtr::new(std::ptr::null_mut());

fn current() -> Option<&'static Exec> {
    let p = EXEC.load(Ordering::Acquire);
    // SAFETY: executors are leaked, never freed.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The current executor, built on first use (under the GIL, so two threads never race to build
/// it). Building a current-thread runtime starts no thread.
fn exec(py: Python<'_>) -> PyResult<&'static Exec> {
    if let Some(e) = current() {
        return Ok(e);
    }
    let e: &'static Exec = Box::leak(Box::new(Exec {
        state: Mutex::new(State::default()),
        idle: Condvar::new(),
        wake: Notify::new(),
        handle: OnceLock::new(),
    }));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .max_blocking_threads(max_workers())
        .thread_keep_alive(IDLE_TIMEOUT)
        .thread_name("poppy-blocking")
        .thread_stack_size(stack_size(py))
        .on_thread_start(move || thread_started(e))
        .on_thread_stop(move || thread_stopping(e))
        .build()
        .map_err(|err| pyo3::exceptions::PyRuntimeError::new_err(format!("poppy_jit: cannot build the runtime: {err}")))?;
    let _ = e.handle.set(rt.handle().clone());
    e.lock().runtime = Some(Arc::new(rt));
    EXEC.store(e as *const Exec as *mut Exec, Ordering::Release);
    register_exit_hook(py, e)?;
    Ok(e)
}

/// Thread stack size: `threading.stack_size()` when set (read when the runtime is built), else
/// 8 MiB, the usual size of a Python thread's stack on Linux (Rust's default, 2 MiB, is less than
/// C-level recursion in a callee, e.g. `json.dumps` of deeply nested data, may need).
fn stack_size(py: Python<'_>) -> usize {
    const DEFAULT: usize = 8 << 20;
    py.import_bound("threading")
        .and_then(|t| t.call_method0("stack_size"))
        .and_then(|s| s.extract::<usize>())
        .ok()
        .filter(|&s| s > 0)
        .unwrap_or(DEFAULT)
}

/// The current executor's exit hook (its address: `threading._threading_atexits` holds it).
static EXIT_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Close the executor when the interpreter exits, before finalization (threading._shutdown runs
/// these hooks, as it does for concurrent.futures).
fn register_exit_hook(py: Python<'_>, e: &'static Exec) -> PyResult<()> {
    let hook = wrap_pyfunction_bound!(shutdown, py)?;
    EXIT_HOOK.store(hook.as_ptr() as usize, Ordering::Relaxed);
    let threading = py.import_bound("threading")?;
    let registered = match threading.getattr("_register_atexit") {
        Ok(reg) => reg.call1((hook,)).is_ok(),
        Err(_) => py.import_bound("atexit")?.call_method1("register", (hook,)).is_ok(),
    };
    if !registered {
        // Exit already began (`_register_atexit` refuses then): take nothing.
        e.lock().closed = true;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Blocking calls

thread_local! {
    /// This thread is one of the runtime's blocking threads.
    static IS_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The `PyGILState_Ensure` reference that keeps this thread's Python thread state alive.
    static KEPT: std::cell::Cell<Option<pyo3::ffi::PyGILState_STATE>> = const { std::cell::Cell::new(None) };
}

fn thread_started(e: &'static Exec) {
    IS_WORKER.with(|w| w.set(true));
    e.lock().live += 1;
}

fn thread_stopping(e: &'static Exec) {
    let Some(kept) = KEPT.with(|k| k.take()) else {
        // Never ran a call: it has no Python thread state.
        e.lock().live -= 1;
        return;
    };
    Python::with_gil(|py| {
        forget_thread(py);
        // Drop this thread's Python thread-local data (threading.local values, e.g. the event
        // loop of a @poppy run made by a callee) while it still counts as live: their __del__
        // may run Python code and let the GIL go. Once `live` says this thread is gone (or the
        // runtime's shutdown has returned), the interpreter may be finalizing, and taking the
        // GIL again would kill the thread (pthread_exit through Rust frames: abort). Deleting the
        // thread state afterwards (end of with_gil) frees nothing that runs Python code.
        // SAFETY: the GIL is held and `kept` is this thread's own outstanding reference.
        unsafe {
            let d = pyo3::ffi::PyThreadState_GetDict();
            if !d.is_null() {
                pyo3::ffi::PyDict_Clear(d);
            }
            pyo3::ffi::PyGILState_Release(kept);
        }
        e.lock().live -= 1;
    });
}

/// Take one more reference to this thread's Python thread state (called with the GIL held), so
/// that it outlives the current `with_gil`.
fn keep_thread_state() {
    KEPT.with(|k| {
        if k.get().is_none() {
            // SAFETY: the GIL is held by this thread: this only increments its state's count.
            k.set(Some(unsafe { pyo3::ffi::PyGILState_Ensure() }));
        }
    });
}

/// Hand `func(*args, **kwargs)` to a blocking thread; its outcome completes `fut` (a future of
/// `loop_`). Returns false when the executor takes no calls (interpreter exit began, the caller is
/// a blocking thread and every thread is taken, or no thread could be started): the caller then
/// runs the call itself.
pub fn submit(
    py: Python<'_>,
    func: &Bound<'_, PyAny>,
    args: Bound<'_, PyTuple>,
    kwargs: Option<Bound<'_, PyDict>>,
    loop_: &Bound<'_, PyAny>,
    fut: &Bound<'_, BlockingCall>,
    handling: Option<&Obj>,
) -> PyResult<bool> {
    let e = exec(py)?;
    {
        let mut st = e.lock();
        if st.closed {
            return Ok(false);
        }
        if st.busy >= max_workers() && IS_WORKER.with(|w| w.get()) {
            // A blocking external running a @poppy function that makes blocking calls, with
            // every thread taken: queueing could wait for this very thread (all of them could be
            // doing the same). Run it here instead.
            return Ok(false);
        }
        st.busy += 1;
    }
    let job = Job {
        func: func.clone().unbind(),
        args: args.unbind(),
        kwargs: kwargs.map(|k| k.unbind()),
        loop_: loop_.clone().unbind(),
        fut: fut.clone().unbind(),
        handling: handling.map(|e| e.clone_ref(py)),
    };
    let slot: JobSlot = Arc::new(Mutex::new(Some(job)));
    let theirs = slot.clone();
    // tokio panics when the OS refuses the first thread (the task stays queued for a thread that
    // may come later; it will find the slot empty).
    let spawned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(e.handle().spawn_blocking(move || run_on_worker(e, theirs)));
    }));
    if spawned.is_err() {
        let job = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        if job.is_some() {
            e.job_done(false);
            drop(job);
            return Ok(false);
        }
    }
    Ok(true)
}

fn run_on_worker(e: &'static Exec, slot: JobSlot) {
    let got = Instant::now();
    Python::with_gil(|py| {
        GIL_WAIT_NS.fetch_add(got.elapsed().as_nanos() as u64, Ordering::Relaxed);
        keep_thread_state();
        let Some(job) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        BLOCKING_JOBS.fetch_add(1, Ordering::Relaxed);
        e.lock().running += 1;
        run_job(py, job);
        e.job_done(true);
    });
}

fn run_job(py: Python<'_>, job: Job) {
    let outcome = super::handling::with_handled(py, job.handling.as_ref(), || {
        job.func.bind(py).call(job.args.bind(py), job.kwargs.as_ref().map(|k| k.bind(py)))
    });
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

// ---------------------------------------------------------------------------------------------
// Timers

/// The interpreter's own `time.sleep`, recorded when `_core` is imported (a later replacement of
/// `time.sleep` is an ordinary callee); None if `time.sleep` was already replaced then.
fn real_sleep(py: Python<'_>) -> Option<&Obj> {
    static SLEEP: GILOnceCell<Option<Obj>> = GILOnceCell::new();
    SLEEP
        .get_or_init(py, || {
            let time = py.import_bound("time").ok()?;
            let f = time.getattr("sleep").ok()?;
            let own = f.is_instance_of::<PyCFunction>()
                && f.getattr("__self__").is_ok_and(|m| m.is(&time))
                && f.getattr("__name__").is_ok_and(|n| n.eq("sleep").unwrap_or(false));
            own.then(|| f.unbind())
        })
        .as_ref()
}

/// How long a call `f(*args)` sleeps, if it is a call of the real `time.sleep` with one
/// non-negative int or float (finite, at most `MAX_TIMER_SECS`) and no keywords. Anything else
/// (including what makes `time.sleep` raise) is None: the call runs inline, as without poppy.
pub fn timer_duration(py: Python<'_>, f: &Obj, args: &[Obj], kwnames: &[String]) -> Option<Duration> {
    if !f.is(real_sleep(py)?) || args.len() != 1 || !kwnames.is_empty() {
        return None;
    }
    let a = args[0].bind(py);
    let secs = if a.is_exact_instance_of::<PyFloat>() {
        a.extract::<f64>().ok()?
    } else if a.is_exact_instance_of::<PyLong>() {
        a.extract::<u64>().ok()? as f64
    } else {
        return None;
    };
    // (NaN fails both comparisons.)
    (0.0..=MAX_TIMER_SECS).contains(&secs).then(|| Duration::from_secs_f64(secs))
}

/// Start a timer that completes `fut` (a future of `loop_`) with None after `dur` (the timer
/// task is driven by the tokio runtime; zero completes on the loop's next turn). Returns false
/// when the executor takes no timers (interpreter exit began, or no driver thread could be
/// started): the caller then sleeps inline.
pub fn start_timer(py: Python<'_>, dur: Duration, loop_: &Bound<'_, PyAny>, fut: &Bound<'_, BlockingCall>) -> PyResult<bool> {
    if dur.is_zero() {
        // `time.sleep(0)`, a yield: completed on the loop's next turn (a tokio timer would
        // round it up to the next millisecond tick).
        if current().is_some_and(|e| e.lock().closed) {
            return Ok(false);
        }
        loop_.call_method1("call_soon", (deliver_fn(py)?, fut, true, py.None(), py.None()))?;
        TIMER_TASKS.fetch_add(1, Ordering::Relaxed);
        return Ok(true);
    }
    let e = exec(py)?;
    let mut st = e.lock();
    if st.closed {
        return Ok(false);
    }
    if !st.driver {
        let Some(rt) = st.runtime.clone() else { return Ok(false) };
        // Join drivers that have ended (they did so after finding no timers for a while).
        let (ended, running): (Vec<_>, Vec<_>) = std::mem::take(&mut st.drivers).into_iter().partition(|d| d.is_finished());
        st.drivers = running;
        let started = std::thread::Builder::new().name("poppy-timers".into()).spawn(move || drive_timers(e, rt));
        match started {
            Ok(d) => st.drivers.push(d),
            Err(_) => return Ok(false),
        }
        st.driver = true;
        for d in ended {
            let _ = d.join();
        }
    }
    let id = st.next_timer;
    st.next_timer += 1;
    let deadline = Instant::now() + dur;
    let task = e.handle().spawn(async move {
        // Tokio's timer wheel ticks in milliseconds and rounds deadlines up to the next tick, so
        // a sleep would end 1-2 ms late: wait for the tick before the deadline, then the rest
        // (less than a tick) on this thread.
        let coarse = deadline.checked_sub(TIMER_TICK).unwrap_or(deadline);
        tokio::time::sleep_until(tokio::time::Instant::from_std(coarse)).await;
        let rest = deadline.saturating_duration_since(Instant::now());
        if !rest.is_zero() {
            std::thread::sleep(rest);
        }
        fire(e, id);
    });
    st.timers.insert(id, Timer { loop_: loop_.clone().unbind(), fut: fut.clone().unbind(), deadline, abort: task.abort_handle() });
    drop(st);
    fut.borrow_mut().timer = Some(id);
    TIMER_TASKS.fetch_add(1, Ordering::Relaxed);
    Ok(true)
}

/// A timer is due: deliver None to its future (unless it was cancelled meanwhile).
fn fire(e: &'static Exec, id: u64) {
    Python::with_gil(|py| {
        let t = e.lock().timers.remove(&id);
        let Some(t) = t else { return };
        let Ok(deliver) = deliver_fn(py) else { return };
        // A closed loop (its thread ended) raises: nobody waits for this result any more.
        let _ = t.loop_.bind(py).call_method1("call_soon_threadsafe", (deliver, &t.fut, true, py.None(), py.None()));
    });
}

/// The timer driver: runs the runtime's timer tasks while there are any, and exits once none has
/// been pending for `IDLE_TIMEOUT` or the executor closes.
fn drive_timers(e: &'static Exec, rt: Arc<Runtime>) {
    rt.block_on(async {
        loop {
            let woken = tokio::time::timeout(IDLE_TIMEOUT, e.wake.notified()).await.is_ok();
            let mut st = e.lock();
            if st.closed || (!woken && st.timers.is_empty()) {
                st.driver = false;
                return;
            }
        }
    });
}

/// Remove a pending timer and abort its task. Returns it (to be released under the GIL, after the
/// state lock) if it had not fired yet.
fn take_timer(id: u64) -> Option<Timer> {
    let e = current()?;
    let t = e.lock().timers.remove(&id)?;
    t.abort.abort();
    Some(t)
}

/// `PyHost::cancel` of a call in flight: a timer is stopped and its future reports
/// CancelledError (like a cancelled asyncio task, on the loop's next iteration); a blocking call
/// runs to completion and reports as usual.
pub fn interrupt(call: &Bound<'_, BlockingCall>, loop_: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = call.py();
    let Some(id) = call.borrow_mut().timer.take() else { return Ok(()) };
    if take_timer(id).is_some() {
        let err = pyo3::exceptions::asyncio::CancelledError::new_err(()).into_value(py);
        loop_.call_method1("call_soon", (deliver_fn(py)?, call, false, err, py.None()))?;
    }
    Ok(())
}

/// Interpreter exit, for a timer still pending: sleep the rest inline on the evaluator's thread
/// (runs on its loop), then complete the call.
#[pyfunction]
fn finish_sleep(call: &Bound<'_, BlockingCall>, secs: f64) -> PyResult<()> {
    if call.borrow().done() {
        return Ok(());
    }
    let py = call.py();
    match real_sleep(py) {
        Some(sleep) => sleep.call1(py, (secs,))?,
        None => py.import_bound("time")?.call_method1("sleep", (secs,))?.unbind(),
    };
    deliver(call, true, py.None(), None);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Futures and delivery

/// The future of one blocking call or timer, completed on the evaluator's loop thread. Not an asyncio
/// future: those refuse `StopIteration` as an exception, which a plain call may raise; the host
/// only needs `add_done_callback`, `cancel`, `cancelled`, `exception` and `result`.
#[pyclass(module = "poppy_jit._core")]
pub struct BlockingCall {
    state: CallState,
    callbacks: Vec<Obj>,
    /// The id of its timer while that is pending (a timer's future).
    timer: Option<u64>,
}

enum CallState {
    Pending,
    Cancelled,
    Returned(Obj),
    Raised(Obj),
}

impl BlockingCall {
    pub fn new() -> Self {
        BlockingCall { state: CallState::Pending, callbacks: Vec::new(), timer: None }
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

    /// Give up on the call (an aborted run): its result will be dropped, a timer is stopped.
    /// Callbacks are not run (the run that registered them is over).
    fn cancel(&mut self) -> bool {
        if let CallState::Pending = self.state {
            self.state = CallState::Cancelled;
            let callbacks = std::mem::take(&mut self.callbacks);
            let timer = self.timer.take().and_then(take_timer);
            // (released after the state is final: their __del__ may run Python code)
            drop(callbacks);
            drop(timer);
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
/// a blocking thread handed the outcome over (`since_anchor`); None for timers.
#[pyfunction]
#[pyo3(signature = (call, ok, value, sent))]
fn deliver(call: &Bound<'_, BlockingCall>, ok: bool, value: Obj, sent: Option<u64>) {
    let callbacks = {
        let mut c = call.borrow_mut();
        if c.done() {
            return; // cancelled by an aborted run: the result is dropped
        }
        if let Some(sent) = sent {
            HANDOFF_NS.fetch_add(since_anchor().saturating_sub(sent), Ordering::Relaxed);
        }
        c.state = if ok { CallState::Returned(value) } else { CallState::Raised(value) };
        c.timer = None;
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

/// Interpreter exit: close the executor. Pending timers are handed back to their evaluator
/// threads (`finish_sleep`); the wait (without the GIL) is for the blocking calls handed over,
/// then the runtime is dropped, which lets idle threads go and joins every thread. A
/// KeyboardInterrupt stops the wait (signals are checked every 100 ms, only here); a thread still
/// running a call then may be stopped by CPython when it next asks for the GIL during
/// finalization, as a daemon thread would.
#[pyfunction]
fn shutdown(py: Python<'_>) -> PyResult<()> {
    let Some(e) = current() else { return Ok(()) };
    let timers: Vec<Timer> = {
        let mut st = e.lock();
        st.closed = true;
        st.timers.drain().map(|(_, t)| t).collect()
    };
    // The driver exits (it checks `closed` whenever it wakes).
    e.wake.notify_waiters();
    e.wake.notify_one();
    let now = Instant::now();
    for t in timers {
        t.abort.abort();
        let rest = t.deadline.saturating_duration_since(now).as_secs_f64();
        let finish = wrap_pyfunction_bound!(finish_sleep, py)?;
        // A closed loop (its thread ended) raises: nobody waits for this result any more.
        let _ = t.loop_.bind(py).call_method1("call_soon_threadsafe", (finish, &t.fut, rest));
    }
    if e.lock().busy > 0 {
        exit_if_interrupted(py)?;
    }
    loop {
        let done = py.allow_threads(|| {
            let st = e.lock();
            let (st, _) = e
                .idle
                .wait_timeout_while(st, Duration::from_millis(100), |s| s.busy > 0)
                .unwrap_or_else(|p| p.into_inner());
            st.busy == 0
        });
        if done {
            break;
        }
        py.check_signals()?;
    }
    let (rt, drivers) = {
        let mut st = e.lock();
        (st.runtime.take(), std::mem::take(&mut st.drivers))
    };
    // Without the GIL: exiting threads take it to release their thread state.
    py.allow_threads(move || {
        for d in drivers {
            let _ = d.join();
        }
        drop(rt);
    });
    Ok(())
}

/// The interpreter is exiting because of an uncaught KeyboardInterrupt (Ctrl-C) while blocking
/// calls still run on the pool's threads: exit as CPython would, now. Plain CPython made those
/// calls on the main thread, where Ctrl-C interrupted them; threads cannot be interrupted, and
/// waiting for them would hold exit for as long as they take. Letting finalization go on without
/// them is not possible either: a thread that takes the GIL once finalization began is ended by
/// CPython with `pthread_exit`, which aborts the process when it unwinds through the Rust frames
/// of a pool thread. So this does what is left of CPython's exit that a program can observe —
/// the other threading exit hooks, the `atexit` handlers, flushing stdout and stderr — and then
/// ends the process by SIGINT as CPython does after an unhandled KeyboardInterrupt (exit status
/// -SIGINT, 130 in a shell), skipping only finalization (module teardown, which cannot run
/// safely while the calls are in flight). Anything else — a normal exit, `sys.exit`, another
/// non-daemon thread still running — returns, and exit waits for the calls as before.
fn exit_if_interrupted(py: Python<'_>) -> PyResult<()> {
    let sys = py.import_bound("sys")?;
    let Ok(last) = sys.getattr("last_type") else { return Ok(()) };
    let ki = py.get_type_bound::<pyo3::exceptions::PyKeyboardInterrupt>();
    let uncaught_interrupt = last
        .downcast::<pyo3::types::PyType>()
        .map(|t| t.is_subclass(&ki).unwrap_or(false))
        .unwrap_or(false);
    if !uncaught_interrupt {
        return Ok(());
    }
    let threading = py.import_bound("threading")?;
    let main = threading.call_method0("main_thread")?;
    let dummy = threading.getattr("_DummyThread")?;
    for t in threading.call_method0("enumerate")?.iter()? {
        let t = t?;
        if !t.is(&main) && !t.is_instance(&dummy)? && !t.getattr("daemon")?.is_truthy()? {
            return Ok(()); // CPython would join it first
        }
    }
    // threading._shutdown runs its hooks last-registered first: the ones before ours are still
    // to run.
    let ours = EXIT_HOOK.load(Ordering::Relaxed);
    if let Ok(hooks) = threading.getattr("_threading_atexits") {
        let hooks: Vec<Bound<'_, PyAny>> = hooks.iter()?.collect::<PyResult<_>>()?;
        if let Some(k) = hooks.iter().position(|h| h.as_ptr() as usize == ours) {
            for h in hooks[..k].iter().rev() {
                if let Err(err) = h.call0() {
                    err.write_unraisable_bound(py, Some(h));
                }
            }
        }
    }
    py.import_bound("atexit")?.call_method0("_run_exitfuncs")?;
    for name in ["stdout", "stderr"] {
        if let Ok(f) = sys.getattr(name) {
            if !f.is_none() {
                let _ = f.call_method0("flush");
            }
        }
    }
    let signal = py.import_bound("signal")?;
    let os = py.import_bound("os")?;
    let sigint = signal.getattr("SIGINT")?;
    signal.call_method1("signal", (&sigint, signal.getattr("SIG_DFL")?))?;
    os.call_method1("kill", (os.call_method0("getpid")?, &sigint))?;
    // Not reached (the default action of SIGINT ends the process); as CPython's fallback:
    os.call_method1("_exit", (130,))?;
    Ok(())
}

/// In a forked child the parent's threads do not exist: start over with a fresh executor (the
/// parent's is abandoned, never dropped: dropping its runtime would wait for those threads).
#[pyfunction]
fn after_fork_in_child() {
    EXEC.store(std::ptr::null_mut(), Ordering::Release);
}

/// Debugging/tests: the executor's threads, calls and timers.
#[pyfunction]
fn blocking_pool_info(py: Python<'_>) -> PyResult<Py<PyDict>> {
    let d = PyDict::new_bound(py);
    let (live, busy, running, timers, driver, closed) = match current() {
        Some(e) => {
            let st = e.lock();
            (st.live, st.busy, st.running, st.timers.len(), st.driver, st.closed)
        }
        None => (0, 0, 0, 0, false, false),
    };
    d.set_item("live", live)?;
    d.set_item("workers", live)?;
    d.set_item("idle", live.saturating_sub(running))?;
    d.set_item("running", running)?;
    d.set_item("queued", busy - running)?;
    d.set_item("closed", closed)?;
    d.set_item("timers", timers)?;
    d.set_item("timer_driver", driver)?;
    d.set_item("max_workers", max_workers())?;
    d.set_item("idle_timeout_s", IDLE_TIMEOUT.as_secs_f64())?;
    Ok(d.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BlockingCall>()?;
    m.add_function(wrap_pyfunction!(blocking_pool_info, m)?)?;
    m.add_function(wrap_pyfunction!(set_blocking_threads, m)?)?;
    m.add_function(wrap_pyfunction!(after_fork_in_child, m)?)?;
    let py = m.py();
    // Record the real time.sleep now, before anything can replace it.
    let _ = real_sleep(py);
    let hook = m.getattr("after_fork_in_child")?;
    let kw = PyDict::new_bound(py);
    kw.set_item("after_in_child", hook)?;
    py.import_bound("os")?.getattr("register_at_fork")?.call((), Some(&kw))?;
    Ok(())
}
