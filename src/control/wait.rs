//! Waiting on the controllers' futures, and finding which call will produce a pending
//! variable — the primitives `order`, `objects` and the controller state machine share.
use super::env::Env;
use super::state::{CtrlId, SlotId, WorkId};
use super::FutId;

/// Have work item `w` stepped again when call `c`'s callee, body, result hint or per-object
/// decision changes (`Ctrl::hint_waiters`; `wake_askers`).
pub(super) fn ask_again<E: Env>(e: &mut E, c: CtrlId, w: WorkId) {
    if !e.ctl_ref()[c].hint_waiters.contains(&w) {
        e.ctl()[c].hint_waiters.push(w);
    }
}

/// Call `c` changed in a way `ask_again` waits for: wake those work items.
pub(super) fn wake_askers<E: Env>(e: &mut E, c: CtrlId) {
    for x in std::mem::take(&mut e.ctl()[c].hint_waiters) {
        e.wake(x);
    }
}

/// The call whose result a pending slot will be, following alias edges; with
/// `through_inlined`, past an inlined internal call to the value its body returns once that
/// is linked.
pub(super) fn producer_along<E: Env>(e: &E, mut s: SlotId, through_inlined: bool) -> Option<CtrlId> {
    for _ in 0..64 {
        let (producer, alias) = e.pending_source(s)?;
        if let Some(p) = producer {
            if !through_inlined || e.ctl_ref()[p].func.is_some() || alias.is_none() {
                return Some(p);
            }
        }
        s = alias?;
    }
    None
}

/// Whether future `f` is resolved; if not, `w` is woken when it is.
#[inline]
pub(super) fn wait_fut<E: Env>(e: &mut E, f: FutId, w: WorkId) -> bool {
    let futs = &mut e.ctl().futs;
    if futs.is_done(f) {
        true
    } else {
        futs.wait(f, w);
        false
    }
}

#[inline]
pub(super) fn resolve_fut<E: Env>(e: &mut E, f: FutId) {
    for w in e.ctl().futs.resolve(f) {
        e.wake(w);
    }
}
