//! The state of a run's controllers, as data: the identifiers the controllers and the evaluator
//! share, a controller's record (`Ctrl`) and life (`Phase`), per-object ordering's record
//! (`ObjInfo`), and the table of a run's controllers (`Controllers`) with its futures.
//! The bottom of the room: every other module of `control` uses it; it uses none of them.
use super::{Class, FutId, Futures, Token};
use std::collections::HashMap;
use std::ops::{Index, IndexMut};
use std::time::Instant;

/// A variable of the evaluator (opaque here).
pub type SlotId = usize;
/// A work item of the evaluator (opaque here): what futures and variables wake.
pub type WorkId = usize;

/// A controller, by its index in the run's `Controllers` (also the call's host task id).
pub type CtrlId = usize;

/// No controller (`Controllers::fut_owner`).
const NONE: u32 = u32::MAX;

/// Where a controller is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for the callee itself (it may still turn out to be an internal function).
    WaitCallee,
    /// The callee was internal: its body runs; waiting for the body's result tuple.
    Inlined { ret: SlotId },
    /// The callee was internal: passing the body's final order on as this call's F_R'/F_W'.
    InlinedOrder { seq: SlotId },
    /// Waiting for the callee's arguments.
    WaitArgs,
    /// Class known; waiting for the order its class requires.
    WaitOrder,
    /// Dispatched, not finished.
    Running,
    /// Finished successfully; resolving F_R'/F_W'.
    Completed,
    /// Nothing left to do: outputs resolved, or the call failed / can never run.
    Finished,
}

/// One queued call.
pub struct Ctrl<P> {
    pub seq: SlotId,
    /// The callee's slot and, once known, its value.
    pub callee: SlotId,
    /// Source line of the call (0 when unknown).
    pub line: u32,
    pub func: Option<P>,
    pub args: Vec<SlotId>,
    pub kwnames: Vec<String>,
    pub result: SlotId,
    pub out: Token,
    pub phase: Phase,
    pub class: Class,
    /// The class once known: from the callee alone before the arguments are, from type hints of
    /// pending arguments, or classified.
    pub early: Option<Class>,
    /// `early` came from type hints: the real class must not be stricter.
    pub hinted: bool,
    /// Stand-ins and who waits for them (`Hints`): most calls have none, so out of line.
    pub hints: Option<Box<Hints<P>>>,
    pub argv: Vec<P>,
    /// The input order, once read (kept for program-order positions after `seq` is released).
    pub in_tok: Option<Token>,
    /// Slots this controller keeps alive until it finishes (its S, callee, arguments, result,
    /// and an inlined body's result).
    pub held: Vec<SlotId>,
    pub dispatched: bool,
    pub done: bool,
    /// A catching call (`xcall?`): its own failure, or an error argument, becomes its value
    /// (`Env::bind_caught`) and the order passes on as after a success; never inlined.
    pub catch: bool,
    /// The runtime cancelled this running call (it became speculative): its failure (a
    /// CancelledError, a KeyboardInterrupt put into its thread) is never caught by a handler.
    pub cancelled: bool,
    /// A call made while an `except` handler runs: the caught value (`Host::caught`) whose
    /// exception is the thread's handled exception while it runs (`Host::dispatch_handling`).
    pub handling: Option<P>,
    /// Per-object ordering: what this call does to objects the run created (None: nothing).
    pub obj: Option<Box<ObjInfo>>,
    /// Per-object ordering decided before the arguments were known (`objects::early_local`):
    /// the owned receiver this call touches alone, whatever its pending arguments turn out to be.
    pub early_local: Option<u64>,
    /// With `early_local`: the part of the receiver it touches (`Scope::part`).
    pub early_part: Option<u64>,
    /// When its class and order were first waited for (queue-wait stats).
    pub ready_at: Option<Instant>,
    /// Queued, dispatched and done, for the call records: only when tracing.
    pub times: Option<Box<Times>>,
}

/// A call's timings for its call record (tracing).
#[derive(Default)]
pub struct Times {
    pub queued: Option<Instant>,
    pub dispatched: Option<Instant>,
    pub done: Option<Instant>,
}

/// What a call knows from stand-ins of pending values (declared result types), and who asked
/// about it. Kept out of the controller's record (`Ctrl::hints`): most calls have none, and a
/// run holds one record per call.
pub struct Hints<P> {
    /// While the callee is pending: a stand-in for it (its producer's result hint, e.g. the
    /// bound `split` of a declared str), so the call can be classified before it is known.
    pub func_hint: Option<P>,
    /// A stand-in for this call's result, for hinting calls that consume it.
    pub hint: Option<P>,
    /// Work items of consumers that asked for `hint` before it was known, and of per-object
    /// walks that stopped at this call while its callee was pending, its body or its body's
    /// order not linked in, or its per-object decision not made (`objects`): woken when that
    /// changes (`wait::ask_again`, `wait::wake_askers`).
    pub hint_waiters: Vec<WorkId>,
    /// The calls with a declared result type whose stand-ins `hint` was derived from (this call
    /// itself when it declares one).
    pub hint_roots: Vec<CtrlId>,
    /// Those the hinted class (`Ctrl::hinted`) was derived from, and the stand-ins it was
    /// classified on, per argument (None: the argument was known).
    pub early_roots: Vec<CtrlId>,
    pub early_args: Vec<Option<P>>,
    /// For a call with a declared result type: the first thing ordered on the strength of its
    /// stand-in before the value arrived (a call classified from it at `line`, or, `per_object`,
    /// a per-object walk that took it for an atom). A mismatch at arrival is then an error.
    pub relied_by: Option<(u32, bool)>,
    /// At arrival its value matched the declaration (`Some(true)`), or did not and nothing
    /// relied on it (`Some(false)`: the stand-in is wrong and no longer used).
    pub declared_ok: Option<bool>,
}

