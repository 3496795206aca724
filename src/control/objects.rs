//! Per-object ordering (a refinement of PopPy §6.2): calls on lists, dicts and sets the run
//! itself created are ordered against the other calls on that object, not against the global
//! order, until the object escapes.
//!
//! Uses the program-order walk of `order` and the controller table; what a call's arguments
//! are comes from the evaluator through `Env`.
use super::env::{Env, Partial, Peek};
use super::state::{CtrlId, ObjInfo, Phase, SlotId, WorkId};
use super::wait::{ask_again, hint_of, producer_along, resolve_fut, wait_fut, wake_askers};
use super::order::{predecessor, Pred};
use super::policy::Policy;
use super::FutId;
use std::collections::HashSet;

/// Wake the work items waiting for call `cid` to finish (per-object ordering).
pub(super) fn wake_done<E: Env>(e: &mut E, cid: CtrlId) {
    if let Some(f) = e.ctl_ref()[cid].obj.as_ref().map(|o| o.done) {
        resolve_fut(e, f);
    }
}

/// What a call about to be ordered does to owned objects (None: nothing).
pub(super) fn involvement<E: Env>(e: &mut E, cid: CtrlId, argv: &[E::Prim]) -> Option<Box<ObjInfo>> {
    if e.ctl_ref().owned.is_empty() {
        return None;
    }
    let mut keys = e.object_keys(cid, argv);
    keys.retain(|k| e.ctl_ref().owned.contains_key(k));
    if keys.is_empty() {
        return None;
    }
    // A scoped operation: its receiver is touched; the other arguments' objects escape.
    let mut part = None;
    let mut recheck = false;
    let touch = match e.scope(cid, argv).filter(|s| e.ctl_ref().owned.contains_key(&s.recv)) {
        Some(s) => {
            let k = s.recv;
            keys = e.arg_keys(&s.rest);
            keys.retain(|o| e.ctl_ref().owned.contains_key(o));
            match s.write {
                // Touches no state of its receiver: its result stands for the object (a
                // bound method), so calls that get that result while it is pending must be
                // waited for (see `object_order`).
                None if keys.is_empty() => {
                    let done = e.ctl().futs.new_future();
                    let info = ObjInfo { touch: None, part: None, escapes: Vec::new(), local: None, carries: Some(k), done, recheck: false };
                    return Some(Box::new(info));
                }
                None => None,
                // e.g. a list appended to itself: an escape
                Some(_) if keys.contains(&k) => None,
                Some(write) => {
                    part = s.part;
                    recheck = s.recheck;
                    Some((k, write))
                }
            }
        }
        None => None,
    };
    keys.sort_unstable();
    keys.dedup();
    let done = e.ctl().futs.new_future();
    Some(Box::new(ObjInfo { touch, part, escapes: keys, local: None, carries: None, done, recheck }))
}

/// How many calls and undecided `ite`s one question of the walk (`may_involve`) may look at
/// before answering "may" (always sound, only less parallel).
const WALK_BUDGET: u32 = 1024;

/// One question of the walk (may this call or value involve these objects?): what is left of
/// its budget, and the variables and calls already looked at (each is looked at once: a value
/// several later ones are computed from is not judged again for each).
struct Look {
    budget: u32,
    seen: HashSet<SlotId>,
    calls: HashSet<CtrlId>,
    /// A pending variable judged "may" only because nothing binds it yet (no call produces
    /// it, it follows no other variable, and it is no undecided `ite`'s component: a statement
    /// not reduced yet): the judgement may change as soon as it is bound (`Env::wait_bound`).
    unbound: Option<SlotId>,
}

impl Look {
    fn new() -> Look {
        Look { budget: WALK_BUDGET, seen: HashSet::new(), calls: HashSet::new(), unbound: None }
    }
}

/// Whether call `c`, still waiting for arguments, may involve one of `keys`: None if it
/// cannot; Some(slot) to wait for (Some(None): its involvement will be known once it
/// advances, which it is queued to do). `look` bounds the calls it looks at.
fn may_involve<E: Env>(e: &mut E, c: CtrlId, keys: &[u64], look: &mut Look) -> Option<Option<SlotId>> {
    look.budget = look.budget.saturating_sub(1);
    let mut known = Vec::new();
    let mut pending = Vec::new();
    for &a in &e.ctl_ref()[c].args {
        e.arg_leaves(a, &mut known, &mut pending);
    }
    if e.object_keys(c, &known).iter().any(|k| keys.contains(k)) {
        return Some(pending.first().copied());
    }
    for &p in &pending {
        if pending_may_involve(e, p, keys, look) {
            return Some(Some(p));
        }
    }
    None
}

