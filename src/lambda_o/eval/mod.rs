//! The opportunistic λO evaluator (OPAL §3.4, §5).
//!
//! Representation: a graph of *slots* (one per instantiated variable) and *work items* (one per
//! instantiated statement, plus one per concurrency controller). A work item that needs a slot's
//! value registers itself on that slot and is re-queued when the slot resolves; nothing is ever
//! found by scanning. Instantiating a function template allocates fresh slots for its variables
//! (reduce-call with freshening); captures and parameters are the caller's slots, so binding a
//! parameter never waits for the argument (non-strictness). `x := y` and every rule whose result is
//! another variable's value use a *follow* edge instead of substitution (reduce-alias).
//!
//! Opportunistic evaluation: every ready work item is stepped, in FIFO order, which makes the
//! evaluation fair (OPAL Prop. 3.6). When nothing is ready and external calls are in flight the
//! evaluator blocks in `Host::wait` until at least one finishes.
//!
//! External calls go through `xcall`: a controller per call. The controllers (their state
//! machine, program order, per-object ordering) are `crate::control`; this evaluator owns their
//! state as a field and is their environment (`control::Env`, implemented in `calls`).
//!
//! Files: `slots` (variables, follow edges, reclamation), `instantiate` (function templates),
//! `step` (the driver loop and statement reduction), `calls` (queueing a controller; `Env`),
//! `blocked` (which statement will bind a pending variable: per-object ordering looks through an
//! undecided `ite`), `trace` (call records), `resume` (a run in steps, parked between them, for an awaiting caller). Depends on `control`, `stats` and the λO terms and host trait;
//! `control` does not depend on it.
use super::host::{CallRecord, Dispatch, Host, TaskId};
use super::term::*;
use crate::control::{self, Controllers, Ctrl, Token};
use crate::stats::RunStats;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Instant;

mod blocked;
mod calls;
mod fold;
mod instantiate;
mod resume;
mod slots;
mod step;
mod trace;

pub use fold::SLOT_BUDGET;
pub use resume::{abandon, interrupt, resume, start, Parked, Progress};

type SlotId = control::SlotId;
type WorkId = control::WorkId;

struct Closure<P> {
    prog: ProgramRef<P>,
    func: FuncId,
    env: Vec<SlotId>,
}

enum Value<P, E> {
    Prim(P),
    /// Components are slots: a tuple exists before its components are known.
    Tuple(Rc<[SlotId]>),
    Closure(Rc<Closure<P>>),
    Seq(Token),
    Mem(Rc<BTreeMap<String, SlotId>>),
    Error(E),
}

impl<P: Clone, E: Clone> Clone for Value<P, E> {
    fn clone(&self) -> Self {
        match self {
            Value::Prim(p) => Value::Prim(p.clone()),
            Value::Tuple(t) => Value::Tuple(t.clone()),
            Value::Closure(c) => Value::Closure(c.clone()),
            Value::Seq(t) => Value::Seq(*t),
            Value::Mem(m) => Value::Mem(m.clone()),
            Value::Error(e) => Value::Error(e.clone()),
        }
    }
}

enum Waiter {
    Work(WorkId),
    /// Give the destination slot the same value (an alias edge).
    Follow(SlotId),
    /// Wake the work item when the slot is bound: resolved, or made to follow another slot
    /// (`Env::wait_bound`).
    Bound(WorkId),
}

/// No controller / no alias source (the `u32` fields of `Pend`).
const NONE: u32 = u32::MAX;

/// What a pending slot knows: who waits for it, and what to ask for a stand-in of its value
/// (the call producing it, or the slot it aliases).
struct Pend {
    waiters: Vec<Waiter>,
    producer: u32,
    alias: u32,
}

enum Slot<P, E> {
    Pending(Pend),
    Ready(Value<P, E>),
    /// Reclaimed (reduce-gc): no statement, value, controller or edge refers to it any more.
    Free,
}

struct Frame<P> {
    prog: ProgramRef<P>,
    func: FuncId,
    env: Vec<SlotId>,
    /// Statements of this instance not yet reduced; at zero the frame's references to its
    /// variables are dropped.
    live: std::cell::Cell<u32>,
}