impl<P> Default for Hints<P> {
    fn default() -> Self {
        Hints {
            func_hint: None,
            hint: None,
            hint_waiters: Vec::new(),
            hint_roots: Vec::new(),
            early_roots: Vec::new(),
            early_args: Vec::new(),
            relied_by: None,
            declared_ok: None,
        }
    }
}

impl<P> Ctrl<P> {
    /// A call just reached by the evaluator: `out` is its successor's token, `held` the slots
    /// the evaluator retained for it. With the callee known it waits for its arguments;
    /// otherwise first for the callee.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn new(
        seq: SlotId,
        callee: SlotId,
        func: Option<P>,
        args: Vec<SlotId>,
        kwnames: Vec<String>,
        result: SlotId,
        out: Token,
        line: u32,
        early: Option<Class>,
        held: Vec<SlotId>,
        queued_at: Option<Instant>,
    ) -> Ctrl<P> {
        let phase = if func.is_some() { Phase::WaitArgs } else { Phase::WaitCallee };
        Ctrl {
            seq,
            callee,
            line,
            func,
            args,
            kwnames,
            result,
            out,
            phase,
            class: Class::Sequential,
            early,
            hinted: false,
            hints: None,
            argv: Vec::new(),
            in_tok: None,
            held,
            dispatched: false,
            done: false,
            catch: false,
            cancelled: false,
            handling: None,
            obj: None,
            early_local: None,
            early_part: None,
            ready_at: None,
            times: queued_at.map(|t| Box::new(Times { queued: Some(t), ..Times::default() })),
        }
    }

    /// Its stand-ins' record, made when first written.
    #[inline]
    pub fn hints_mut(&mut self) -> &mut Hints<P> {
        self.hints.get_or_insert_with(Box::default)
    }

    /// The stand-in for its callee, if any.
    #[inline]
    pub fn func_hint(&self) -> Option<&P> {
        self.hints.as_ref().and_then(|h| h.func_hint.as_ref())
    }

    /// The stand-in for its result, if any.
    #[inline]
    pub fn hint(&self) -> Option<&P> {
        self.hints.as_ref().and_then(|h| h.hint.as_ref())
    }

    #[inline]
    pub fn declared_ok(&self) -> Option<bool> {
        self.hints.as_ref().and_then(|h| h.declared_ok)
    }

    #[inline]
    pub fn relied_by(&self) -> Option<(u32, bool)> {
        self.hints.as_ref().and_then(|h| h.relied_by)
    }
}

/// The controllers of one run and the ordering state they share.
pub struct Controllers<P, E> {
    pub ctrls: Vec<Ctrl<P>>,
    /// The evaluator's work item of each controller.
    pub work: Vec<WorkId>,
    pub futs: Futures,
    /// Dispatched calls still running.
    pub in_flight: u64,
    /// External calls that raised (or could not run because an argument was an error), in the
    /// order they failed.
    pub failures: Vec<(CtrlId, E)>,
    /// Keep call arguments and timings for the run's call records.
    pub tracing: bool,
    /// The controller that created each output future F_R', by future (to recover program order).
    pub(super) fut_owner: Vec<u32>,
    /// For a call that was inlined after waiting for its callee: its F_R' → the F_R of the
    /// body's final order (program order continues through the body's calls).
    pub(super) bridge: HashMap<FutId, FutId>,
    /// Program-order position of the earliest failed call known so far: calls after it are
    /// speculative (CPython never reaches them), so they are cancelled or not dispatched.
    pub(super) failed_at: Option<u64>,
    /// A dispatched sequential call failed: every call before it in program order had finished
    /// without raising (F_W), so its failure is the run's and nothing left to reduce can
    /// change that; the evaluator stops reducing (a loop after it would otherwise go on
    /// unrolling speculatively) and only awaits the calls still in flight.
    pub settled: bool,
    /// Memoised program-order positions by controller (u64::MAX: not known yet).
    pub(super) pos_memo: Vec<u64>,
    /// Owned objects (see `ObjInfo`) by key, with the controller that created each.
    pub(super) owned: HashMap<u64, CtrlId>,
}

