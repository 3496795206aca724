//! The controller of one external call: the state machine `advance` that moves a controller
//! (its record and life are in `state`) through its life, handing the order on (F_R'/F_W') as
//! its class allows, dispatch, completion and failure.
//!
//! A controller runs inside an evaluator, which owns the variables (the call's S, callee,
//! arguments and result), the queue of work items and the host. What the controller needs from
//! them is the trait `env::Env`; every function here is generic over it.
use super::env::{Callee, Count, Env, Peek, Read};
use super::objects;
use super::order;
use super::state::{CtrlId, Phase, WorkId};
use super::wait::{hint_of, resolve_fut, wait_fut, wake_askers};
use super::{Class, Policy, Token};
use std::time::Instant;

/// Classify a call from known arguments and hints for pending ones (see Host::classify_hinted);
/// also compute its own result hint for the calls that consume it.
fn try_hint<E: Env>(e: &mut E, cid: CtrlId, w: WorkId) {
    let c = &e.ctl_ref()[cid];
    if (c.func.is_none() && c.func_hint().is_none()) || (c.early.is_some() && c.hint().is_some()) {
        return;
    }
    // (A callee still pending has a stand-in of a declared type: not a method of an owned
    // container, which is known.)
    let check_owned = c.func.is_some() && c.early.is_none() && !e.ctl_ref().owned.is_empty();
    if check_owned {
        // A method of an owned container (`out.append`), or an operation with one among its
        // known arguments (`setitem(cache, k, v)` waiting for `v`): per-object ordering decides
        // it, not hints — a hinted class would settle it globally before the walk that may find
        // it local (`objects::early_local`, which may have to wait for an inlined call's body to
        // link in), and classifying it would walk the whole container (quadratic in a loop).
        let known: Vec<E::Prim> = e.ctl_ref()[cid]
            .args
            .clone()
            .into_iter()
            .filter_map(|a| match e.peek(a) {
                Peek::Prim(p) => Some(p),
                _ => None,
            })
            .collect();
        let mut keys = e.object_keys(cid, &[]);
        keys.extend(e.arg_keys(&known));
        if keys.iter().any(|k| e.ctl_ref().owned.contains_key(k)) {
            return;
        }
    }
    let mut roots = Vec::new();
    if e.ctl_ref()[cid].func.is_none() {
        // Classified on the callee's stand-in: its roots count (and a wrong one is not used).
        let callee = e.ctl_ref()[cid].callee;
        if hint_of(e, callee, w, &mut roots).is_none() {
            return;
        }
    }
    let slots = e.ctl_ref()[cid].args.clone();
    let mut args: Vec<Option<E::Prim>> = Vec::with_capacity(slots.len());
    let mut stand_ins: Vec<Option<E::Prim>> = Vec::with_capacity(slots.len());
    for a in slots {
        let (v, hinted) = match e.peek(a) {
            Peek::Prim(p) => (Some(p), false),
            Peek::Other => (None, false),
            Peek::Pending => (hint_of(e, a, w, &mut roots), true),
        };
        stand_ins.push(if hinted { v.clone() } else { None });
        args.push(v);
    }
    if e.ctl()[cid].hint().is_none() {
        let h = e.result_hint(cid, &args);
        if h.is_some() {
            let own = e.declares_result(cid);
            let c = e.ctl()[cid].hints_mut();
            c.hint = h;
            c.hint_roots = if own { vec![cid] } else { roots.clone() };
            wake_askers(e, cid);
        }
    }
    if e.ctl()[cid].early.is_none() && args.iter().all(|a| a.is_some()) {
        if let Some(class) = e.classify_hinted(cid, &args) {
            let line = e.ctl_ref()[cid].line;
            if class != Class::Sequential {
                // The order may pass on on the strength of these stand-ins: a mismatch of their
                // declarations at arrival is an error from now on.
                for &r in &roots {
                    e.ctl()[r].hints_mut().relied_by.get_or_insert((line, false));
                }
            }
            let c = &mut e.ctl()[cid];
            c.early = Some(class);
            c.hinted = true;
            if !roots.is_empty() || stand_ins.iter().any(Option::is_some) {
                let h = c.hints_mut();
                h.early_roots = roots;
                h.early_args = stand_ins;
            }
            // Reads walking back past unclassified calls (`objects::read_order`) may go on.
            wake_askers(e, cid);
        }
    }
}

