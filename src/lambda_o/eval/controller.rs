//! Controllers (see `crate::control`): queueing an external call and advancing its controller.
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    /// The stand-in for a pending slot's value: its producing call's result hint.
    pub(super) fn hint_of(&self, s: SlotId) -> Option<H::Prim> {
        self.producer_along(s, false).and_then(|c| self.ctrls[c].hint.clone())
    }

    /// The call whose result a pending slot will be, following alias edges; with
    /// `through_inlined`, past an inlined internal call to the value its body returns once that
    /// is linked.
    pub(super) fn producer_along(&self, mut s: SlotId, through_inlined: bool) -> Option<usize> {
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
    pub(super) fn try_hint(&mut self, cid: usize) {
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
    pub(super) fn token(&mut self, cid: usize, w: WorkId) -> Option<Token> {
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
    pub(super) fn finish(&mut self, cid: usize) {
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

    pub(super) fn wait_fut(&mut self, f: usize, w: WorkId) -> bool {
        if self.futs.is_done(f) {
            true
        } else {
            self.futs.wait(f, w);
            false
        }
    }

    pub(super) fn resolve_fut(&mut self, f: usize) {
        for w in self.futs.resolve(f) {
            self.ready.push_back(w);
        }
    }

    /// Pass the order on without waiting for the call itself, as far as its class allows
    /// (unordered: F_R and F_W; readonly: F_R) — as soon as the class is known, even before the
    /// arguments are. Non-blocking: registers to be woken for whatever is still pending.
    pub(super) fn forward(&mut self, cid: usize, w: WorkId) {
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
    pub(super) fn release_after(&mut self, cid: usize, tok: Token, w: WorkId) {
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

    pub(super) fn advance(&mut self, cid: usize, w: WorkId) {
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

    pub(super) fn dispatch(&mut self, cid: usize) {
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

    pub(super) fn complete(&mut self, cid: usize, r: Result<H::Prim, H::Error>) {
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
    pub(super) fn fail(&mut self, cid: usize, e: H::Error) {
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
    pub(super) fn cancel_after(&mut self, p: u64) {
        for cid in 0..self.ctrls.len() {
            if self.ctrls[cid].phase == Phase::Running && self.position_of(cid).is_some_and(|q| q > p) {
                self.stats.cancelled_calls += 1;
                self.host.cancel(cid as TaskId);
            }
        }
    }
}
