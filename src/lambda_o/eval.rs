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
//! External calls go through `xcall`: a controller per call (see `crate::control`).
use super::host::{CallRecord, Dispatch, Host, TaskId};
use super::term::*;
use crate::control::{Class, Futures, Phase, Policy, Token};
use crate::stats::RunStats;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::time::Instant;

type SlotId = usize;
type WorkId = usize;

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
}

/// Where a call's input order comes from.
enum Pred {
    /// The output order of this controller.
    Call(usize),
    /// The run's initial order.
    Start,
    /// Not known (yet).
    Unknown,
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
    Ctrl(usize),
    /// A statement that has been reduced (its frame reference released).
    Done,
}

struct Ctrl<P> {
    seq: SlotId,
    /// The callee's slot and, once known, its value.
    callee: SlotId,
    /// Source line of the call (0 when unknown).
    line: u32,
    func: Option<P>,
    args: Vec<SlotId>,
    kwnames: Vec<String>,
    result: SlotId,
    out: Token,
    phase: Phase,
    class: Class,
    /// The class once known: from the callee alone before the arguments are, from type hints of
    /// pending arguments, or classified.
    early: Option<Class>,
    /// `early` came from type hints: the real class must not be stricter.
    hinted: bool,
    /// A stand-in for this call's result, for hinting calls that consume it.
    hint: Option<P>,
    argv: Vec<P>,
    /// The input order, once read (kept for program-order positions after `seq` is released).
    in_tok: Option<Token>,
    /// Slots this controller keeps alive until it finishes (its S, callee, arguments, result,
    /// and an inlined body's result).
    held: Vec<SlotId>,
    dispatched: bool,
    done: bool,
    /// Per-object ordering: what this call does to objects the run created (None: nothing).
    obj: Option<Box<ObjInfo>>,
    /// Timings: queued and done only when tracing; ready and dispatched for queue-wait stats.
    queued_at: Option<Instant>,
    ready_at: Option<Instant>,
    dispatched_at: Option<Instant>,
    done_at: Option<Instant>,
}

/// A call's involvement with *owned* objects — lists, dicts and sets the run itself created
/// (`Host::fresh_key`). No call before an object's creation in program order can reach it, so
/// operations that touch only their owned receiver (`Host::scope`) are ordered against the other
/// operations on that object, not against the global order — until a call gets the object as an
/// argument in any other way (an *escape*), after which it follows the global order again.
struct ObjInfo {
    /// The owned receiver and whether the operation writes it.
    touch: Option<(u64, bool)>,
    /// Owned objects among the arguments (other than the receiver).
    escapes: Vec<u64>,
    /// Decided: Some(true) when the operation skips the global order.
    local: Option<bool>,
    /// The owned object its result holds without touching it (`getattr(lst, "append")`).
    carries: Option<u64>,
    /// Resolved when this call finishes (later operations on the object wait for it).
    done: usize,
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
    futs: Futures,
    ctrls: Vec<Ctrl<H::Prim>>,
    ctrl_work: Vec<WorkId>,
    /// Dispatched calls still running (a call's TaskId is its controller index).
    in_flight: u64,
    /// External calls that raised (or could not run because an argument was an error), in the
    /// order they failed.
    failures: Vec<(usize, H::Error)>,
    steps_left: u64,
    /// xorshift state when stepping in pseudo-random order.
    shuffle: Option<u64>,
    /// Keep call arguments and timings for `Host::record_calls`.
    tracing: bool,
    /// The controller that created each output future F_R', by future (to recover program order).
    fut_owner: Vec<u32>,
    /// For a call that was inlined after waiting for its callee: its F_R' → the F_R of the
    /// body's final order (program order continues through the body's calls).
    bridge: HashMap<usize, usize>,
    /// Program-order position of the earliest failed call known so far: calls after it are
    /// speculative (CPython never reaches them), so they are cancelled or not dispatched.
    failed_at: Option<u64>,
    /// Memoised program-order positions by controller (u64::MAX: not known yet).
    pos_memo: Vec<u64>,
    /// Owned objects (see `ObjInfo`) by key, with the controller that created each.
    owned: HashMap<u64, usize>,
}

/// Whether `a` orders more than `b` (unordered < readonly < sequential).
fn stricter(a: Class, b: Class) -> bool {
    let rank = |c: Class| match c {
        Class::Unordered => 0,
        Class::Readonly => 1,
        Class::Sequential => 2,
    };
    rank(a) > rank(b)
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
    ctrls: Vec<Ctrl<P>>,
    ctrl_work: Vec<WorkId>,
    fut_owner: Vec<u32>,
    pos_memo: Vec<u64>,
    futs: Futures,
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
            ctrls: Vec::new(),
            ctrl_work: Vec::new(),
            fut_owner: Vec::new(),
            pos_memo: Vec::new(),
            futs: Futures::default(),
        }
    }
}

impl<P, E> Buffers<P, E> {
    fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.slots.capacity() * size_of::<Slot<P, E>>()
            + self.work.capacity() * size_of::<Work<P>>()
            + self.ctrls.capacity() * size_of::<Ctrl<P>>()
            + (self.refs.capacity() + self.fut_owner.capacity()) * 4
            + (self.free_slots.capacity() + self.free_work.capacity() + self.ready.capacity()) * 8
            + (self.ctrl_work.capacity() + self.pos_memo.capacity()) * 8
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
    b.ctrls.clear();
    b.ctrl_work.clear();
    b.fut_owner.clear();
    b.pos_memo.clear();
    b.futs.clear();
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
    run_with(host, program, args, stats, &RunOptions { max_steps, shuffle_seed: None })
}

/// Evaluation knobs (tests): a step budget, and stepping ready work in a pseudo-random order
/// instead of FIFO (confluence: the result and the external calls must not depend on it).
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub max_steps: u64,
    pub shuffle_seed: Option<u64>,
}

pub fn run_with<H: Host>(
    host: &mut H,
    program: ProgramRef<H::Prim>,
    args: Vec<H::Prim>,
    stats: &mut RunStats,
    opts: &RunOptions,
) -> Result<H::Prim, H::Error> {
    let max_steps = opts.max_steps;
    let b = take_buffers::<H::Prim, H::Error>();
    let mut ev = Eval {
        host,
        stats,
        slots: b.slots,
        refs: b.refs,
        free_slots: b.free_slots,
        todo: Vec::new(),
        dead: Vec::new(),
        drop: Vec::new(),
        live_slots: 0,
        peak_live: 0,
        work: b.work,
        free_work: b.free_work,
        ready: b.ready,
        futs: b.futs,
        ctrls: b.ctrls,
        ctrl_work: b.ctrl_work,
        in_flight: 0,
        failures: Vec::new(),
        steps_left: max_steps,
        shuffle: opts.shuffle_seed.map(|s| s | 1),
        tracing: false,
        fut_owner: b.fut_owner,
        bridge: HashMap::new(),
        failed_at: None,
        pos_memo: b.pos_memo,
        owned: HashMap::new(),
    };
    ev.tracing = ev.host.tracing();
    let token = Token { r: ev.futs.new_resolved(), w: ev.futs.new_resolved() };
    let mut params = vec![ev.new_slot(Value::Seq(token))];
    params.extend(args.into_iter().map(|a| ev.new_slot(Value::Prim(a))));
    let ret = ev.instantiate(&program, program.entry, &[], &params)?;
    let driven = ev.drive();
    ev.stats.peak_slots = ev.stats.peak_slots.max(ev.peak_live);
    if ev.tracing {
        let records = ev.call_records();
        ev.host.record_calls(records);
    }
    let out = driven.and_then(|()| ev.outcome(ret));
    keep_buffers(Buffers {
        slots: std::mem::take(&mut ev.slots),
        refs: std::mem::take(&mut ev.refs),
        free_slots: std::mem::take(&mut ev.free_slots),
        work: std::mem::take(&mut ev.work),
        free_work: std::mem::take(&mut ev.free_work),
        ready: std::mem::take(&mut ev.ready),
        ctrls: std::mem::take(&mut ev.ctrls),
        ctrl_work: std::mem::take(&mut ev.ctrl_work),
        fut_owner: std::mem::take(&mut ev.fut_owner),
        pos_memo: std::mem::take(&mut ev.pos_memo),
        futs: std::mem::take(&mut ev.futs),
    });
    out
}