/// A call classified on stand-ins (`try_hint`) whose real arguments get a stricter class: when
/// every declared result its stand-ins came from has arrived and matched its declaration, the
/// class on the stand-ins still holds for them (a declared type's sample gets the strictest
/// class any value of the type can have; the annotation library may judge a large real value
/// more strictly only because it gives up on its size). Classified again on those stand-ins and
/// the other arguments' current values: that class, if it is not stricter than the hinted one.
fn hinted_class_holds<E: Env>(e: &mut E, cid: CtrlId, argv: &[E::Prim]) -> Option<Class> {
    let c = &e.ctl_ref()[cid];
    let early = c.early?;
    let h = c.hints.as_ref()?;
    if h.early_roots.is_empty() || h.early_args.len() != argv.len() || c.func.is_none() {
        return None;
    }
    if !h.early_roots.iter().all(|&r| e.ctl_ref()[r].declared_ok() == Some(true)) {
        return None;
    }
    let args: Vec<Option<E::Prim>> =
        h.early_args.iter().zip(argv).map(|(s, v)| Some(s.clone().unwrap_or_else(|| v.clone()))).collect();
    let class = e.classify_hinted(cid, &args)?;
    (!class.stricter_than(early)).then_some(early)
}

/// The controller's input token, or None after registering to wait for it. A poisoned S
/// (the program order is undefined after an error) means the call can never be ordered.
fn token<E: Env>(e: &mut E, cid: CtrlId, w: WorkId) -> Option<Token> {
    if let Some(t) = e.ctl()[cid].in_tok {
        return Some(t);
    }
    let seq = e.ctl()[cid].seq;
    match e.need_token(seq, w) {
        Read::Pending => None,
        Read::Ready(t) => {
            let c = &mut e.ctl()[cid];
            c.in_tok = Some(t);
            if c.phase == Phase::Finished {
                // `finish` kept S alive only for this.
                c.held.retain(|&s| s != seq);
                e.release_slot(seq);
            }
            Some(t)
        }
        Read::Not => {
            // A running call still reports its outcome (and is counted in flight until then):
            // it finishes once that has arrived (`complete` wakes it, and it comes back here).
            if e.ctl()[cid].phase != Phase::Running {
                finish(e, cid);
            }
            None
        }
    }
}

/// The controller has nothing left to do: let go of the slots it kept alive. Its input
/// order S is kept until read: program-order positions need it, and a failed unordered
/// call still forwards it.
pub(super) fn finish<E: Env>(e: &mut E, cid: CtrlId) {
    if e.ctl()[cid].phase == Phase::Finished {
        return;
    }
    e.ctl()[cid].phase = Phase::Finished;
    let seq = e.ctl()[cid].seq;
    if e.ctl()[cid].in_tok.is_none() {
        if let Some(t) = e.peek_token(seq) {
            e.ctl()[cid].in_tok = Some(t);
        }
    }
    let held = std::mem::take(&mut e.ctl()[cid].held);
    // Its argument variables are released with `held` (or were at completion): the list of
    // them is not read again. (A run keeps every call's record: this is its largest part.)
    e.ctl()[cid].args = Vec::new();
    let keep_seq = e.ctl()[cid].in_tok.is_none();
    let mut kept = false;
    for &s in &held {
        if keep_seq && s == seq && !kept {
            kept = true;
        } else {
            e.release_slot(s);
        }
    }
    if kept {
        e.ctl()[cid].held = vec![seq];
    }
}

/// Pass the order on without waiting for the call itself, as far as its class allows
/// (unordered: F_R and F_W; readonly: F_R) — as soon as the class is known, even before the
/// arguments are. Non-blocking: registers to be woken for whatever is still pending.
fn forward<E: Env>(e: &mut E, cid: CtrlId, w: WorkId) {
    let ctl = e.ctl();
    let c = &ctl[cid];
    let Some(class) = c.early else { return };
    let policy = Policy::of(class);
    let out = c.out;
    let r_pending = !policy.r_out_needs_done && !ctl.futs.is_done(out.r);
    let w_pending = !policy.w_out_needs_done && !ctl.futs.is_done(out.w);
    if !r_pending && !w_pending {
        return;
    }
    let Some(tok) = token(e, cid, w) else { return };
    if r_pending && wait_fut(e, tok.r, w) {
        resolve_fut(e, out.r);
    }
    if w_pending && wait_fut(e, tok.w, w) {
        resolve_fut(e, out.w);
    }
}

