//! The control-flow graph of a code object and its loops.
//!
//! - `Cfg::build`: basic blocks from jump targets, a virtual exit node after every return.
//!   Three normalisations are applied to edges: identical trivial return blocks
//!   (`LOAD_CONST k`/`LOAD_FAST x` + `RETURN_VALUE`, which CPython duplicates) are merged; blocks
//!   holding only `NOP`s are jumped through; and CPython's *loop inversion* of `while` loops (the
//!   test is compiled twice, once before the loop and once at its bottom) is undone by sending
//!   every edge into the bottom copy of the test to the top copy, when the two are instruction
//!   for instruction the same (same opcodes, arguments and lines; jumps to corresponding places).
//!   (A test ending in a chained comparison is not recognised; its loop keeps the inverted shape
//!   `if c: loop: body; c; if not c: break`.) Running either copy does the same thing, so the
//!   redirect cannot change behaviour.
//! - `Cfg::find_loops`: every back edge (to a dominator) closes a loop; `FOR_ITER` blocks head
//!   `for` loops, any other header a `while` loop. A loop's exits are classified once: return
//!   paths taken from one place (or trivial returns) stay inline; the rest must be one follow
//!   node (`break` target) and, for `for/else`/`while/else`, one "else" node.
//!
//! Depends on `py311` (instructions, jump decoding) only; knows nothing of Bezoar.
use super::{Fallback, Result};
use crate::py311::decode::Instr;
use crate::py311::opcode::*;
use std::collections::HashMap;

// ---------------------------------------------------------------------------------------------
// Undoing while-loop inversion

