//! Per-object ordering of calls on containers the run created.
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    /// Wake the work items waiting for call `cid` to finish (per-object ordering).
    pub(super) fn wake_done(&mut self, cid: usize) {
        if let Some(f) = self.ctrls[cid].obj.as_ref().map(|o| o.done) {
            self.resolve_fut(f);
        }
    }

    /// What a call about to be ordered does to owned objects (None: nothing).
    pub(super) fn involvement(&mut self, cid: usize, argv: &[H::Prim]) -> Option<Box<ObjInfo>> {
        if self.owned.is_empty() {
            return None;
        }
        let f = self.ctrls[cid].func.clone().expect("callee known");
        let kwnames = self.ctrls[cid].kwnames.clone();
        let mut keys = self.host.object_keys(&f, argv);
        keys.retain(|k| self.owned.contains_key(k));
        if keys.is_empty() {
            return None;
        }
        // A scoped operation: its receiver is touched; the other arguments' objects escape.
        let touch = match self.host.scope(&f, argv, &kwnames).filter(|(k, _, _)| self.owned.contains_key(k)) {
            Some((k, write, rest)) => {
                keys = self.host.arg_keys(&rest);
                keys.retain(|o| self.owned.contains_key(o));
                match write {
                    // Touches no state of its receiver: its result stands for the object (a
                    // bound method), so calls that get that result while it is pending must be
                    // waited for (see `object_order`).
                    None if keys.is_empty() => {
                        let done = self.futs.new_future();
                        let info = ObjInfo { touch: None, escapes: Vec::new(), local: None, carries: Some(k), done };
                        return Some(Box::new(info));
                    }
                    None => None,
                    // e.g. a list appended to itself: an escape
                    Some(_) if keys.contains(&k) => None,
                    Some(write) => Some((k, write)),
                }
            }
            None => None,
        };
        keys.sort_unstable();
        keys.dedup();
        let done = self.futs.new_future();
        Some(Box::new(ObjInfo { touch, escapes: keys, local: None, carries: None, done }))
    }

    /// Whether call `c`, still waiting for arguments, may involve one of `keys`: None if it
    /// cannot; Some(slot) to wait for (Some(None): its involvement will be known once it
    /// advances, which it is queued to do).
    pub(super) fn may_involve(&mut self, c: usize, keys: &[u64], depth: u32) -> Option<Option<SlotId>> {
        let mut known = Vec::new();
        let mut pending = Vec::new();
        for i in 0..self.ctrls[c].args.len() {
            self.arg_leaves(self.ctrls[c].args[i], &mut known, &mut pending);
        }
        let f = self.ctrls[c].func.clone().expect("callee known");
        if self.host.object_keys(&f, &known).iter().any(|k| keys.contains(k)) {
            return Some(pending.first().copied());
        }
        for &p in &pending {
            // The pending value is an external call's result (not an internal function's: that
            // could return anything). Such a result is an owned object only if the object reached
            // that call — as an argument (the call then lies on our walk, which deals with it) or
            // through its callee (a bound method: a carrier).
            let safe = match self.producer_along(p, true) {
                Some(pc) if self.ctrls[pc].func.is_some() => match self.ctrls[pc].phase {
                    Phase::WaitArgs => depth < 16 && self.may_involve(pc, keys, depth + 1).is_none(),
                    Phase::WaitCallee | Phase::Inlined { .. } | Phase::InlinedOrder { .. } => false,
                    _ => !self.ctrls[pc].obj.as_ref().and_then(|o| o.carries).is_some_and(|k| keys.contains(&k)),
                },
                _ => false,
            };
            if !safe {
                return Some(Some(p));
            }
        }
        None
    }

    /// The primitive values and pending slots an argument is made of (looking into tuples).
    pub(super) fn arg_leaves(&self, s: SlotId, known: &mut Vec<H::Prim>, pending: &mut Vec<SlotId>) {
        match self.value(s) {
            None => pending.push(s),
            Some(Value::Tuple(t)) => {
                let t = t.clone();
                for &x in t.iter() {
                    self.arg_leaves(x, known, pending);
                }
            }
            Some(Value::Prim(p)) => known.push(p.clone()),
            Some(_) => {}
        }
    }

    /// Per-object ordering of call `cid` (see `ObjInfo`): walk program order backwards from it
    /// to the creation of each owned object it involves, waiting for what must finish first.
    /// None: registered to wait; Some(true): it may skip the global order; Some(false): it
    /// follows the global order (its object escaped earlier, or it is itself an escape).
    pub(super) fn object_order(&mut self, cid: usize, w: WorkId) -> Option<bool> {
        let info = self.ctrls[cid].obj.as_ref().expect("involved");
        // (key, waits for every earlier operation on it (a write or an escape), is the receiver)
        let mut active: Vec<(u64, bool, bool)> = info.escapes.iter().map(|&k| (k, true, false)).collect();
        if let Some((k, write)) = info.touch {
            active.push((k, write, true));
        }
        let mut escaped = false;
        let mut cur = cid;
        while !active.is_empty() {
            let c = match self.predecessor(cur) {
                Pred::Call(c) => c,
                Pred::Start => break, // every earlier call was looked at
                Pred::Unknown => {
                    // Its input order is not known yet: wait for it (an error value: no order).
                    self.need(self.ctrls[cur].seq, w)?;
                    return Some(false);
                }
            };
            match self.ctrls[c].phase {
                Phase::WaitCallee => {
                    self.need(self.ctrls[c].callee, w)?;
                    self.ready.push_back(w);
                    return None;
                }
                Phase::WaitArgs => {
                    // Its arguments decide whether it involves our objects. It cannot if none of
                    // the known ones is one and every pending one is the result of an external
                    // call that does not carry one: an external's result is an owned object
                    // only if the object escaped to it, and that escape lies on our walk.
                    let keys: Vec<u64> = active.iter().map(|a| a.0).collect();
                    if let Some(p) = self.may_involve(c, &keys, 0) {
                        match p {
                            Some(slot) => {
                                self.need(slot, w);
                            }
                            None => self.ready.push_back(w), // it is queued to advance first
                        }
                        return None;
                    }
                    cur = c;
                    continue;
                }
                Phase::Inlined { ret: next } | Phase::InlinedOrder { seq: next } => {
                    // An internal call whose body's order is not linked in yet.
                    if self.need(next, w).is_some() {
                        self.ready.push_back(w);
                    }
                    return None;
                }
                _ => {}
            }
            let finished = self.ctrls[c].done || self.ctrls[c].phase == Phase::Finished;
            let (touch, local, escapes) = match self.ctrls[c].obj.as_ref() {
                Some(o) => (o.touch, o.local, o.escapes.clone()),
                None => (None, None, Vec::new()),
            };
            let mut i = 0;
            while i < active.len() {
                let (k, all, is_touch) = active[i];
                if self.owned.get(&k) == Some(&c) {
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
                    if (cwrite || all) && !finished {
                        let done = self.ctrls[c].obj.as_ref().expect("involved").done;
                        if !self.wait_fut(done, w) {
                            return None;
                        }
                    }
                    if cwrite || (!all && local == Some(true)) {
                        // A write finished after everything before it; a decided read saw the
                        // last write finished — either way nothing earlier matters for us.
                        active.swap_remove(i);
                        continue;
                    }
                } else if escapes.contains(&k) {
                    // An escape: it waited for the operations before it, and it (like everything
                    // after it on this object) follows the global order.
                    escaped |= is_touch;
                    active.swap_remove(i);
                    continue;
                }
                i += 1;
            }
            cur = c;
        }
        let touch = self.ctrls[cid].obj.as_ref().and_then(|o| o.touch);
        Some(touch.is_some() && !escaped)
    }
}
