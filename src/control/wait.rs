//! Waiting on the controllers' futures, and finding which call will produce a pending
//! variable — the primitives `order`, `objects` and the controller state machine share.
use super::env::Env;
use super::state::{CtrlId, Phase, SlotId, WorkId};
use super::FutId;

/// Have work item `w` stepped again when call `c`'s callee, body, result hint or per-object
/// decision changes (`Ctrl::hint_waiters`; `wake_askers`).
pub(super) fn ask_again<E: Env>(e: &mut E, c: CtrlId, w: WorkId) {
    if !e.ctl_ref()[c].hints.as_ref().is_some_and(|h| h.hint_waiters.contains(&w)) {
        e.ctl()[c].hints_mut().hint_waiters.push(w);
    }
}

/// Call `c` changed in a way `ask_again` waits for: wake those work items.
pub(super) fn wake_askers<E: Env>(e: &mut E, c: CtrlId) {
    let Some(h) = e.ctl()[c].hints.as_mut() else { return };
    for x in std::mem::take(&mut h.hint_waiters) {
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

/// Whether a stand-in derived from the declared results of `roots` is wrong: one of them arrived
/// without its declared type.
pub(super) fn wrong_stand_in<E: Env>(e: &E, roots: &[CtrlId]) -> bool {
    roots.iter().any(|&r| e.ctl_ref()[r].declared_ok() == Some(false))
}

/// The stand-in for a pending slot's value: its producing call's result hint; the calls with a
/// declared result type it was derived from are added to `roots`. None when one of those
/// arrived without its declared type (the stand-in was wrong). If that call may still get one
/// (its callee or arguments are not known yet), `w` is woken when it does.
pub(super) fn hint_of<E: Env>(e: &mut E, s: SlotId, w: WorkId, roots: &mut Vec<CtrlId>) -> Option<E::Prim> {
    // Through an inlined call to its body's result (the same value): its producer's hint.
    // (A variable bound to nothing yet — a component of an `ite` whose branch has not
    // returned — has no producer: no stand-in. Waiting here for it to be bound made a
    // controller woken for other reasons register again each time, without bound.)
    let c = producer_along(e, s, true)?;
    let p = &e.ctl_ref()[c];
    if let Some(h) = p.hints.as_ref().filter(|h| h.hint.is_some()) {
        if wrong_stand_in(e, &h.hint_roots) {
            return None;
        }
        for &r in &h.hint_roots {
            if !roots.contains(&r) {
                roots.push(r);
            }
        }
        return h.hint.clone();
    }
    if matches!(p.phase, Phase::WaitCallee | Phase::WaitArgs | Phase::Inlined { .. }) {
        ask_again(e, c, w);
    }
    None
}
