//! Running a λO program in steps, for a caller that awaits instead of blocking (a compiled
//! `async def` on its caller's running event loop): `start` and `resume` reduce until the run is
//! finished or waits for an external call, and then hand back the evaluator's whole state
//! (`Parked`) instead of calling `Host::wait`; the caller delivers the calls that finished with
//! `resume`. The same reductions as `run`, in the same order (`run` is `start` followed by a
//! `resume` after each `wait`).
use super::*;

/// A run waiting for external calls: the evaluator without its host and counters.
pub struct Parked<H: Host> {
    buffers: Buffers<H::Prim, H::Error>,
    carry: Carry,
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
    let mut ev = Eval::new(host, stats, opts);
    let ret = match ev.begin(&program, args) {
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
        (Eval::from_parts(host, stats, p.buffers, p.carry), p.ret)
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
            return Progress::Waiting(Parked { buffers: self.take_buffers(), carry: self.take_carry(), ret });
        }
        self.end(ret, Ok(()))
    }

    /// The end of a run (`Eval::end_run`), as a step's progress.
    fn end(mut self, ret: SlotId, driven: Result<(), H::Error>) -> Progress<H> {
        Progress::Done(self.end_run(ret, driven))
    }
}