/// Whether call `c`, whose callee is still pending, may involve one of `keys` — itself, or the
/// body of an internal function it may turn out to be: through the callee value (pending: the
/// result of a call that may be one only if the object reached it) or an argument.
fn callee_may_involve<E: Env>(e: &mut E, c: CtrlId, keys: &[u64], look: &mut Look) -> bool {
    let callee = e.ctl_ref()[c].callee;
    if !matches!(e.peek(callee), Peek::Pending) {
        return true; // known: it advances first, then its phase tells
    }
    look.budget = look.budget.saturating_sub(1);
    if look.budget == 0 || pending_may_involve(e, callee, keys, look) {
        return true;
    }
    let mut known = Vec::new();
    let mut pending = Vec::new();
    for &a in &e.ctl_ref()[c].args {
        e.arg_leaves(a, &mut known, &mut pending);
    }
    if e.reach_keys(&known).iter().any(|k| keys.contains(k)) {
        return true;
    }
    pending.into_iter().any(|p| pending_may_involve(e, p, keys, look))
}

/// Wait for pending `s`, which may involve our objects, until that judgement may change: once
/// it is bound (`Env::wait_bound`: a value out of an undecided `ite` is judged again once the
/// branch is chosen and has bound it, often to a call's result, not once the value itself is
/// known), else once it is known.
fn wait_judged<E: Env>(e: &mut E, s: SlotId, w: WorkId) {
    if !e.wait_bound(s, w) && e.need_slot(s, w) {
        e.wake(w);
    }
}

/// Whether pending value `p` may be, or hold, one of `keys` once known.
///
/// An external call's result is an owned object only if the object reached that call — as an
/// argument (the call then lies on our walk, which deals with it) or through its callee (a
/// bound method: a carrier). A value internal code has yet to compute is a component of an
/// undecided `ite`'s result (`Env::ite_source`): it holds only what either branch can reach
/// from what it starts from — no owned object is in a global before it escapes, and a call's
/// result is one only if the object reached the call — so it may be one of `keys` only if one
/// of those values may. Anything else (an internal function's result) could be anything.
fn pending_may_involve<E: Env>(e: &mut E, p: SlotId, keys: &[u64], look: &mut Look) -> bool {
    if !look.seen.insert(p) {
        return false; // looked at already (a "may" would have ended the question)
    }
    let producer = producer_along(e, p, true);
    if let Some(pc) = producer {
        // A value whose stand-in says it will be an atom (a declared type, checked at arrival,
        // or a read of one) is no container and holds none.
        if let Some(h) = e.ctl_ref()[pc].hint().cloned() {
            let roots = e.ctl_ref()[pc].hints.as_ref().map(|h| h.hint_roots.clone()).unwrap_or_default();
            let wrong = super::wait::wrong_stand_in(e, &roots);
            if !wrong && e.is_atom(&h) {
                // Relied on: a mismatch of those declarations at arrival is an error now.
                let line = e.ctl_ref()[pc].line;
                for r in roots {
                    e.ctl()[r].hints_mut().relied_by.get_or_insert((line, true));
                }
                return false;
            }
        }
    }
    match producer {
        Some(pc) if e.ctl_ref()[pc].func.is_some() || e.ctl_ref()[pc].phase == Phase::WaitCallee => match e.ctl_ref()[pc].phase {
            Phase::WaitArgs if !look.calls.insert(pc) => false,
            Phase::WaitArgs => look.budget == 0 || may_involve(e, pc, keys, look).is_some(),
            // The result of a call whose callee is not known yet: one of our objects only if
            // the callee or an argument may be (an internal function's body reaches no more).
            Phase::WaitCallee if !look.calls.insert(pc) => false,
            Phase::WaitCallee => callee_may_involve(e, pc, keys, look),
            Phase::Inlined { .. } | Phase::InlinedOrder { .. } => true,
            _ => e.ctl_ref()[pc].obj.as_ref().and_then(|o| o.carries).is_some_and(|k| keys.contains(&k)),
        },
        Some(_) => true,
        None if look.budget == 0 => true,
        None => match ite_may_involve(e, p, keys, look) {
            Some(m) => m,
            None => {
                look.unbound.get_or_insert(p);
                true
            }
        },
    }
}