/// A call decided object-local before its arguments were known (`objects::early_local`) will
/// be unordered: pass F_R on as soon as it is resolved (F_W' waits for the call, as for every
/// unordered call).
fn forward_r_early<E: Env>(e: &mut E, cid: CtrlId, w: WorkId) {
    let c = &e.ctl_ref()[cid];
    let out_r = c.out.r;
    if c.early_local.is_none() || e.ctl_ref().futs.is_done(out_r) {
        return;
    }
    let Some(tok) = token(e, cid, w) else { return };
    if wait_fut(e, tok.r, w) {
        resolve_fut(e, out_r);
    }
}

/// The call is done: resolve its F_R' once `tok`'s F_R is, then its F_W' once `tok`'s F_W is.
fn release_after<E: Env>(e: &mut E, cid: CtrlId, tok: Token, w: WorkId) {
    let out = e.ctl()[cid].out;
    if !wait_fut(e, tok.r, w) {
        return;
    }
    resolve_fut(e, out.r);
    if !wait_fut(e, tok.w, w) {
        return;
    }
    resolve_fut(e, out.w);
    finish(e, cid);
}

/// Step controller `cid` (its work item is `w`) as far as it can go now; whatever it waits for
/// wakes `w` again.
pub fn advance<E: Env>(e: &mut E, cid: CtrlId, w: WorkId) {
    if e.ctl()[cid].phase == Phase::WaitArgs {
        try_hint(e, cid, w);
    }
    forward(e, cid, w);
    forward_r_early(e, cid, w);
    loop {
        match e.ctl()[cid].phase {
            Phase::WaitCallee => match e.callee(cid, w) {
                Callee::Pending => {
                    // A pending callee with a stand-in (a method of a value of declared type):
                    // the call may be classified, and pass the order on, before it is known.
                    if e.ctl_ref()[cid].func_hint().is_none() {
                        let callee = e.ctl_ref()[cid].callee;
                        if let Some(h) = hint_of(e, callee, w, &mut Vec::new()) {
                            e.ctl()[cid].hints_mut().func_hint = Some(h);
                        }
                    }
                    if e.ctl_ref()[cid].func_hint().is_some() {
                        try_hint(e, cid, w);
                        forward(e, cid, w);
                    }
                    return;
                }
                Callee::External(p) => {
                    let early = e.classify_callee(&p);
                    let c = &mut e.ctl()[cid];
                    c.func = Some(p);
                    if c.hinted {
                        // Classified on the callee's stand-in; the real class is checked with
                        // the arguments (WaitArgs), like every hinted class.
                        if early.is_some_and(|k| k.stricter_than(c.early.expect("hinted class"))) {
                            let err = e.internal_error(
                                "TypeError",
                                "poppy_jit: a callee does not have the type its declared stand-in gave it, \
                                 and the program order was already passed on because of it",
                            );
                            return fail(e, cid, err);
                        }
                    } else {
                        c.early = early;
                    }
                    c.phase = Phase::WaitArgs;
                    wake_askers(e, cid);
                    try_hint(e, cid, w);
                    forward(e, cid, w);
                }
                Callee::Inlined(ret) => {
                    let c = &mut e.ctl()[cid];
                    c.held.push(ret);
                    c.phase = Phase::Inlined { ret };
                    wake_askers(e, cid);
                    let c = &mut e.ctl()[cid];
                    if c.hinted {
                        // A stand-in said a builtin method; an inlined function makes calls of
                        // its own in program order: never continue silently.
                        let err = e.internal_error(
                            "TypeError",
                            "poppy_jit: a callee classified from its declared stand-in turned out \
                             to be compiled code",
                        );
                        return fail(e, cid, err);
                    }
                }
                Callee::Failed(err) => return fail(e, cid, err),
            },
            Phase::Inlined { ret } => match e.link_inlined(cid, ret, w) {
                Read::Pending => return,
                Read::Ready(seq) => {
                    let c = &mut e.ctl()[cid];
                    c.held.push(seq);
                    c.phase = Phase::InlinedOrder { seq };
                    // The call's result now follows the body's: consumers waiting for a stand-in
                    // may find its producer's.
                    wake_askers(e, cid);
                }
                Read::Not => return finish(e, cid),
            },
            Phase::InlinedOrder { seq } => {
                // The body's final order becomes this call's F_R'/F_W'.
                let Read::Ready(tok) = e.need_token(seq, w) else { return };
                let ctl = e.ctl();
                let r = ctl[cid].out.r;
                if ctl.bridge.insert(r, tok.r).is_none() {
                    // Walks back in program order that stopped at this call (`objects`) now go
                    // through its body's calls: ask them again.
                    wake_askers(e, cid);
                }
                return release_after(e, cid, tok, w);
            }
            Phase::WaitArgs => {
                objects::early_local(e, cid);
                forward_r_early(e, cid, w);
                let n = e.ctl()[cid].args.len();
                let mut argv = Vec::with_capacity(n);
                for i in 0..n {
                    let a = e.ctl()[cid].args[i];
                    match e.need_prim(a, w) {
                        None => return,
                        Some(Ok(p)) => argv.push(p),
                        // A catching call catches an error argument too: an unbound local's
                        // check gets one (any other error argument comes from an earlier
                        // failure, which stays the run's: it is earlier in program order).
                        Some(Err(err)) if e.ctl_ref()[cid].catch => return caught(e, cid, err),
                        Some(Err(err)) => return fail(e, cid, err),
                    }
                }
                let obj = objects::involvement(e, cid, &argv);
                // An operation on an owned receiver is classified only if the per-object
                // decision says it follows the global order: a local one is unordered whatever
                // the annotation library would say, and asking it would walk the receiver (an
                // `append` in a loop would walk the whole list every time: quadratic).
                if let Some(k) = e.ctl_ref()[cid].early_local {
                    if !obj.as_ref().is_some_and(|o| o.touch.is_some_and(|(t, _)| t == k)) {
                        // Decided object-local before the arguments (F_R passed on), but with
                        // them it is not an operation on that object: never continue silently.
                        let err = e.internal_error(
                            "RuntimeError",
                            "poppy_jit: internal error: per-object ordering passed the order on \
                             before an operation that turned out not to be local",
                        );
                        return fail(e, cid, err);
                    }
                }
                let c = &e.ctl()[cid];
                let defer = c.early.is_none() && obj.as_ref().is_some_and(|o| o.touch.is_some());
                let class = if defer { Class::Sequential } else { e.classify(cid, &argv) };
                let mut class = class;
                let c = &e.ctl()[cid];
                if c.hinted && class.stricter_than(c.early.expect("hinted class")) {
                    class = hinted_class_holds(e, cid, &argv).unwrap_or(class);
                }
                let c = &e.ctl()[cid];
                if c.hinted && class.stricter_than(c.early.expect("hinted class")) {
                    // Order was passed on on the strength of a declared return type that the
                    // real value does not have: never continue silently.
                    let msg = "poppy_jit: an external's result does not have its declared return type, \
                               and the program order was already passed on because of it; annotate it \
                               correctly (or not at all)";
                    let err = e.internal_error("TypeError", msg);
                    return fail(e, cid, err);
                }
                let c = &mut e.ctl()[cid];
                c.class = class;
                // Deferred: no class yet, so nothing is forwarded before the decision.
                c.early = (!defer).then_some(class);
                c.argv = argv;
                c.obj = obj;
                c.ready_at = Some(Instant::now());
                c.phase = Phase::WaitOrder;
                if c.obj.is_none() {
                    forward(e, cid, w);
                }
                if !defer {
                    wake_askers(e, cid);
                }
            }
            Phase::WaitOrder => {
                if e.ctl()[cid].obj.as_ref().is_some_and(|o| o.local.is_none()) {
                    let Some(mut local) = objects::object_order(e, cid, w) else { return };
                    if local {
                        local = objects::recheck(e, cid);
                    }
                    let c = &mut e.ctl()[cid];
                    let o = c.obj.as_mut().expect("involved");
                    o.local = Some(local);
                    let escapes = !o.escapes.is_empty();
                    if local {
                        // Ordered against its object only: the global order passes on at once.
                        c.class = Class::Unordered;
                        c.early = Some(Class::Unordered);
                    } else if c.early.is_none() {
                        // Deferred classification (see WaitArgs): it follows the global order.
                        let argv = std::mem::take(&mut c.argv);
                        let class = e.classify(cid, &argv);
                        let c = &mut e.ctl()[cid];
                        c.argv = argv;
                        c.class = class;
                        c.early = Some(class);
                        if c.early_local.is_some() && class == Class::Sequential {
                            // F_R was passed on early on the strength of a decision that the
                            // walk with the arguments contradicts: never continue silently.
                            let err = e.internal_error(
                                "RuntimeError",
                                "poppy_jit: internal error: per-object ordering passed the order on \
                                 before an operation that turned out to be ordered globally",
                            );
                            return fail(e, cid, err);
                        }
                    }
                    if escapes {
                        e.count(Count::ObjectEscape);
                    }
                    if local {
                        e.count(Count::ObjectLocal);
                    }
                    forward(e, cid, w);
                }
                let class = e.ctl()[cid].class;
                let policy = Policy::of(class);
                if policy.dispatch_needs_r || policy.dispatch_needs_w {
                    let Some(tok) = token(e, cid, w) else { return };
                    // A read may pass pending stores it cannot observe (`objects::read_order`).
                    let r = if class == Class::Readonly { objects::read_order(e, cid, tok.r, w) } else { tok.r };
                    if !wait_fut(e, r, w) {
                        return;
                    }
                    if policy.dispatch_needs_w && !wait_fut(e, tok.w, w) {
                        return;
                    }
                }
                dispatch(e, cid);
                if e.ctl()[cid].phase == Phase::Running {
                    return;
                }
            }
            Phase::Completed => {
                let Some(tok) = token(e, cid, w) else { return };
                // The input order is read: the slots kept for the call are no longer needed,
                // though its outputs may still wait for earlier calls (an unordered call's F_W'
                // waits for every earlier call to succeed; long chains of finished calls must
                // not keep their arguments alive).
                let held = std::mem::take(&mut e.ctl()[cid].held);
                for s in held {
                    e.release_slot(s);
                }
                return release_after(e, cid, tok, w);
            }
            Phase::Running | Phase::Finished => return,
        }
    }
}

