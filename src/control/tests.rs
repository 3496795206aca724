//! The policy table of the module doc, checked on controllers alone: a small `Env` with
//! variables in a vector and calls that finish when the test says so (no evaluator, no host).
use super::*;
use std::collections::{HashMap, VecDeque};

#[derive(Clone)]
enum V {
    Tok(Token),
    Prim(i64),
    Err(String),
}

#[derive(Default)]
struct Mock {
    ctl: Controllers<i64, String>,
    vars: Vec<Option<V>>,
    waiters: Vec<Vec<WorkId>>,
    ready: VecDeque<WorkId>,
    /// Class of each callee (a callee is a number).
    classes: HashMap<i64, Class>,
    dispatched: Vec<i64>,
    cancelled: Vec<CtrlId>,
    /// The order token the next call reads.
    seq: SlotId,
    /// The call whose result each result variable is.
    producer: HashMap<SlotId, CtrlId>,
}

impl Mock {
    fn new(classes: &[(i64, Class)]) -> Mock {
        let mut m = Mock { classes: classes.iter().copied().collect(), ..Mock::default() };
        let start = m.ctl.released_token();
        m.seq = m.var(Some(V::Tok(start)));
        m
    }

    fn var(&mut self, v: Option<V>) -> SlotId {
        self.vars.push(v);
        self.waiters.push(Vec::new());
        self.vars.len() - 1
    }

    fn set(&mut self, s: SlotId, v: V) {
        assert!(self.vars[s].is_none());
        self.vars[s] = Some(v);
        for w in std::mem::take(&mut self.waiters[s]) {
            self.ready.push_back(w);
        }
    }

    /// Queue a call of `f` with one argument (pending when `arg` is None), in program order.
    fn call(&mut self, f: i64, arg: Option<i64>) -> (CtrlId, SlotId) {
        let a = self.var(arg.map(V::Prim));
        (self.call_with(f, vec![a]), a)
    }

    /// Queue a call of `f` with these argument variables, in program order.
    fn call_with(&mut self, f: i64, args: Vec<SlotId>) -> CtrlId {
        let callee = self.var(Some(V::Prim(f)));
        let result = self.var(None);
        let out = self.ctl.new_token();
        let cid = self.ctl.ctrls.len();
        let ctrl = Ctrl::new(self.seq, callee, Some(f), args, Vec::new(), result, out, 0, None, Vec::new(), None);
        self.seq = self.var(Some(V::Tok(out)));
        self.ctl.add(ctrl, cid);
        self.producer.insert(result, cid);
        self.ready.push_back(cid);
        cid
    }

    fn run(&mut self) {
        while let Some(w) = self.ready.pop_front() {
            advance(self, w, w);
        }
    }

    fn out(&self, cid: CtrlId) -> (bool, bool) {
        let t = self.ctl[cid].out;
        (self.ctl.futs.is_done(t.r), self.ctl.futs.is_done(t.w))
    }
}