enum Work<P> {
    Stmt { frame: Rc<Frame<P>>, index: usize },
    Ctrl(control::CtrlId),
    /// The rest of a fold that stopped instantiating iterations at the bound on live
    /// variables (`fold`); in `Eval::parked` until resumed.
    Fold(Box<fold::FoldRest<P>>),
    /// A statement that has been reduced (its frame reference released).
    Done,
}

struct Eval<'a, H: Host> {
    host: &'a mut H,
    stats: &'a mut RunStats,
    slots: Vec<Slot<H::Prim, H::Error>>,
    /// References to each slot (frames' variables, components of values held by slots, alias
    /// edges, controllers); a slot reaching zero is reclaimed and its index reused.
    refs: Vec<u32>,
    free_slots: Vec<SlotId>,
    /// Scratch stacks reused by `resolve` and `release` (no allocation per step).
    todo: Vec<(SlotId, Value<H::Prim, H::Error>)>,
    dead: Vec<SlotId>,
    drop: Vec<SlotId>,
    live_slots: u64,
    peak_live: u64,
    work: Vec<Work<H::Prim>>,
    free_work: Vec<WorkId>,
    ready: VecDeque<WorkId>,
    /// The run's controllers and the ordering state they share (see `crate::control`).
    ctl: Controllers<H::Prim, H::Error>,
    steps_left: u64,
    /// xorshift state when stepping in pseudo-random order.
    shuffle: Option<u64>,
    /// By slot: the work item of a projection or `ite` statement that waited for an input and
    /// will bind that slot (NONE, or stale once the statement is reduced: checked when read).
    /// Per-object ordering looks through an undecided `ite` with it (`Env::ite_source`).
    blocked: Vec<u32>,
    /// Folds waiting for the live variables to fall (`fold`), oldest first.
    parked: VecDeque<WorkId>,
    /// Live variables past which a fold stops instantiating iterations (`RunOptions`).
    slot_budget: u64,
}

/// The evaluator's large vectors, kept (emptied) from one run to the next on the same thread,
/// so a run does not map, fault in and unmap fresh memory for its slots and controllers each
/// time (measured: a few per cent of a 100k-call run went to the kernel doing exactly that).
/// At most `KEEP_BYTES` of capacity is kept.
struct Buffers<P, E> {
    slots: Vec<Slot<P, E>>,
    refs: Vec<u32>,
    free_slots: Vec<SlotId>,
    work: Vec<Work<P>>,
    free_work: Vec<WorkId>,
    ready: VecDeque<WorkId>,
    ctl: Controllers<P, E>,
}

const KEEP_BYTES: usize = 128 << 20;

impl<P, E> Default for Buffers<P, E> {
    fn default() -> Self {
        Buffers {
            slots: Vec::new(),
            refs: Vec::new(),
            free_slots: Vec::new(),
            work: Vec::new(),
            free_work: Vec::new(),
            ready: VecDeque::new(),
            ctl: Controllers::default(),
        }
    }
}

impl<P, E> Buffers<P, E> {
    fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.slots.capacity() * size_of::<Slot<P, E>>()
            + self.work.capacity() * size_of::<Work<P>>()
            + self.refs.capacity() * 4
            + (self.free_slots.capacity() + self.free_work.capacity() + self.ready.capacity()) * 8
            + self.ctl.bytes()
    }
}