/// For pending `s`, a component of an undecided `ite`'s result: whether either branch may reach
/// one of `keys`; None if `s` is not such a component.
fn ite_may_involve<E: Env>(e: &mut E, s: SlotId, keys: &[u64], look: &mut Look) -> Option<bool> {
    look.budget = look.budget.saturating_sub(1);
    let (mut known, mut pending) = (Vec::new(), Vec::new());
    e.ite_source(s, &mut look.seen, &mut known, &mut pending)?;
    if e.reach_keys(&known).iter().any(|k| keys.contains(k)) {
        return Some(true);
    }
    for &q in &pending {
        // Collected into `seen` already: judged here, not skipped as looked at.
        look.seen.remove(&q);
        if pending_may_involve(e, q, keys, look) {
            return Some(true);
        }
    }
    Some(false)
}

/// The call before a call whose input order `seq` is not known yet because it is the order out
/// of an `ite` still waiting for its condition (or a chain of them): when no branch of those
/// can reach any of `keys`, none of the calls they will make involves them, so the walk goes on
/// before them. Err: the variable to wait for.
fn through_undecided<E: Env>(e: &mut E, seq: SlotId, keys: &[u64]) -> Result<Pred, SlotId> {
    let mut s = seq;
    let mut look = Look::new();
    for _ in 0..64 {
        let (mut known, mut pending) = (Vec::new(), Vec::new());
        let Some(src) = e.ite_source(s, &mut look.seen, &mut known, &mut pending) else { return Err(s) };
        let (0, Some(input)) = (src.index, src.input) else { return Err(s) };
        if e.reach_keys(&known).iter().any(|k| keys.contains(k)) {
            return Err(s);
        }
        for &p in &pending {
            look.seen.remove(&p);
            if pending_may_involve(e, p, keys, &mut look) {
                return Err(p);
            }
        }
        match e.peek_token(input) {
            Some(t) => return Ok(super::order::pred_of_token(e, t)),
            None => s = input,
        }
    }
    Err(s)
}

/// Whether call `c`, waiting for its arguments, was decided to store into one entry of an owned
/// dict (`early_local`, `early_part`) other than the entry `active` reads of it, and cannot
/// involve any other object of `active` (its pending arguments are values it only stores, each
/// an external call's result: see `early_local`).
fn other_entry<E: Env>(e: &mut E, c: CtrlId, active: &[(u64, bool, bool, Option<u64>)]) -> bool {
    let ctrl = &e.ctl_ref()[c];
    let (Some(ek), Some(ep)) = (ctrl.early_local, ctrl.early_part) else { return false };
    let Some(&(_, write, _, part)) = active.iter().find(|a| a.0 == ek) else { return false };
    if write || part.is_none() || part == Some(ep) {
        return false;
    }
    let others: Vec<u64> = active.iter().map(|a| a.0).filter(|&k| k != ek).collect();
    others.is_empty() || may_involve(e, c, &others, &mut Look::new()).is_none()
}