impl<'a, H: Host> Eval<'a, H> {
    // ---- slots ---------------------------------------------------------------------------

    fn alloc(&mut self, slot: Slot<H::Prim, H::Error>) -> SlotId {
        self.live_slots += 1;
        self.peak_live = self.peak_live.max(self.live_slots);
        match self.free_slots.pop() {
            Some(s) => {
                self.slots[s] = slot;
                self.refs[s] = 0;
                s
            }
            None => {
                self.slots.push(slot);
                self.refs.push(0);
                self.slots.len() - 1
            }
        }
    }

    /// A slot holding `v` (its components are retained on its behalf).
    fn new_slot(&mut self, v: Value<H::Prim, H::Error>) -> SlotId {
        self.retain_parts(&v);
        self.alloc(Slot::Ready(v))
    }

    fn pending_slot(&mut self) -> SlotId {
        self.alloc(Slot::Pending(Pend { waiters: Vec::new(), producer: NONE, alias: NONE }))
    }

    fn value(&self, s: SlotId) -> Option<&Value<H::Prim, H::Error>> {
        match &self.slots[s] {
            Slot::Ready(v) => Some(v),
            Slot::Pending(_) => None,
            Slot::Free => panic!("λO slot {s} read after it was reclaimed"),
        }
    }

    /// The slot's value, or register `w` to be woken when it resolves.
    fn need(&mut self, s: SlotId, w: WorkId) -> Option<Value<H::Prim, H::Error>> {
        match &mut self.slots[s] {
            Slot::Ready(v) => Some(v.clone()),
            Slot::Pending(p) => {
                p.waiters.push(Waiter::Work(w));
                None
            }
            Slot::Free => panic!("λO slot {s} needed after it was reclaimed"),
        }
    }

    // ---- reclamation (reduce-gc) ---------------------------------------------------------------

    fn retain(&mut self, s: SlotId) {
        self.refs[s] += 1;
    }

    /// A slot now holds `v`: retain the slots `v` refers to.
    fn retain_parts(&mut self, v: &Value<H::Prim, H::Error>) {
        match v {
            Value::Tuple(t) => t.iter().for_each(|&c| self.refs[c] += 1),
            Value::Closure(c) => c.env.iter().for_each(|&c| self.refs[c] += 1),
            Value::Mem(m) => m.values().for_each(|&c| self.refs[c] += 1),
            _ => {}
        }
    }

    /// Drop one reference to `s`; a slot nobody refers to is reclaimed, and with it its
    /// references to other slots (iteratively: no recursion on long chains).
    fn release(&mut self, s: SlotId) {
        let mut dead = std::mem::take(&mut self.dead);
        dead.push(s);
        while let Some(s) = dead.pop() {
            assert!(self.refs[s] > 0, "λO slot {s} released more often than retained");
            self.refs[s] -= 1;
            if self.refs[s] > 0 {
                continue;
            }
            self.live_slots -= 1;
            self.free_slots.push(s);
            match std::mem::replace(&mut self.slots[s], Slot::Free) {
                Slot::Ready(v) => match v {
                    Value::Tuple(t) => dead.extend(t.iter().copied()),
                    Value::Closure(c) => dead.extend(c.env.iter().copied()),
                    Value::Mem(m) => dead.extend(m.values().copied()),
                    _ => {}
                },
                Slot::Pending(p) => {
                    if p.alias != NONE {
                        dead.push(p.alias as SlotId);
                    }
                    for w in p.waiters {
                        if let Waiter::Follow(d) = w {
                            dead.push(d);
                        }
                    }
                }
                Slot::Free => unreachable!("λO slot {s} reclaimed twice"),
            }
        }
        self.dead = dead;
    }

    fn resolve(&mut self, slot: SlotId, value: Value<H::Prim, H::Error>) {
        let mut todo = std::mem::take(&mut self.todo);
        // References dropped by this resolution (alias links, consumed follow edges), released
        // once every slot reachable along follow edges holds the value.
        let mut drop = std::mem::take(&mut self.drop);
        todo.push((slot, value));
        while let Some((s, v)) = todo.pop() {
            self.retain_parts(&v);
            let old = std::mem::replace(&mut self.slots[s], Slot::Ready(v));
            match old {
                Slot::Pending(p) => {
                    if p.alias != NONE {
                        drop.push(p.alias as SlotId);
                    }
                    for w in p.waiters {
                        match w {
                            Waiter::Work(id) => self.ready.push_back(id),
                            Waiter::Follow(d) => {
                                let Slot::Ready(v) = &self.slots[s] else { unreachable!() };
                                todo.push((d, v.clone()));
                                drop.push(d);
                            }
                        }
                    }
                }
                Slot::Ready(_) => unreachable!("λO variable bound twice"),
                Slot::Free => panic!("λO slot {s} resolved after it was reclaimed"),
            }
        }
        self.todo = todo;
        for &d in &drop {
            self.release(d);
        }
        drop.clear();
        self.drop = drop;
    }

    /// `dst` gets `src`'s value, now or when it resolves.
    fn follow(&mut self, src: SlotId, dst: SlotId) {
        match &mut self.slots[src] {
            Slot::Ready(v) => {
                let v = v.clone();
                self.resolve(dst, v);
            }
            Slot::Pending(p) => {
                p.waiters.push(Waiter::Follow(dst));
                self.refs[dst] += 1;
                if let Slot::Pending(d) = &mut self.slots[dst] {
                    d.alias = src as u32;
                    self.refs[src] += 1;
                }
            }
            Slot::Free => panic!("λO slot {src} followed after it was reclaimed"),
        }
    }

    /// The stand-in for a pending slot's value: its producing call's result hint.
    fn hint_of(&self, s: SlotId) -> Option<H::Prim> {
        self.producer_along(s, false).and_then(|c| self.ctrls[c].hint.clone())
    }

    /// The call whose result a pending slot will be, following alias edges; with
    /// `through_inlined`, past an inlined internal call to the value its body returns once that
    /// is linked.
    fn producer_along(&self, mut s: SlotId, through_inlined: bool) -> Option<usize> {
        for _ in 0..64 {
            let Slot::Pending(p) = &self.slots[s] else { return None };
            if p.producer != NONE
                && (!through_inlined || self.ctrls[p.producer as usize].func.is_some() || p.alias == NONE)
            {
                return Some(p.producer as usize);
            }
            if p.alias == NONE {
                return None;
            }
            s = p.alias as SlotId;
        }
        None
    }

