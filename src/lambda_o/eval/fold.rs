//! Folds over long sequences in portions, under a bound on live variables (issue 17: memory
//! reclaimed during long loops).
//!
//! A `fold` over n known elements used to instantiate all n iterations at once. Iteration i+1
//! can start before iteration i finished (that is what overlaps a loop's unordered calls), but
//! when the iterations' calls complete one by one (a sequential call per iteration, a long
//! post-processing loop writing each line), every iteration's variables and work items stayed
//! live together: memory O(n) for a loop CPython runs in O(1).
//!
//! Now a fold instantiates iterations while the run's live variables are within
//! `RunOptions::slot_budget`; past it, the rest of the fold becomes a work item of its own
//! (`Work::Fold`) that waits in `Eval::parked`, holding its accumulator (the last iteration's
//! result), its body and its destination. When nothing else is ready, the parked folds go back
//! into the ready queue if the live variables fell to half the budget, or if no external call is
//! in flight (nothing else could free anything: progress before bounds). A resumed fold
//! instantiates at least one iteration, so every fold ends.
//!
//! Only when iterations are instantiated changes, never what they compute: λO's results do not
//! depend on the order of reduction (the shuffled-stepping tests), and iteration i+1 depends on
//! iteration i only. With the default budget (2^20 variables, ~36 MB of slots) a loop whose
//! calls are all in flight together keeps tens of thousands of iterations ahead.
use super::*;

/// The rest of a fold: its elements not yet given to an iteration, and what it holds.
pub(super) struct FoldRest<P> {
    items: std::vec::IntoIter<P>,
    /// The slot holding the body closure (retained: its captures stay alive with it).
    body: SlotId,
    /// The accumulator of the next iteration (retained).
    acc: SlotId,
    /// The fold's result variable (retained).
    dst: SlotId,
}

/// Default bound on live variables before a fold parks (`RunOptions::slot_budget`).
pub const SLOT_BUDGET: u64 = 1 << 20;

impl<'a, H: Host> Eval<'a, H> {
    /// Start the fold `dst := fold(items, body, acc)`: `body` and `acc` are the frame's slots
    /// (retained here for as long as the fold needs them).
    pub(super) fn fold_start(&mut self, items: Vec<H::Prim>, body: SlotId, acc: SlotId, dst: SlotId) {
        for s in [body, acc, dst] {
            self.retain(s);
        }
        self.fold_go(FoldRest { items: items.into_iter(), body, acc, dst }, None);
    }

    /// Step a parked fold's work item `w`.
    pub(super) fn fold_resume(&mut self, w: WorkId) {
        let Work::Fold(rest) = std::mem::replace(&mut self.work[w], Work::Done) else {
            unreachable!("a fold's work item holds its rest")
        };
        self.fold_go(*rest, Some(w));
    }

    /// Instantiate iterations (at least one) until the elements run out or the live variables
    /// exceed the budget; then bind the result, or park the rest (in `w` when given).
    fn fold_go(&mut self, mut rest: FoldRest<H::Prim>, w: Option<WorkId>) {
        let closure = match self.value(rest.body) {
            Some(Value::Closure(c)) => c.clone(),
            _ => unreachable!("a fold's body was checked to be a closure"),
        };
        let mut first = true;
        loop {
            if !first && self.live_slots > self.slot_budget && rest.items.len() > 0 {
                let item = Work::Fold(Box::new(rest));
                let w = match w {
                    Some(w) => {
                        self.work[w] = item;
                        w
                    }
                    None => self.new_work(item),
                };
                self.parked.push_back(w);
                self.stats.fold_parks += 1;
                return;
            }
            first = false;
            let Some(item) = rest.items.next() else { break };
            // Iteration i+1's accumulator is iteration i's result slot, returned retained; it is
            // released once the next iteration (or `dst`) holds it.
            let e = self.new_slot(Value::Prim(item));
            match self.instantiate(&closure.prog, closure.func, &closure.env, &[e, rest.acc]) {
                Ok(r) => {
                    self.release(rest.acc);
                    rest.acc = r;
                }
                Err(err) => {
                    self.resolve(rest.dst, Value::Error(err));
                    return self.fold_end(rest, w);
                }
            }
        }
        self.follow(rest.acc, rest.dst);
        self.fold_end(rest, w)
    }

    fn fold_end(&mut self, rest: FoldRest<H::Prim>, w: Option<WorkId>) {
        for s in [rest.acc, rest.body, rest.dst] {
            self.release(s);
        }
        if let Some(w) = w {
            self.release_work(w);
        }
    }

    /// Nothing is ready: put the parked folds back in the ready queue if the live variables fell
    /// to half the budget or nothing is in flight. Whether anything was put back.
    pub(super) fn unpark_folds(&mut self) -> bool {
        if self.parked.is_empty() || self.ctl.settled {
            return false;
        }
        if self.ctl.in_flight > 0 && self.live_slots > self.slot_budget / 2 {
            return false;
        }
        self.ready.extend(self.parked.drain(..));
        true
    }
}