thread_local! {
    /// One `Buffers<P, E>` per host type, as `Box<dyn Any>` (a nested run on the same thread
    /// finds none and allocates its own).
    static BUFFERS: std::cell::RefCell<Vec<Box<dyn std::any::Any>>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn take_buffers<P: 'static, E: 'static>() -> Buffers<P, E> {
    BUFFERS
        .try_with(|b| {
            let mut b = b.borrow_mut();
            let i = b.iter().position(|x| x.is::<Buffers<P, E>>())?;
            b.swap_remove(i).downcast::<Buffers<P, E>>().ok().map(|x| *x)
        })
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn keep_buffers<P: 'static, E: 'static>(mut b: Buffers<P, E>) {
    b.slots.clear();
    b.refs.clear();
    b.free_slots.clear();
    b.work.clear();
    b.free_work.clear();
    b.ready.clear();
    b.ctl.clear();
    if b.bytes() > KEEP_BYTES {
        return;
    }
    let _ = BUFFERS.try_with(|cell| {
        let mut v = cell.borrow_mut();
        if !v.iter().any(|x| x.is::<Buffers<P, E>>()) {
            v.push(Box::new(b));
        }
    });
}

/// A statement reduced when its frame is instantiated: it needs no variable's value.
fn immediate<P>(op: &Op<P>) -> bool {
    matches!(op, Op::Prim(_) | Op::Tuple(_) | Op::Fun { .. })
}

/// Bytes of the evaluator's fixed per-object state for host `H`: one λO variable (slot and its
/// reference count), one statement work item, one controller (without its argument vectors).
pub fn layout<H: Host>() -> (usize, usize, usize) {
    (
        std::mem::size_of::<Slot<H::Prim, H::Error>>() + std::mem::size_of::<u32>(),
        std::mem::size_of::<Work<H::Prim>>(),
        std::mem::size_of::<Ctrl<H::Prim>>(),
    )
}

/// Run `program` (entry params [S, args...], result (S', value)) to quiescence.
pub fn run<H: Host>(
    host: &mut H,
    program: ProgramRef<H::Prim>,
    args: Vec<H::Prim>,
    stats: &mut RunStats,
) -> Result<H::Prim, H::Error> {
    run_bounded(host, program, args, stats, u64::MAX)
}

/// `run`, giving up with a RuntimeError after `max_steps` work items (for diverging programs).
pub fn run_bounded<H: Host>(
    host: &mut H,
    program: ProgramRef<H::Prim>,
    args: Vec<H::Prim>,
    stats: &mut RunStats,
    max_steps: u64,
) -> Result<H::Prim, H::Error> {
    run_with(host, program, args, stats, &RunOptions { max_steps, ..RunOptions::default() })
}

/// Evaluation knobs (tests): a step budget, stepping ready work in a pseudo-random order
/// instead of FIFO (confluence: the result and the external calls must not depend on it), and
/// the bound on live variables past which folds park (`fold`; small in tests, to park often).
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub max_steps: u64,
    pub shuffle_seed: Option<u64>,
    pub slot_budget: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { max_steps: u64::MAX, shuffle_seed: None, slot_budget: SLOT_BUDGET }
    }
}

pub fn run_with<H: Host>(
    host: &mut H,
    program: ProgramRef<H::Prim>,
    args: Vec<H::Prim>,
    stats: &mut RunStats,
    opts: &RunOptions,
) -> Result<H::Prim, H::Error> {
    let mut ev = Eval::new(host, stats, opts);
    let ret = ev.begin(&program, args)?;
    let driven = ev.drive();
    ev.end_run(ret, driven)
}

/// What an evaluator carries besides its buffers and its host: counters, options and the
/// queues that are empty at the start of a run (`Eval::new`) and kept while it is parked
/// (`resume::Parked`).
struct Carry {
    live_slots: u64,
    peak_live: u64,
    steps_left: u64,
    shuffle: Option<u64>,
    blocked: Vec<u32>,
    parked: VecDeque<WorkId>,
    slot_budget: u64,
}

impl Carry {
    fn fresh(opts: &RunOptions) -> Carry {
        Carry {
            live_slots: 0,
            peak_live: 0,
            steps_left: opts.max_steps,
            shuffle: opts.shuffle_seed.map(|s| s | 1),
            blocked: Vec::new(),
            parked: VecDeque::new(),
            slot_budget: opts.slot_budget,
        }
    }
}

impl<'a, H: Host> Eval<'a, H> {
    /// The one place an evaluator is assembled: from buffers and what it carries.
    fn from_parts(host: &'a mut H, stats: &'a mut RunStats, b: Buffers<H::Prim, H::Error>, c: Carry) -> Self {
        Eval {
            host,
            stats,
            slots: b.slots,
            refs: b.refs,
            free_slots: b.free_slots,
            todo: Vec::new(),
            dead: Vec::new(),
            drop: Vec::new(),
            live_slots: c.live_slots,
            peak_live: c.peak_live,
            work: b.work,
            free_work: b.free_work,
            ready: b.ready,
            ctl: b.ctl,
            steps_left: c.steps_left,
            shuffle: c.shuffle,
            blocked: c.blocked,
            parked: c.parked,
            slot_budget: c.slot_budget,
        }
    }