impl Env for Mock {
    type Prim = i64;
    type Error = String;
    fn ctl(&mut self) -> &mut Controllers<i64, String> {
        &mut self.ctl
    }
    fn ctl_ref(&self) -> &Controllers<i64, String> {
        &self.ctl
    }
    fn count(&mut self, _: Count) {}
    fn wake(&mut self, w: WorkId) {
        self.ready.push_back(w);
    }
    fn need_slot(&mut self, s: SlotId, w: WorkId) -> bool {
        self.vars[s].is_some() || {
            self.waiters[s].push(w);
            false
        }
    }
    fn need_token(&mut self, s: SlotId, w: WorkId) -> Read<Token> {
        match &self.vars[s] {
            Some(V::Tok(t)) => Read::Ready(*t),
            Some(_) => Read::Not,
            None => {
                self.waiters[s].push(w);
                Read::Pending
            }
        }
    }
    fn peek_token(&self, s: SlotId) -> Option<Token> {
        match &self.vars[s] {
            Some(V::Tok(t)) => Some(*t),
            _ => None,
        }
    }
    fn peek(&self, s: SlotId) -> Peek<i64> {
        match &self.vars[s] {
            Some(V::Prim(p)) => Peek::Prim(*p),
            Some(_) => Peek::Other,
            None => Peek::Pending,
        }
    }
    fn need_prim(&mut self, s: SlotId, w: WorkId) -> Option<Result<i64, String>> {
        match &self.vars[s] {
            Some(V::Prim(p)) => Some(Ok(*p)),
            Some(V::Err(e)) => Some(Err(e.clone())),
            Some(V::Tok(_)) => Some(Err("an order is no argument".into())),
            None => {
                self.waiters[s].push(w);
                None
            }
        }
    }
    fn arg_leaves(&self, s: SlotId, known: &mut Vec<i64>, pending: &mut Vec<SlotId>) {
        match &self.vars[s] {
            Some(V::Prim(p)) => known.push(*p),
            Some(_) => {}
            None => pending.push(s),
        }
    }
    fn pending_source(&self, s: SlotId) -> Option<(Option<CtrlId>, Option<SlotId>)> {
        self.vars[s].is_none().then(|| (self.producer.get(&s).copied(), None))
    }
    fn release_slot(&mut self, _: SlotId) {}
    fn callee(&mut self, cid: CtrlId, _: WorkId) -> Callee<i64, String> {
        Callee::External(self.ctl[cid].func.expect("callees are known"))
    }
    fn link_inlined(&mut self, _: CtrlId, _: SlotId, _: WorkId) -> Read<SlotId> {
        unreachable!("no internal functions here")
    }
    fn bind_result(&mut self, cid: CtrlId, v: i64) {
        self.set(self.ctl[cid].result, V::Prim(v));
    }
    fn bind_error(&mut self, cid: CtrlId, e: String) {
        self.set(self.ctl[cid].result, V::Err(e));
    }
    fn bind_caught(&mut self, cid: CtrlId, _e: String) {
        // The mock's primitives are ints: a caught failure is -1.
        self.set(self.ctl[cid].result, V::Prim(-1));
    }
    fn classify_callee(&mut self, _: &i64) -> Option<Class> {
        None
    }
    fn classify(&mut self, cid: CtrlId, _: &[i64]) -> Class {
        self.classes[&self.ctl[cid].func.unwrap()]
    }
    fn classify_hinted(&mut self, _: CtrlId, _: &[Option<i64>]) -> Option<Class> {
        None
    }
    fn result_hint(&mut self, _: CtrlId, _: &[Option<i64>]) -> Option<i64> {
        None
    }
    fn dispatch(&mut self, cid: CtrlId) -> Option<Result<i64, String>> {
        self.dispatched.push(self.ctl[cid].func.unwrap());
        None
    }
    fn cancel(&mut self, cid: CtrlId) {
        self.cancelled.push(cid);
    }
    fn internal_error(&mut self, kind: &str, msg: &str) -> String {
        format!("{kind}: {msg}")
    }
    // Objects: values from OBJ up are lists; MAKE's result is a new one (owned), APPEND(lst, x)
    // touches its first argument alone and stores the second.
    fn fresh_keys(&mut self, cid: CtrlId, v: &i64) -> Vec<u64> {
        (self.ctl[cid].func == Some(MAKE) && *v >= OBJ).then_some(*v as u64).into_iter().collect()
    }
    fn object_keys(&mut self, _: CtrlId, args: &[i64]) -> Vec<u64> {
        self.arg_keys(args)
    }
    fn arg_keys(&mut self, args: &[i64]) -> Vec<u64> {
        args.iter().filter(|&&a| a >= OBJ).map(|&a| a as u64).collect()
    }
    // SETK(d, k, v) writes entry k of d and stores v; GETK(d, k) reads entry k; LEN(d) reads
    // all of d.
    fn scope(&mut self, cid: CtrlId, args: &[i64]) -> Option<Scope<i64>> {
        let recv = *args.first().filter(|&&r| r >= OBJ)? as u64;
        match self.ctl[cid].func? {
            APPEND => Some(Scope { recv, write: Some(true), part: None, rest: args[1..].to_vec(), recheck: false }),
            SETK => Some(Scope { recv, write: Some(true), part: Some(args[1] as u64), rest: args[2..].to_vec(), recheck: false }),
            GETK => Some(Scope { recv, write: Some(false), part: Some(args[1] as u64), rest: Vec::new(), recheck: false }),
            LEN => Some(Scope { recv, write: Some(false), part: None, rest: Vec::new(), recheck: false }),
            _ => None,
        }
    }
    // GETK(d, k) runs before earlier pending SETK(d, k', v) stores into the same dict with
    // another key (`Env::read_passes`).
    fn read_passes(&mut self, read: CtrlId, writes: &[CtrlId], _stand_ins: &[Vec<Option<i64>>]) -> bool {
        let r = &self.ctl[read];
        if r.func != Some(GETK) {
            return false;
        }
        let (rd, rk) = (r.argv[0], r.argv[1]);
        let known = |s: SlotId| match self.vars[s] {
            Some(V::Prim(p)) => Some(p),
            _ => None,
        };
        writes.iter().all(|&w| {
            let c = &self.ctl[w];
            c.func == Some(SETK) && known(c.args[0]) == Some(rd) && known(c.args[1]).is_some_and(|k| k != rk)
        })
    }
    fn scope_pending(&mut self, cid: CtrlId, args: &[Partial<i64>]) -> Option<(u64, bool, Option<u64>)> {
        let recv = match args[0] {
            Partial::Known(r) if r >= OBJ => r,
            _ => return None,
        };
        match (self.ctl[cid].func, args) {
            (Some(APPEND), [_, _]) => Some((recv as u64, true, None)),
            (Some(SETK), [_, Partial::Known(k), _]) => Some((recv as u64, true, Some(*k as u64))),
            _ => None,
        }
    }
}

