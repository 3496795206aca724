//! Short-circuit conditions: `if a and b: X else: Y` reaches Y from both tests, so the branches
//! of the first test share blocks. The tests are then computed into a `$tN` by nested `if`s
//! (each operand evaluated only on the paths where CPython evaluates it), and one `if` on the
//! `$tN` runs X or Y.
//!
//! Queries the CFG and the joins of `structure`; emits through the `Emitter` and
//! `Translator::instr`.
use super::cfg::{Node, Term};
use super::state::{pop_reg, stmt, Stack, Translator};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::opcode::*;

impl Translator<'_> {
    // -- Short-circuit conditions ----------------------------------------------------------

    /// When both sides of the branch at `b` share blocks before `end` (`if a and b: X else: Y`
    /// reaches Y from both tests), the condition's blocks: the tests reached only from the
    /// condition (and iterator-free `POP_TOP` cleanups of chained comparisons), with exactly two
    /// blocks reached from them (then, else in code order).
    pub(super) fn condition(&self, b: Node, next: Node, jump: Node, end: Node) -> Option<(Vec<bool>, Node, Node)> {
        let n = self.code.cfg.exit();
        let live = self.scope_succ(b);
        let side = |s: Node| self.live_reach(live.iter().copied().filter(|&l| l == s).collect(), end);
        let (r1, r2) = (side(next), side(jump));
        let shared = (0..n).any(|c| r1[c] && r2[c] && c != end && !self.code.cfg.blocks[c].trivial_return);
        if !shared {
            return None;
        }
        let mut members = vec![false; n];
        members[b] = true;
        let mut changed = true;
        while changed {
            changed = false;
            for x in b + 1..n {
                if !members[x]
                    && (r1[x] || r2[x])
                    && x != end
                    && !self.code.loops.contains_key(&x)
                    && self.absorbable(x, &members)
                    && self.code.cfg.preds[x].iter().all(|&p| members[p])
                {
                    members[x] = true;
                    changed = true;
                }
            }
        }
        let mut targets: Vec<Node> = (0..n)
            .filter(|&x| members[x])
            .flat_map(|x| self.code.cfg.successors(x))
            .filter(|&s| s >= n || !members[s])
            .collect();
        targets.sort_unstable();
        targets.dedup();
        let forward = (0..n)
            .filter(|&x| members[x])
            .all(|x| self.code.cfg.successors(x).iter().all(|&s| s >= n || !members[s] || s > x));
        match targets.as_slice() {
            _ if !forward => None,
            // (A lone test gains nothing: its branches share blocks anyway.)
            &[t1, t2] if t2 < n && members.iter().filter(|&&m| m).count() > 1 => Some((members, t1, t2)),
            _ => None,
        }
    }

    /// A block that can be part of a condition: an operand test (no stores, no statement-level
    /// pops) that a test of the condition falls through into, or a block that only pops on its
    /// way on (the cleanup of a chained comparison). A test reached only by jumps is where
    /// another statement starts (`elif`, a loop's next test).
    pub(super) fn absorbable(&self, x: Node, members: &[bool]) -> bool {
        let blk = &self.code.cfg.blocks[x];
        if self.code.cfg.pop_only(x, self.code.instrs).is_some() {
            return true;
        }
        let Some(t) = blk.term_instr else {
            return false;
        };
        let fallen_into = self.code.cfg.preds[x]
            .iter()
            .any(|&p| members[p] && matches!(self.code.cfg.blocks[p].term, Term::Branch { next, .. } if next == x));
        fallen_into
            && matches!(blk.term, Term::Branch { .. })
            && pop_jump_sense(self.code.instrs[t].opcode).is_some()
            && self.code.instrs[blk.body.clone()].iter().all(|i| {
                !matches!(
                    i.opcode,
                    STORE_FAST
                        | STORE_ATTR
                        | STORE_SUBSCR
                        | DELETE_ATTR
                        | DELETE_SUBSCR
                        | POP_TOP
                        | UNPACK_SEQUENCE
                        | UNPACK_EX
                )
            })
    }

    /// Computes a short-circuit condition into a `$tN` (true on reaching `targets.0`), then
    /// branches on it. `taken`: the first test's condition register, whether its jump is taken
    /// when it holds, and its two successors. `None` (nothing emitted) when the paths reach the
    /// targets with different stacks (the blocks were not a condition after all, e.g. a `break`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn short_circuit(
        &mut self,
        (cond, cond_jumps, next, jump): (Reg, bool, Node, Node),
        members: &[bool],
        targets: (Node, Node),
        end: Node,
        stack: &mut Stack,
        out: &mut Block,
        line: u32,
    ) -> Result<Option<Option<Node>>> {
        let t = self.em.temp();
        let mut leaf = Leaf::None;
        let next_side = self.cond_side(next, stack.clone(), members, targets, &t, &mut leaf)?;
        let jump_side = self.cond_side(jump, stack.clone(), members, targets, &t, &mut leaf)?;
        let Leaf::Stack(leaf) = leaf else {
            self.em.release_temp();
            return Ok(None);
        };
        let (then_body, else_body) = if cond_jumps { (jump_side, next_side) } else { (next_side, jump_side) };
        out.push(stmt(StmtKind::If { cond, then_body, else_body }, line));
        let holds = self.em.bind(Expr::Load(t), line, out);
        let (mut then_body, then_end) = self.region(targets.0, end, leaf.clone(), false)?;
        let (mut else_body, else_end) = self.region(targets.1, end, leaf, false)?;
        let (merged, after) = self.merge(&mut then_body, then_end, &mut else_body, else_end, line)?;
        out.push(stmt(StmtKind::If { cond: holds, then_body, else_body }, line));
        out.extend(after);
        Ok(Some(merged.map(|s| {
            *stack = s;
            end
        })))
    }

    /// One path through a condition's blocks from `s`, ending in `store $tN True/False`.
    pub(super) fn cond_side(
        &mut self,
        s: Node,
        mut stack: Stack,
        members: &[bool],
        targets: (Node, Node),
        t: &VarName,
        leaf: &mut Leaf,
    ) -> Result<Block> {
        let mut out = Vec::new();
        if s == targets.0 || s == targets.1 {
            *leaf = match std::mem::replace(leaf, Leaf::Mismatch) {
                Leaf::None => Leaf::Stack(stack),
                Leaf::Stack(l) if l == stack => Leaf::Stack(l),
                _ => Leaf::Mismatch,
            };
            let v = self.em.bind_const(Const::Bool(s == targets.0), self.line, &mut out);
            out.push(stmt(StmtKind::Store(t.clone(), v), self.line));
            return Ok(out);
        }
        debug_assert!(members[s]);
        let blk = &self.code.cfg.blocks[s];
        self.spend(blk.body.len() + 1)?;
        for ins in &self.code.instrs[blk.body.clone()] {
            self.line = ins.line;
            self.instr(ins, &mut stack, &mut out)?;
        }
        match (blk.term, blk.term_instr.map(|i| &self.code.instrs[i])) {
            (Term::Next(n) | Term::Jump(n), _) => out.extend(self.cond_side(n, stack, members, targets, t, leaf)?),
            (Term::Branch { jump, next }, Some(ins)) => {
                self.line = ins.line;
                let x = pop_reg(&mut stack, ins.line)?;
                let (cond, cond_jumps) = self.test(ins, x, &mut out);
                let next_side = self.cond_side(next, stack.clone(), members, targets, t, leaf)?;
                let jump_side = self.cond_side(jump, stack, members, targets, t, leaf)?;
                let (then_body, else_body) = if cond_jumps { (jump_side, next_side) } else { (next_side, jump_side) };
                out.push(stmt(StmtKind::If { cond, then_body, else_body }, ins.line));
            }
            _ => return Err(Fallback::shape("condition block", self.line)),
        }
        Ok(out)
    }
}


/// The stack with which the paths through a condition reach its targets.
pub(super) enum Leaf {
    None,
    Stack(Stack),
    Mismatch,
}