    /// Classify a call from known arguments and hints for pending ones (see Host::classify_hinted);
    /// also compute its own result hint for the calls that consume it.
    fn try_hint(&mut self, cid: usize) {
        let c = &self.ctrls[cid];
        let Some(f) = c.func.clone() else { return };
        if c.early.is_some() && c.hint.is_some() {
            return;
        }
        let args: Vec<Option<H::Prim>> = c
            .args
            .iter()
            .map(|&a| match self.value(a) {
                Some(Value::Prim(p)) => Some(p.clone()),
                Some(_) => None,
                None => self.hint_of(a),
            })
            .collect();
        let kwnames = c.kwnames.clone();
        if self.ctrls[cid].hint.is_none() {
            self.ctrls[cid].hint = self.host.result_hint(&f, &args, &kwnames);
        }
        if self.ctrls[cid].early.is_none() && args.iter().all(|a| a.is_some()) {
            if let Some(class) = self.host.classify_hinted(&f, &args, &kwnames) {
                self.ctrls[cid].early = Some(class);
                self.ctrls[cid].hinted = true;
            }
        }
    }

    /// A value that must be a primitive: the primitive, or the error value to poison with.
    fn prim_of(&mut self, v: Value<H::Prim, H::Error>, what: &str) -> Result<H::Prim, Value<H::Prim, H::Error>> {
        match v {
            Value::Prim(p) => Ok(p),
            Value::Error(e) => Err(Value::Error(e)),
            _ => Err(self.error("TypeError", &format!("poppy_jit: {what} is not a Python value"))),
        }
    }

    fn error(&mut self, kind: &str, msg: &str) -> Value<H::Prim, H::Error> {
        Value::Error(self.host.internal_error(kind, msg))
    }

    // ---- instantiation ---------------------------------------------------------------------

    /// Instantiate a function template; returns its result variable, retained for the caller.
    fn instantiate(
        &mut self,
        prog: &ProgramRef<H::Prim>,
        fid: FuncId,
        captures: &[SlotId],
        params: &[SlotId],
    ) -> Result<SlotId, H::Error> {
        self.instantiate_into(prog, fid, captures, params, None)
    }

    /// Instantiate a function template. With `dst` (a pending slot), a result variable bound in
    /// the body *is* `dst` (destination passing: no alias edge, so a tail-recursive loop keeps
    /// one result variable however many iterations it runs); returns the result variable.
    fn instantiate_into(
        &mut self,
        prog: &ProgramRef<H::Prim>,
        fid: FuncId,
        captures: &[SlotId],
        params: &[SlotId],
        dst: Option<SlotId>,
    ) -> Result<SlotId, H::Error> {
        let func = &prog.funcs[fid as usize];
        if captures.len() != func.ncaptures as usize || params.len() != func.nparams as usize {
            let msg = format!(
                "{}() takes {} arguments but {} were given",
                func.name,
                func.nparams,
                params.len()
            );
            return Err(self.host.internal_error("TypeError", &msg));
        }
        let mut env = Vec::with_capacity(func.nvars as usize);
        env.extend_from_slice(captures);
        env.extend_from_slice(params);
        let ret_index = func.ret as usize;
        while env.len() < func.nvars as usize {
            match dst {
                Some(d) if env.len() == ret_index => env.push(d),
                _ => env.push(self.pending_slot()),
            }
        }
        let ret = env[func.ret as usize];
        if dst.is_none() {
            // The caller's reference to the result (taken before the frame may release it).
            self.refs[ret] += 1;
        }
        let n = func.body.len();
        if n == 0 {
            return Ok(ret);
        }
        // Statements that need no input (primitives, tuples, closures) are reduced right here:
        // queueing them would only delay them, and no work item is spent on them.
        let deferred = func.body.iter().filter(|s| !immediate(&s.op)).count();
        for &s in &env {
            self.refs[s] += 1;
        }
        for stmt in func.body.iter().filter(|s| immediate(&s.op)) {
            let dst = env[stmt.dst as usize];
            let v = match &stmt.op {
                Op::Prim(p) => Value::Prim(p.clone()),
                Op::Tuple(vs) => Value::Tuple(vs.iter().map(|v| env[*v as usize]).collect()),
                Op::Fun { func, captures } => Value::Closure(Rc::new(Closure {
                    prog: prog.clone(),
                    func: *func,
                    env: captures.iter().map(|v| env[*v as usize]).collect(),
                })),
                _ => unreachable!("only input-free statements are immediate"),
            };
            self.stats.reductions += 1;
            self.resolve(dst, v);
        }
        if deferred == 0 {
            for &s in &env {
                self.release(s);
            }
            return Ok(ret);
        }
        let frame = Rc::new(Frame { prog: prog.clone(), func: fid, env, live: std::cell::Cell::new(deferred as u32) });
        for (index, _) in func.body.iter().enumerate().filter(|(_, s)| !immediate(&s.op)) {
            let item = Work::Stmt { frame: frame.clone(), index };
            let w = match self.free_work.pop() {
                Some(w) => {
                    self.work[w] = item;
                    w
                }
                None => {
                    self.work.push(item);
                    self.work.len() - 1
                }
            };
            self.ready.push_back(w);
        }
        Ok(ret)
    }

    /// Instantiate and make `dst` follow the result (errors become the value of `dst`).
    fn call_into(&mut self, prog: &ProgramRef<H::Prim>, fid: FuncId, captures: &[SlotId], params: &[SlotId], dst: SlotId) {
        match self.instantiate_into(prog, fid, captures, params, Some(dst)) {
            Ok(ret) if ret == dst => {}
            Ok(ret) => self.follow(ret, dst),
            Err(e) => self.resolve(dst, Value::Error(e)),
        }
    }

    // ---- the loop --------------------------------------------------------------------------

    fn drive(&mut self) -> Result<(), H::Error> {
        loop {
            while let Some(w) = self.next_ready() {
                if self.steps_left == 0 {
                    return Err(self.host.internal_error("RuntimeError", "step budget exhausted"));
                }
                self.steps_left -= 1;
                self.step(w);
            }
            if self.in_flight == 0 {
                return Ok(());
            }
            for (task, result) in self.host.wait()? {
                let cid = task as usize;
                if cid < self.ctrls.len() && self.ctrls[cid].phase == Phase::Running {
                    self.in_flight -= 1;
                    self.complete(cid, result);
                }
            }
        }
    }

    fn next_ready(&mut self) -> Option<WorkId> {
        match &mut self.shuffle {
            None => self.ready.pop_front(),
            Some(x) => {
                if self.ready.is_empty() {
                    return None;
                }
                *x ^= *x << 13;
                *x ^= *x >> 7;
                *x ^= *x << 17;
                let i = (*x % self.ready.len() as u64) as usize;
                self.ready.swap_remove_back(i)
            }
        }
    }

    fn step(&mut self, w: WorkId) {
        match &self.work[w] {
            Work::Done => {}
            Work::Ctrl(cid) => {
                let cid = *cid;
                self.advance(cid, w);
            }
            Work::Stmt { frame, index } => {
                let (frame, index) = (frame.clone(), *index);
                if self.step_stmt(w, &frame, index) {
                    self.work[w] = Work::Done;
                    self.free_work.push(w);
                    self.stats.reductions += 1;
                    let live = frame.live.get() - 1;
                    frame.live.set(live);
                    if live == 0 {
                        // Every statement of this instance is reduced: its variables are no
                        // longer needed by it (values, edges and controllers keep their own).
                        for &s in &frame.env {
                            self.release(s);
                        }
                    }
                }
            }
        }
    }