fn dispatch<E: Env>(e: &mut E, cid: CtrlId) {
    if let Some(p) = e.ctl().failed_at {
        if order::position_of(e, cid).is_some_and(|q| q > p) {
            // After a failed call in program order: CPython never makes this call.
            let err = e.internal_error("RuntimeError", "poppy_jit: not run, an earlier call raised");
            return fail(e, cid, err);
        }
    }
    let now = Instant::now();
    let ctl = e.ctl();
    let c = &mut ctl[cid];
    if let Some(t) = c.times.as_mut() {
        t.dispatched = Some(now);
    }
    c.dispatched = true;
    let queue_wait_ns = c.ready_at.map(|t| now.duration_since(t).as_nanos() as u64);
    let class = c.class;
    ctl.in_flight += 1;
    let in_flight = ctl.in_flight;
    e.count(Count::Dispatched { class, queue_wait_ns });
    e.count(Count::InFlight(in_flight));
    match e.dispatch(cid) {
        Some(r) => {
            e.ctl().in_flight -= 1;
            complete(e, cid, r);
        }
        None => e.ctl()[cid].phase = Phase::Running,
    }
}

/// A KeyboardInterrupt `err` arrived while the run waited (`Host::is_interrupt`). CPython would
/// have raised it in whatever it was running; here that is taken to be the running call earliest
/// in program order. If that call is a catching one (in a try body), the interrupt becomes its
/// failure — the host stops the call (`cancel`; its later report is ignored) — and the run goes
/// on, so its handlers see it as CPython's would. Otherwise (returns false) it aborts the run.
pub fn interrupt<E: Env>(e: &mut E, err: E::Error) -> bool {
    let mut first: Option<(u64, CtrlId)> = None;
    for cid in 0..e.ctl().ctrls.len() {
        if e.ctl()[cid].phase != Phase::Running {
            continue;
        }
        let Some(p) = order::position_of(e, cid) else { return false };
        if first.is_none_or(|(q, _)| p < q) {
            first = Some((p, cid));
        }
    }
    let Some((_, cid)) = first else { return false };
    if !e.ctl()[cid].catch || e.ctl()[cid].cancelled {
        return false;
    }
    e.cancel(cid);
    e.ctl().in_flight -= 1;
    complete(e, cid, Err(err));
    true
}

