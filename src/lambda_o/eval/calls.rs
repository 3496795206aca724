//! External calls on the evaluator's side: queueing a controller for an `xcall`, and the
//! evaluator as the controller's environment (`control::Env`): its variables, its work queue, the
//! instantiation of inlined callees and of results that are λO expressions, and the host.
use super::*;
use crate::control::{Callee, Class, Count, CtrlId, Env, Peek, Read};

impl<'a, H: Host> Eval<'a, H> {
    /// Queue a call: the successor's token exists at once, the result later. With the callee
    /// known it is an external call; otherwise the controller first waits for the callee.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue_call(
        &mut self,
        seq: SlotId,
        callee: SlotId,
        func: Option<H::Prim>,
        args: Vec<SlotId>,
        kwnames: Vec<String>,
        dst: SlotId,
        line: u32,
    ) {
        let out = self.ctl.new_token();
        let s_out = self.new_slot(Value::Seq(out));
        let result = self.pending_slot();
        self.resolve(dst, Value::Tuple(Rc::from(vec![s_out, result])));
        let cid = self.ctl.ctrls.len();
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
        let queued_at = self.ctl.tracing.then(Instant::now);
        let ctrl = Ctrl::new(seq, callee, func, args, kwnames, result, out, line, early, held, queued_at);
        self.work.push(Work::Ctrl(cid));
        let w = self.work.len() - 1;
        self.ctl.add(ctrl, w);
        self.ready.push_back(w);
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
}

impl<'a, H: Host> Env for Eval<'a, H> {
    type Prim = H::Prim;
    type Error = H::Error;

    #[inline]
    fn ctl(&mut self) -> &mut Controllers<H::Prim, H::Error> {
        &mut self.ctl
    }

    #[inline]
    fn ctl_ref(&self) -> &Controllers<H::Prim, H::Error> {
        &self.ctl
    }

    #[inline]
    fn count(&mut self, what: Count) {
        let stats = &mut *self.stats;
        match what {
            Count::Dispatched { class, queue_wait_ns } => {
                if let Some(ns) = queue_wait_ns {
                    stats.queue_wait_ns += ns;
                }
                stats.count_dispatch(class);
            }
            Count::InFlight(n) => stats.peak_in_flight = stats.peak_in_flight.max(n),
            Count::Cancelled => stats.cancelled_calls += 1,
            Count::ObjectLocal => stats.object_local_calls += 1,
            Count::ObjectEscape => stats.object_escapes += 1,
        }
    }

    #[inline]
    fn wake(&mut self, w: WorkId) {
        self.ready.push_back(w);
    }

    #[inline]
    fn need_slot(&mut self, s: SlotId, w: WorkId) -> bool {
        match &mut self.slots[s] {
            Slot::Ready(_) => true,
            Slot::Pending(p) => {
                p.waiters.push(Waiter::Work(w));
                false
            }
            Slot::Free => panic!("λO slot {s} needed after it was reclaimed"),
        }
    }

    #[inline]
    fn need_token(&mut self, s: SlotId, w: WorkId) -> Read<Token> {
        match &mut self.slots[s] {
            Slot::Ready(Value::Seq(t)) => Read::Ready(*t),
            Slot::Ready(_) => Read::Not,
            Slot::Pending(p) => {
                p.waiters.push(Waiter::Work(w));
                Read::Pending
            }
            Slot::Free => panic!("λO slot {s} needed after it was reclaimed"),
        }
    }

    #[inline]
    fn peek_token(&self, s: SlotId) -> Option<Token> {
        match self.value(s) {
            Some(Value::Seq(t)) => Some(*t),
            _ => None,
        }
    }

    #[inline]
    fn peek(&self, s: SlotId) -> Peek<H::Prim> {
        match self.value(s) {
            Some(Value::Prim(p)) => Peek::Prim(p.clone()),
            Some(_) => Peek::Other,
            None => Peek::Pending,
        }
    }

    #[inline]
    fn need_prim(&mut self, s: SlotId, w: WorkId) -> Option<Result<H::Prim, H::Error>> {
        self.prim_arg(s, w)
    }

    fn arg_leaves(&self, s: SlotId, known: &mut Vec<H::Prim>, pending: &mut Vec<SlotId>) {
        match self.value(s) {
            None => pending.push(s),
            Some(Value::Tuple(t)) => {
                for &x in t.iter() {
                    self.arg_leaves(x, known, pending);
                }
            }
            Some(Value::Prim(p)) => known.push(p.clone()),
            Some(_) => {}
        }
    }

    #[inline]
    fn pending_source(&self, s: SlotId) -> Option<(Option<CtrlId>, Option<SlotId>)> {
        let Slot::Pending(p) = &self.slots[s] else { return None };
        let producer = (p.producer != NONE).then_some(p.producer as CtrlId);
        let alias = (p.alias != NONE).then_some(p.alias as SlotId);
        Some((producer, alias))
    }