    /// Step one statement; false if it is waiting for an input.
    fn step_stmt(&mut self, w: WorkId, frame: &Frame<H::Prim>, index: usize) -> bool {
        let func = &frame.prog.funcs[frame.func as usize];
        let stmt = &func.body[index];
        let env = &frame.env;
        let dst = env[stmt.dst as usize];
        macro_rules! need {
            ($v:expr) => {
                match self.need(env[$v as usize], w) {
                    Some(v) => v,
                    None => return false,
                }
            };
        }
        match &stmt.op {
            Op::Alias(y) => self.follow(env[*y as usize], dst),
            Op::Prim(_) | Op::Tuple(_) | Op::Fun { .. } => unreachable!("reduced at instantiation"),
            Op::Proj { index, tuple } => match need!(*tuple) {
                Value::Tuple(t) if (*index as usize) < t.len() => self.follow(t[*index as usize], dst),
                Value::Error(e) => self.resolve(dst, Value::Error(e)),
                _ => {
                    let e = self.error("TypeError", "poppy_jit: projection out of something that is not a tuple");
                    self.resolve(dst, e);
                }
            },
            Op::Call { func: f, args } => {
                let params: Vec<SlotId> = args.iter().map(|a| env[*a as usize]).collect();
                match need!(*f) {
                    Value::Closure(c) => self.call_into(&c.prog, c.func, &c.env, &params, dst),
                    Value::Error(e) => self.resolve(dst, Value::Error(e)),
                    _ => {
                        let e = self.error("TypeError", "poppy_jit: internal call of a value that is not a λO function");
                        self.resolve(dst, e);
                    }
                }
            }
            Op::Ite { cond, then_f, else_f, args } => {
                let c = need!(*cond);
                let which = match self.prim_of(c, "ite condition").and_then(|p| self.host.truthy(&p).map_err(Value::Error)) {
                    Ok(b) => b,
                    Err(e) => {
                        self.resolve(dst, e);
                        return true;
                    }
                };
                let chosen = need!(if which { *then_f } else { *else_f });
                let params: Vec<SlotId> = args.iter().map(|a| env[*a as usize]).collect();
                match chosen {
                    Value::Closure(c) => self.call_into(&c.prog, c.func, &c.env, &params, dst),
                    _ => {
                        let e = self.error("TypeError", "poppy_jit: ite branch is not a λO function");
                        self.resolve(dst, e);
                    }
                }
            }
            Op::Fold { seq, body, acc } => {
                let s = need!(*seq);
                let items = match self.prim_of(s, "fold sequence").and_then(|p| self.host.elements(&p).map_err(Value::Error)) {
                    Ok(items) => items,
                    Err(e) => {
                        self.resolve(dst, e);
                        return true;
                    }
                };
                let Value::Closure(c) = need!(*body) else {
                    let e = self.error("TypeError", "poppy_jit: fold body is not a λO function");
                    self.resolve(dst, e);
                    return true;
                };
                // All iterations at once: iteration i+1's accumulator is iteration i's result slot.
                // Each iteration's result is returned retained; it is released once the next
                // iteration (or `dst`) holds it.
                let mut acc_slot = env[*acc as usize];
                let mut owned = false;
                for item in items {
                    let e = self.new_slot(Value::Prim(item));
                    let next = self.instantiate(&c.prog, c.func, &c.env, &[e, acc_slot]);
                    if owned {
                        self.release(acc_slot);
                    }
                    match next {
                        Ok(r) => (acc_slot, owned) = (r, true),
                        Err(err) => {
                            self.resolve(dst, Value::Error(err));
                            return true;
                        }
                    }
                }
                self.follow(acc_slot, dst);
                if owned {
                    self.release(acc_slot);
                }
            }
            Op::MemEmpty => self.resolve(dst, Value::Mem(Rc::new(BTreeMap::new()))),
            Op::MemLoad { mem, name } => match need!(*mem) {
                Value::Mem(m) => match m.get(name) {
                    Some(s) => self.follow(*s, dst),
                    None => {
                        let msg = format!("cannot access local variable '{name}' where it is not associated with a value");
                        let e = self.error("UnboundLocalError", &msg);
                        self.resolve(dst, e);
                    }
                },
                Value::Error(e) => self.resolve(dst, Value::Error(e)),
                _ => {
                    let e = self.error("TypeError", "poppy_jit: load from something that is not a memory");
                    self.resolve(dst, e);
                }
            },
            Op::MemStore { mem, name, value } => match need!(*mem) {
                Value::Mem(m) => {
                    let mut m2 = (*m).clone();
                    m2.insert(name.clone(), env[*value as usize]);
                    self.resolve(dst, Value::Mem(Rc::new(m2)));
                }
                Value::Error(e) => self.resolve(dst, Value::Error(e)),
                _ => {
                    let e = self.error("TypeError", "poppy_jit: store into something that is not a memory");
                    self.resolve(dst, e);
                }
            },
            Op::XCall { seq, func: f, args, kwnames } => {
                let seq = env[*seq as usize];
                let arg_slots: Vec<SlotId> = args.iter().map(|a| env[*a as usize]).collect();
                let callee = env[*f as usize];
                let Some(fv) = self.value(callee).cloned() else {
                    // The callee is not known yet (e.g. a method looked up on a pending result):
                    // queue the call now so that the order passes on as soon as possible.
                    self.queue_call(seq, callee, None, arg_slots, kwnames.clone(), dst, stmt.line);
                    return true;
                };
                let mut params = vec![seq];
                params.extend_from_slice(&arg_slots);
                match fv {
                    Value::Error(e) => self.resolve(dst, Value::Error(e)),
                    Value::Closure(c) => {
                        self.stats.inlined_calls += 1;
                        self.call_into(&c.prog, c.func, &c.env, &params, dst);
                    }
                    Value::Prim(p) if kwnames.is_empty() && self.host.is_eager(&p) => {
                        let argv: Option<Vec<H::Prim>> = arg_slots
                            .iter()
                            .map(|&a| match self.value(a) {
                                Some(Value::Prim(v)) => Some(v.clone()),
                                _ => None,
                            })
                            .collect();
                        let Some(argv) = argv else {
                            // A pending, error or non-primitive argument: a controller handles
                            // it (and hands the order on at once).
                            self.queue_call(seq, callee, Some(p), arg_slots, kwnames.clone(), dst, stmt.line);
                            return true;
                        };
                        match self.host.eager_call(&p, &argv) {
                            Ok(v) => {
                                let r = self.new_slot(Value::Prim(v));
                                self.resolve(dst, Value::Tuple(Rc::from([seq, r])));
                            }
                            Err(e) => {
                                // Failures keep their place in program order: a controller
                                // that failed at once (it still forwards the order).
                                self.queue_call(seq, callee, Some(p), arg_slots, kwnames.clone(), dst, stmt.line);
                                let cid = self.ctrls.len() - 1;
                                self.fail(cid, e);
                            }
                        }
                    }
                    Value::Prim(p) => match self.host.inline_target(&p, arg_slots.len(), kwnames) {
                        Some(prog) => {
                            self.stats.inlined_calls += 1;
                            self.call_into(&prog, prog.entry, &[], &params, dst);
                        }
                        None => self.queue_call(seq, callee, Some(p), arg_slots, kwnames.clone(), dst, stmt.line),
                    },
                    _ => {
                        let e = self.error("TypeError", "poppy_jit: call of a value that is not callable");
                        self.resolve(dst, e);
                    }
                }
            }
        }
        true
    }