/// The host reports that task `cid` finished (ignored unless its controller is running).
pub fn finished<E: Env>(e: &mut E, cid: CtrlId, r: Result<E::Prim, E::Error>) {
    let ctl = e.ctl();
    if cid < ctl.ctrls.len() && ctl[cid].phase == Phase::Running {
        ctl.in_flight -= 1;
        complete(e, cid, r);
    }
}

fn complete<E: Env>(e: &mut E, cid: CtrlId, mut r: Result<E::Prim, E::Error>) {
    if let Ok(v) = &r {
        // A declared result type is checked at arrival: later operations may already have
        // been classified on its stand-in (`relied_by`). A return annotation nothing relied on
        // is not enforced: the value is used as it is, and its stand-in no longer (`hint_of`).
        let relied = e.ctl_ref()[cid].relied_by().map(|(line, per_object)| {
            if per_object {
                format!("per-object ordering (which took the pending result, line {line}, for a value holding no object)")
            } else {
                format!("the call at line {line}, classified on its stand-in,")
            }
        });
        match e.check_result(cid, v, relied.as_deref()) {
            Ok(ok) => {
                if e.declares_result(cid) {
                    e.ctl()[cid].hints_mut().declared_ok = Some(ok);
                }
            }
            Err(err) => r = Err(err),
        }
    }
    e.ctl()[cid].done = true;
    objects::wake_done(e, cid);
    if let Ok(v) = &r {
        if e.ctl()[cid].func.is_some() {
            for k in e.fresh_keys(cid, v) {
                e.ctl().owned.insert(k, cid);
            }
        }
    }
    let ctl = e.ctl();
    if ctl.tracing {
        if let Some(t) = ctl[cid].times.as_mut() {
            t.done = Some(Instant::now());
        }
    } else {
        ctl[cid].argv = Vec::new();
    }
    match r {
        Ok(v) => {
            e.bind_result(cid, v);
            let ctl = e.ctl();
            ctl[cid].phase = Phase::Completed;
            let w = ctl.work[cid];
            e.wake(w);
        }
        Err(err) if e.ctl_ref()[cid].catch && !e.ctl_ref()[cid].cancelled && e.catchable(&err) => caught(e, cid, err),
        Err(err) => fail(e, cid, err),
    }
}