    #[inline]
    fn release_slot(&mut self, s: SlotId) {
        self.release(s);
    }

    fn callee(&mut self, cid: CtrlId, w: WorkId) -> Callee<H::Prim, H::Error> {
        let c = &self.ctl[cid];
        let (seq, callee, nargs) = (c.seq, c.callee, c.args.len());
        let Some(fv) = self.need(callee, w) else { return Callee::Pending };
        let mut params = vec![seq];
        params.extend_from_slice(&self.ctl[cid].args);
        // A catching call is never inlined: failures in the body would not be its own. Nor one
        // made while a handler runs: the body's calls would be made without the handled exception.
        let external_only = self.ctl[cid].catch || self.ctl[cid].handling.is_some();
        let (prog, fid, env) = match fv {
            Value::Prim(p) if external_only => return Callee::External(p),
            Value::Closure(_) if external_only => {
                let e = self.host.internal_error("RuntimeError", "poppy_jit: a catching or handling call of a λO function");
                return Callee::Failed(e);
            }
            Value::Prim(p) => match self.host.inline_binding(&p, nargs, &self.ctl[cid].kwnames) {
                Some((prog, binds)) => {
                    params = self.bind_params(seq, &self.ctl[cid].args.clone(), binds);
                    let entry = prog.entry;
                    (prog, entry, Vec::new())
                }
                None => return Callee::External(p),
            },
            Value::Closure(c) => (c.prog.clone(), c.func, c.env.clone()),
            Value::Error(e) => return Callee::Failed(e),
            _ => {
                let e = self.host.internal_error("TypeError", "poppy_jit: call of a value that is not callable");
                return Callee::Failed(e);
            }
        };
        self.stats.inlined_calls += 1;
        match self.instantiate(&prog, fid, &env, &params) {
            Ok(ret) => Callee::Inlined(ret),
            Err(e) => Callee::Failed(e),
        }
    }

    fn link_inlined(&mut self, cid: CtrlId, ret: SlotId, w: WorkId) -> Read<SlotId> {
        let result = self.ctl[cid].result;
        match self.need(ret, w) {
            None => Read::Pending,
            Some(Value::Tuple(t)) if t.len() == 2 => {
                self.follow(t[1], result);
                self.retain(t[0]);
                Read::Ready(t[0])
            }
            Some(other) => {
                let v = match other {
                    Value::Error(e) => Value::Error(e),
                    _ => self.error("TypeError", "poppy_jit: an inlined function returned no (S, value)"),
                };
                self.resolve(result, v);
                Read::Not
            }
        }
    }

    fn bind_result(&mut self, cid: CtrlId, v: H::Prim) {
        let result = self.ctl[cid].result;
        match self.host.as_term(&v) {
            None => self.resolve(result, Value::Prim(v)),
            Some((prog, fid, args)) => {
                // Resolve to a λO expression: instantiate it; the call's result follows
                // the expression's.
                let token = self.ctl.released_token();
                let mut params = vec![self.new_slot(Value::Seq(token))];
                for a in args {
                    params.push(self.new_slot(Value::Prim(a)));
                }
                self.stats.term_resolutions += 1;
                self.call_into(&prog, fid, &[], &params, result);
            }
        }
    }

    fn bind_error(&mut self, cid: CtrlId, e: H::Error) {
        let result = self.ctl[cid].result;
        self.resolve(result, Value::Error(e));
    }

    fn bind_caught(&mut self, cid: CtrlId, e: H::Error) {
        let (result, line) = (self.ctl[cid].result, self.ctl[cid].line);
        let v = self.host.caught(e, line);
        self.resolve(result, Value::Prim(v));
    }

    fn catchable(&mut self, e: &H::Error) -> bool {
        self.host.catchable(e)
    }

    #[inline]
    fn classify_callee(&mut self, f: &H::Prim) -> Option<Class> {
        self.host.classify_callee(f)
    }

    fn builds_tuple(&mut self, cid: CtrlId) -> bool {
        match self.ctl[cid].func.as_ref() {
            Some(f) => self.host.builds_tuple(f),
            None => false,
        }
    }

    #[inline]
    fn classify(&mut self, cid: CtrlId, argv: &[H::Prim]) -> Class {
        let c = &self.ctl[cid];
        self.host.classify(c.func.as_ref().expect("callee known"), argv, &c.kwnames)
    }

    fn classify_hinted(&mut self, cid: CtrlId, args: &[Option<H::Prim>]) -> Option<Class> {
        let c = &self.ctl[cid];
        let f = c.func.as_ref().or(c.func_hint()).expect("callee or its stand-in known");
        self.host.classify_hinted(f, args, &c.kwnames)
    }