    // ---- controllers -----------------------------------------------------------------------

    /// Queue a call: the successor's token exists at once, the result later. With the callee
    /// known it is an external call; otherwise the controller first waits for the callee.
    #[allow(clippy::too_many_arguments)]
    fn queue_call(
        &mut self,
        seq: SlotId,
        callee: SlotId,
        func: Option<H::Prim>,
        args: Vec<SlotId>,
        kwnames: Vec<String>,
        dst: SlotId,
        line: u32,
    ) {
        let out = Token { r: self.futs.new_future(), w: self.futs.new_future() };
        let s_out = self.new_slot(Value::Seq(out));
        let result = self.pending_slot();
        self.resolve(dst, Value::Tuple(Rc::from(vec![s_out, result])));
        let cid = self.ctrls.len();
        if let Slot::Pending(p) = &mut self.slots[result] {
            p.producer = cid as u32;
        }
        let mut held = Vec::with_capacity(args.len() + 3);
        held.push(seq);
        held.push(callee);
        held.push(result);
        held.extend_from_slice(&args);
        for &s in &held {
            self.refs[s] += 1;
        }
        let early = func.as_ref().and_then(|f| self.host.classify_callee(f));
        let phase = if func.is_some() { Phase::WaitArgs } else { Phase::WaitCallee };
        self.ctrls.push(Ctrl {
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
            hint: None,
            argv: Vec::new(),
            in_tok: None,
            held,
            dispatched: false,
            done: false,
            obj: None,
            queued_at: self.tracing.then(Instant::now),
            ready_at: None,
            dispatched_at: None,
            done_at: None,
        });
        if self.fut_owner.len() <= out.r {
            self.fut_owner.resize(out.r + 1, NONE);
        }
        self.fut_owner[out.r] = cid as u32;
        self.work.push(Work::Ctrl(cid));
        let w = self.work.len() - 1;
        self.ctrl_work.push(w);
        self.ready.push_back(w);
    }

    /// The controller's input token, or None after registering to wait for it. A poisoned S
    /// (the program order is undefined after an error) means the call can never be ordered.
    fn token(&mut self, cid: usize, w: WorkId) -> Option<Token> {
        if let Some(t) = self.ctrls[cid].in_tok {
            return Some(t);
        }
        match self.need(self.ctrls[cid].seq, w)? {
            Value::Seq(t) => {
                self.ctrls[cid].in_tok = Some(t);
                if self.ctrls[cid].phase == Phase::Finished {
                    // `finish` kept S alive only for this.
                    let seq = self.ctrls[cid].seq;
                    self.ctrls[cid].held.retain(|&s| s != seq);
                    self.release(seq);
                }
                Some(t)
            }
            _ => {
                self.finish(cid);
                None
            }
        }
    }

    /// The controller has nothing left to do: let go of the slots it kept alive. Its input
    /// order S is kept until read: program-order positions need it, and a failed unordered
    /// call still forwards it.
    fn finish(&mut self, cid: usize) {
        if self.ctrls[cid].phase == Phase::Finished {
            return;
        }
        self.ctrls[cid].phase = Phase::Finished;
        let seq = self.ctrls[cid].seq;
        if self.ctrls[cid].in_tok.is_none() {
            if let Some(Value::Seq(t)) = self.value(seq) {
                self.ctrls[cid].in_tok = Some(*t);
            }
        }
        let held = std::mem::take(&mut self.ctrls[cid].held);
        let keep_seq = self.ctrls[cid].in_tok.is_none();
        let mut kept = false;
        for &s in &held {
            if keep_seq && s == seq && !kept {
                kept = true;
            } else {
                self.release(s);
            }
        }
        if kept {
            self.ctrls[cid].held = vec![seq];
        }
    }

    fn wait_fut(&mut self, f: usize, w: WorkId) -> bool {
        if self.futs.is_done(f) {
            true
        } else {
            self.futs.wait(f, w);
            false
        }
    }

    fn resolve_fut(&mut self, f: usize) {
        for w in self.futs.resolve(f) {
            self.ready.push_back(w);
        }
    }

    /// Pass the order on without waiting for the call itself, as far as its class allows
    /// (unordered: F_R and F_W; readonly: F_R) — as soon as the class is known, even before the
    /// arguments are. Non-blocking: registers to be woken for whatever is still pending.
    fn forward(&mut self, cid: usize, w: WorkId) {
        let c = &self.ctrls[cid];
        let Some(class) = c.early else { return };
        let policy = Policy::of(class);
        let out = c.out;
        let r_pending = !policy.r_out_needs_done && !self.futs.is_done(out.r);
        let w_pending = !policy.w_out_needs_done && !self.futs.is_done(out.w);
        if !r_pending && !w_pending {
            return;
        }
        let Some(tok) = self.token(cid, w) else { return };
        if r_pending && self.wait_fut(tok.r, w) {
            self.resolve_fut(out.r);
        }
        if w_pending && self.wait_fut(tok.w, w) {
            self.resolve_fut(out.w);
        }
    }

    /// The call is done: resolve its F_R' once `tok`'s F_R is, then its F_W' once `tok`'s F_W is.
    fn release_after(&mut self, cid: usize, tok: Token, w: WorkId) {
        let out = self.ctrls[cid].out;
        if !self.wait_fut(tok.r, w) {
            return;
        }
        self.resolve_fut(out.r);
        if !self.wait_fut(tok.w, w) {
            return;
        }
        self.resolve_fut(out.w);
        self.finish(cid);
    }