/// A catching call (`xcall?`) failed, or got an error argument: the failure is its value
/// (`Env::bind_caught`), not the run's — it is not among `failures`, sets no `failed_at` and
/// cancels nothing — and the call completes like a success: its F_R'/F_W' resolve once its
/// input order's do, so what follows it in program order (the handler) runs after it.
fn caught<E: Env>(e: &mut E, cid: CtrlId, err: E::Error) {
    e.ctl()[cid].done = true;
    objects::wake_done(e, cid);
    e.bind_caught(cid, err);
    let ctl = e.ctl();
    ctl[cid].phase = Phase::Completed;
    let w = ctl.work[cid];
    e.wake(w);
}

/// The call raised, or cannot run because an argument is an error: its result is the error
/// and its output futures never resolve.
pub fn fail<E: Env>(e: &mut E, cid: CtrlId, err: E::Error) {
    objects::wake_done(e, cid);
    if e.ctl()[cid].dispatched && e.ctl()[cid].class == Class::Sequential {
        e.ctl().settled = true;
    }
    e.ctl().failures.push((cid, err.clone()));
    e.bind_error(cid, err);
    finish(e, cid);
    if let Some(p) = order::position_of(e, cid) {
        if e.ctl().failed_at.is_none_or(|q| p < q) {
            e.ctl().failed_at = Some(p);
            cancel_after(e, p);
        }
    }
}

/// Cancel the running calls that come after position `p` in program order (speculative
/// ones; their results can no longer matter). Their outcomes still arrive through `wait`.
fn cancel_after<E: Env>(e: &mut E, p: u64) {
    for cid in 0..e.ctl().ctrls.len() {
        if e.ctl()[cid].phase == Phase::Running && order::position_of(e, cid).is_some_and(|q| q > p) {
            e.count(Count::Cancelled);
            e.ctl()[cid].cancelled = true;
            e.cancel(cid);
        }
    }
}

/// The failure a run raises: the one earliest in program order, with its call's source line
/// and the sequential calls after it that had already been dispatched — none, since a
/// sequential call waits for every earlier call to succeed (F_W); the list is a safety net that
/// makes a broken ordering visible (a note on the exception) rather than silent. Readonly calls
/// after it may have run speculatively (they have no effects) and are not listed. None if no
/// call failed at a known position.
pub fn raised<E: Env>(e: &E) -> Option<(E::Error, u32, Vec<E::Prim>)> {
    let ctl = e.ctl_ref();
    if ctl.failures.is_empty() {
        return None;
    }
    let pos = order::positions(e);
    let (p, failed, err) = ctl
        .failures
        .iter()
        .filter_map(|(cid, err)| pos[*cid].map(|p| (p, *cid, err.clone())))
        .min_by_key(|(p, _, _)| *p)?;
    let later: Vec<E::Prim> = ctl
        .ctrls
        .iter()
        .enumerate()
        .filter(|(c, ctrl)| ctrl.dispatched && ctrl.class == Class::Sequential && pos[*c].is_some_and(|q| q > p))
        .filter_map(|(_, ctrl)| ctrl.func.clone())
        .collect();
    Some((err, ctl[failed].line, later))
}