const U: i64 = 1;
const R: i64 = 2;
const S: i64 = 3;
const S2: i64 = 4;
const MAKE: i64 = 5;
const APPEND: i64 = 6;
const SETK: i64 = 7;
const GETK: i64 = 8;
const LEN: i64 = 9;
const OBJ: i64 = 100;
const CLASSES: [(i64, Class); 6] = [
    (U, Class::Unordered),
    (R, Class::Readonly),
    (S, Class::Sequential),
    (S2, Class::Sequential),
    (MAKE, Class::Unordered),
    // What the annotation library says of an append to a list it knows nothing about.
    (APPEND, Class::Sequential),
];

#[test]
fn an_unordered_call_forwards_f_r_at_once_and_f_w_when_done() {
    let mut m = Mock::new(&CLASSES);
    let (u, _) = m.call(U, Some(0));
    m.call(R, Some(0));
    let (s, _) = m.call(S, Some(0));
    m.run();
    assert_eq!(m.out(u), (true, false));
    // The readonly call runs while it is still running (speculatively: it has no effects); the
    // sequential call waits, since CPython does not reach it if the unordered call raises.
    assert_eq!(m.dispatched, vec![U, R]);
    finished(&mut m, 1, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, R]);
    finished(&mut m, u, Ok(0));
    m.run();
    assert_eq!(m.out(u), (true, true));
    assert_eq!(m.dispatched, vec![U, R, S]);
    finished(&mut m, s, Ok(0));
    m.run();
    assert_eq!(m.out(s), (true, true));
}

#[test]
fn a_readonly_call_forwards_f_r_and_releases_f_w_when_done() {
    let mut m = Mock::new(&CLASSES);
    let (r, _) = m.call(R, Some(0));
    let (s, _) = m.call(S, Some(0));
    m.call(R, Some(0));
    m.run();
    assert_eq!(m.out(r), (true, false));
    assert_eq!(m.dispatched, vec![R]);
    finished(&mut m, r, Ok(0));
    m.run();
    assert_eq!(m.out(r), (true, true));
    // The second readonly call needs F_R, which the sequential call holds until it is done.
    assert_eq!(m.dispatched, vec![R, S]);
    finished(&mut m, s, Ok(0));
    m.run();
    assert_eq!(m.out(s), (true, true));
    assert_eq!(m.dispatched, vec![R, S, R]);
}

