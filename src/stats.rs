//! Counters kept by every layer (exposed as `poppy_jit.stats()`, built in `api`): the counters
//! of one λO run (`RunStats`), the process-wide totals of compiling and running (`Totals`) and the
//! executor's atomics (`worker_totals`). Plain Rust: no Python objects, no other room but the
//! reordering class.
use crate::control::Class;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Nanoseconds the runtime's blocking threads (src/host/pool.rs) waited to acquire the GIL before
/// running a blocking external. Atomic: workers add to it before they hold the GIL.
pub static GIL_WAIT_NS: AtomicU64 = AtomicU64::new(0);
/// Blocking externals run by the blocking threads.
pub static BLOCKING_JOBS: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds from a blocking thread handing a result to the evaluator's event loop to the loop running
/// the completion (the evaluator thread's wake-up, mostly its wait to re-acquire the GIL).
pub static HANDOFF_NS: AtomicU64 = AtomicU64::new(0);

/// `time.sleep` calls from @poppy code run as timer tasks (src/host/pool.rs) instead of inline.
pub static TIMER_TASKS: AtomicU64 = AtomicU64::new(0);

/// Totals of the runtime's executor (blocking calls, timers) since the last reset.
pub struct WorkerTotals {
    pub gil_wait_ns: u64,
    pub jobs: u64,
    pub handoff_ns: u64,
    pub timers: u64,
}

pub fn worker_totals() -> WorkerTotals {
    WorkerTotals {
        gil_wait_ns: GIL_WAIT_NS.load(Ordering::Relaxed),
        jobs: BLOCKING_JOBS.load(Ordering::Relaxed),
        handoff_ns: HANDOFF_NS.load(Ordering::Relaxed),
        timers: TIMER_TASKS.load(Ordering::Relaxed),
    }
}

pub fn reset_worker_totals() {
    GIL_WAIT_NS.store(0, Ordering::Relaxed);
    BLOCKING_JOBS.store(0, Ordering::Relaxed);
    HANDOFF_NS.store(0, Ordering::Relaxed);
    TIMER_TASKS.store(0, Ordering::Relaxed);
}

/// Counters of one λO run (merged into the process-wide totals when the run ends).
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Internal steps: alias, call, projection, tuple/fun/prim binding, ite, fold, memory ops.
    pub reductions: u64,
    /// Calls of internal (@poppy) functions inlined by `xcall`.
    pub inlined_calls: u64,
    /// External calls dispatched, by class: [unordered, readonly, sequential].
    pub dispatched: [u64; 3],
    /// Most external calls running at once.
    pub peak_in_flight: u64,
    /// Sum over external calls of the time between "arguments ready" and dispatch (controller wait).
    pub queue_wait_ns: u64,
    /// Most λO variables (slots) alive at once in one run (reclaimed ones not counted).
    pub peak_slots: u64,
    /// External calls whose result was a λO expression (instantiated in place of a value).
    pub term_resolutions: u64,
    /// Running external calls cancelled because an earlier call in program order failed.
    pub cancelled_calls: u64,
    /// Unordered calls started speculatively ahead of an earlier loop iteration of a try or
    /// with body that turned out to raise: CPython never made them (issue 16 allows them; they
    /// ran to completion, not cancelled). Their place in program order never became known.
    pub speculative_calls: u64,
    /// Operations on containers the run created, ordered against their object only.
    pub object_local_calls: u64,
    /// Calls that gave such an object to anything else (from then on it follows the global order).
    pub object_escapes: u64,
    /// Times a fold stopped instantiating iterations at the bound on live variables (resumed
    /// once they fell: memory of long loops stays bounded).
    pub fold_parks: u64,
}

impl RunStats {
    fn dispatch_index(class: Class) -> usize {
        match class {
            Class::Unordered => 0,
            Class::Readonly => 1,
            Class::Sequential => 2,
        }
    }

    pub fn count_dispatch(&mut self, class: Class) {
        self.dispatched[Self::dispatch_index(class)] += 1;
    }

    /// External calls of `class` dispatched.
    pub fn dispatched_of(&self, class: Class) -> u64 {
        self.dispatched[Self::dispatch_index(class)]
    }