    /// A fresh evaluator for a new run, on the buffers this thread kept (`take_buffers`).
    fn new(host: &'a mut H, stats: &'a mut RunStats, opts: &RunOptions) -> Self {
        let mut ev = Eval::from_parts(host, stats, take_buffers::<H::Prim, H::Error>(), Carry::fresh(opts));
        ev.ctl.tracing = ev.host.tracing();
        for k in ev.host.owned_from_start() {
            ev.ctl.own_from_start(k);
        }
        ev
    }

    /// Instantiate the entry with the run's initial order and `args`: its result variable.
    fn begin(&mut self, program: &ProgramRef<H::Prim>, args: Vec<H::Prim>) -> Result<SlotId, H::Error> {
        let token = self.ctl.released_token();
        let mut params = vec![self.new_slot(Value::Seq(token))];
        params.extend(args.into_iter().map(|a| self.new_slot(Value::Prim(a))));
        self.instantiate(program, program.entry, &[], &params)
    }

    /// The buffers, emptied out of the evaluator (to park it or to keep them).
    fn take_buffers(&mut self) -> Buffers<H::Prim, H::Error> {
        Buffers {
            slots: std::mem::take(&mut self.slots),
            refs: std::mem::take(&mut self.refs),
            free_slots: std::mem::take(&mut self.free_slots),
            work: std::mem::take(&mut self.work),
            free_work: std::mem::take(&mut self.free_work),
            ready: std::mem::take(&mut self.ready),
            ctl: std::mem::take(&mut self.ctl),
        }
    }

    /// What it carries, moved out (to park it).
    fn take_carry(&mut self) -> Carry {
        Carry {
            live_slots: self.live_slots,
            peak_live: self.peak_live,
            steps_left: self.steps_left,
            shuffle: self.shuffle,
            blocked: std::mem::take(&mut self.blocked),
            parked: std::mem::take(&mut self.parked),
            slot_budget: self.slot_budget,
        }
    }

    /// The end of a run: counters, call records, the outcome (`driven` is how the reduction
    /// ended), and the buffers kept for the next run on this thread — unless the run ran out of
    /// memory, when they are let go.
    fn end_run(&mut self, ret: SlotId, driven: Result<(), H::Error>) -> Result<H::Prim, H::Error> {
        self.stats.peak_slots = self.stats.peak_slots.max(self.peak_live);
        if self.ctl.tracing {
            let records = self.call_records();
            self.host.record_calls(records);
        }
        let out = driven.and_then(|()| self.outcome(ret));
        // (Not after running out of memory: counting allocates, and the run raises MemoryError.)
        if !crate::oom::failed() {
            self.stats.speculative_calls += self.speculative_calls();
        }
        if !crate::oom::run_ended() {
            keep_buffers(self.take_buffers());
        }
        out
    }
}

impl<'a, H: Host> Eval<'a, H> {
    fn outcome(&mut self, ret: SlotId) -> Result<H::Prim, H::Error> {
        // Raise the failure earliest in program order. When it is an unordered call, it had
        // passed the order on before failing, so later ordered calls may have run: say which.
        if let Some((e, line, later)) = control::raised(self) {
            return Err(self.host.note_failure(e, line, later));
        }
        let value = match self.value(ret) {
            Some(Value::Tuple(t)) if t.len() == 2 => self.value(t[1]).cloned(),
            Some(v) => Some(v.clone()),
            None => None,
        };
        match value {
            Some(Value::Prim(p)) => Ok(p),
            Some(Value::Error(e)) => Err(e),
            _ => match self.ctl.failures.first() {
                Some((_, e)) => Err(e.clone()),
                None => Err(self.host.internal_error(
                    "RuntimeError",
                    "poppy_jit: λO evaluation stalled before the function's result was known",
                )),
            },
        }
    }
}