#[test]
fn a_call_forwards_nothing_until_its_class_is_known() {
    let mut m = Mock::new(&CLASSES);
    let (u, arg) = m.call(U, None);
    m.call(S, Some(0));
    m.run();
    assert_eq!(m.out(u), (false, false));
    assert!(m.dispatched.is_empty());
    m.set(arg, V::Prim(0));
    m.run();
    assert_eq!(m.dispatched, vec![U]);
    finished(&mut m, u, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, S]);
}

#[test]
fn after_a_failed_call_later_calls_are_held_cancelled_or_not_run() {
    let mut m = Mock::new(&CLASSES);
    let (s, _) = m.call(S, Some(0));
    m.call(S2, Some(0));
    let (u, _) = m.call(U, Some(0));
    let (late, arg) = m.call(U, None);
    m.run();
    // Unordered calls wait for no order: the first one runs at once (speculatively).
    assert_eq!(m.dispatched, vec![S, U]);
    finished(&mut m, s, Err("boom".into()));
    m.run();
    assert_eq!(m.out(s), (false, false));
    assert_eq!(m.cancelled, vec![u]);
    // The second one's argument comes after the failure: it is not run at all.
    m.set(arg, V::Prim(0));
    m.run();
    assert_eq!(m.dispatched, vec![S, U]);
    assert!(matches!(&m.vars[m.ctl[late].result], Some(V::Err(e)) if e.contains("earlier call raised")));
    assert_eq!(raised(&m).map(|(e, _, later)| (e, later)), Some(("boom".to_string(), vec![])));
}

#[test]
fn no_sequential_call_runs_after_a_failed_unordered_call() {
    // CPython stops at the failing call: the sequential call after it (here behind a readonly
    // one, which may run speculatively) is never made, and nothing is noted as having run.
    let mut m = Mock::new(&CLASSES);
    let (u, _) = m.call(U, Some(0));
    let (r, _) = m.call(R, Some(0));
    let (s, _) = m.call(S, Some(0));
    m.call(U, Some(1));
    m.run();
    assert_eq!(m.dispatched, vec![U, R, U]);
    finished(&mut m, r, Ok(0));
    finished(&mut m, u, Err("boom".into()));
    m.run();
    assert_eq!(m.dispatched, vec![U, R, U]);
    assert_eq!(m.cancelled, vec![3]);
    assert_eq!(m.ctl[s].phase, Phase::WaitOrder);
    assert_eq!(raised(&m).map(|(e, _, later)| (e, later)), Some(("boom".to_string(), vec![])));
}

#[test]
fn a_sequential_call_waits_for_every_earlier_call_that_may_still_raise() {
    // Two unordered calls in flight: the sequential call after them starts only once both have
    // finished without error, whichever finishes first.
    let mut m = Mock::new(&CLASSES);
    let (u1, _) = m.call(U, Some(0));
    let (u2, _) = m.call(U, Some(1));
    m.call(S, Some(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, U]);
    finished(&mut m, u2, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, U]);
    finished(&mut m, u1, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, U, S]);
}

#[test]
fn a_running_call_whose_input_order_fails_still_reports_and_leaves_nothing_in_flight() {
    // An unordered call dispatched before its input order is known; the order then turns out
    // to be an error (an earlier statement raised). Its outcome must still be taken, or the
    // evaluator waits forever for a call it no longer counts as running.
    let mut m = Mock::new(&CLASSES);
    m.seq = m.var(None);
    let seq = m.seq;
    let (u, _) = m.call(U, Some(0));
    m.run();
    assert_eq!(m.dispatched, vec![U]);
    m.set(seq, V::Err("earlier failure".into()));
    m.run();
    assert_eq!(m.ctl.in_flight, 1);
    finished(&mut m, u, Ok(7));
    m.run();
    assert_eq!(m.ctl.in_flight, 0);
    assert!(matches!(m.vars[m.ctl[u].result], Some(V::Prim(7))));
    assert_eq!(m.ctl[u].phase, Phase::Finished);
}

