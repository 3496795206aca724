//! Joins: what comes out of an `ite` (S, carried values, the exit status, the state of owned
//! objects) — known once the condition is, then the value of the path taken.
use super::*;

impl<'a> Builder<'a> {
    /// A value out of a join: known once `cond` is, and then the value of the path taken.
    pub(super) fn join_val(&mut self, cond: &Val, paths: &[(&Val, Strength, Cond)]) -> Val {
        let first = paths[0].0;
        if paths.iter().all(|(v, _, _)| v.ev == first.ev) {
            let av = paths.iter().skip(1).fold(first.av.clone(), |a, (v, _, _)| a.join(&v.av));
            return Val { av, ..first.clone() };
        }
        let e = self.g.event(EvKind::Val);
        self.g.must(e, cond.ev, Cat::Ctl);
        for (v, strength, c) in paths {
            self.g.edge(e, v.ev, *strength, *c, Cat::Data);
        }
        let av = paths.iter().skip(1).fold(first.av.clone(), |a, (v, _, _)| a.join(&v.av));
        let hint = paths.iter().all(|(v, _, _)| v.hint);
        let mut origins: BTreeSet<u32> = cond.origins.iter().copied().collect();
        for (v, _, _) in paths {
            origins.extend(v.origins.iter());
        }
        Val { ev: e, av, direct: false, imm: false, hint, int: None, origins: Rc::new(origins) }
    }

    /// S out of a join; `through` is an order every path passes (it is forwarded along all).
    pub(super) fn join_order(&mut self, cond: Ev, through: Order, paths: &[(Order, Strength, Cond)]) -> Order {
        if paths.iter().all(|(o, _, _)| *o == through) {
            return through;
        }
        let avail = self.g.event(EvKind::Join);
        self.g.must(avail, cond, Cat::Order);
        let ro = self.g.event(EvKind::Join);
        let wo = self.g.event(EvKind::Join);
        self.g.must(ro, through.ro, Cat::Order);
        self.g.must(wo, through.wo, Cat::Order);
        for (o, strength, c) in paths {
            self.g.edge(avail, o.avail, *strength, *c, Cat::Order);
            self.g.edge(ro, o.ro, *strength, *c, Cat::Order);
            self.g.edge(wo, o.wo, *strength, *c, Cat::Order);
        }
        Order { avail, ro, wo }
    }

    pub(super) fn join_objs(&self, before: &State, paths: &[&State]) -> BTreeMap<ObjId, ObjState> {
        let mut out: BTreeMap<ObjId, ObjState> = BTreeMap::new();
        let ids: BTreeSet<ObjId> = paths.iter().flat_map(|p| p.objs.keys().copied()).collect();
        for o in ids {
            let base = before.objs.get(&o).map_or(0, |b| b.hist.len());
            let mut merged: Option<ObjState> = None;
            for p in paths {
                let Some(os) = p.objs.get(&o) else {
                    if let Some(m) = &mut merged {
                        m.escaped = tri_join(m.escaped, Tri::Maybe);
                    }
                    continue;
                };
                let extra: Vec<ObjOp> =
                    os.hist[base.min(os.hist.len())..].iter().map(|op| ObjOp { certain: false, ..op.clone() }).collect();
                match &mut merged {
                    None => {
                        let mut m = os.clone();
                        m.hist.truncate(base.min(m.hist.len()));
                        m.hist.extend(extra);
                        if !before.objs.contains_key(&o) || paths.len() > 1 && paths.iter().any(|q| !q.objs.contains_key(&o)) {
                            m.escaped = tri_join(m.escaped, Tri::Maybe);
                        }
                        merged = Some(m);
                    }
                    Some(m) => {
                        m.escaped = tri_join(m.escaped, os.escaped);
                        m.hist.extend(extra);
                    }
                }
            }
            if let Some(m) = merged {
                out.insert(o, m);
            }
        }
        out
    }

    /// The value of a local that is not bound: using it raises, so nothing after the use runs
    /// and any kind will do.
    pub(super) fn unbound_val(&self, st: &State) -> Val {
        self.imm(st, AVal::Atom)
    }

    pub(super) fn join_if(&mut self, before: &State, cond: &Val, a: State, la: Cond, b: State, lb: Cond) -> State {
        let strength = if before.phantom { Strength::May } else { Strength::Must };
        let mut st = before.clone();
        st.s = self.join_order(cond.ev, before.s, &[(a.s, strength, la), (b.s, strength, lb)]);
        let names: BTreeSet<bz::VarName> = a.vars.keys().chain(b.vars.keys()).cloned().collect();
        for x in names {
            let va = a.vars.get(&x).cloned().unwrap_or_else(|| self.unbound_val(before));
            let vb = b.vars.get(&x).cloned().unwrap_or_else(|| self.unbound_val(before));
            let v = self.join_val(cond, &[(&va, strength, la), (&vb, strength, lb)]);
            st.vars.insert(x, v);
        }
        if let (Some(sa), Some(sb)) = (&a.status, &b.status) {
            st.status = Some(self.join_val(cond, &[(sa, strength, la), (sb, strength, lb)]));
        }
        st.objs = self.join_objs(before, &[&a, &b]);
        st
    }

    pub(super) fn join_rest(&mut self, before: &State, status: &Val, rest: State, group: u32) -> State {
        let (strength, lit) = if before.phantom { (Strength::May, Cond::Always) } else { (Strength::Must, Cond::Rest(group)) };
        let mut st = before.clone();
        st.s = self.join_order(status.ev, before.s, &[(before.s, Strength::May, Cond::Always), (rest.s, strength, lit)]);
        let names: BTreeSet<bz::VarName> = rest.vars.keys().cloned().collect();
        for x in names {
            let vr = rest.vars[&x].clone();
            let vb = before.vars.get(&x).cloned().unwrap_or_else(|| self.unbound_val(before));
            let v = self.join_val(status, &[(&vb, Strength::May, Cond::Always), (&vr, strength, lit)]);
            st.vars.insert(x, v);
        }
        let rs = rest.status.clone().expect("exit status threaded");
        st.status = Some(self.join_val(status, &[(status, Strength::May, Cond::Always), (&rs, strength, lit)]));
        st.objs = self.join_objs(before, &[before, &rest]);
        st
    }

    /// The path taken is known (the scenario runs it): its values are known once `cond` is.
    /// `same_s`: the path left S unchanged, so S bypasses the join (`ite_branches`).
    pub(super) fn join_taken(&mut self, cond: &Val, taken: State, vars: &BTreeSet<bz::VarName>, same_s: bool) -> State {
        let mut st = taken;
        if !same_s {
            let avail = self.g.event(EvKind::Join);
            self.g.must(avail, cond.ev, Cat::Order);
            self.g.must(avail, st.s.avail, Cat::Order);
            st.s = Order { avail, ..st.s };
        }
        for x in vars {
            if let Some(v) = st.vars.get(x).cloned() {
                let e = self.g.event(EvKind::Val);
                self.g.must(e, cond.ev, Cat::Ctl);
                self.g.must(e, v.ev, Cat::Data);
                st.vars.insert(x.clone(), Val { ev: e, direct: false, imm: false, int: None, ..v });
            }
        }
        if let Some(v) = st.status.clone() {
            let e = self.g.event(EvKind::Val);
            self.g.must(e, cond.ev, Cat::Ctl);
            self.g.must(e, v.ev, Cat::Data);
            st.status = Some(Val { ev: e, direct: false, imm: false, ..v });
        }
        st
    }
}