    fn advance(&mut self, cid: usize, w: WorkId) {
        if self.ctrls[cid].phase == Phase::WaitArgs {
            self.try_hint(cid);
        }
        self.forward(cid, w);
        loop {
            match self.ctrls[cid].phase {
                Phase::WaitCallee => {
                    let c = &self.ctrls[cid];
                    let (seq, nargs) = (c.seq, c.args.len());
                    let Some(fv) = self.need(c.callee, w) else { return };
                    let mut params = vec![seq];
                    params.extend_from_slice(&self.ctrls[cid].args);
                    let target = match fv {
                        Value::Prim(p) => {
                            let kwnames = self.ctrls[cid].kwnames.clone();
                            match self.host.inline_target(&p, nargs, &kwnames) {
                                Some(prog) => Some((prog.clone(), prog.entry, Vec::new())),
                                None => {
                                    let early = self.host.classify_callee(&p);
                                    let c = &mut self.ctrls[cid];
                                    c.func = Some(p);
                                    c.early = early;
                                    c.phase = Phase::WaitArgs;
                                    self.try_hint(cid);
                                    self.forward(cid, w);
                                    continue;
                                }
                            }
                        }
                        Value::Closure(c) => Some((c.prog.clone(), c.func, c.env.clone())),
                        Value::Error(e) => return self.fail(cid, e),
                        _ => None,
                    };
                    let Some((prog, fid, env)) = target else {
                        let e = self.host.internal_error("TypeError", "poppy_jit: call of a value that is not callable");
                        return self.fail(cid, e);
                    };
                    self.stats.inlined_calls += 1;
                    match self.instantiate(&prog, fid, &env, &params) {
                        Ok(ret) => {
                            self.ctrls[cid].held.push(ret);
                            self.ctrls[cid].phase = Phase::Inlined { ret };
                        }
                        Err(e) => return self.fail(cid, e),
                    }
                }
                Phase::Inlined { ret } => {
                    let result = self.ctrls[cid].result;
                    match self.need(ret, w) {
                        None => return,
                        Some(Value::Tuple(t)) if t.len() == 2 => {
                            self.follow(t[1], result);
                            self.retain(t[0]);
                            self.ctrls[cid].held.push(t[0]);
                            self.ctrls[cid].phase = Phase::InlinedOrder { seq: t[0] };
                        }
                        Some(other) => {
                            let v = match other {
                                Value::Error(e) => Value::Error(e),
                                _ => self.error("TypeError", "poppy_jit: an inlined function returned no (S, value)"),
                            };
                            self.resolve(result, v);
                            self.finish(cid);
                            return;
                        }
                    }
                }
                Phase::InlinedOrder { seq } => {
                    // The body's final order becomes this call's F_R'/F_W'.
                    let Some(Value::Seq(tok)) = self.need(seq, w) else { return };
                    self.bridge.insert(self.ctrls[cid].out.r, tok.r);
                    return self.release_after(cid, tok, w);
                }
                Phase::WaitArgs => {
                    let mut argv = Vec::with_capacity(self.ctrls[cid].args.len());
                    for i in 0..self.ctrls[cid].args.len() {
                        let a = self.ctrls[cid].args[i];
                        match self.prim_arg(a, w) {
                            None => return,
                            Some(Ok(p)) => argv.push(p),
                            Some(Err(e)) => return self.fail(cid, e),
                        }
                    }
                    let c = &self.ctrls[cid];
                    let class = self.host.classify(c.func.as_ref().expect("callee known"), &argv, &c.kwnames);
                    if c.hinted && stricter(class, c.early.expect("hinted class")) {
                        // Order was passed on on the strength of a declared return type that the
                        // real value does not have: never continue silently.
                        let msg = "poppy_jit: an external's result does not have its declared return type, \
                                   and the program order was already passed on because of it; annotate it \
                                   correctly (or not at all)";
                        let e = self.host.internal_error("TypeError", msg);
                        return self.fail(cid, e);
                    }
                    let obj = self.involvement(cid, &argv);
                    let c = &mut self.ctrls[cid];
                    c.class = class;
                    c.early = Some(class);
                    c.argv = argv;
                    c.obj = obj;
                    c.ready_at = Some(Instant::now());
                    c.phase = Phase::WaitOrder;
                    if self.ctrls[cid].obj.is_none() {
                        self.forward(cid, w);
                    }
                }
                Phase::WaitOrder => {
                    if self.ctrls[cid].obj.as_ref().is_some_and(|o| o.local.is_none()) {
                        let Some(local) = self.object_order(cid, w) else { return };
                        self.ctrls[cid].obj.as_mut().expect("involved").local = Some(local);
                        if !self.ctrls[cid].obj.as_ref().expect("involved").escapes.is_empty() {
                            self.stats.object_escapes += 1;
                        }
                        if local {
                            self.stats.object_local_calls += 1;
                            // Ordered against its object only: the global order passes on at once.
                            self.ctrls[cid].class = Class::Unordered;
                            self.ctrls[cid].early = Some(Class::Unordered);
                        }
                        self.forward(cid, w);
                    }
                    let class = self.ctrls[cid].class;
                    let policy = Policy::of(class);
                    if policy.dispatch_needs_r || policy.dispatch_needs_w {
                        let Some(tok) = self.token(cid, w) else { return };
                        if !self.wait_fut(tok.r, w) {
                            return;
                        }
                        if policy.dispatch_needs_w && !self.wait_fut(tok.w, w) {
                            return;
                        }
                    }
                    self.dispatch(cid);
                    if self.ctrls[cid].phase == Phase::Running {
                        return;
                    }
                }
                Phase::Completed => {
                    let Some(tok) = self.token(cid, w) else { return };
                    return self.release_after(cid, tok, w);
                }
                Phase::Running | Phase::Finished => return,
            }
        }
    }

    /// Wake the work items waiting for call `cid` to finish (per-object ordering).
    fn wake_done(&mut self, cid: usize) {
        if let Some(f) = self.ctrls[cid].obj.as_ref().map(|o| o.done) {
            self.resolve_fut(f);
        }
    }

    /// What a call about to be ordered does to owned objects (None: nothing).
    fn involvement(&mut self, cid: usize, argv: &[H::Prim]) -> Option<Box<ObjInfo>> {
        if self.owned.is_empty() {
            return None;
        }
        let f = self.ctrls[cid].func.clone().expect("callee known");
        let kwnames = self.ctrls[cid].kwnames.clone();
        let mut keys = self.host.object_keys(&f, argv);
        keys.retain(|k| self.owned.contains_key(k));
        if keys.is_empty() {
            return None;
        }
        // A scoped operation: its receiver is touched; the other arguments' objects escape.
        let touch = match self.host.scope(&f, argv, &kwnames).filter(|(k, _, _)| self.owned.contains_key(k)) {
            Some((k, write, rest)) => {
                keys = self.host.arg_keys(&rest);
                keys.retain(|o| self.owned.contains_key(o));
                match write {
                    // Touches no state of its receiver: its result stands for the object (a
                    // bound method), so calls that get that result while it is pending must be
                    // waited for (see `object_order`).
                    None if keys.is_empty() => {
                        let done = self.futs.new_future();
                        let info = ObjInfo { touch: None, escapes: Vec::new(), local: None, carries: Some(k), done };
                        return Some(Box::new(info));
                    }
                    None => None,
                    // e.g. a list appended to itself: an escape
                    Some(_) if keys.contains(&k) => None,
                    Some(write) => Some((k, write)),
                }
            }
            None => None,
        };
        keys.sort_unstable();
        keys.dedup();
        let done = self.futs.new_future();
        Some(Box::new(ObjInfo { touch, escapes: keys, local: None, carries: None, done }))
    }