/// An owned list (made by MAKE, finished) and a pending value from an unordered call.
fn owned_list_and_pending_value(m: &mut Mock) -> (CtrlId, SlotId) {
    let (mk, _) = m.call(MAKE, Some(0));
    m.run();
    finished(m, mk, Ok(OBJ));
    m.run();
    let (u, _) = m.call(U, Some(0));
    let list = m.var(Some(V::Prim(OBJ)));
    let value = m.ctl[u].result;
    let ap = m.call_with(APPEND, vec![list, value]);
    (ap, value)
}

#[test]
fn an_append_of_a_pending_value_to_an_owned_list_passes_f_r_on_at_once() {
    // `out.append(llm(x))` then a read: the append is ordered on its list alone whatever the
    // value is, so it does not hold the read up until the value arrives (issue 15, item 5).
    let mut m = Mock::new(&CLASSES);
    let (ap, _) = owned_list_and_pending_value(&mut m);
    m.call(R, Some(0));
    m.run();
    assert_eq!(m.ctl[ap].early_local, Some(OBJ as u64));
    assert_eq!(m.out(ap), (true, false));
    assert_eq!(m.dispatched, vec![MAKE, U, R]);
    finished(&mut m, 1, Ok(7));
    m.run();
    // With its value known it is local: unordered, never classified as the sequential append.
    assert_eq!(m.dispatched, vec![MAKE, U, R, APPEND]);
    assert_eq!(m.ctl[ap].class, Class::Unordered);
}

#[test]
fn an_append_to_a_list_that_escaped_waits_for_its_value_and_the_order() {
    let mut m = Mock::new(&CLASSES);
    let (mk, _) = m.call(MAKE, Some(0));
    m.run();
    finished(&mut m, mk, Ok(OBJ));
    m.run();
    let (s, _) = m.call(S, Some(OBJ)); // the list escapes to a sequential call
    let (u, _) = m.call(U, Some(0));
    let list = m.var(Some(V::Prim(OBJ)));
    let value = m.ctl[u].result;
    let ap = m.call_with(APPEND, vec![list, value]);
    m.call(R, Some(0));
    m.run();
    assert_eq!(m.ctl[ap].early_local, None);
    assert_eq!(m.out(ap), (false, false));
    finished(&mut m, s, Ok(0));
    finished(&mut m, u, Ok(7));
    m.run();
    // Globally ordered again: classified (sequential), it runs after its order, then the read.
    assert_eq!(m.ctl[ap].class, Class::Sequential);
    assert_eq!(m.dispatched, vec![MAKE, S, U, APPEND]);
    finished(&mut m, ap, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![MAKE, S, U, APPEND, R]);
}

const KEYED: [(i64, Class); 8] = [
    (U, Class::Unordered),
    (R, Class::Readonly),
    (S, Class::Sequential),
    (MAKE, Class::Unordered),
    // What the annotation library says of dict operations on a dict it knows nothing about.
    (SETK, Class::Sequential),
    (GETK, Class::Readonly),
    (LEN, Class::Readonly),
    (APPEND, Class::Sequential),
];

/// An owned dict (made by MAKE, finished) and variables for it and the keys 1 and 2.
fn owned_dict(m: &mut Mock) -> (SlotId, SlotId, SlotId) {
    let (mk, _) = m.call(MAKE, Some(0));
    m.run();
    finished(m, mk, Ok(OBJ));
    m.run();
    (m.var(Some(V::Prim(OBJ))), m.var(Some(V::Prim(1))), m.var(Some(V::Prim(2))))
}