/// Per-object ordering of call `cid` (see `ObjInfo`): walk program order backwards from it
/// to the creation of each owned object it involves, waiting for what must finish first.
/// None: registered to wait; Some(true): it may skip the global order; Some(false): it
/// follows the global order (its object escaped earlier, or it is itself an escape).
pub(super) fn object_order<E: Env>(e: &mut E, cid: CtrlId, w: WorkId) -> Option<bool> {
    let info = e.ctl_ref()[cid].obj.as_ref().expect("involved");
    // (key, waits for every earlier operation on it (a write or an escape), is the receiver,
    // the part of it: a dict's or set's entry, None for the whole object)
    let mut active: Vec<(u64, bool, bool, Option<u64>)> = info.escapes.iter().map(|&k| (k, true, false, None)).collect();
    if let Some((k, write)) = info.touch {
        active.push((k, write, true, info.part));
    }
    let mut escaped = false;
    let mut cur = cid;
    while !active.is_empty() {
        let c = match predecessor(e, cur) {
            Pred::Call(c) => c,
            Pred::Start => break, // every earlier call was looked at
            Pred::Unknown => {
                // Its input order is not known yet: look through an undecided `ite` that cannot
                // reach our objects, else wait for it (an error value: no order).
                let seq = e.ctl_ref()[cur].seq;
                let keys: Vec<u64> = active.iter().map(|a| a.0).collect();
                match through_undecided(e, seq, &keys) {
                    Ok(Pred::Call(c)) => c,
                    Ok(_) => break,
                    Err(s) if s == seq => {
                        return e.need_slot(seq, w).then_some(false);
                    }
                    Err(s) => {
                        wait_judged(e, s, w);
                        return None;
                    }
                }
            }
        };
        match e.ctl_ref()[c].phase {
            Phase::WaitCallee => {
                // A callee not known yet (a global read in program order, a module's attribute)
                // may turn out to be an internal function whose body's calls come here. Like an
                // undecided branch's, they reach only what the call gives them, globals (no
                // owned object is in one before it escapes) and the results of calls: when
                // neither the callee nor an argument may be one of our objects, the walk goes
                // on before it.
                let keys: Vec<u64> = active.iter().map(|a| a.0).collect();
                if !callee_may_involve(e, c, &keys, &mut Look::new()) {
                    cur = c;
                    continue;
                }
                let callee = e.ctl_ref()[c].callee;
                if e.need_slot(callee, w) {
                    e.wake(w);
                }
                return None;
            }
            Phase::WaitArgs => {
                // Its arguments decide whether it involves our objects. It cannot if none of
                // the known ones is one and every pending one is the result of an external
                // call that does not carry one: an external's result is an owned object
                // only if the object escaped to it, and that escape lies on our walk.
                let keys: Vec<u64> = active.iter().map(|a| a.0).collect();
                // Whether it stores into one entry alone may have become decidable since it
                // last advanced (it advances again only when its arguments arrive).
                let was = e.ctl_ref()[c].early_local.is_some();
                let retry = early_local(e, c);
                if !was && e.ctl_ref()[c].early_local.is_some() {
                    // Decided now: let it pass its order on (`controller::forward_r_early`).
                    let cw = e.ctl_ref().work[c];
                    e.wake(cw);
                }
                if other_entry(e, c, &active) {
                    // Decided (before its arguments) to store into another entry of a dict
                    // we touch one entry of, and it can reach none of our other objects.
                    cur = c;
                    continue;
                }
                let mut look = Look::new();
                if let Some(p) = may_involve(e, c, &keys, &mut look) {
                    if e.ctl_ref()[c].early_local.is_none() && e.ctl_ref()[c].early.is_none() {
                        // It may still be decided to touch one entry alone before its
                        // arguments arrive (once an inlined call before it links in):
                        // ask again then, not only when its arguments are judged.
                        ask_again(e, c, w);
                    }
                    match p {
                        Some(slot) => match look.unbound.or(retry) {
                            Some(u) if e.wait_bound(u, w) => {}
                            _ => wait_judged(e, slot, w),
                        },
                        None => e.wake(w), // it is queued to advance first
                    }
                    return None;
                }
                cur = c;
                continue;
            }
            Phase::Inlined { ret: next } | Phase::InlinedOrder { seq: next } => {
                // An internal call whose body's order is not linked in yet.
                if e.need_slot(next, w) {
                    e.wake(w);
                }
                return None;
            }
            _ => {}
        }
        let ctrl = &e.ctl_ref()[c];
        let finished = ctrl.done || ctrl.phase == Phase::Finished;
        let (touch, cpart, local, escapes) = match ctrl.obj.as_ref() {
            Some(o) => (o.touch, o.part, o.local, o.escapes.clone()),
            None => (None, None, None, Vec::new()),
        };
        let mut i = 0;
        while i < active.len() {
            let (k, all, is_touch, part) = active[i];
            if e.ctl_ref().owned.get(&k) == Some(&c) {
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
                if part.is_some() && cpart.is_some() && part != cpart && !(all && cwrite) {
                    // Another entry of the same dict or set, and not two writes (which may
                    // each insert or remove an entry: the order of the entries is the order
                    // of those writes): independent of ours.
                    i += 1;
                    continue;
                }
                if (cwrite || all) && !finished {
                    let done = e.ctl_ref()[c].obj.as_ref().expect("involved").done;
                    if !wait_fut(e, done, w) {
                        return None;
                    }
                }
                // What it waited for covers what we must wait for only if it touches all of
                // the object or the same entry (a write to another entry, or to one entry
                // when we touch all of it, did not wait for the other entries' operations).
                let covers = cpart.is_none() || cpart == part;
                if covers && (cwrite || (!all && local == Some(true))) {
                    // A write finished after everything before it; a decided read saw the
                    // last write finished — either way nothing earlier matters for us.
                    active.swap_remove(i);
                    continue;
                }
            } else if escapes.contains(&k) {
                // An escape: it (like everything after it on this object) follows the global
                // order. Once it has been ordered (its own walk is over) or has finished, it
                // waited for the operations before it, which then need no look from us. Until
                // then they may still be pending — an unordered escape passes the global order
                // on before its walk, so a later read of the object ordered globally would
                // overtake them — so the walk goes on past it to wait for them itself.
                escaped |= is_touch;
                let ordered = finished || e.ctl_ref()[c].obj.as_ref().is_some_and(|o| o.local.is_some());
                if ordered {
                    active.swap_remove(i);
                    continue;
                }
            }
            i += 1;
        }
        cur = c;
    }
    let touch = e.ctl_ref()[cid].obj.as_ref().and_then(|o| o.touch);
    Some(touch.is_some() && !escaped)
}