    /// Whether call `c`, still waiting for arguments, may involve one of `keys`: None if it
    /// cannot; Some(slot) to wait for (Some(None): its involvement will be known once it
    /// advances, which it is queued to do).
    fn may_involve(&mut self, c: usize, keys: &[u64], depth: u32) -> Option<Option<SlotId>> {
        let mut known = Vec::new();
        let mut pending = Vec::new();
        for i in 0..self.ctrls[c].args.len() {
            self.arg_leaves(self.ctrls[c].args[i], &mut known, &mut pending);
        }
        let f = self.ctrls[c].func.clone().expect("callee known");
        if self.host.object_keys(&f, &known).iter().any(|k| keys.contains(k)) {
            return Some(pending.first().copied());
        }
        for &p in &pending {
            // The pending value is an external call's result (not an internal function's: that
            // could return anything). Such a result is an owned object only if the object reached
            // that call — as an argument (the call then lies on our walk, which deals with it) or
            // through its callee (a bound method: a carrier).
            let safe = match self.producer_along(p, true) {
                Some(pc) if self.ctrls[pc].func.is_some() => match self.ctrls[pc].phase {
                    Phase::WaitArgs => depth < 16 && self.may_involve(pc, keys, depth + 1).is_none(),
                    Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. } => false,
                    _ => !self.ctrls[pc].obj.as_ref().and_then(|o| o.carries).is_some_and(|k| keys.contains(&k)),
                },
                _ => false,
            };
            if !safe {
                return Some(Some(p));
            }
        }
        None
    }

    /// The primitive values and pending slots an argument is made of (looking into tuples).
    fn arg_leaves(&self, s: SlotId, known: &mut Vec<H::Prim>, pending: &mut Vec<SlotId>) {
        match self.value(s) {
            None => pending.push(s),
            Some(Value::Tuple(t)) => {
                let t = t.clone();
                for &x in t.iter() {
                    self.arg_leaves(x, known, pending);
                }
            }
            Some(Value::Prim(p)) => known.push(p.clone()),
            Some(_) => {}
        }
    }

    /// Per-object ordering of call `cid` (see `ObjInfo`): walk program order backwards from it
    /// to the creation of each owned object it involves, waiting for what must finish first.
    /// None: registered to wait; Some(true): it may skip the global order; Some(false): it
    /// follows the global order (its object escaped earlier, or it is itself an escape).
    fn object_order(&mut self, cid: usize, w: WorkId) -> Option<bool> {
        let info = self.ctrls[cid].obj.as_ref().expect("involved");
        // (key, waits for every earlier operation on it (a write or an escape), is the receiver)
        let mut active: Vec<(u64, bool, bool)> = info.escapes.iter().map(|&k| (k, true, false)).collect();
        if let Some((k, write)) = info.touch {
            active.push((k, write, true));
        }
        let mut escaped = false;
        let mut cur = cid;
        while !active.is_empty() {
            let c = match self.predecessor(cur) {
                Pred::Call(c) => c,
                Pred::Start => break, // every earlier call was looked at
                Pred::Unknown => {
                    // Its input order is not known yet: wait for it (an error value: no order).
                    self.need(self.ctrls[cur].seq, w)?;
                    return Some(false);
                }
            };
            match self.ctrls[c].phase {
                Phase::WaitCallee => {
                    self.need(self.ctrls[c].callee, w)?;
                    self.ready.push_back(w);
                    return None;
                }
                Phase::WaitArgs => {
                    // Its arguments decide whether it involves our objects. It cannot if none of
                    // the known ones is one and every pending one is the result of an external
                    // call that does not carry one: an external's result is an owned object
                    // only if the object escaped to it, and that escape lies on our walk.
                    let keys: Vec<u64> = active.iter().map(|a| a.0).collect();
                    if let Some(p) = self.may_involve(c, &keys, 0) {
                        match p {
                            Some(slot) => {
                                self.need(slot, w);
                            }
                            None => self.ready.push_back(w), // it is queued to advance first
                        }
                        return None;
                    }
                    cur = c;
                    continue;
                }
                Phase::Inlined { ret: next } | Phase::InlinedOrder { seq: next } => {
                    // An internal call whose body's order is not linked in yet.
                    if self.need(next, w).is_some() {
                        self.ready.push_back(w);
                    }
                    return None;
                }
                _ => {}
            }
            let finished = self.ctrls[c].done || self.ctrls[c].phase == Phase::Finished;
            let (touch, local, escapes) = match self.ctrls[c].obj.as_ref() {
                Some(o) => (o.touch, o.local, o.escapes.clone()),
                None => (None, None, Vec::new()),
            };
            let mut i = 0;
            while i < active.len() {
                let (k, all, is_touch) = active[i];
                if self.owned.get(&k) == Some(&c) {
                    active.swap_remove(i); // its creation: nothing earlier can reach it
                    continue;
                }
                if let Some((_, cwrite)) = touch.filter(|(tk, _)| *tk == k) {
                    if local == Some(false) {
                        // An earlier operation on it follows the global order: so does this one.
                        escaped |= is_touch;
                        active.swap_remove(i);
                        continue;
                    }
                    if (cwrite || all) && !finished {
                        let done = self.ctrls[c].obj.as_ref().expect("involved").done;
                        if !self.wait_fut(done, w) {
                            return None;
                        }
                    }
                    if cwrite || (!all && local == Some(true)) {
                        // A write finished after everything before it; a decided read saw the
                        // last write finished — either way nothing earlier matters for us.
                        active.swap_remove(i);
                        continue;
                    }
                } else if escapes.contains(&k) {
                    // An escape: it waited for the operations before it, and it (like everything
                    // after it on this object) follows the global order.
                    escaped |= is_touch;
                    active.swap_remove(i);
                    continue;
                }
                i += 1;
            }
            cur = c;
        }
        let touch = self.ctrls[cid].obj.as_ref().and_then(|o| o.touch);
        Some(touch.is_some() && !escaped)
    }

    /// An external call's argument: a primitive, or a λO tuple of primitives (built into a host
    /// tuple once every component is known). None after registering to wait.
    fn prim_arg(&mut self, s: SlotId, w: WorkId) -> Option<Result<H::Prim, H::Error>> {
        match self.need(s, w)? {
            Value::Prim(p) => Some(Ok(p)),
            Value::Error(e) => Some(Err(e)),
            Value::Tuple(t) => {
                let mut items = Vec::with_capacity(t.len());
                for c in t.iter() {
                    match self.prim_arg(*c, w)? {
                        Ok(p) => items.push(p),
                        Err(e) => return Some(Err(e)),
                    }
                }
                Some(Ok(self.host.make_tuple(items)))
            }
            _ => Some(Err(self.host.internal_error(
                "TypeError",
                "poppy_jit: an external call got a λO function or memory as an argument",
            ))),
        }
    }

    fn dispatch(&mut self, cid: usize) {
        if let Some(p) = self.failed_at {
            if self.position_of(cid).is_some_and(|q| q > p) {
                // After a failed call in program order: CPython never makes this call.
                let e = self.host.internal_error("RuntimeError", "poppy_jit: not run, an earlier call raised");
                return self.fail(cid, e);
            }
        }
        let task = cid as TaskId;
        let now = Instant::now();
        self.ctrls[cid].dispatched_at = Some(now);
        self.ctrls[cid].dispatched = true;
        let c = &self.ctrls[cid];
        if let Some(t) = c.ready_at {
            self.stats.queue_wait_ns += now.duration_since(t).as_nanos() as u64;
        }
        self.stats.count_dispatch(c.class);
        self.in_flight += 1;
        self.stats.peak_in_flight = self.stats.peak_in_flight.max(self.in_flight);
        let c = &self.ctrls[cid];
        match self.host.dispatch(task, c.func.as_ref().expect("callee known"), &c.argv, &c.kwnames) {
            Dispatch::Done(r) => {
                self.in_flight -= 1;
                self.complete(cid, r);
            }
            Dispatch::Pending => {
                self.ctrls[cid].phase = Phase::Running;
            }
        }
    }

    fn complete(&mut self, cid: usize, r: Result<H::Prim, H::Error>) {
        self.ctrls[cid].done = true;
        self.wake_done(cid);
        if let (Ok(v), Some(f)) = (&r, self.ctrls[cid].func.as_ref()) {
            if let Some(k) = self.host.fresh_key(f, v) {
                self.owned.insert(k, cid);
            }
        }
        if self.tracing {
            self.ctrls[cid].done_at = Some(Instant::now());
        }
        if !self.tracing {
            self.ctrls[cid].argv.clear();
        }
        match r {
            Ok(v) => {
                let result = self.ctrls[cid].result;
                match self.host.as_term(&v) {
                    None => self.resolve(result, Value::Prim(v)),
                    Some((prog, fid, args)) => {
                        // Resolve to a λO expression: instantiate it; the call's result follows
                        // the expression's.
                        let token = Token { r: self.futs.new_resolved(), w: self.futs.new_resolved() };
                        let mut params = vec![self.new_slot(Value::Seq(token))];
                        for a in args {
                            params.push(self.new_slot(Value::Prim(a)));
                        }
                        self.stats.term_resolutions += 1;
                        self.call_into(&prog, fid, &[], &params, result);
                    }
                }
                self.ctrls[cid].phase = Phase::Completed;
                let w = self.ctrl_work[cid];
                self.ready.push_back(w);
            }
            Err(e) => self.fail(cid, e),
        }
    }

    /// The call raised, or cannot run because an argument is an error: its result is the error
    /// and its output futures never resolve.
    fn fail(&mut self, cid: usize, e: H::Error) {
        self.wake_done(cid);
        let result = self.ctrls[cid].result;
        self.failures.push((cid, e.clone()));
        self.resolve(result, Value::Error(e));
        self.finish(cid);
        if let Some(p) = self.position_of(cid) {
            if self.failed_at.map_or(true, |q| p < q) {
                self.failed_at = Some(p);
                self.cancel_after(p);
            }
        }
    }

    /// Cancel the running calls that come after position `p` in program order (speculative
    /// ones; their results can no longer matter). Their outcomes still arrive through `wait`.
    fn cancel_after(&mut self, p: u64) {
        for cid in 0..self.ctrls.len() {
            if self.ctrls[cid].phase == Phase::Running && self.position_of(cid).is_some_and(|q| q > p) {
                self.stats.cancelled_calls += 1;
                self.host.cancel(cid as TaskId);
            }
        }
    }

    /// A call's position in program order, if its chain of input orders is known (memoised:
    /// amortised O(1)).
    fn position_of(&mut self, cid: usize) -> Option<u64> {
        const UNKNOWN: u64 = u64::MAX;
        if self.pos_memo.len() < self.ctrls.len() {
            self.pos_memo.resize(self.ctrls.len(), UNKNOWN);
        }
        let mut chain = Vec::new();
        let mut cur = cid;
        let base = loop {
            if self.pos_memo[cur] != UNKNOWN {
                break self.pos_memo[cur];
            }
            chain.push(cur);
            match self.predecessor(cur) {
                Pred::Call(owner) => {
                    cur = owner;
                    if matches!(self.ctrls[cur].phase, Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. }) {
                        // A call that is being inlined: its order continues through its body's
                        // calls, which are not all known yet.
                        return None;
                    }
                }
                Pred::Start => break 0,
                Pred::Unknown => return None,
            }
        };
        let mut p = base;
        for c in chain.into_iter().rev() {
            p += 1;
            self.pos_memo[c] = p;
        }
        Some(self.pos_memo[cid])
    }

    /// The call whose output order is this call's input order (through inlined calls' bridges).
    fn predecessor(&self, cid: usize) -> Pred {
        let ctrl = &self.ctrls[cid];
        // Without `in_tok`, S is still held (see `finish`).
        let tok = match ctrl.in_tok {
            Some(t) => t,
            None => match self.value(ctrl.seq) {
                Some(Value::Seq(t)) => *t,
                _ => return Pred::Unknown,
            },
        };
        match self.fut_owner.get(self.through_bridges(tok.r)).copied().filter(|&o| o != NONE) {
            Some(owner) => Pred::Call(owner as usize),
            None => Pred::Start,
        }
    }

    fn through_bridges(&self, mut r: usize) -> usize {
        while let Some(&b) = self.bridge.get(&r) {
            r = b;
        }
        r
    }

    /// Each call's position in program order: 1 + the position of the call that produced its
    /// input token (0 for the run's initial token); None if its input order never became known.
    fn positions(&self) -> Vec<Option<u64>> {
        let n = self.ctrls.len();
        let mut pos: Vec<Option<Option<u64>>> = vec![None; n];
        for start in 0..n {
            // Walk back along the token chain to a known position, then fill in going forward.
            let mut chain = Vec::new();
            let mut cur = Some(start);
            let mut base: Option<u64> = None;
            while let Some(c) = cur {
                if let Some(p) = pos[c] {
                    base = p;
                    break;
                }
                chain.push(c);
                cur = match self.predecessor(c) {
                    Pred::Call(owner) => Some(owner),
                    Pred::Start => {
                        base = Some(0); // the run's initial token
                        None
                    }
                    Pred::Unknown => {
                        base = None;
                        None
                    }
                };
            }
            for c in chain.into_iter().rev() {
                base = base.map(|b| b + 1);
                pos[c] = Some(base);
            }
        }
        pos.into_iter().map(|p| p.flatten()).collect()
    }

    /// Records of every call whose arguments became known, with its position in program order.
    fn call_records(&mut self) -> Vec<CallRecord<H::Prim>> {
        let pos = self.positions();
        let failed: std::collections::HashSet<usize> = self.failures.iter().map(|(c, _)| *c).collect();
        let mut out = Vec::new();
        for (cid, c) in self.ctrls.iter_mut().enumerate() {
            let (Some(ready), Some(func)) = (c.ready_at, c.func.clone()) else { continue };
            out.push(CallRecord {
                position: pos[cid],
                func,
                args: std::mem::take(&mut c.argv),
                kwnames: c.kwnames.clone(),
                class: c.class,
                queued: c.queued_at.unwrap_or(ready),
                ready,
                dispatched: c.dispatched_at,
                done: c.done_at,
                ok: c.done && !failed.contains(&cid),
            });
        }
        out
    }

    // ---- result ----------------------------------------------------------------------------

    fn outcome(&mut self, ret: SlotId) -> Result<H::Prim, H::Error> {
        // Raise the failure earliest in program order. When it is an unordered call, it had
        // passed the order on before failing, so later ordered calls may have run: say which.
        if !self.failures.is_empty() {
            let pos = self.positions();
            let earliest = self
                .failures
                .iter()
                .filter_map(|(cid, e)| pos[*cid].map(|p| (p, *cid, e.clone())))
                .min_by_key(|(p, _, _)| *p);
            if let Some((p, failed, e)) = earliest {
                let later: Vec<H::Prim> = self
                    .ctrls
                    .iter()
                    .enumerate()
                    .filter(|(c, ctrl)| {
                        ctrl.dispatched
                            && ctrl.class != Class::Unordered
                            && pos[*c].is_some_and(|q| q > p)
                    })
                    .filter_map(|(_, ctrl)| ctrl.func.clone())
                    .collect();
                let line = self.ctrls[failed].line;
                return Err(self.host.note_failure(e, line, later));
            }
        }
        let value = match self.value(ret) {
            Some(Value::Tuple(t)) if t.len() == 2 => self.value(t[1]).cloned(),
            Some(v) => Some(v.clone()),
            None => None,
        };
        match value {
            Some(Value::Prim(p)) => Ok(p),
            Some(Value::Error(e)) => Err(e),
            _ => match self.failures.first() {
                Some((_, e)) => Err(e.clone()),
                None => Err(self.host.internal_error(
                    "RuntimeError",
                    "poppy_jit: λO evaluation stalled before the function's result was known",
                )),
            },
        }
    }
}