fn count(m: &Mock, f: i64) -> usize {
    m.dispatched.iter().filter(|&&x| x == f).count()
}

#[test]
fn a_look_up_of_another_key_passes_a_store_whose_value_is_pending() {
    // `d[1] = llm(..)`, then `d.get(2)` and `d.get(1)`: the look-up of key 2 does not wait for
    // the value of key 1; the look-up of key 1 waits for the store.
    let mut m = Mock::new(&KEYED);
    let (d, k1, k2) = owned_dict(&mut m);
    let (u, _) = m.call(U, Some(0));
    let value = m.ctl[u].result;
    let set = m.call_with(SETK, vec![d, k1, value]);
    m.call_with(GETK, vec![d, k2]);
    m.call_with(GETK, vec![d, k1]);
    m.run();
    assert_eq!(m.ctl[set].early_local, Some(OBJ as u64));
    assert_eq!(m.dispatched, vec![MAKE, U, GETK]);
    finished(&mut m, u, Ok(7));
    m.run();
    assert_eq!(m.dispatched, vec![MAKE, U, GETK, SETK]);
    assert_eq!(m.ctl[set].class, Class::Unordered);
    finished(&mut m, set, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![MAKE, U, GETK, SETK, GETK]);
}

#[test]
fn stores_to_different_keys_keep_their_order() {
    // A store may insert an entry, and the order of a dict's entries is the order of the
    // inserting stores: two stores are ordered even on different keys.
    let mut m = Mock::new(&KEYED);
    let (d, k1, k2) = owned_dict(&mut m);
    let (u1, _) = m.call(U, Some(0));
    let (u2, _) = m.call(U, Some(1));
    let (v1, v2) = (m.ctl[u1].result, m.ctl[u2].result);
    let s1 = m.call_with(SETK, vec![d, k1, v1]);
    m.call_with(SETK, vec![d, k2, v2]);
    m.run();
    finished(&mut m, u2, Ok(8));
    m.run();
    assert_eq!(count(&m, SETK), 0);
    finished(&mut m, u1, Ok(7));
    m.run();
    assert_eq!(count(&m, SETK), 1);
    finished(&mut m, s1, Ok(0));
    m.run();
    assert_eq!(count(&m, SETK), 2);
}

#[test]
fn a_whole_dict_read_waits_for_every_store_before_it() {
    let mut m = Mock::new(&KEYED);
    let (d, k1, k2) = owned_dict(&mut m);
    let (u, _) = m.call(U, Some(0));
    let value = m.ctl[u].result;
    let set = m.call_with(SETK, vec![d, k1, value]);
    m.call_with(GETK, vec![d, k2]);
    let n = m.call_with(LEN, vec![d]);
    m.run();
    assert_eq!(count(&m, LEN), 0);
    assert_eq!(count(&m, GETK), 1);
    finished(&mut m, u, Ok(7));
    m.run();
    assert_eq!(count(&m, LEN), 0);
    finished(&mut m, set, Ok(0));
    m.run();
    assert_eq!(count(&m, LEN), 1);
    assert_eq!(m.ctl[n].class, Class::Unordered);
}

/// A catching call that fails completes like a success: its outputs resolve, the sequential
/// call after it runs, its result is the caught value, and the run has no failure (nothing is
/// cancelled, no later call is refused).
#[test]
fn a_failed_catching_call_passes_the_order_on_like_a_success() {
    let mut m = Mock::new(&CLASSES);
    let (s, _) = m.call(S, Some(0));
    m.ctl[s].catch = true;
    let (u, _) = m.call(U, Some(0));
    let (s2, _) = m.call(S2, Some(0));
    m.run();
    assert_eq!(m.dispatched, vec![S, U]);
    finished(&mut m, s, Err("boom".into()));
    m.run();
    assert_eq!(m.out(s), (true, true));
    assert!(matches!(m.vars[m.ctl[s].result], Some(V::Prim(-1))));
    assert!(m.ctl.failures.is_empty() && m.cancelled.is_empty());
    finished(&mut m, u, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![S, U, S2]);
    finished(&mut m, s2, Ok(0));
    m.run();
    assert_eq!(m.out(s2), (true, true));
    assert!(raised(&m).is_none());
}

