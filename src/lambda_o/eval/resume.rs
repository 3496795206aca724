//! Running a λO program in steps, for a caller that awaits instead of blocking (a compiled
//! `async def` on its caller's running event loop): `start` and `resume` reduce until the run is
//! finished or waits for an external call, and then hand back the evaluator's whole state
//! (`Parked`) instead of calling `Host::wait`; the caller delivers the calls that finished with
//! `resume`. The same reductions as `run`, in the same order (`run` is `start` followed by a
//! `resume` after each `wait`).
use super::*;

/// A run waiting for external calls: the evaluator without its host and counters.
pub struct Parked<H: Host> {
    slots: Vec<Slot<H::Prim, H::Error>>,
    refs: Vec<u32>,
    free_slots: Vec<SlotId>,
    live_slots: u64,
    peak_live: u64,
    work: Vec<Work<H::Prim>>,
    free_work: Vec<WorkId>,
    ready: VecDeque<WorkId>,
    ctl: Controllers<H::Prim, H::Error>,
    steps_left: u64,
    shuffle: Option<u64>,
    blocked: Vec<u32>,
    parked: VecDeque<WorkId>,
    slot_budget: u64,
    ret: SlotId,
}

/// Where a run is after a step.
pub enum Progress<H: Host> {
    Done(Result<H::Prim, H::Error>),
    Waiting(Parked<H>),
}

/// Begin a run (as `run_with`), reducing until it finishes or waits.
pub fn start<H: Host>(
    host: &mut H,
    program: ProgramRef<H::Prim>,
    args: Vec<H::Prim>,
    stats: &mut RunStats,
    opts: &RunOptions,
) -> Progress<H> {
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
        ctl: b.ctl,
        steps_left: opts.max_steps,
        shuffle: opts.shuffle_seed.map(|s| s | 1),
        blocked: Vec::new(),
        parked: VecDeque::new(),
        slot_budget: opts.slot_budget,
    };
    ev.ctl.tracing = ev.host.tracing();
    for k in ev.host.owned_from_start() {
        ev.ctl.own_from_start(k);
    }
    let token = ev.ctl.released_token();
    let mut params = vec![ev.new_slot(Value::Seq(token))];
    params.extend(args.into_iter().map(|a| ev.new_slot(Value::Prim(a))));
    let ret = match ev.instantiate(&program, program.entry, &[], &params) {
        Ok(r) => r,
        Err(e) => return ev.end(0, Err(e)),
    };
    ev.proceed(ret)
}

/// Deliver the calls that finished and reduce until the run finishes or waits again.
pub fn resume<H: Host>(
    host: &mut H,
    parked: Parked<H>,
    stats: &mut RunStats,
    finished: Vec<(TaskId, Result<H::Prim, H::Error>)>,
) -> Progress<H> {
    let (mut ev, ret) = Eval::unpark(host, stats, parked);
    for (task, result) in finished {
        control::finished(&mut ev, task as usize, result);
    }
    ev.proceed(ret)
}

/// The waiting run's caller was cancelled (`error`, a CancelledError thrown into the awaiting
/// coroutine): delivered as a KeyboardInterrupt is (`control::interrupt`) — to the running call
/// earliest in program order when that is a catching one (in a try or with body), whose handlers
/// then run as CPython's would with the error raised at that await; the run goes on (Ok).
/// Otherwise (Err) the run is given back, still waiting, for the caller to `abandon`.
pub fn interrupt<H: Host>(
    host: &mut H,
    parked: Parked<H>,
    stats: &mut RunStats,
    error: H::Error,
) -> Result<Progress<H>, Parked<H>> {
    let (mut ev, ret) = Eval::unpark(host, stats, parked);
    let delivered = control::interrupt(&mut ev, error);
    match ev.proceed(ret) {
        Progress::Waiting(p) if !delivered => Err(p),
        progress => Ok(progress),
    }
}

/// End a waiting run with `error` (the caller was cancelled, or the host aborted the run).
pub fn abandon<H: Host>(host: &mut H, parked: Parked<H>, stats: &mut RunStats, error: H::Error) -> H::Error {
    let (ev, ret) = Eval::unpark(host, stats, parked);
    match ev.end(ret, Err(error)) {
        Progress::Done(Err(e)) => e,
        _ => unreachable!("an abandoned run ends with its error"),
    }
}

impl<'a, H: Host> Eval<'a, H> {
    fn unpark(host: &'a mut H, stats: &'a mut RunStats, p: Parked<H>) -> (Self, SlotId) {
        let ev = Eval {
            host,
            stats,
            slots: p.slots,
            refs: p.refs,
            free_slots: p.free_slots,
            todo: Vec::new(),
            dead: Vec::new(),
            drop: Vec::new(),
            live_slots: p.live_slots,
            peak_live: p.peak_live,
            work: p.work,
            free_work: p.free_work,
            ready: p.ready,
            ctl: p.ctl,
            steps_left: p.steps_left,
            shuffle: p.shuffle,
            blocked: p.blocked,
            parked: p.parked,
            slot_budget: p.slot_budget,
        };
        (ev, p.ret)
    }

    /// Reduce every ready work item; then either park (calls in flight) or end the run.
    fn proceed(mut self, ret: SlotId) -> Progress<H> {
        loop {
            while let Some(w) = self.next_ready() {
                if self.steps_left == 0 {
                    let e = self.host.internal_error("RuntimeError", "step budget exhausted");
                    return self.end(ret, Err(e));
                }
                self.steps_left -= 1;
                self.step(w);
                if let Some(e) = self.out_of_memory() {
                    return self.end(ret, Err(e));
                }
            }
            if !self.unpark_folds() {
                break;
            }
        }
        if self.ctl.in_flight > 0 {
            return Progress::Waiting(Parked {
                slots: std::mem::take(&mut self.slots),
                refs: std::mem::take(&mut self.refs),
                free_slots: std::mem::take(&mut self.free_slots),
                live_slots: self.live_slots,
                peak_live: self.peak_live,
                work: std::mem::take(&mut self.work),
                free_work: std::mem::take(&mut self.free_work),
                ready: std::mem::take(&mut self.ready),
                ctl: std::mem::take(&mut self.ctl),
                steps_left: self.steps_left,
                shuffle: self.shuffle,
                blocked: std::mem::take(&mut self.blocked),
                parked: std::mem::take(&mut self.parked),
                slot_budget: self.slot_budget,
                ret,
            });
        }
        self.end(ret, Ok(()))
    }

    /// The end of a run, as in `run_with`: counters, call records, the outcome, buffers kept.
    fn end(mut self, ret: SlotId, driven: Result<(), H::Error>) -> Progress<H> {
        self.stats.peak_slots = self.stats.peak_slots.max(self.peak_live);
        if self.ctl.tracing {
            let records = self.call_records();
            self.host.record_calls(records);
        }
        let out = driven.and_then(|()| self.outcome(ret));
        if crate::oom::run_ended() {
            return Progress::Done(out); // its buffers are let go, not kept (`run_with`)
        }
        keep_buffers(Buffers {
            slots: std::mem::take(&mut self.slots),
            refs: std::mem::take(&mut self.refs),
            free_slots: std::mem::take(&mut self.free_slots),
            work: std::mem::take(&mut self.work),
            free_work: std::mem::take(&mut self.free_work),
            ready: std::mem::take(&mut self.ready),
            ctl: std::mem::take(&mut self.ctl),
        });
        Progress::Done(out)
    }
}