/// A call the walk decided local whose scope holds only while its receiver's contents do
/// (`Scope::recheck`): whether the host still says it touches nothing but that receiver. Every
/// earlier operation on the receiver has finished (the walk waited for the writes) and no
/// later one can run before this call, which is dispatched at once: the contents now are those
/// it will see. False: it follows the global order (classified as any call).
pub(super) fn recheck<E: Env>(e: &mut E, cid: CtrlId) -> bool {
    let Some((k, _)) = e.ctl_ref()[cid].obj.as_ref().filter(|o| o.recheck).and_then(|o| o.touch) else { return true };
    let argv = std::mem::take(&mut e.ctl()[cid].argv);
    let still = e.scope(cid, &argv).is_some_and(|s| s.recv == k);
    e.ctl()[cid].argv = argv;
    still
}

/// Per-object ordering before the arguments are known. A call that only stores its pending
/// arguments into an owned receiver (`out.append(llm(x))`: `Env::scope_pending`) is ordered on
/// that object alone if the object has not escaped before it — which does not depend on the
/// values it stores, provided none of them can be the receiver: each is the result of an
/// external call (an internal function's result could be anything), and an external's result
/// is an owned object only if it was created by it (a new one) or the object escaped to it (an
/// escape on the walk below). Then the call will be unordered, and its F_R can pass on at once
/// (`controller::forward_r_early`) instead of holding up later reads until its arguments are
/// known. Sets `Ctrl::early_local`; registers no waits (undecided now: the call is decided
/// with its arguments, as before).
///
/// Returns a variable whose binding may let it decide (see `Look::unbound`) when it could not.
pub(super) fn early_local<E: Env>(e: &mut E, cid: CtrlId) -> Option<SlotId> {
    let c = &e.ctl_ref()[cid];
    if c.early_local.is_some() || c.early.is_some() || c.func.is_none() || e.ctl_ref().owned.is_empty() {
        return None;
    }
    let args = c.args.clone();
    let mut argv = Vec::with_capacity(args.len());
    let mut pending = false;
    for a in args {
        let item = match e.peek(a) {
            Peek::Prim(p) => Partial::Known(p),
            // A tuple the program builds with pending items.
            Peek::Other => match tuple_leaves(e, a) {
                Some(t) => t,
                None => return None,
            },
            Peek::Pending => match producer_along(e, a, true) {
                // `_build_tuple(x)` (a comprehension's `_list_extend(lst, (x,))`): its items.
                Some(pc) if e.ctl_ref()[pc].func.is_some() && e.ctl_ref()[pc].phase == Phase::WaitArgs && e.builds_tuple(pc) => {
                    let mut items = Vec::new();
                    for b in e.ctl_ref()[pc].args.clone() {
                        match e.peek(b) {
                            Peek::Prim(p) => items.push(Partial::Known(p)),
                            Peek::Pending if external_result(e, b) => items.push(Partial::Pending),
                            Peek::Other => match tuple_leaves(e, b) {
                                Some(Partial::Tuple(t)) => items.extend(t),
                                _ => return None,
                            },
                            _ => return None,
                        }
                    }
                    Partial::Tuple(items)
                }
                _ if external_result(e, a) => Partial::Pending,
                _ => {
                    // The result of a call whose callee is not known yet or of an inlined call
                    // whose body is not linked in yet: ask again once it is (its result then
                    // follows the body's, which may be an external call's).
                    // A value nothing binds yet (an undecided branch's, e.g. an inlined
                    // function's return value before its early `return`'s test is decided):
                    // ask again once it is bound.
                    let w = e.ctl_ref().work[cid];
                    match producer_along(e, a, true) {
                        Some(pc) if matches!(e.ctl_ref()[pc].phase, Phase::WaitCallee | Phase::Inlined { .. }) => {
                            ask_again(e, pc, w);
                        }
                        Some(_) => {}
                        None => {
                            e.wait_bound(a, w);
                        }
                    }
                    return None;
                }
            },
        };
        pending |= !matches!(item, Partial::Known(_));
        argv.push(item);
    }
    if !pending {
        return None;
    }
    let (k, _write, part) = e.scope_pending(cid, &argv)?;
    if !e.ctl_ref().owned.contains_key(&k) {
        return None;
    }
    let mut unbound = None;
    if receiver_escaped_before(e, cid, k, &mut unbound) == Some(false) {
        e.ctl()[cid].early_local = Some(k);
        e.ctl()[cid].early_part = part;
        // Walks that stopped at it while it was undecided (`object_order`) may now pass it.
        wake_askers(e, cid);
    }
    unbound
}