impl<P, E> Default for Controllers<P, E> {
    fn default() -> Self {
        Controllers {
            ctrls: Vec::new(),
            work: Vec::new(),
            futs: Futures::default(),
            in_flight: 0,
            failures: Vec::new(),
            tracing: false,
            fut_owner: Vec::new(),
            bridge: HashMap::new(),
            failed_at: None,
            settled: false,
            pos_memo: Vec::new(),
            owned: HashMap::new(),
        }
    }
}

impl<P, E> Index<CtrlId> for Controllers<P, E> {
    type Output = Ctrl<P>;
    #[inline]
    fn index(&self, cid: CtrlId) -> &Ctrl<P> {
        &self.ctrls[cid]
    }
}

impl<P, E> IndexMut<CtrlId> for Controllers<P, E> {
    #[inline]
    fn index_mut(&mut self, cid: CtrlId) -> &mut Ctrl<P> {
        &mut self.ctrls[cid]
    }
}

impl<P, E> Controllers<P, E> {
    /// Forget every controller and future, keeping the allocations (for the next run).
    pub fn clear(&mut self) {
        self.ctrls.clear();
        self.work.clear();
        self.futs.clear();
        self.in_flight = 0;
        self.failures.clear();
        self.tracing = false;
        self.fut_owner.clear();
        self.bridge.clear();
        self.failed_at = None;
        self.settled = false;
        self.pos_memo.clear();
        self.owned.clear();
    }

    /// Bytes of the vectors `clear` keeps.
    pub fn bytes(&self) -> usize {
        self.ctrls.capacity() * std::mem::size_of::<Ctrl<P>>()
            + self.fut_owner.capacity() * 4
            + (self.work.capacity() + self.pos_memo.capacity()) * 8
    }

    /// A fresh ordering token (two unresolved futures).
    #[inline]
    /// Make `key` an object the run owns from its start (a parameter nothing but the run's frame
    /// holds): no call of the run made it, so walks back over program order reach the start.
    pub fn own_from_start(&mut self, key: u64) {
        self.owned.insert(key, CtrlId::MAX);
    }

    pub fn new_token(&mut self) -> Token {
        Token { r: self.futs.new_future(), w: self.futs.new_future() }
    }

    /// An ordering token that is already released (a run's initial order).
    #[inline]
    pub fn released_token(&mut self) -> Token {
        Token { r: self.futs.new_resolved(), w: self.futs.new_resolved() }
    }

    /// Add a controller, stepped by the evaluator's work item `w`; returns its id.
    #[inline]
    pub fn add(&mut self, ctrl: Ctrl<P>, w: WorkId) -> CtrlId {
        let cid = self.ctrls.len();
        let r = ctrl.out.r;
        crate::oom::grow(&mut self.ctrls);
        crate::oom::grow(&mut self.work);
        self.ctrls.push(ctrl);
        if self.fut_owner.len() <= r {
            self.fut_owner.resize(r + 1, NONE);
        }
        self.fut_owner[r] = cid as u32;
        self.work.push(w);
        cid
    }

    /// The controller whose F_R' is future `f`, if any.
    #[inline]
    pub(super) fn owner(&self, f: FutId) -> Option<CtrlId> {
        self.fut_owner.get(f).copied().filter(|&o| o != NONE).map(|o| o as CtrlId)
    }
}

/// A call's involvement with *owned* objects — lists, dicts and sets the run itself created
/// (`Host::fresh_key`). No call before an object's creation in program order can reach it, so
/// operations that touch only their owned receiver (`Host::scope`) are ordered against the other
/// operations on that object, not against the global order — until a call gets the object as an
/// argument in any other way (an *escape*), after which it follows the global order again.
///
/// Within an object, an operation on one entry of a dict or set (`part`: `k in d`, `d[k]`,
/// `d[k] = v`, `d.get(k)`, `setdefault`, `pop`, `s.add(k)` …) is ordered against the operations
/// on the same key and on the whole object (its length, iteration, `clear`, an escape) and, if
/// it writes, against the other writes (a write may insert or remove an entry: the order of the
/// entries, which iteration shows, is the order of those writes) — not against reads of other
/// keys, so in `if k in cache: … cache[k] = llm(k)` the lookups (and so the calls) of distinct
/// keys do not chain; only the cheap stores do.
pub struct ObjInfo {
    /// The owned receiver and whether the operation writes it.
    pub(super) touch: Option<(u64, bool)>,
    /// The part of the receiver touched (`Scope::part`; None: all of it).
    pub(super) part: Option<u64>,
    /// Owned objects among the arguments (other than the receiver).
    pub(super) escapes: Vec<u64>,
    /// Decided: Some(true) when the operation skips the global order.
    pub(super) local: Option<bool>,
    /// The owned object its result holds without touching it (`getattr(lst, "append")`).
    pub(super) carries: Option<u64>,
    /// Resolved when this call finishes (later operations on the object wait for it).
    pub(super) done: usize,
    /// Decided local only if `Env::scope` still says so once the walk is done
    /// (`Scope::recheck`).
    pub(super) recheck: bool,
}

impl ObjInfo {
    /// Whether the operation was ordered against its owned object alone (the object was made by
    /// the run and handed to nobody before it in program order).
    pub fn ordered_locally(&self) -> bool {
        self.local == Some(true)
    }
}
