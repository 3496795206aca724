//! One controller per call: its events and the waits of `control::Policy` for its class, and
//! the per-object ordering of containers the run created (`lambda_o::eval`'s `involvement` and
//! `object_order`).
use super::*;

impl<'a> Builder<'a> {
    /// A controller for one call; returns its result.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call(
        &mut self,
        st: &mut State,
        callee: &Callee<'_>,
        callee_val: Option<&Val>,
        args: &[Val],
        kwnames: &[String],
        site: Option<u32>,
        op: Option<&Intrinsic>,
    ) -> Val {
        let avs: Vec<AVal> = args.iter().map(|v| v.av.clone()).collect();
        let info = self.oracle.call(callee, &avs, kwnames);
        let id = self.g.ctrls.len() as CtrlId;
        let t = self.g.event(EvKind::T(id));
        self.g.must(t, st.ctl, Cat::Ctl);
        self.g.must(t, st.s.avail, Cat::Order);
        let a = self.g.event(EvKind::A(id));
        self.g.must(a, st.ctl, Cat::Ctl);
        if let Some(cv) = callee_val {
            self.g.must(a, cv.ev, Cat::Data);
        }
        for v in args {
            self.g.must(a, v.ev, Cat::Data);
        }
        let mut pending: Vec<Ev> = args.iter().filter(|v| !v.direct && !v.imm).map(|v| v.ev).collect();
        if let Some(cv) = callee_val.filter(|v| !v.imm) {
            pending.push(cv.ev);
        }
        if info.internal {
            return self.internal_call(st, id, t, a, args, site, pending);
        }
        // Class: from the callee alone (early), else from the arguments once known — or earlier
        // from stand-ins when every pending argument has one (`try_hint`, also once a pending
        // callee is known).
        let late = info.early.is_none();
        let hint_early = late && args.iter().any(|v| !v.imm) && args.iter().all(|v| v.imm || v.hint);
        let late_certain = late && !hint_early;
        let (mut may_class, mut must_class) = match (info.early, info.class) {
            (Some(c), _) => (c, c),
            (None, Some(c)) => (c, c),
            (None, None) => (Class::Sequential, Class::Unordered),
        };
        // Per-object ordering (ObjInfo / object_order), decided once the arguments are known.
        let decided = self.g.event(EvKind::Join);
        self.g.must(decided, a, Cat::Data);
        let involved = self.objects(st, id, t, decided, &info, args, callee_val);
        if let Some((local_may, local_must)) = involved {
            if local_must {
                may_class = Class::Unordered;
                must_class = Class::Unordered;
            } else if local_may {
                must_class = Class::Unordered;
            }
        }
        // K: the class is known and the order may be forwarded. A class from the callee alone
        // forwards at once (even before the per-object decision); otherwise after the arguments
        // (and, for a call involving owned objects, after the per-object decision).
        let k = self.g.event(EvKind::K(id));
        self.g.must(k, st.ctl, Cat::Ctl);
        if let Some(cv) = callee_val {
            self.g.must(k, cv.ev, Cat::Data);
        }
        if late {
            let strength = if late_certain { Strength::Must } else { Strength::May };
            let to = if involved.is_some() { decided } else { a };
            self.g.edge(k, to, strength, Cond::Always, Cat::Data);
        }
        // The waits of `control::Policy` for the class: an edge is Must when even the laxest
        // class it may have needs it, May when only the strictest does.
        let (pmay, pmust) = (Policy::of(may_class), Policy::of(must_class));
        let need = |may: bool, must: bool| match (may, must) {
            (_, true) => Some(Strength::Must),
            (true, false) => Some(Strength::May),
            _ => None,
        };
        let d = self.g.event(EvKind::D(id));
        self.g.must(d, a, Cat::Data);
        self.g.must(d, k, Cat::Data);
        self.g.must(d, decided, Cat::Data);
        let token = need(pmay.dispatch_needs_r || pmay.dispatch_needs_w, pmust.dispatch_needs_r || pmust.dispatch_needs_w);
        if let Some(s) = token {
            self.g.edge(d, t, s, Cond::Always, Cat::Order);
        }
        if let Some(s) = need(pmay.dispatch_needs_r, pmust.dispatch_needs_r) {
            self.g.edge(d, st.s.ro, s, Cond::Always, Cat::Order);
        }
        if let Some(s) = need(pmay.dispatch_needs_w, pmust.dispatch_needs_w) {
            self.g.edge(d, st.s.wo, s, Cond::Always, Cat::Order);
        }
        let fin = self.g.event(EvKind::F(id));
        self.g.must(fin, d, Cat::Data);
        // F_R'/F_W': forwarded once the class and the token are known (`forward`), or resolved
        // after the call finished (`release_after`: F_R first, then F_W).
        let ro = self.g.event(EvKind::Ro(id));
        self.g.must(ro, k, Cat::Order);
        self.g.must(ro, t, Cat::Order);
        self.g.must(ro, st.s.ro, Cat::Order);
        if let Some(s) = need(pmay.r_out_needs_done, pmust.r_out_needs_done) {
            self.g.edge(ro, fin, s, Cond::Always, Cat::Order);
        }
        let wo = self.g.event(EvKind::Wo(id));
        self.g.must(wo, k, Cat::Order);
        self.g.must(wo, t, Cat::Order);
        self.g.must(wo, st.s.wo, Cat::Order);
        if let Some(s) = need(pmay.w_out_needs_done, pmust.w_out_needs_done) {
            self.g.edge(wo, fin, s, Cond::Always, Cat::Order);
            self.g.edge(wo, st.s.ro, s, Cond::Always, Cat::Order);
        }
        if late_certain {
            // The class was decided in the step that dispatches the call, so whatever the
            // forwarded order wakes runs after the dispatch.
            self.g.edge(ro, d, Strength::StepD, Cond::Always, Cat::Order);
            self.g.edge(wo, d, Strength::StepD, Cond::Always, Cat::Order);
        }
        self.g.ctrls.push(Ctrl {
            ev: CtrlEvs { t, a, k, d, f: fin, ro, wo },
            site,
            concurrent: info.concurrent,
            internal: false,
            phantom: st.phantom,
            guard: st.guard.clone(),
            loops: st.loops.clone(),
            may_class,
            must_class,
        });
        self.ctrl_meta.push(CtrlMeta { pending, internal: false });
        st.s = Order { avail: st.ctl, ro, wo };
        // The result.
        let av = if let Some(ty) = info.makes {
            let o = self.nobjs;
            self.nobjs += 1;
            st.objs.insert(o, ObjState { creator: id, escaped: Tri::No, hist: Vec::new() });
            AVal::Obj(o, ty)
        } else if let Some(v) = info.value.clone() {
            v
        } else if let Some(op) = op {
            op_result(op, args)
        } else {
            AVal::Atom
        };
        let hint = info.result_hint
            || (op.is_some() && info.class == Some(Class::Unordered) && args.iter().all(|v| v.imm || v.hint));
        // An operation's result is a function of its arguments; a call's may also vary by itself;
        // an external's is its own (results of different calls count as independent).
        let mut origins: BTreeSet<u32> = if info.external {
            BTreeSet::new()
        } else {
            args.iter().flat_map(|v| v.origins.iter().copied()).collect()
        };
        if let Callee::Value(_) = callee {
            origins.insert(self.fresh_origin());
        }
        Val { ev: fin, av, direct: true, imm: false, hint, int: None, origins: Rc::new(origins) }
    }

    /// A call of a @poppy function: inlined at run time; its body is not analysed, so it counts
    /// as waiting for everything before it (for others) and as waiting for nothing (for claims).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn internal_call(&mut self, st: &mut State, id: CtrlId, t: Ev, a: Ev, args: &[Val], site: Option<u32>, pending: Vec<Ev>) -> Val {
        let k = self.g.event(EvKind::K(id));
        self.g.must(k, a, Cat::Data);
        let d = self.g.event(EvKind::D(id));
        self.g.must(d, k, Cat::Data);
        self.g.may(d, t, Cat::Order);
        self.g.may(d, st.s.ro, Cat::Order);
        self.g.may(d, st.s.wo, Cat::Order);
        let fin = self.g.event(EvKind::F(id));
        self.g.must(fin, d, Cat::Data);
        let ro = self.g.event(EvKind::Ro(id));
        self.g.may(ro, fin, Cat::Order);
        self.g.must(ro, st.s.ro, Cat::Order);
        self.g.must(ro, t, Cat::Order);
        let wo = self.g.event(EvKind::Wo(id));
        self.g.may(wo, fin, Cat::Order);
        self.g.must(wo, st.s.wo, Cat::Order);
        self.g.must(wo, t, Cat::Order);
        // Owned objects given to it may be read, written or given away by its body.
        let mut objs = BTreeSet::new();
        for v in args {
            v.av.objects(&mut objs);
        }
        for o in objs {
            self.maybe_escape(st, id, k, o);
        }
        self.g.ctrls.push(Ctrl {
            ev: CtrlEvs { t, a, k, d, f: fin, ro, wo },
            site,
            concurrent: false,
            internal: true,
            phantom: st.phantom,
            guard: st.guard.clone(),
            loops: st.loops.clone(),
            may_class: Class::Sequential,
            must_class: Class::Unordered,
        });
        self.ctrl_meta.push(CtrlMeta { pending, internal: true });
        // The order after it is its body's, which may come out of joins in the body.
        let avail = self.g.event(EvKind::Join);
        self.g.must(avail, st.ctl, Cat::Order);
        self.g.may(avail, fin, Cat::Order);
        st.s = Order { avail, ro, wo };
        let v = self.g.event(EvKind::Val);
        self.g.may(v, fin, Cat::Data);
        let mut origins: BTreeSet<u32> = args.iter().flat_map(|v| v.origins.iter().copied()).collect();
        origins.insert(self.fresh_origin());
        Val { ev: v, av: AVal::any(), direct: false, imm: false, hint: false, int: None, origins: Rc::new(origins) }
    }

    /// A call that may do anything to owned object `o`: wait as an escape would, and from now
    /// on `o` may have escaped.
    pub(super) fn maybe_escape(&mut self, st: &mut State, id: CtrlId, k: Ev, o: ObjId) {
        let Some(os) = st.objs.get(&o).cloned() else { return };
        if os.escaped != Tri::Yes {
            for op in os.hist.iter().rev() {
                self.g.may(k, self.g.ctrls[op.ctrl as usize].ev.f, Cat::Object);
                if op.write && op.certain {
                    break;
                }
            }
        }
        let os = st.objs.get_mut(&o).expect("present");
        if os.escaped == Tri::No {
            os.escaped = Tri::Maybe;
        }
        os.hist.push(ObjOp { ctrl: id, write: true, escape: true, certain: false, keyed: false });
    }

    /// Per-object ordering of controller `id` (`involvement` + `object_order` of the evaluator):
    /// adds its waits to K and records it on the objects. Returns (may be local, is certainly
    /// local), or None when it involves no owned object.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn objects(
        &mut self,
        st: &mut State,
        id: CtrlId,
        t: Ev,
        k: Ev,
        info: &CallInfo,
        args: &[Val],
        callee: Option<&Val>,
    ) -> Option<(bool, bool)> {
        // Owned objects the host could not see in the arguments (values the analysis cannot
        // stand in for): anything may happen to them.
        let mut seen = BTreeSet::new();
        for v in args {
            v.av.objects(&mut seen);
        }
        if let Some(cv) = callee {
            cv.av.objects(&mut seen);
        }
        let facts = &info.objects;
        for o in seen {
            if !facts.keys.contains(&o) && facts.scope.as_ref().is_none_or(|s| s.0 != o) && st.objs.contains_key(&o) {
                self.maybe_escape(st, id, k, o);
            }
        }
        let owned = |o: &ObjId| st.objs.contains_key(o);
        let mut keys: Vec<ObjId> = facts.keys.iter().copied().filter(owned).collect();
        if keys.is_empty() {
            return None;
        }
        let touch = match facts.scope.clone().filter(|s| owned(&s.0)) {
            Some((o, write, rest)) => {
                keys = rest.into_iter().filter(owned).collect();
                match write {
                    None if keys.is_empty() => return Some((false, false)), // a carrier
                    None => None,
                    Some(_) if keys.contains(&o) => None,
                    Some(w) => Some((o, w)),
                }
            }
            None => None,
        };
        keys.sort_unstable();
        keys.dedup();
        // (object, waits for every earlier operation, is the receiver, on one key of it)
        let mut active: Vec<(ObjId, bool, bool, bool)> = keys.iter().map(|&o| (o, true, false, false)).collect();
        if let Some((o, w)) = touch {
            active.push((o, w, true, facts.keyed));
        }
        let mut escaped = Tri::No;
        let mut uncertain = false;
        let mut range_start = id;
        for (o, all, is_touch, keyed) in active {
            let os = st.objs[&o].clone();
            match os.escaped {
                Tri::Yes => {
                    if is_touch {
                        escaped = Tri::Yes;
                    }
                    continue;
                }
                Tri::Maybe => {
                    uncertain = true;
                    if is_touch && escaped == Tri::No {
                        escaped = Tri::Maybe;
                    }
                }
                Tri::No => {}
            }
            let mut certain_path = os.escaped == Tri::No;
            let mut stopped = false;
            for op in os.hist.iter().rev() {
                if op.escape {
                    certain_path = false;
                    continue;
                }
                if op.write || all {
                    let f = self.g.ctrls[op.ctrl as usize].ev.f;
                    // Two operations on keys of one dict (not two writes) wait for each other
                    // only if the keys are equal, which the analysis does not know.
                    let other_key = keyed && op.keyed && !(all && op.write);
                    let strength = if op.certain && certain_path && !other_key { Strength::Must } else { Strength::May };
                    self.g.edge(k, f, strength, Cond::Always, Cat::Object);
                }
                // A write on one key waited for the operations on that key and for the other
                // writes, not for the other keys' reads: only a write of the whole object
                // covers everything before it.
                if op.write && op.certain && !op.keyed {
                    range_start = range_start.min(op.ctrl);
                    stopped = true;
                    break;
                }
            }
            if !stopped {
                range_start = range_start.min(os.creator);
            }
        }
        // The walk goes back along the order: it waits for each call's input token (its own
        // first), for arguments of earlier calls that are not plain call results, for their
        // callees, and for inlined calls.
        self.g.must(k, t, Cat::Object);
        for c in range_start + 1..id {
            let meta = &self.ctrl_meta[c as usize];
            let (pend, internal) = (meta.pending.clone(), meta.internal);
            let ev = self.g.ctrls[c as usize].ev;
            self.g.may(k, ev.t, Cat::Object);
            for e in pend {
                self.g.may(k, e, Cat::Object);
            }
            if internal {
                self.g.may(k, ev.f, Cat::Object);
            }
        }
        // Record it.
        if let Some((o, w)) = touch {
            let os = st.objs.get_mut(&o).expect("owned");
            os.hist.push(ObjOp { ctrl: id, write: w, escape: false, certain: true, keyed: facts.keyed });
        }
        for &o in &keys {
            let os = st.objs.get_mut(&o).expect("owned");
            os.escaped = Tri::Yes;
            os.hist.push(ObjOp { ctrl: id, write: true, escape: true, certain: true, keyed: false });
        }
        let local_may = touch.is_some() && escaped != Tri::Yes;
        let local_must = touch.is_some() && escaped == Tri::No && !uncertain;
        Some((local_may, local_must))
    }

    pub(super) fn map_status(&mut self, st: &mut State, helper: &'static str) {
        let status = st.status.clone().expect("exit status threaded");
        let v = self.call(st, &Callee::Helper(helper), None, &[status], &[], None, None);
        st.status = Some(v);
    }
}