/// A tuple value with pending items as its leaves (known ones first: a call that only stores
/// them does not depend on their order), if each pending one is `external_result`.
fn tuple_leaves<E: Env>(e: &E, a: SlotId) -> Option<Partial<E::Prim>> {
    let (mut known, mut slots) = (Vec::new(), Vec::new());
    e.arg_leaves(a, &mut known, &mut slots);
    if slots.is_empty() || !slots.iter().all(|&s| external_result(e, s)) {
        return None;
    }
    let mut items: Vec<Partial<E::Prim>> = known.into_iter().map(Partial::Known).collect();
    items.extend(slots.iter().map(|_| Partial::Pending));
    Some(Partial::Tuple(items))
}

/// Whether pending variable `s` is the result of an external call that does not carry an owned
/// object (so it is an owned object only if the object escaped to that call: on our walk).
fn external_result<E: Env>(e: &E, s: SlotId) -> bool {
    producer_along(e, s, true).is_some_and(|pc| {
        let p = &e.ctl_ref()[pc];
        p.func.is_some()
            && !matches!(p.phase, Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. })
            && p.obj.as_ref().and_then(|o| o.carries).is_none()
    })
}

/// Whether owned object `k` escaped before call `cid` in program order (None: not known yet),
/// by the walk of `object_order` without waiting for anything.
/// `unbound`: set when the answer is None because of a variable nothing binds yet.
fn receiver_escaped_before<E: Env>(e: &mut E, cid: CtrlId, k: u64, unbound: &mut Option<SlotId>) -> Option<bool> {
    let mut cur = cid;
    for _ in 0..4096 {
        let c = match predecessor(e, cur) {
            Pred::Call(c) => c,
            Pred::Start => return None,
            Pred::Unknown => {
                // Its input order is not known yet: look through an undecided `ite` (a loop
                // over a pending list, a branch on a pending value) that cannot reach the
                // object, as `object_order` does; else ask again once that is decided.
                let seq = e.ctl_ref()[cur].seq;
                match through_undecided(e, seq, &[k]) {
                    Ok(Pred::Call(c)) => c,
                    Ok(_) => return None,
                    Err(s) => {
                        let w = e.ctl_ref().work[cid];
                        if s == seq {
                            e.need_slot(seq, w);
                        } else {
                            wait_judged(e, s, w);
                        }
                        return None;
                    }
                }
            }
        };
        if e.ctl_ref().owned.get(&k) == Some(&c) {
            return Some(false); // its creation
        }
        let phase = e.ctl_ref()[c].phase;
        match phase {
            Phase::WaitCallee if !callee_may_involve(e, c, &[k], &mut Look::new()) => {}
            Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. } => {
                // Asked again once that call's callee is known or its body linked in.
                let w = e.ctl_ref().work[cid];
                ask_again(e, c, w);
                return None;
            }
            Phase::WaitArgs => {
                if e.ctl_ref()[c].early_local == Some(k) {
                    return Some(false); // it decided the same for everything before it
                }
                let mut look = Look::new();
                if may_involve(e, c, &[k], &mut look).is_some() {
                    *unbound = look.unbound;
                    return None;
                }
            }
            _ => {
                if let Some(o) = e.ctl_ref()[c].obj.as_ref() {
                    match o.touch {
                        Some((tk, _)) if tk == k => match o.local {
                            Some(true) => return Some(false),
                            Some(false) => return Some(true),
                            None => {}
                        },
                        _ => {
                            if o.escapes.contains(&k) {
                                return Some(true);
                            }
                        }
                    }
                }
            }
        }
        cur = c;
    }
    None
}