#[test]
fn a_cancelled_catching_call_is_not_caught() {
    // The runtime cancels a catching call that became speculative (an earlier call failed): its
    // CancelledError (or the KeyboardInterrupt put into its thread) is no exception of the
    // user's — a bare `except:` must not see it.
    let mut m = Mock::new(&CLASSES);
    let (s, _) = m.call(S, Some(0));
    let (u, _) = m.call(U, Some(0));
    m.ctl[u].catch = true;
    m.run();
    assert_eq!(m.dispatched, vec![S, U]);
    finished(&mut m, s, Err("boom".into()));
    assert_eq!(m.cancelled, vec![u]);
    finished(&mut m, u, Err("cancelled".into()));
    assert!(
        !matches!(m.vars[m.ctl[u].result], Some(V::Prim(-1))),
        "not caught"
    );
    assert_eq!(m.ctl.failures.len(), 2);
}

#[test]
fn an_interrupt_while_waiting_is_the_failure_of_the_earliest_call_in_flight() {
    // Two catching calls in flight: a KeyboardInterrupt arriving while the run waits becomes
    // the first one's (caught) failure, once; the other runs on. When the earliest call in
    // flight is not a catching one, the interrupt aborts the run (false).
    let mut m = Mock::new(&CLASSES);
    let (u1, _) = m.call(U, Some(0));
    let (u2, _) = m.call(U, Some(0));
    m.ctl[u1].catch = true;
    m.ctl[u2].catch = true;
    m.run();
    assert_eq!(m.ctl.in_flight, 2);
    assert!(interrupt(&mut m, "KeyboardInterrupt".into()));
    assert!(matches!(m.vars[m.ctl[u1].result], Some(V::Prim(-1))));
    assert_eq!((m.ctl.in_flight, m.cancelled.clone()), (1, vec![u1]));
    assert!(m.ctl.failures.is_empty());
    finished(&mut m, u1, Ok(5)); // the stopped call's late report is ignored
    assert!(matches!(m.vars[m.ctl[u1].result], Some(V::Prim(-1))));
    let mut m = Mock::new(&CLASSES);
    let (u1, _) = m.call(U, Some(0));
    let (u2, _) = m.call(U, Some(0));
    m.ctl[u2].catch = true;
    m.run();
    assert!(!interrupt(&mut m, "KeyboardInterrupt".into()));
    assert_eq!(m.ctl.in_flight, 2);
    let _ = u1;
}

#[test]
fn a_read_passes_a_pending_store_it_cannot_observe_in_a_dict_the_run_does_not_own() {
    // `d[1] = llm(..)` into a dict the run did not make (sequential: it waits for its value),
    // then `d.get(2)` and `d.get(1)`: the read of key 2 runs before the store (it cannot see
    // it), the read of key 1 only after it; a sequential call after them still waits.
    let mut m = Mock::new(&KEYED);
    let d = m.var(Some(V::Prim(OBJ + 1)));
    let (k1, k2) = (m.var(Some(V::Prim(1))), m.var(Some(V::Prim(2))));
    let (u, _) = m.call(U, Some(0));
    let value = m.ctl[u].result;
    let set = m.call_with(SETK, vec![d, k1, value]);
    m.call_with(GETK, vec![d, k2]);
    let get1 = m.call_with(GETK, vec![d, k1]);
    m.call(S, Some(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, GETK]);
    finished(&mut m, u, Ok(7));
    m.run();
    assert_eq!(m.dispatched, vec![U, GETK, SETK]);
    finished(&mut m, set, Ok(0));
    m.run();
    assert_eq!(m.dispatched, vec![U, GETK, SETK, GETK]);
    finished(&mut m, get1, Ok(7));
    m.run();
    assert_eq!(count(&m, S), 0, "the sequential call waits for the first read too");
}
