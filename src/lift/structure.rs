//! Structure recovery: a region of blocks becomes a statement list. Conditional jumps become
//! `if`s whose branches run up to their join (the nearest block every path through the branch
//! reaches unless it leaves, from post-dominators in the current loop scope); loops are handed to
//! `control`, short-circuit conditions to `conditions`. Values that differ between the branches
//! at a join go through a `$tN` (`merge`).
//!
//! Works on the `cfg` of the code scope and drives the per-instruction translation
//! (`Translator::instr`).
use super::cfg::{Node, Term};
use super::state::{pop_reg, stmt, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;


/// Deepest nesting of regions before the lifter gives up (`Translator::region`).
const MAX_NESTING: u32 = 600;
impl Translator<'_> {
    // -- Joins -----------------------------------------------------------------------------

    /// Successors of `b` in the current loop scope, with `exit()` standing for END: a return, or
    /// the latch's jump back to the head (the normal end of an iteration). Edges that leave the
    /// iteration otherwise (`continue`, `break`, to the else clause) are dropped: they become
    /// `Continue`/`Break` statements wherever they occur.
    pub(super) fn scope_succ(&self, b: Node) -> Vec<Node> {
        let end = self.code.cfg.exit();
        let ctx = self.ctx.last();
        self.code.cfg
            .successors(b)
            .into_iter()
            .filter_map(|s| match ctx {
                Some(c) if s == c.head => (Some(b) == c.latch).then_some(end),
                Some(c) if Some(s) == c.follow || Some(s) == c.alt => None,
                _ => Some(s),
            })
            .collect()
    }

    /// Post-dominator sets in the current scope, ignoring paths that leave the iteration: `x` is in
    /// `pd[b]` when every path from `b` to END passes `x`. A block all of whose paths leave has
    /// every block in its set (vacuous).
    pub(super) fn pdom_sets(&mut self) -> std::rc::Rc<Vec<Vec<bool>>> {
        let key = self.ctx.last().map(|c| c.head);
        if let Some(pd) = self.pdoms.get(&key) {
            return pd.clone();
        }
        let n = self.code.cfg.exit();
        let mut pd = vec![vec![true; n + 1]; n + 1];
        pd[n] = (0..=n).map(|i| i == n).collect();
        let succ: Vec<Vec<Node>> = (0..n).map(|b| self.scope_succ(b)).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for b in (0..n).rev().filter(|&b| self.code.cfg.reachable[b]) {
                let mut set = vec![true; n + 1];
                for &s in &succ[b] {
                    for (x, &p) in set.iter_mut().zip(&pd[s]) {
                        *x &= p;
                    }
                }
                set[b] = true;
                if set != pd[b] {
                    pd[b] = set;
                    changed = true;
                }
            }
        }
        let pd = std::rc::Rc::new(pd);
        self.pdoms.insert(key, pd.clone());
        pd
    }

    /// Blocks reachable from `starts` in the current scope, not expanding `stop` (nor END).
    pub(super) fn live_reach(&self, starts: Vec<Node>, stop: Node) -> Vec<bool> {
        let n = self.code.cfg.exit();
        let mut seen = vec![false; n + 1];
        let mut work = starts;
        while let Some(b) = work.pop() {
            if seen[b] {
                continue;
            }
            seen[b] = true;
            if b != stop && b != n {
                work.extend(self.scope_succ(b));
            }
        }
        seen
    }

    /// The join of the branch ending block `b`: the nearest block (in code order) that every path
    /// from `b` reaches unless it leaves the iteration or returns, not beyond `follow`. `None` when
    /// every path leaves (both branches then run up to `follow`).
    pub(super) fn join(&mut self, b: Node, follow: Node) -> Option<Node> {
        let pd = self.pdom_sets();
        let set = &pd[b];
        if set.iter().all(|&x| x) {
            return None;
        }
        let reach = self.live_reach(self.scope_succ(b), follow);
        (0..self.code.cfg.exit()).filter(|&c| c != b && set[c] && reach[c]).min()
    }

    // -- Regions ---------------------------------------------------------------------------

    /// Translates blocks from `entry` until control reaches `follow`. Returns the statements and
    /// the stack on reaching `follow`, or `None` for the stack when every path left (returned,
    /// broke out of or continued the innermost loop). `first`: `entry` is the head of the loop
    /// whose body this is (translate it even though it is also the follow).
    pub(super) fn region(&mut self, entry: Node, follow: Node, stack: Stack, first: bool) -> Result<(Block, Option<Stack>)> {
        // Every nested `if`, loop and statement part is a region inside its enclosing one, so
        // this depth is the source's nesting (an `elif` chain counts one per `elif`). Far deeper
        // means a structure the recovery goes round in (a CFG it does not understand), which
        // would otherwise overflow the thread's stack and kill the process: fall back instead.
        // (A level takes ~2 KB of stack: the bound stays under 1.5 MB.)
        if self.shared.nesting >= MAX_NESTING {
            return Err(Fallback::new("control flow too irregular (statements nested too deeply)", self.line));
        }
        self.shared.nesting += 1;
        let r = self.region_in(entry, follow, stack, first);
        self.shared.nesting -= 1;
        r
    }

    fn region_in(&mut self, entry: Node, follow: Node, mut stack: Stack, first: bool) -> Result<(Block, Option<Stack>)> {
        let cfg = self.code.cfg;
        let instrs = self.code.instrs;
        let mut out = Vec::new();
        let mut cur = entry;
        let mut at_head = first;
        loop {
            let head_now = std::mem::take(&mut at_head);
            if !head_now {
                if cur == follow {
                    return Ok((out, Some(stack)));
                }
                if let Some(exit) = self.loop_exit(cur, &stack)? {
                    out.extend(exit);
                    return Ok((out, None));
                }
                // (Unless it is a `return` of a constant: `cfg` merges CPython's copies of those,
                // so a path returning from inside the part may reach the join's copy; returning
                // there, where nothing can raise, is the same.)
                let merged_return = cur != cfg.exit() && {
                    let b = &cfg.blocks[cur];
                    matches!(b.term, Term::Return)
                        && instrs[b.body.clone()].iter().filter(|i| i.opcode != NOP).map(|i| i.opcode).eq([LOAD_CONST])
                };
                if cur != cfg.exit() && self.try_follows.contains(&cur) && !merged_return {
                    // A branch inside a part of a try statement runs on past the part's end
                    // (its join was taken beyond it): the code after the part would run inside it.
                    return Err(Fallback::new("exception handling (a branch leaving a part of a try statement)", self.line));
                }
            }
            // A try statement starting here (before a loop starting here: the loop is in its
            // body).
            // (A `while` loop whose head is also the first block of a try body: the loop is
            // inside the try when it jumps back from inside the body.)
            let try_here = self.try_at(cur).cloned().filter(|t| {
                head_now
                    || !self.code.loops.get(&cur).is_some_and(|l| {
                        l.latch.is_some_and(|b| !t.body.contains(&cfg.blocks[b].body.start))
                    })
            });
            if let Some(t) = try_here {
                match self.translate_try(&t, &mut stack, &mut out)? {
                    Some(next) => {
                        cur = next;
                        continue;
                    }
                    None => return Ok((out, None)),
                }
            }
            if !head_now {
                if self.code.loops.contains_key(&cur) {
                    match self.translate_loop(cur, &mut stack, &mut out)? {
                        Some(next) => {
                            cur = next;
                            continue;
                        }
                        None => return Ok((out, None)),
                    }
                }
            }
            if cur == cfg.exit() {
                return Err(Fallback::shape("control reaches the end without a return", self.line));
            }
            let blk = &cfg.blocks[cur];
            self.spend(blk.body.len() + 1)?;
            for (k, ins) in instrs[blk.body.clone()].iter().enumerate() {
                if self.skipped(blk.body.start + k) {
                    self.line = ins.line;
                    self.exit_pop(blk.body.start + k, &mut stack)?;
                    continue;
                }
                self.line = ins.line;
                self.instr(ins, &mut stack, &mut out)?;
            }
            let term = blk.term_instr.map(|i| &instrs[i]);
            if let Some(t) = term {
                self.line = t.line;
            }
            match (blk.term, term) {
                (Term::Next(n), _) | (Term::Jump(n), _) => cur = n,
                (Term::Return, Some(ins)) => {
                    self.return_value(ins, &mut stack, &mut out)?;
                    return Ok((out, None));
                }
                (Term::Raise, Some(ins)) if (ins.opcode, ins.arg) == (RERAISE, 0) && self.in_finally > 0 => {
                    // The end of a finally clause's exceptional copy: the exception again.
                    self.end_with_raise(Intrinsic::Reraise, Vec::new(), ins.line, &mut out);
                    return Ok((out, None));
                }
                (Term::Raise, Some(ins)) if ins.opcode == RERAISE => {
                    // Only a handler's own clean-up re-raises; no region reaches one.
                    return Err(Fallback::shape("RERAISE", ins.line));
                }
                (Term::Raise, Some(ins)) => {
                    self.raise_varargs(ins, &mut stack, &mut out)?;
                    return Ok((out, None));
                }
                (Term::Branch { jump, next }, Some(ins)) => {
                    match self.branch(cur, ins, jump, next, follow, &mut stack, &mut out)? {
                        Some(join) => cur = join,
                        None => return Ok((out, None)),
                    }
                }
                (Term::ForIter { .. }, Some(ins)) => return Err(Fallback::shape("FOR_ITER outside a loop", ins.line)),
                _ => unreachable!("jump terminators always have their instruction"),
            }
        }
    }


    /// Translates the `if` of a conditional jump at the end of block `b`; returns where control
    /// continues (`None` when every path left).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn branch(
        &mut self,
        b: Node,
        ins: &Instr,
        jump: Node,
        next: Node,
        follow: Node,
        stack: &mut Stack,
        out: &mut Block,
    ) -> Result<Option<Node>> {
        let line = ins.line;
        let x = pop_reg(stack, line)?;
        // `JUMP_IF_*_OR_POP` (`a or b`, `a and b` as values) keeps the operand when it jumps.
        let keeps = matches!(ins.opcode, JUMP_IF_FALSE_OR_POP | JUMP_IF_TRUE_OR_POP);
        let (cond, cond_jumps) = if keeps {
            (self.em.bind(Expr::Op(Intrinsic::Truth, vec![x]), line, out), ins.opcode == JUMP_IF_TRUE_OR_POP)
        } else {
            self.test(ins, x, out)
        };
        let mut end = self.join(b, follow).unwrap_or(follow);
        if end != follow {
            // A side that cannot reach `end` but reaches `follow` would run on past `end` (a raise
            // taken for the join because the other side's way on is a `continue`): both sides
            // then run up to `follow`.
            let overruns = |s: Node| s != end && {
                let r = self.live_reach(vec![s], end);
                !r[end] && r[follow]
            };
            if overruns(next) || overruns(jump) {
                end = follow;
            }
        }
        if !keeps {
            if let Some((members, t1, t2)) = self.condition(b, next, jump, end) {
                let taken = (cond, cond_jumps, next, jump);
                if let Some(cont) = self.short_circuit(taken, &members, (t1, t2), end, stack, out, line)? {
                    return Ok(cont);
                }
            }
        }
        let mut jump_stack = stack.clone();
        if keeps {
            jump_stack.push(Val::Reg(x));
        }
        let next_side = self.region(next, end, stack.clone(), false)?;
        let jump_side = self.region(jump, end, jump_stack, false)?;
        let ((mut then_body, then_end), (mut else_body, else_end)) =
            if cond_jumps { (jump_side, next_side) } else { (next_side, jump_side) };
        let (merged, after) = self.merge(&mut then_body, then_end, &mut else_body, else_end, line)?;
        out.push(stmt(StmtKind::If { cond, then_body, else_body }, line));
        out.extend(after);
        Ok(merged.map(|s| {
            *stack = s;
            end
        }))
    }

    /// Joins the stacks of two branches. Entries that differ (a value computed differently on
    /// each side) go through a fresh `$tN`: each branch stores its value, and the statements
    /// returned (to follow the `if`) load it.
    pub(super) fn merge(
        &mut self,
        then_body: &mut Block,
        then_end: Option<Stack>,
        else_body: &mut Block,
        else_end: Option<Stack>,
        line: u32,
    ) -> Result<(Option<Stack>, Block)> {
        let (a, b) = match (then_end, else_end) {
            (Some(a), Some(b)) => (a, b),
            (Some(s), None) | (None, Some(s)) => return Ok((Some(s), Vec::new())),
            (None, None) => return Ok((None, Vec::new())),
        };
        if a.len() != b.len() {
            return Err(Fallback::shape("stack depths differ at a join", line));
        }
        let mut after = Vec::new();
        let mut merged = a.clone();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            match (x, y) {
                _ if x == y => {}
                (Val::Reg(x), Val::Reg(y)) => {
                    let t = self.em.temp();
                    then_body.push(stmt(StmtKind::Store(t.clone(), *x), line));
                    else_body.push(stmt(StmtKind::Store(t.clone(), *y), line));
                    merged[i] = Val::Reg(self.em.bind(Expr::Load(t), line, &mut after));
                }
                _ => return Err(Fallback::shape("stacks differ at a join", line)),
            }
        }
        Ok((Some(merged), after))
    }

}
