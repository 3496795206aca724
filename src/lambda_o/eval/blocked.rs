//! Looking through an `ite` whose condition is not known yet, for per-object ordering
//! (`control::Env::ite_source`): which statement will bind a pending variable, and what either
//! branch of that `ite` starts from.
use super::*;
use crate::control::IteSource;
use std::collections::HashSet;

/// A statement and the frame it belongs to.
type StmtIn<'f, P> = (&'f Frame<P>, &'f Stmt<P>);

/// At most this many variables are looked at for one question (captured closures can be large).
const BUDGET: usize = 4096;

impl<'a, H: Host> Eval<'a, H> {
    /// Statement `index` of `frame` (work item `w`) waits for an input: remember it as the
    /// statement that will bind its destination, if it is a projection or an `ite`.
    pub(super) fn note_blocked(&mut self, w: WorkId, frame: &Frame<H::Prim>, index: usize) {
        let stmt = &frame.prog.funcs[frame.func as usize].body[index];
        if !matches!(stmt.op, Op::Proj { .. } | Op::Ite { .. }) {
            return;
        }
        let dst = frame.env[stmt.dst as usize];
        if self.blocked.len() <= dst {
            self.blocked.resize(dst + 1, NONE);
        }
        self.blocked[dst] = w as u32;
    }

    /// The statement (and its frame) that will bind pending slot `s`, if one was noted and is
    /// still that slot's (not reduced since: its work item was not reused for another one).
    fn blocked_stmt(&self, s: SlotId) -> Option<StmtIn<'_, H::Prim>> {
        let w = *self.blocked.get(s)?;
        if w == NONE || !matches!(self.slots[s], Slot::Pending(_)) {
            return None;
        }
        let Work::Stmt { frame, index } = self.work.get(w as usize)? else { return None };
        let stmt = &frame.prog.funcs[frame.func as usize].body[*index];
        (frame.env[stmt.dst as usize] == s).then_some((&**frame, stmt))
    }

    /// The end of `s`'s chain of alias edges (a pending slot that follows another).
    fn alias_end(&self, mut s: SlotId) -> SlotId {
        for _ in 0..64 {
            match &self.slots[s] {
                Slot::Pending(p) if p.alias != NONE => s = p.alias as SlotId,
                _ => break,
            }
        }
        s
    }

    /// The first leaf of a value, where lowering threads S: a token, or a pending slot that is
    /// itself the first component of an undecided `ite`'s result (another order variable).
    fn order_leaf(&self, s: SlotId) -> Option<SlotId> {
        let s = self.alias_end(s);
        match &self.slots[s] {
            Slot::Ready(Value::Seq(_)) => Some(s),
            Slot::Ready(Value::Tuple(t)) => self.order_leaf(*t.first()?),
            Slot::Pending(_) => match self.blocked_stmt(s) {
                Some((_, Stmt { op: Op::Proj { index: 0, .. }, .. })) => Some(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// Collect the primitives and pending slots `s` holds (through tuples, closures' captured
    /// variables and memories), skipping `skip`; false when over budget.
    fn reach_leaves(&self, s: SlotId, skip: SlotId, seen: &mut HashSet<SlotId>, known: &mut Vec<H::Prim>, pending: &mut Vec<SlotId>) -> bool {
        let mut stack = vec![s];
        while let Some(s) = stack.pop() {
            if s == skip || !seen.insert(s) {
                continue;
            }
            if seen.len() > BUDGET {
                return false;
            }
            match &self.slots[s] {
                Slot::Pending(_) if self.alias_end(s) == skip => {}
                Slot::Pending(_) => pending.push(s),
                Slot::Ready(Value::Prim(p)) => known.push(p.clone()),
                Slot::Ready(Value::Tuple(t)) => stack.extend(t.iter().copied()),
                Slot::Ready(Value::Closure(c)) => stack.extend(c.env.iter().copied()),
                Slot::Ready(Value::Mem(m)) => stack.extend(m.values().copied()),
                Slot::Ready(Value::Seq(_) | Value::Error(_)) => {}
                Slot::Free => return false,
            }
        }
        true
    }

    /// `Env::wait_bound`: a pending slot (at the end of its alias edges) that neither a call
    /// produces nor follows another is bound by a statement not reduced yet (a projection
    /// waiting for an undecided `ite`'s result, or one queued but not stepped): `w` is woken
    /// when it is bound (`Waiter::Bound`, fired by `follow` and `resolve`).
    pub(super) fn wait_bound_of(&mut self, s: SlotId, w: WorkId) -> bool {
        let t = self.alias_end(s);
        match &mut self.slots[t] {
            Slot::Pending(p) if p.producer == NONE && p.alias == NONE => {
                p.waiters.push(Waiter::Bound(w));
                true
            }
            _ => false,
        }
    }

    /// `Env::ite_source`.
    pub(super) fn ite_source_of(&self, s: SlotId, seen: &mut HashSet<SlotId>, known: &mut Vec<H::Prim>, pending: &mut Vec<SlotId>) -> Option<IteSource> {
        let s = self.alias_end(s);
        let (frame, stmt) = self.blocked_stmt(s)?;
        // Only a component of an undecided `ite`'s tuple: the gate of a speculative loop
        // iteration, `S' := ite(status, never, pass; S)` (`lower::control`), is an `ite` whose
        // result is the order itself, and must never be looked through — one of its branches
        // never binds it, and what follows it must wait (p662's `late_raise`).
        let Op::Proj { index, tuple } = stmt.op else { return None };
        let t = self.alias_end(frame.env[tuple as usize]);
        let (iframe, istmt) = self.blocked_stmt(t)?;
        // Its condition may be known already (the statement is queued to be stepped again):
        // no branch has been entered, so both are still looked at.
        let Op::Ite { then_f, else_f, args, .. } = &istmt.op else { return None };
        let env = &iframe.env;
        let input = args.first().and_then(|&a| self.order_leaf(env[a as usize]));
        let skip = input.unwrap_or(NONE as SlotId);
        for &v in [then_f, else_f].into_iter().chain(args.iter()) {
            if !self.reach_leaves(env[v as usize], skip, seen, known, pending) {
                return None;
            }
        }
        Some(IteSource { index, input })
    }
}