    fn result_hint(&mut self, cid: CtrlId, args: &[Option<H::Prim>]) -> Option<H::Prim> {
        let c = &self.ctl[cid];
        let f = c.func.as_ref().or(c.func_hint()).expect("callee or its stand-in known");
        self.host.result_hint(f, args, &c.kwnames)
    }

    fn is_atom(&mut self, p: &H::Prim) -> bool {
        self.host.is_atom(p)
    }

    fn check_result(&mut self, cid: CtrlId, v: &H::Prim, relied: Option<&str>) -> Result<bool, H::Error> {
        match self.ctl[cid].func.as_ref() {
            Some(f) => self.host.check_result(f, v, relied),
            None => Ok(true),
        }
    }

    fn declares_result(&mut self, cid: CtrlId) -> bool {
        match self.ctl[cid].func.as_ref() {
            Some(f) => self.host.declares_result(f),
            None => false,
        }
    }

    #[inline]
    fn dispatch(&mut self, cid: CtrlId) -> Option<Result<H::Prim, H::Error>> {
        let c = &self.ctl[cid];
        let f = c.func.as_ref().expect("callee known");
        let local = if c.obj.as_ref().is_some_and(|o| o.ordered_locally()) { self.host.local_variant(f) } else { None };
        let f = local.as_ref().unwrap_or(f);
        match self.host.dispatch_handling(cid as TaskId, f, &c.argv, &c.kwnames, c.handling.as_ref()) {
            Dispatch::Done(r) => Some(r),
            Dispatch::Pending => None,
        }
    }

    fn cancel(&mut self, cid: CtrlId) {
        self.host.cancel(cid as TaskId);
    }

    fn internal_error(&mut self, kind: &str, msg: &str) -> H::Error {
        self.host.internal_error(kind, msg)
    }

    #[inline]
    fn fresh_keys(&mut self, cid: CtrlId, result: &H::Prim) -> Vec<u64> {
        let Some(f) = self.ctl[cid].func.as_ref() else { return Vec::new() };
        let keywords = !self.ctl[cid].kwnames.is_empty();
        self.host.fresh_keys(f, result, keywords)
    }

    fn object_keys(&mut self, cid: CtrlId, args: &[H::Prim]) -> Vec<u64> {
        self.host.object_keys(self.ctl[cid].func.as_ref().expect("callee known"), args)
    }

    fn arg_keys(&mut self, args: &[H::Prim]) -> Vec<u64> {
        self.host.arg_keys(args)
    }

    fn reach_keys(&mut self, values: &[H::Prim]) -> Vec<u64> {
        self.host.reach_keys(values)
    }

    fn ite_source(&self, s: SlotId, seen: &mut std::collections::HashSet<SlotId>, known: &mut Vec<H::Prim>, pending: &mut Vec<SlotId>) -> Option<crate::control::IteSource> {
        self.ite_source_of(s, seen, known, pending)
    }

    fn wait_bound(&mut self, s: SlotId, w: WorkId) -> bool {
        self.wait_bound_of(s, w)
    }

    fn scope(&mut self, cid: CtrlId, args: &[H::Prim]) -> Option<crate::control::Scope<H::Prim>> {
        let c = &self.ctl[cid];
        self.host.scope(c.func.as_ref().expect("callee known"), args, &c.kwnames)
    }

    fn read_passes(&mut self, read: CtrlId, writes: &[CtrlId], stand_ins: &[Vec<Option<H::Prim>>]) -> bool {
        use crate::control::Partial;
        let mut ws = Vec::with_capacity(writes.len());
        for (i, &c) in writes.iter().enumerate() {
            let ctrl = &self.ctl[c];
            if !ctrl.kwnames.is_empty() {
                return false;
            }
            let Some(f) = ctrl.func.clone() else { return false };
            let args = ctrl.args.iter().enumerate().map(|(j, &a)| match self.value(a) {
                Some(Value::Prim(p)) => Partial::Known(p.clone()),
                _ => match stand_ins.get(i).and_then(|s| s.get(j)).cloned().flatten() {
                    Some(h) => Partial::Known(h),
                    None => Partial::Pending,
                },
            });
            ws.push((f, args.collect()));
        }
        let c = &self.ctl[read];
        let Some(f) = c.func.as_ref() else { return false };
        self.host.read_passes(f, &c.argv, &c.kwnames, &ws)
    }

    fn scope_pending(&mut self, cid: CtrlId, args: &[crate::control::Partial<H::Prim>]) -> Option<(u64, bool, Option<u64>)> {
        let c = &self.ctl[cid];
        self.host.scope_pending(c.func.as_ref()?, args, &c.kwnames)
    }
}