    pub fn merge(&mut self, o: &RunStats) {
        self.reductions += o.reductions;
        self.inlined_calls += o.inlined_calls;
        for i in 0..3 {
            self.dispatched[i] += o.dispatched[i];
        }
        self.peak_in_flight = self.peak_in_flight.max(o.peak_in_flight);
        self.queue_wait_ns += o.queue_wait_ns;
        self.peak_slots = self.peak_slots.max(o.peak_slots);
        self.term_resolutions += o.term_resolutions;
        self.cancelled_calls += o.cancelled_calls;
        self.speculative_calls += o.speculative_calls;
        self.object_local_calls += o.object_local_calls;
        self.object_escapes += o.object_escapes;
        self.fold_parks += o.fold_parks;
    }
}

/// Process-wide counters of compiling and running @poppy functions since the last reset.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// The runs' own counters, merged.
    pub run: RunStats,
    pub runs: u64,
    pub functions_compiled: u64,
    /// Translation time, compiled or not.
    pub compile_ns: u64,
    /// Wall time of runs (including waiting for externals).
    pub runtime_ns: u64,
    /// CPU time of the calling thread during runs (evaluator, controllers, sync externals).
    pub runtime_cpu_ns: u64,
    /// (function, reason) of each function that runs plainly.
    pub fallbacks: Vec<(String, String)>,
    /// Each translation attempt: qualname, nanoseconds, compiled (false: fell back).
    pub compile_times: Vec<(String, u64, bool)>,
    /// Frames run plainly because a λO run was already in progress on their thread.
    pub declined_nested: u64,
}

/// Only touched with the GIL held, so the lock is never contended; a mutex rather than a
/// GIL-bound cell keeps this room free of Python.
static TOTALS: Mutex<Option<Totals>> = Mutex::new(None);

fn with_totals<R>(f: impl FnOnce(&mut Totals) -> R) -> R {
    let mut t = TOTALS.lock().unwrap_or_else(PoisonError::into_inner);
    f(t.get_or_insert_with(Totals::default))
}

/// One translation attempt of `function`, taking `ns`; `fallback` is the reason it failed.
pub fn record_compile(function: String, ns: u64, fallback: Option<&str>) {
    with_totals(|t| {
        t.compile_ns += ns;
        match fallback {
            None => {
                t.functions_compiled += 1;
                t.compile_times.push((function, ns, true));
            }
            Some(reason) => {
                t.compile_times.push((function.clone(), ns, false));
                t.fallbacks.push((function, reason.to_string()));
            }
        }
    });
}

/// A @poppy function that runs plainly for a reason found outside translation.
pub fn record_fallback(function: String, reason: String) {
    with_totals(|t| t.fallbacks.push((function, reason)));
}

/// Like `record_fallback`, unless the same (function, reason) is recorded already (a reason found
/// at each call, e.g. a callee that cannot be inlined).
pub fn record_fallback_once(function: String, reason: String) {
    with_totals(|t| {
        if !t.fallbacks.iter().any(|(f, r)| *f == function && *r == reason) {
            t.fallbacks.push((function, reason));
        }
    });
}

/// One finished λO run: its counters, wall and CPU nanoseconds.
pub fn record_run(run: &RunStats, wall_ns: u64, cpu_ns: u64) {
    with_totals(|t| {
        t.run.merge(run);
        t.runs += 1;
        t.runtime_ns += wall_ns;
        t.runtime_cpu_ns += cpu_ns;
    });
}

/// A frame run plainly because a λO run was in progress on its thread.
pub fn record_declined_nested() {
    with_totals(|t| t.declined_nested += 1);
}

/// A copy of the totals.
pub fn totals() -> Totals {
    with_totals(|t| t.clone())
}

/// Zero every counter: the totals and the executor's.
pub fn reset() {
    with_totals(|t| *t = Totals::default());
    reset_worker_totals();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_record_and_reset() {
        reset();
        record_compile("f".into(), 10, None);
        record_compile("g".into(), 5, Some("why"));
        record_fallback("h".into(), "plain".into());
        let mut run = RunStats::default();
        run.count_dispatch(Class::Readonly);
        record_run(&run, 7, 3);
        record_declined_nested();
        let t = totals();
        assert_eq!((t.functions_compiled, t.compile_ns, t.runs, t.runtime_ns, t.runtime_cpu_ns), (1, 15, 1, 7, 3));
        assert_eq!(t.compile_times, vec![("f".into(), 10, true), ("g".into(), 5, false)]);
        assert_eq!(t.fallbacks, vec![("g".into(), "why".into()), ("h".into(), "plain".into())]);
        assert_eq!((t.run.dispatched_of(Class::Readonly), t.run.dispatched_of(Class::Sequential)), (1, 0));
        assert_eq!(t.declined_nested, 1);
        reset();
        assert_eq!(totals().runs, 0);
    }
}
