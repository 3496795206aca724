//! Counters kept by every layer (exposed as `poppy_jit.stats()`).
use crate::control::Class;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// Operations on containers the run created, ordered against their object only.
    pub object_local_calls: u64,
    /// Calls that gave such an object to anything else (from then on it follows the global order).
    pub object_escapes: u64,
}

impl RunStats {
    pub fn count_dispatch(&mut self, class: Class) {
        let i = match class {
            Class::Unordered => 0,
            Class::Readonly => 1,
            Class::Sequential => 2,
        };
        self.dispatched[i] += 1;
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
        self.object_local_calls += o.object_local_calls;
        self.object_escapes += o.object_escapes;
    }
}
