//! The slot store: λO variables (pending, ready, reclaimed), waiters and follow edges, reference
//! counts and reclamation (reduce-gc).
use super::*;

impl<'a, H: Host> Eval<'a, H> {
    pub(super) fn alloc(&mut self, slot: Slot<H::Prim, H::Error>) -> SlotId {
        self.live_slots += 1;
        self.peak_live = self.peak_live.max(self.live_slots);
        match self.free_slots.pop() {
            Some(s) => {
                self.slots[s] = slot;
                self.refs[s] = 0;
                s
            }
            None => {
                self.slots.push(slot);
                self.refs.push(0);
                self.slots.len() - 1
            }
        }
    }

    /// A slot holding `v` (its components are retained on its behalf).
    pub(super) fn new_slot(&mut self, v: Value<H::Prim, H::Error>) -> SlotId {
        self.retain_parts(&v);
        self.alloc(Slot::Ready(v))
    }

    pub(super) fn pending_slot(&mut self) -> SlotId {
        self.alloc(Slot::Pending(Pend { waiters: Vec::new(), producer: NONE, alias: NONE }))
    }

    pub(super) fn value(&self, s: SlotId) -> Option<&Value<H::Prim, H::Error>> {
        match &self.slots[s] {
            Slot::Ready(v) => Some(v),
            Slot::Pending(_) => None,
            Slot::Free => panic!("λO slot {s} read after it was reclaimed"),
        }
    }

    /// The slot's value, or register `w` to be woken when it resolves.
    pub(super) fn need(&mut self, s: SlotId, w: WorkId) -> Option<Value<H::Prim, H::Error>> {
        match &mut self.slots[s] {
            Slot::Ready(v) => Some(v.clone()),
            Slot::Pending(p) => {
                p.waiters.push(Waiter::Work(w));
                None
            }
            Slot::Free => panic!("λO slot {s} needed after it was reclaimed"),
        }
    }

    pub(super) fn retain(&mut self, s: SlotId) {
        self.refs[s] += 1;
    }

    /// A slot now holds `v`: retain the slots `v` refers to.
    pub(super) fn retain_parts(&mut self, v: &Value<H::Prim, H::Error>) {
        match v {
            Value::Tuple(t) => t.iter().for_each(|&c| self.refs[c] += 1),
            Value::Closure(c) => c.env.iter().for_each(|&c| self.refs[c] += 1),
            Value::Mem(m) => m.values().for_each(|&c| self.refs[c] += 1),
            _ => {}
        }
    }

    /// Drop one reference to `s`; a slot nobody refers to is reclaimed, and with it its
    /// references to other slots (iteratively: no recursion on long chains).
    pub(super) fn release(&mut self, s: SlotId) {
        let mut dead = std::mem::take(&mut self.dead);
        dead.push(s);
        while let Some(s) = dead.pop() {
            assert!(self.refs[s] > 0, "λO slot {s} released more often than retained");
            self.refs[s] -= 1;
            if self.refs[s] > 0 {
                continue;
            }
            self.live_slots -= 1;
            self.free_slots.push(s);
            match std::mem::replace(&mut self.slots[s], Slot::Free) {
                Slot::Ready(v) => match v {
                    Value::Tuple(t) => dead.extend(t.iter().copied()),
                    Value::Closure(c) => dead.extend(c.env.iter().copied()),
                    Value::Mem(m) => dead.extend(m.values().copied()),
                    _ => {}
                },
                Slot::Pending(p) => {
                    if p.alias != NONE {
                        dead.push(p.alias as SlotId);
                    }
                    for w in p.waiters {
                        if let Waiter::Follow(d) = w {
                            dead.push(d);
                        }
                    }
                }
                Slot::Free => unreachable!("λO slot {s} reclaimed twice"),
            }
        }
        self.dead = dead;
    }

    pub(super) fn resolve(&mut self, slot: SlotId, value: Value<H::Prim, H::Error>) {
        let mut todo = std::mem::take(&mut self.todo);
        // References dropped by this resolution (alias links, consumed follow edges), released
        // once every slot reachable along follow edges holds the value.
        let mut drop = std::mem::take(&mut self.drop);
        todo.push((slot, value));
        while let Some((s, v)) = todo.pop() {
            self.retain_parts(&v);
            let old = std::mem::replace(&mut self.slots[s], Slot::Ready(v));
            match old {
                Slot::Pending(p) => {
                    if p.alias != NONE {
                        drop.push(p.alias as SlotId);
                    }
                    for w in p.waiters {
                        match w {
                            Waiter::Work(id) | Waiter::Bound(id) => self.ready.push_back(id),
                            Waiter::Follow(d) => {
                                let Slot::Ready(v) = &self.slots[s] else { unreachable!() };
                                todo.push((d, v.clone()));
                                drop.push(d);
                            }
                        }
                    }
                }
                Slot::Ready(_) => unreachable!("λO variable bound twice"),
                Slot::Free => panic!("λO slot {s} resolved after it was reclaimed"),
            }
        }
        self.todo = todo;
        for &d in &drop {
            self.release(d);
        }
        drop.clear();
        self.drop = drop;
    }

    /// `dst` gets `src`'s value, now or when it resolves.
    pub(super) fn follow(&mut self, src: SlotId, dst: SlotId) {
        match &mut self.slots[src] {
            Slot::Ready(v) => {
                let v = v.clone();
                self.resolve(dst, v);
            }
            Slot::Pending(p) => {
                p.waiters.push(Waiter::Follow(dst));
                self.refs[dst] += 1;
                if let Slot::Pending(d) = &mut self.slots[dst] {
                    d.alias = src as u32;
                    self.refs[src] += 1;
                    // Bound now: what it will be can be looked at through `src`.
                    let ready = &mut self.ready;
                    d.waiters.retain(|w| match w {
                        Waiter::Bound(id) => {
                            ready.push_back(*id);
                            false
                        }
                        _ => true,
                    });
                }
            }
            Slot::Free => panic!("λO slot {src} followed after it was reclaimed"),
        }
    }

    /// A value that must be a primitive: the primitive, or the error value to poison with.
    pub(super) fn prim_of(&mut self, v: Value<H::Prim, H::Error>, what: &str) -> Result<H::Prim, Value<H::Prim, H::Error>> {
        match v {
            Value::Prim(p) => Ok(p),
            Value::Error(e) => Err(Value::Error(e)),
            _ => Err(self.error("TypeError", &format!("poppy_jit: {what} is not a Python value"))),
        }
    }

    pub(super) fn error(&mut self, kind: &str, msg: &str) -> Value<H::Prim, H::Error> {
        Value::Error(self.host.internal_error(kind, msg))
    }
}