/// The order a readonly call `cid` (arguments known, its input order `r`) must wait for before
/// it runs: `r`, every earlier sequential call finished — or, when the calls that still hold
/// `r` are sequential stores into entries of dicts that the read provably neither touches nor
/// can observe through code (`Env::read_passes`: `task.cache[key] = llm(...)` waiting for its
/// value, before a look-up of another key), and calls that pass the order on as soon as their
/// own input order is there (readonly, unordered, decided object-local), the order before
/// those stores. The read then runs before them; nothing it returns can differ (the stores
/// change only entries it does not read and run no code), and it has no effects they could see.
/// Calls after it still wait for the stores: its own output order is still `r`.
///
/// Where the walk stops at a call whose input order is not known yet, `w` is also woken when it
/// is (the walk then goes on further).
pub(super) fn read_order<E: Env>(e: &mut E, cid: CtrlId, r: FutId, w: WorkId) -> FutId {
    if e.ctl_ref().futs.is_done(r) {
        return r;
    }
    let mut writes: Vec<CtrlId> = Vec::new();
    let mut stand_ins: Vec<Vec<Option<E::Prim>>> = Vec::new();
    let mut best = r;
    let mut cur = cid;
    for _ in 0..256 {
        let Pred::Call(c) = predecessor(e, cur) else { return best };
        if e.ctl_ref()[c].phase == Phase::WaitArgs && e.ctl_ref()[c].early_local.is_none() {
            // An operation on an owned object only, which may be decided so before its
            // arguments by now (`early_local`; it advances again only when they arrive).
            early_local(e, c);
            if e.ctl_ref()[c].early_local.is_some() {
                let cw = e.ctl_ref().work[c];
                e.wake(cw);
            }
        }
        let ctrl = &e.ctl_ref()[c];
        let Some(in_tok) = ctrl.in_tok.or_else(|| e.peek_token(ctrl.seq)) else {
            // Pending: woken when it is known. (Known but not a token — an error value — there
            // is nothing further to find: `best` covers it.)
            let seq = ctrl.seq;
            e.need_slot(seq, w);
            return best;
        };
        let forwards = ctrl.early_local.is_some() || ctrl.early.is_some_and(|cl| !Policy::of(cl).r_out_needs_done);
        if !forwards {
            // A store waiting for its value (or for the order before it), decided sequential.
            let store = matches!(ctrl.phase, Phase::WaitArgs | Phase::WaitOrder) && ctrl.func.is_some();
            // Not classified yet (its arguments pending, without stand-ins so far): it may
            // still turn out to pass the order on at once (`try_hint`); walk again then.
            let unclassified = ctrl.early.is_none() && matches!(ctrl.phase, Phase::WaitArgs | Phase::WaitCallee);
            let mut ok = false;
            if store && writes.len() < 16 {
                writes.push(c);
                stand_ins.push(Vec::new());
                ok = e.read_passes(cid, &writes, &stand_ins);
                if !ok {
                    // Again with its pending arguments' stand-ins (a declared type's): a
                    // `print` of them prints plain data only by the declaration, which the
                    // order then relies on (a mismatch at arrival is an error).
                    let mut roots = Vec::new();
                    let mut hinted = Vec::new();
                    for a in e.ctl_ref()[c].args.clone() {
                        hinted.push(match e.peek(a) {
                            Peek::Pending => hint_of(e, a, w, &mut roots),
                            _ => None,
                        });
                    }
                    if hinted.iter().any(|h| h.is_some()) {
                        *stand_ins.last_mut().expect("pushed") = hinted;
                        ok = e.read_passes(cid, &writes, &stand_ins);
                        if ok {
                            let line = e.ctl_ref()[cid].line;
                            for r in roots {
                                e.ctl()[r].hints_mut().relied_by.get_or_insert((line, false));
                            }
                        }
                    }
                }
            }
            if !ok {
                if unclassified {
                    ask_again(e, c, w);
                }
                return best;
            }
            best = in_tok.r;
        }
        if e.ctl_ref().futs.is_done(in_tok.r) {
            return best;
        }
        cur = c;
    }
    best
}