/// CPython 3.11 compiles `while c: B` as `[c] if false goto X; L: B; [c] if true goto L; X:`.
/// Finds each bottom copy of a test that matches the top copy instruction for instruction and
/// returns `(top start, bottom start, bottom jump)` instruction indices: entering the bottom copy
/// can be replaced by entering the top one. (`continue` already jumps to the top copy.)
pub(super) fn loop_inversions(instrs: &[Instr]) -> Vec<(usize, usize, usize)> {
    let index_of = |offset: u32| instrs.binary_search_by_key(&offset, |i| i.offset).ok();
    // Where control really goes from instruction index `t`: past NOPs and unconditional forward jumps.
    let resolve = |mut t: usize| {
        for _ in 0..8 {
            match instrs.get(t) {
                Some(i) if i.opcode == NOP => t += 1,
                Some(i) if i.opcode == JUMP_FORWARD => match i.jump_target().and_then(index_of) {
                    Some(n) => t = n,
                    None => break,
                },
                _ => break,
            }
        }
        t
    };
    // Two places continue the same way: the same instruction, or identical trivial returns.
    let same_exit = |a: usize, b: usize| {
        let (a, b) = (resolve(a), resolve(b));
        let trivial_return = |t: usize| {
            matches!(instrs.get(t).map(|i| i.opcode), Some(LOAD_CONST | LOAD_FAST))
                && instrs.get(t + 1).is_some_and(|i| i.opcode == RETURN_VALUE)
        };
        a == b
            || (trivial_return(a)
                && trivial_return(b)
                && (instrs[a].opcode, instrs[a].arg) == (instrs[b].opcode, instrs[b].arg))
    };
    #[derive(PartialEq)]
    enum Place {
        Loop,
        Exit,
        /// Distance from the end of the test copy.
        Rel(usize),
    }
    let mut out = Vec::new();
    for (i, bottom) in instrs.iter().enumerate() {
        if !is_backward_jump(bottom.opcode) || pop_jump_sense(bottom.opcode).is_none() {
            continue;
        }
        let Some(l) = bottom.jump_target().and_then(index_of) else {
            continue;
        };
        if l == 0 || l >= i {
            continue;
        }
        let gj = l - 1;
        let top = &instrs[gj];
        if is_backward_jump(top.opcode) || pop_jump_sense(top.opcode).is_none() || top.line != bottom.line {
            continue;
        }
        let Some(xg) = top.jump_target().and_then(index_of) else {
            continue;
        };
        if !same_exit(xg, i + 1) {
            continue;
        }
        // Places of jump targets, seen from the top copy (ending before `l`) and the bottom copy
        // (ending before `i + 1`).
        let place_top = |from: usize, t: usize| {
            if t == l {
                Some(Place::Loop)
            } else if same_exit(t, xg) {
                Some(Place::Exit)
            } else {
                (from < t && t < l).then(|| Place::Rel(l - t))
            }
        };
        let place_bottom = |from: usize, t: usize| {
            if t == l {
                Some(Place::Loop)
            } else if same_exit(t, i + 1) {
                Some(Place::Exit)
            } else {
                (from < t && t <= i).then(|| Place::Rel(i + 1 - t))
            }
        };
        // (when the test holds, when it does not) places of a conditional jump.
        let cond_places = |ins: &Instr, at: usize, place: &dyn Fn(usize, usize) -> Option<Place>| {
            let (none, jump_if) = pop_jump_sense(ins.opcode)?;
            let target = place(at, ins.jump_target().and_then(index_of)?)?;
            let next = place(at, at + 1)?;
            Some(if jump_if { (none, target, next) } else { (none, next, target) })
        };
        let same = |g: usize, b: usize| -> bool {
            let (gi, bi) = (&instrs[g], &instrs[b]);
            if gi.line != bi.line {
                return false;
            }
            if pop_jump_sense(gi.opcode).is_some() || pop_jump_sense(bi.opcode).is_some() {
                return match (cond_places(gi, g, &place_top), cond_places(bi, b, &place_bottom)) {
                    (Some(a), Some(c)) => a == c,
                    _ => false,
                };
            }
            let (gj, bj) = (gi.jump_target(), bi.jump_target());
            if gj.is_some() || bj.is_some() {
                let same_kind =
                    gi.opcode == bi.opcode || (is_unconditional_jump(gi.opcode) && is_unconditional_jump(bi.opcode));
                return same_kind
                    && matches!(
                        (gj.and_then(index_of).and_then(|t| place_top(g, t)), bj.and_then(index_of).and_then(|t| place_bottom(b, t))),
                        (Some(a), Some(c)) if a == c
                    );
            }
            gi.opcode == bi.opcode && gi.arg == bi.arg
        };
        let mut m = 0;
        while m <= gj && i - m >= l && same(gj - m, i - m) {
            m += 1;
        }
        if m >= 2 {
            out.push((gj + 1 - m, i + 1 - m, i));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Control-flow graph

/// A CFG node: a block index, or `Cfg::exit()` (the virtual node after every return).
pub(super) type Node = usize;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Term {
    /// Falls through into the next block.
    Next(Node),
    Jump(Node),
    /// Conditional jump (the block's last instruction): `next` when not taken.
    Branch {
        jump: Node,
        next: Node,
    },
    /// `FOR_ITER`: `body` while items remain, `exit` when exhausted.
    ForIter {
        body: Node,
        exit: Node,
    },
    Return,
    /// `RAISE_VARARGS`: leaves the function like a return (the raise fails in program order).
    Raise,
}

pub(super) struct BasicBlock {
    /// Instruction indices of the straight-line part (the terminator instruction excluded).
    pub(super) body: std::ops::Range<usize>,
    /// Index of the terminating jump/return instruction, if any.
    pub(super) term_instr: Option<usize>,
    pub(super) term: Term,
    /// A trivial return block (`LOAD_CONST k`/`LOAD_FAST x`; `RETURN_VALUE`): pure, so it may be
    /// translated once per path that reaches it.
    pub(super) trivial_return: bool,
}

pub(super) struct Cfg {
    pub(super) blocks: Vec<BasicBlock>,
    /// Blocks reachable from the entry (the others are left over from the edge normalisations).
    pub(super) reachable: Vec<bool>,
    /// Reachable predecessors of each block.
    pub(super) preds: Vec<Vec<Node>>,
    /// Undone while-loop inversions (see `loop_inversions`).
    pub(super) inversions: Vec<(usize, usize, usize)>,
    /// Exceptional edges: from the first block of each try body to its handler chain (reached
    /// only through the exception table). They count for reachability and dominators (so a
    /// handler inside a loop is in its body and its `continue` is a back edge), not for
    /// `successors`, so the structure of the body and around the statement is recovered from
    /// its normal flow only (`structure::translate_try` translates the handlers).
    pub(super) exc_edges: Vec<(Node, Node)>,
    /// The node control reaches at each instruction index that starts a block (after the
    /// edge normalisations), for the leaders of try statements.
    node_of: Vec<Option<Node>>,
}

impl Cfg {
    pub(super) fn exit(&self) -> Node {
        self.blocks.len()
    }

    pub(super) fn build(instrs: &[Instr]) -> Result<Cfg> {
        Cfg::build_with(instrs, &super::exceptions::Tries::default())
    }

    /// The node control reaches when it comes to instruction `i`, a leader of a try statement
    /// (its body's start and end, its handler chain, each handler's code).
    pub(super) fn node_at(&self, i: usize) -> Option<Node> {
        self.node_of.get(i).copied().flatten()
    }

    /// `build` for code with the try statements `tries` (`exceptions::recognise`).
    pub(super) fn build_with(instrs: &[Instr], tries: &super::exceptions::Tries) -> Result<Cfg> {
        let index_of = |offset: u32, from: &Instr| {
            instrs
                .binary_search_by_key(&offset, |i| i.offset)
                .map_err(|_| Fallback::shape("jump into an instruction", from.line))
        };
        let inversions = loop_inversions(instrs);
        // Leaders: the entry, `FOR_ITER`s, jump targets, instructions after jumps/returns, the start of every
        // `LOAD_CONST/LOAD_FAST; RETURN_VALUE` tail (so duplicated return blocks can be merged),
        // and both copies of inverted loop tests.
        let mut leader = vec![false; instrs.len() + 1];
        leader[0] = true;
        for (i, ins) in instrs.iter().enumerate() {
            if ins.opcode == FOR_ITER {
                // A loop head even when no `continue` or end of body jumps back to it.
                leader[i] = true;
            }
            if let Some(target) = ins.jump_target() {
                leader[index_of(target, ins)?] = true;
                leader[i + 1] = true;
            }
            if ins.opcode == RAISE_VARARGS {
                leader[i + 1] = true;
            }
            if ins.opcode == RETURN_VALUE {
                leader[i + 1] = true;
                if i > 0 && matches!(instrs[i - 1].opcode, LOAD_CONST | LOAD_FAST) {
                    leader[i - 1] = true;
                }
            }
        }
        for &(top, bottom, _) in &inversions {
            leader[top] = true;
            leader[bottom] = true;
        }
        // A try statement's body starts and ends a block, and so does each part of its handler
        // chain, and the code after the statement (after a `with`'s suppressed path); a `RERAISE`
        // ends its block.
        let mut try_leaders = Vec::new();
        for t in &tries.tries {
            try_leaders.extend([t.body.start, t.body.end, t.orelse, t.push, t.reraise, t.end]);
            for h in &t.handlers {
                try_leaders.extend([h.test.start, h.bind]);
            }
        }
        for &i in &try_leaders {
            leader[i] = true;
        }
        for (i, ins) in instrs.iter().enumerate() {
            if ins.opcode == RERAISE {
                leader[i + 1] = true;
            }
        }
        let starts: Vec<usize> = (0..instrs.len()).filter(|&i| leader[i]).collect();
        let block_of = |i: usize| starts.binary_search(&i).expect("jump targets are leaders");
        let end_of = |b: usize| starts.get(b + 1).copied().unwrap_or(instrs.len());

        // Trivial return blocks with identical instructions are the same code: map each to the
        // last copy. The bottom copy of an inverted loop test maps to the top copy.
        let trivial_return = |b: usize| -> Option<(u8, u32)> {
            let (s, e) = (starts[b], end_of(b));
            (e == s + 2 && instrs[s + 1].opcode == RETURN_VALUE).then(|| (instrs[s].opcode, instrs[s].arg))
        };
        let mut canon: Vec<Node> = (0..starts.len())
            .map(|b| match trivial_return(b) {
                Some(key) => (b..starts.len()).rev().find(|&c| trivial_return(c) == Some(key)).unwrap(),
                None => b,
            })
            .collect();
        for &(top, bottom, _) in &inversions {
            canon[block_of(bottom)] = block_of(top);
        }

        let mut blocks = Vec::with_capacity(starts.len());
        for (b, &start) in starts.iter().enumerate() {
            let end = end_of(b);
            let last = &instrs[end - 1];
            let next = || -> Result<Node> {
                if end < instrs.len() {
                    Ok(canon[block_of(end)])
                } else {
                    Err(Fallback::shape("code runs off the end", last.line))
                }
            };
            let target = || -> Result<Node> { Ok(canon[block_of(index_of(last.jump_target().unwrap(), last)?)]) };
            let term = match last.opcode {
                RETURN_VALUE => Term::Return,
                RAISE_VARARGS | RERAISE => Term::Raise,
                op if is_unconditional_jump(op) => Term::Jump(target()?),
                FOR_ITER => Term::ForIter { body: next()?, exit: target()? },
                op if is_jump(op) => Term::Branch { jump: target()?, next: next()? },
                _ => Term::Next(next()?),
            };
            let straight = !matches!(term, Term::Next(_));
            blocks.push(BasicBlock {
                body: start..if straight { end - 1 } else { end },
                term_instr: straight.then_some(end - 1),
                term,
                trivial_return: trivial_return(b).is_some(),
            });
        }

        // Jump through blocks that hold only NOPs (line markers) and an unconditional transfer.
        let n = blocks.len();
        let empty_target = |b: Node| -> Option<Node> {
            let blk = &blocks[b];
            match blk.term {
                Term::Next(t) | Term::Jump(t) if instrs[blk.body.clone()].iter().all(|i| i.opcode == NOP) => Some(t),
                _ => None,
            }
        };
        let thread: Vec<Node> = (0..n)
            .map(|b| {
                let mut cur = b;
                for _ in 0..n {
                    match empty_target(cur) {
                        Some(t) if t != cur => cur = t,
                        _ => break,
                    }
                }
                cur
            })
            .collect();
        for blk in &mut blocks {
            let t = |x: Node| thread[x];
            blk.term = match blk.term {
                Term::Next(x) => Term::Next(t(x)),
                Term::Jump(x) => Term::Jump(t(x)),
                Term::Branch { jump, next } => Term::Branch { jump: t(jump), next: t(next) },
                Term::ForIter { body, exit } => Term::ForIter { body: t(body), exit: t(exit) },
                Term::Return => Term::Return,
                Term::Raise => Term::Raise,
            };
        }

        let node_of: Vec<Option<Node>> =
            (0..instrs.len()).map(|i| leader[i].then(|| thread[canon[block_of(i)]])).collect();
        let mut exc_edges = Vec::new();
        for t in &tries.tries {
            let (Some(entry), Some(chain)) = (node_of[t.body.start], node_of[t.push]) else {
                return Err(Fallback::shape("try statement", instrs[t.body.start].line));
            };
            exc_edges.push((entry, chain));
        }
        let mut cfg = Cfg { blocks, reachable: vec![false; n], preds: vec![Vec::new(); n], inversions, exc_edges, node_of };
        let mut work = vec![0];
        while let Some(b) = work.pop() {
            if b < n && !cfg.reachable[b] {
                cfg.reachable[b] = true;
                work.extend(cfg.successors(b));
                work.extend(cfg.exc_edges.iter().filter(|e| e.0 == b).map(|e| e.1));
            }
        }
        for b in (0..n).filter(|&b| cfg.reachable[b]) {
            for s in cfg.successors(b) {
                if s < n {
                    cfg.preds[s].push(b);
                }
            }
        }
        Ok(cfg)
    }

    pub(super) fn successors(&self, b: Node) -> Vec<Node> {
        match self.blocks[b].term {
            Term::Next(n) | Term::Jump(n) => vec![n],
            Term::Branch { jump, next } => vec![next, jump],
            Term::ForIter { body, exit } => vec![body, exit],
            Term::Return | Term::Raise => vec![self.exit()],
        }
    }

    pub(super) fn term_line(&self, b: Node, instrs: &[Instr]) -> u32 {
        let blk = &self.blocks[b];
        instrs[blk.term_instr.unwrap_or(blk.body.end.max(blk.body.start + 1) - 1)].line
    }

    /// Whether block `b` only pops the stack (`POP_TOP`/`NOP`) on its way to one successor: how a
    /// `break` out of a `for` loop drops the iterator.
    pub(super) fn pop_only(&self, b: Node, instrs: &[Instr]) -> Option<Node> {
        let blk = &self.blocks[b];
        match blk.term {
            Term::Next(t) | Term::Jump(t)
                if instrs[blk.body.clone()].iter().all(|i| matches!(i.opcode, POP_TOP | NOP)) =>
            {
                Some(t)
            }
            _ => None,
        }
    }

    /// Finds every loop and classifies its exits.
    pub(super) fn find_loops(&self, instrs: &[Instr]) -> Result<HashMap<Node, LoopInfo>> {
        let n = self.blocks.len();
        let live: Vec<Node> = (0..n).filter(|&b| self.reachable[b]).collect();
        // Dominator sets by iterative data flow.
        let mut dom = vec![vec![true; n]; n];
        dom[0] = (0..n).map(|i| i == 0).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in live.iter().filter(|&&b| b != 0) {
                let mut set = vec![true; n];
                let exc_preds = self.exc_edges.iter().filter(|e| e.1 == b).map(|e| &e.0);
                for &p in self.preds[b].iter().chain(exc_preds) {
                    for (x, &d) in set.iter_mut().zip(&dom[p]) {
                        *x &= d;
                    }
                }
                set[b] = true;
                if set != dom[b] {
                    dom[b] = set;
                    changed = true;
                }
            }
        }
        // Back edges (to a dominator); any other edge to an earlier block makes the flow irreducible.
        let mut back: HashMap<Node, Vec<Node>> = HashMap::new();
        for &u in &live {
            for s in self.successors(u) {
                if s < n && dom[u][s] {
                    back.entry(s).or_default().push(u);
                } else if s <= u {
                    return Err(Fallback::new("irreducible control flow", self.term_line(u, instrs)));
                }
            }
        }
        let mut headers: Vec<Node> = back.keys().copied().collect();
        headers.extend(live.iter().copied().filter(|&b| matches!(self.blocks[b].term, Term::ForIter { .. })));
        headers.sort_unstable();
        headers.dedup();

        let mut loops = HashMap::new();
        for h in headers {
            let sources = back.get(&h).cloned().unwrap_or_default();
            let is_for = matches!(self.blocks[h].term, Term::ForIter { .. });
            let line = self.term_line(h, instrs);
            // The loop statement's code: CPython lays out a `for` body (breaks and returns
            // included) between `FOR_ITER` and its exit target, and a `while` body up to its last
            // jump back (or the bottom copy of its test).
            let first = self.blocks[h].body.start;
            let end = match self.blocks[h].term_instr {
                Some(i) if is_for => instrs[i].jump_target().and_then(|t| instrs.iter().position(|x| x.offset == t)),
                _ => instrs
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| is_backward_jump(x.opcode) && x.jump_target() == Some(instrs[first].offset))
                    .map(|(i, _)| i + 1)
                    .chain(self.inversions.iter().filter(|inv| inv.0 == first).map(|inv| inv.2 + 1))
                    .max(),
            }
            .unwrap_or(instrs.len());
            let mut body: Vec<bool> =
                (0..n).map(|b| self.reachable[b] && (first..end).contains(&self.blocks[b].body.start)).collect();
            // The cleanup of a chained comparison in the bottom copy of a `while` test may be laid
            // out after it: it still runs with the loop's stack.
            // (Only reached by conditional jumps from the loop: the loop's natural exit falls
            // through, so a block that pops an enclosing `for`'s iterator is not taken for one.)
            while let Some(b) = (0..n).find(|&b| {
                !is_for
                    && !body[b]
                    && self.reachable[b]
                    && self.pop_only(b, instrs).is_some()
                    && self.preds[b].iter().all(|&p| {
                        body[p] && matches!(self.blocks[p].term, Term::Branch { jump, next } if jump == b && next != b)
                    })
            }) {
                body[b] = true;
            }
            // Every block that jumps back to the head must be inside.
            if sources.iter().any(|&u| !body[u]) {
                return Err(Fallback::shape("loop layout", line));
            }
            let mut exits: Vec<Node> =
                (0..n).filter(|&u| body[u]).flat_map(|u| self.successors(u)).filter(|&s| s < n && !body[s]).collect();
            exits.sort_unstable();
            exits.dedup();
            // Exits to a trivial return become that return where they occur (`break; return x`
            // is `return x`); the others need the loop's follow (and else) node.
            let mut normal: Vec<Node> = exits.iter().copied().filter(|&t| !self.blocks[t].trivial_return).collect();
            let too_many = || Err(Fallback::new("loop with more than two exits (besides returns)", line));
            let (follow, alt) = match self.blocks[h].term {
                Term::ForIter { exit, .. } => {
                    normal.retain(|&t| t != exit);
                    match normal.as_slice() {
                        [] => (Some(exit), None),
                        [x] => (Some(*x), Some(exit)),
                        _ => return too_many(),
                    }
                }
                _ => match normal.as_slice() {
                    [] => (if exits.len() == 1 { Some(exits[0]) } else { None }, None),
                    [x] => (Some(*x), None),
                    // `while ... else`: the else clause comes first in the code.
                    [a, x] => (Some(*x), Some(*a)),
                    _ => return too_many(),
                },
            };
            let latch = sources.iter().copied().max();
            loops.insert(h, LoopInfo { latch, follow, alt });
        }
        Ok(loops)
    }
}

/// A loop found in the CFG.
pub(super) struct LoopInfo {
    /// The last block (in code order) that jumps back to the head: its jump is the normal end of
    /// an iteration, the others are `continue`s.
    pub(super) latch: Option<Node>,
    /// Where a `break` goes (`None`: the loop is only left by returns).
    pub(super) follow: Option<Node>,
    /// The `else` clause of `for/while ... else` whose `break`s go to `follow`.
    pub(super) alt: Option<Node>,
}

#[cfg(test)]
mod tests {
    use super::loop_inversions;
    use crate::lift::lift;
    use crate::lift::tests::{code_infos, loops_in};
    use crate::bezoar::ir::StmtKind;
    use crate::py311::decode::{instructions, Instr};

    /// CPython compiles a `while` test twice; the bottom copy is redirected to the top one when
    /// they match, so `continue` (which jumps to the top copy) stays inside one `Loop`.
    #[test]
    fn while_loop_inversion_is_undone() {
        let src =
            "def a(x):\n    while x > 0:\n        if g(x):\n            continue\n        x = h(x)\n    return x\n\
                   def b(x):\n    while p(x) and (q(x) or\n            r(x)):\n        x = h(x)\n    return x\n\
                   def c(m):\n    while 0 < m < 9:\n        m = h(m)\n    return m\n\
                   ca, cb, cc = a.__code__, b.__code__, c.__code__\n";
        let cis = code_infos(src, &["ca", "cb", "cc"]);
        for ci in &cis[..2] {
            let instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
            let inv = loop_inversions(&instrs);
            assert_eq!(inv.len(), 1, "{}", ci.name);
            let (top, bottom, jump) = inv[0];
            // The copies are the same instructions (jumps aside) on the same lines.
            let n = jump + 1 - bottom;
            for k in 0..n {
                let (t, b) = (&instrs[top + k], &instrs[bottom + k]);
                assert_eq!(t.line, b.line);
                if t.jump_target().is_none() {
                    assert_eq!((t.opcode, t.arg), (b.opcode, b.arg));
                }
            }
            let f = lift(ci).unwrap();
            assert_eq!(loops_in(&f.body), 1, "{}", ci.name);
            assert!(matches!(f.body[0].kind, StmtKind::Loop { .. }), "{:?}", f.body[0]);
        }
        // A test ending in a chained comparison is not matched: the loop keeps its guard `if`.
        let instrs: Vec<Instr> = instructions(&cis[2].code, &cis[2].lines).collect();
        assert!(loop_inversions(&instrs).is_empty());
        let f = lift(&cis[2]).unwrap();
        assert_eq!(loops_in(&f.body), 1);
        assert!(matches!(
            f.body.iter().find(|s| !matches!(s.kind, StmtKind::Let(..))).unwrap().kind,
            StmtKind::If { .. }
        ));
    }
}
