//! 3.12's layout of `try`/`except` handler code → 3.11's, on the normalised stream.
//!
//! 3.12 emits the same handler chains as 3.11 (`PUSH_EXC_INFO`, the typed tests with
//! `CHECK_EXC_MATCH`, the `as` clean-ups, `RERAISE 0`, `COPY 3; POP_EXCEPT; RERAISE 1`), but
//! lays them out differently, and the lifter (`lift::exceptions`) recognises 3.11's layout:
//!
//! * cold blocks go last: the handler chain follows the whole function, the body falls through
//!   into the code after the statement, and the handlers jump *back* to it. 3.11 puts the chain
//!   right after the body and else clause, which end with `JUMP_FORWARD join`, the handlers
//!   jumping forward to the same join;
//! * small exit blocks (a `return …` of at most a few instructions, or a `raise`) after the
//!   statement are copied into each path that reaches them: into a handler after its
//!   `POP_EXCEPT` (and `as` clean-up). 3.11 jumps to the one copy after the statement: code
//!   after a handler's `POP_EXCEPT` is not handler code (the exception is no longer being
//!   handled, the `as` name is unbound), and the lifter takes everything up to the join as the
//!   handler's body.
//!
//! `place` moves blocks of the normalised stream (each 3.12 instruction keeps its key, its
//! outputs and its exception-table entry, `cover`): a handler's copy of an exit block goes after
//! the chain's clean-up block, replaced by a jump to it (identical copies share one), and the
//! chain goes before the join its handlers jump back to, after a `JUMP_FORWARD join` where the
//! code before the join falls through. Only whole blocks move and every fall-through is kept (by
//! a jump where it is no longer the next instruction), so the code means what it meant; whether
//! the result is a shape the lifter translates is the lifter's to say (it falls back with 3.11's
//! reasons otherwise). Depends on this version's `opcode` and the stream types of `normalise`.
use super::decode::RawInstr;
use super::normalise::{Jump, Out};
use super::opcode as v12;
use crate::bezoar::ir::Const;
use crate::py311::exception_table::Entry;
use crate::py311::opcode as v11;
use std::collections::{BTreeMap, HashSet};

/// One handler chain, as raw instruction indices.
struct Chain {
    /// `PUSH_EXC_INFO`.
    push: usize,
    /// One past the clean-up block `COPY 3; POP_EXCEPT; RERAISE 1`.
    end: usize,
    /// Where each handler path continues after its `POP_EXCEPT` (and `as` clean-up).
    exits: Vec<usize>,
    /// The end of the protected body (a 3.12 offset).
    body_end: u32,
}

/// The chain starting at the `PUSH_EXC_INFO` `raw[push]`, if it has 3.11's shape. A bare
/// `except:` (last, or alone) starts with the `POP_TOP` of the exception and has no test and no
/// `RERAISE 0` after it: it runs up to the clean-up block, which the entry covering the
/// `PUSH_EXC_INFO` targets (as in 3.11, where the lifter finds it the same way).
fn chain(
    raw: &[RawInstr],
    at: &BTreeMap<u32, usize>,
    consts: &[Const],
    entries: &[Entry],
    push: usize,
    body_end: u32,
) -> Option<Chain> {
    let mut p = push + 1;
    loop {
        if raw.get(p)?.opcode == v12::POP_TOP {
            let push_off = raw[push].offset;
            let e = entries.iter().find(|e| e.lasti && e.start <= push_off && push_off < e.end)?;
            let cleanup = *at.get(&e.target)?;
            if cleanup <= p {
                return None;
            }
            p = cleanup - 1;
            break;
        }
        let mut c = p;
        while raw.get(c)?.opcode != v12::CHECK_EXC_MATCH {
            let i = raw[c];
            if v12::jump_target(i.op_offset, i.opcode, i.arg).is_some()
                || matches!(
                    i.opcode,
                    v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS | v12::RERAISE | v12::PUSH_EXC_INFO | v12::POP_EXCEPT
                )
            {
                return None;
            }
            c += 1;
        }
        let j = raw.get(c + 1)?;
        if j.opcode != v12::POP_JUMP_IF_FALSE {
            return None;
        }
        let next = *at.get(&v12::jump_target(j.op_offset, j.opcode, j.arg)?)?;
        if next <= c + 1 {
            return None;
        }
        p = next;
        if (raw[p].opcode, raw[p].arg) == (v12::RERAISE, 0) {
            break;
        }
    }
    let cleanup: Vec<(u8, u32)> = raw.get(p + 1..p + 4)?.iter().map(|i| (i.opcode, i.arg)).collect();
    if cleanup != [(v12::COPY, 3), (v12::POP_EXCEPT, 0), (v12::RERAISE, 1)] {
        return None;
    }
    let unbind = |k: usize| {
        matches!(raw.get(k..k + 3), Some([a, b, c]) if a.opcode == v12::LOAD_CONST
            && matches!(consts.get(a.arg as usize), Some(Const::None))
            && b.opcode == v12::STORE_FAST
            && (c.opcode, c.arg) == (v12::DELETE_FAST, b.arg))
    };
    let exits = (push + 1..p)
        .filter(|&k| raw[k].opcode == v12::POP_EXCEPT)
        .map(|k| if unbind(k + 1) { k + 4 } else { k + 1 })
        .filter(|&x| x < raw.len())
        .collect();
    Some(Chain { push, end: p + 4, exits, body_end })
}

/// Whether the instruction at `o` is protected by the statement whose handler starts at `push`:
/// by one of its entries, or by the handlers of a statement nested in it, whose handler code its
/// entries protect (followed through the entries' targets, at most 8 deep).
pub(super) fn protected_by(entries: &[Entry], o: u32, push: u32) -> bool {
    let mut t = o;
    for _ in 0..8 {
        match entries.iter().find(|e| e.start <= t && t < e.end) {
            Some(e) if e.target == push => return true,
            Some(e) => t = e.target,
            None => return false,
        }
    }
    false
}

/// Whether `o` ends a block (nothing falls through it).
pub(super) fn ends_block(o: &Out) -> bool {
    matches!(o.jump, Some((Jump::Always | Jump::NoInterrupt, _)))
        || (o.jump.is_none() && matches!(o.op, v11::RETURN_VALUE | v11::RAISE_VARARGS | v11::RERAISE))
}

/// The normalised stream in 3.11's layout of its try/except statements, and the exception-table
/// entry that covers each key (moved instructions keep theirs; a jump added takes that of the
/// instruction it stands for).
pub(super) struct Placed {
    pub stream: Vec<(u32, Vec<Out>)>,
    /// Added keys (after `code_len`) → the 3.12 offset whose entry covers them.
    pub cover_as: BTreeMap<u32, u32>,
}

pub(super) fn place(
    raw: &[RawInstr],
    at: &BTreeMap<u32, usize>,
    consts: &[Const],
    entries: &[Entry],
    targets: &HashSet<u32>,
    stream: Vec<(u32, Vec<Out>)>,
    code_len: u32,
) -> Placed {
    let mut heads: Vec<u32> = entries
        .iter()
        .filter(|e| !e.lasti && at.get(&e.target).is_some_and(|&t| raw[t].opcode == v12::PUSH_EXC_INFO))
        .map(|e| e.target)
        .collect();
    heads.sort_unstable();
    heads.dedup();
    // The instructions the normalisation turned into jumps (a `break`'s copy of the code after
    // its loop, `breaks`): they leave, as 3.11's jump does.
    let made_jumps: HashSet<u32> = stream
        .iter()
        .filter(|(k, o)| {
            matches!(o[..], [Out { jump: Some((Jump::Always, _)), .. }])
                && at.get(k).is_some_and(|&i| !v12::is_unconditional_jump(raw[i].opcode))
        })
        .map(|(k, _)| *k)
        .collect();
    // Innermost first (a chain nested in a handler comes after the outer chain's start): an
    // inner handler's copy of the outer handler's continuation moves out of the inner chain
    // before the outer chain is placed.
    let mut chains: Vec<Chain> = heads.iter().rev().filter_map(|t| chain(raw, at, consts, entries, at[t], 0)).collect();
    // Where each body ends: after its last protected instruction outside the handler chains (a
    // statement nested in the body has its chain elsewhere, which the body's entries cover too).
    // (And a `with` nested in the body: its handler code, from `PUSH_EXC_INFO` to its clean-up
    // block, which `place_with` may have left after the function.)
    let with_spans = (0..raw.len()).filter(|&p| raw[p].opcode == v12::PUSH_EXC_INFO && raw.get(p + 1).is_some_and(|i| i.opcode == v12::WITH_EXCEPT_START)).filter_map(|p| {
        let push_off = raw[p].offset;
        let e = entries.iter().find(|e| e.lasti && e.start <= push_off && push_off < e.end)?;
        let c = *at.get(&e.target)?;
        if c > p {
            Some((push_off, raw.get(c + 2)?.offset))
        } else {
            None
        }
    });
    // (With the finally statements' exceptional copies, which `finally::place` lays out after
    // this: handler code too, protected by an enclosing statement's entry as its body is.)
    let finally_spans = (0..raw.len())
        .filter(|&p| raw[p].opcode == v12::PUSH_EXC_INFO)
        .filter_map(|p| super::finally::exceptional_copy(raw, at, entries, p).map(|r| (raw[p].offset, raw[r + 3].offset)));
    let spans: Vec<(u32, u32)> = chains
        .iter()
        .map(|c| (raw[c.push].offset, raw[c.end - 1].offset))
        .chain(with_spans)
        .chain(finally_spans)
        .collect();
    for c in chains.iter_mut() {
        let push_off = raw[c.push].offset;
        c.body_end = raw
            .iter()
            .filter(|i| !spans.iter().any(|&(s, e)| s <= i.offset && i.offset <= e))
            .filter(|i| entries.iter().any(|e| !e.lasti && e.target == push_off && e.start <= i.offset && i.offset < e.end))
            .map(|i| i.offset + 2)
            .max()
            .unwrap_or(0);
    }
    // A statement nested in another's body before the enclosing one (3.12 puts the nested chain
    // first, and both may jump back to the same join): the enclosing chain then goes after it,
    // behind the enclosing body's own jump (below). (The order is kept otherwise: stable.)
    let depth = |c: &Chain| chains.iter().filter(|o| o.push != c.push && protected_by(entries, raw[c.push].offset, raw[o.push].offset)).count();
    let depths: Vec<usize> = chains.iter().map(depth).collect();
    let mut order: Vec<usize> = (0..chains.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(depths[k]));
    let mut slots: Vec<Option<Chain>> = chains.into_iter().map(Some).collect();
    let chains: Vec<Chain> = order.iter().map(|&k| slots[k].take().expect("each once")).collect();
    // The handler code of each with statement (`PUSH_EXC_INFO` to its clean-up block), by the
    // offset of that clean-up block.
    let with_code: Vec<(u32, Vec<u32>)> = (0..raw.len())
        .filter(|&p| raw[p].opcode == v12::PUSH_EXC_INFO && raw.get(p + 1).is_some_and(|i| i.opcode == v12::WITH_EXCEPT_START))
        .filter_map(|p| {
            let push_off = raw[p].offset;
            let e = entries.iter().find(|e| e.lasti && e.start <= push_off && push_off < e.end)?;
            let c = *at.get(&e.target)?;
            (c > p && c + 2 < raw.len()).then(|| (raw[c].offset, raw[p..=c + 2].iter().map(|i| i.offset).collect()))
        })
        .collect();
    let mut placed = Placed { stream, cover_as: BTreeMap::new() };
    if chains.is_empty() {
        return placed;
    }
    let cover = |o: u32| entries.iter().find(|e| e.start <= o && o < e.end).copied();
    // (After the keys `place_with` added.)
    let mut next_key = placed.stream.iter().map(|(k, _)| *k).max().unwrap_or(0).max(code_len) + 2;
    for c in &chains {
        let st = &mut placed.stream;
        let pos = |st: &Vec<(u32, Vec<Out>)>, key: u32| st.iter().position(|(k, _)| *k == key);
        // The keys placed after the clean-up block (moved exit blocks), in order.
        let mut after: Vec<u32> = Vec::new();
        let mut shared: Vec<(Vec<(u8, u32, Option<(Jump, u32)>, u32)>, Vec<Option<Entry>>, u32)> = Vec::new();
        let mut joins: Vec<u32> = Vec::new();
        for &x in &c.exits {
            let first = raw[x];
            if let Some(t) = v12::jump_target(first.op_offset, first.opcode, first.arg) {
                if v12::is_unconditional_jump(first.opcode) {
                    joins.push(t);
                }
                continue;
            }
            // A copied block: straight-line code from x to a return, raise or jump, none of it
            // a jump target (an exit block of the function; or, in a handler nested in another
            // one, the outer handler's continuation up to its own exit: 3.11 jumps to both).
            let mut y = x;
            let ok = loop {
                let Some(i) = raw.get(y) else { break false };
                if y > x && targets.contains(&i.offset) || i.opcode == v12::PUSH_EXC_INFO {
                    break false;
                }
                if v12::is_unconditional_jump(i.opcode)
                    || matches!(i.opcode, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS | v12::RERAISE)
                {
                    break true;
                }
                if v12::is_jump(i.opcode) {
                    break false;
                }
                y += 1;
            };
            if !ok || raw[x..y].iter().all(|i| matches!(i.opcode, v12::NOP | v12::POP_TOP | v12::SWAP)) {
                // A return, raise or jump, after the pops of a `return` out of a loop: what
                // 3.11 has there too.
                continue;
            }
            // A `break` out of a loop from a handler: the iterators' pops, then a copy of the
            // code after the loop. 3.11 pops and jumps to that code: its original, the same
            // instructions (same outputs, lines and protection) elsewhere, outside the handler
            // chains, replaces the longest such suffix of the copy. (Other copies move below.)
            let sig_of = |st: &Vec<(u32, Vec<Out>)>, r: &[RawInstr]| -> Option<Vec<(Vec<(u8, u32, Option<(Jump, u32)>, u32)>, Option<Entry>)>> {
                r.iter()
                    .map(|i| {
                        let p = pos(st, i.offset)?;
                        Some((st[p].1.iter().map(|o| (o.op, o.arg, o.jump, o.line)).collect(), cover(i.offset)))
                    })
                    .collect()
            };
            let outside = |q: usize| !spans.iter().any(|&(s, e)| s <= raw[q].offset && raw[q].offset <= e);
            let original = (x + 1..=y).take_while(|&s0| raw[s0 - 1].opcode == v12::POP_TOP).find_map(|s0| {
                let want = sig_of(st, &raw[s0..=y])?;
                let len = y + 1 - s0;
                (0..raw.len().saturating_sub(len - 1))
                    .filter(|&q| (q..q + len).all(outside) && (q + len <= x || q > y))
                    .find(|&q| sig_of(st, &raw[q..q + len]).is_some_and(|g| g == want) && !want.iter().all(|(o, _)| o.is_empty()))
                    .map(|q| (s0, q))
            });
            if let Some((s0, q)) = original {
                let Some(p) = pos(st, raw[s0].offset) else { continue };
                // (The jump is the `break`'s: its line is the pops'.)
                let line = raw[s0 - 1].line;
                st[p].1 = vec![Out { op: 0, arg: 0, line, jump: Some((Jump::Always, raw[q].offset)) }];
                for i in &raw[s0 + 1..=y] {
                    if let Some(p) = pos(st, i.offset) {
                        st[p].1.clear();
                    }
                }
                continue;
            }
            let keys: Vec<u32> = raw[x..=y].iter().map(|i| i.offset).collect();
            let Some(p0) = pos(st, keys[0]) else { continue };
            if st.get(p0..p0 + keys.len()).map_or(true, |s| s.iter().map(|(k, _)| *k).ne(keys.iter().copied())) {
                continue;
            }
            let anchor = after.last().copied().unwrap_or(raw[c.end - 1].offset);
            let Some(a) = pos(st, anchor).filter(|&a| a >= p0 + keys.len()) else { continue };
            let sig: Vec<_> =
                st[p0..p0 + keys.len()].iter().flat_map(|(_, o)| o.iter().map(|o| (o.op, o.arg, o.jump, o.line))).collect();
            let covers: Vec<_> = keys.iter().map(|&k| cover(k)).collect();
            let line = st[p0].1.first().map_or(first.line, |o| o.line);
            let target = match shared.iter().find(|(s, c, _)| *s == sig && *c == covers && !targets.contains(&keys[0])) {
                Some(&(_, _, t)) => {
                    st.drain(p0..p0 + keys.len());
                    t
                }
                None => {
                    let block: Vec<_> = st.drain(p0..p0 + keys.len()).collect();
                    let a = a - keys.len();
                    st.splice(a + 1..a + 1, block);
                    after.extend(keys.iter().copied());
                    shared.push((sig, covers, keys[0]));
                    keys[0]
                }
            };
            let key = next_key;
            next_key += 2;
            placed.cover_as.insert(key, keys[0]);
            let p0 = p0.min(st.len());
            st.insert(p0, (key, vec![Out { op: 0, arg: 0, line, jump: Some((Jump::Always, target)) }]));
            joins.push(target);
        }
        // Where 3.11 puts the chain: before the join the handlers jump back to (the body and
        // else clause fall through into it), or after the else clause's jump to where the
        // handlers jump too (the bottom of an enclosing loop: `continue`).
        let push_off = raw[c.push].offset;
        let mut join = joins.iter().copied().filter(|&j| j >= c.body_end && j < push_off).min();
        let after_jump = if join.is_some() {
            None
        } else {
            raw.iter()
                .filter(|i| i.offset >= c.body_end && i.offset < push_off)
                // (Not another statement's handler code, whose jumps are its own; nor dropped
                // code — an await loop's `CLEANUP_THROW; JUMP_BACKWARD` handler —, which emits
                // nothing.)
                .filter(|i| !spans.iter().any(|&(s, e)| s <= i.offset && i.offset <= e))
                .filter(|i| pos(st, i.offset).is_some_and(|q| !st[q].1.is_empty()))
                .find(|i| {
                    // (No handler continues after the statement — each breaks, returns or
                    // raises —: the statement ends a loop's body, which jumps back.)
                    v12::is_unconditional_jump(i.opcode)
                        && v12::jump_target(i.op_offset, i.opcode, i.arg)
                            .is_some_and(|t| joins.contains(&t) || (joins.is_empty() && t < c.body_end))
                })
                .map(|i| i.offset)
                .or_else(|| {
                    // (A body that always leaves — `try: return …`, `break` —, no else clause:
                    // after its return or jump and the pops before it.)
                    let k = raw.iter().position(|i| i.offset >= c.body_end)?;
                    let r = raw[k..c.push].iter().position(|i| !matches!(i.opcode, v12::NOP | v12::POP_TOP | v12::SWAP))? + k;
                    let i = raw[r];
                    let leaves = matches!(i.opcode, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS)
                        || v12::is_unconditional_jump(i.opcode)
                        || made_jumps.contains(&i.offset);
                    (leaves && r + 1 < c.push)
                        .then_some(i.offset)
                })
        };
        if join.is_none() && after_jump.is_none() && joins.is_empty() {
            // (No handler continues after the statement — each raises or returns —, and the
            // body falls through into the code after it: 3.11 jumps over the chain to that code,
            // right after the body. An else clause then reads as code after the statement, which
            // means the same: only the body's normal completion reaches either. Not a body
            // ending with a return, break or continue, whose unprotected pops and return or jump
            // follow the protected code; nor one that goes on with a statement nested in it,
            // whose code its own handlers protect: that body is not over at `body_end`.)
            let k = raw.iter().position(|i| i.offset >= c.body_end).filter(|&k| k > 0 && k < c.push);
            join = k
                .filter(|&k| {
                    !raw[k..c.push].iter().any(|i| !spans.iter().any(|&(s, e)| s <= i.offset && i.offset <= e) && protected_by(entries, i.offset, push_off))
                })
                .filter(|&k| {
                    let r = raw[k..c.push].iter().find(|i| !matches!(i.opcode, v12::NOP | v12::POP_TOP | v12::SWAP));
                    r.is_some_and(|i| {
                        !(v12::is_unconditional_jump(i.opcode)
                            || made_jumps.contains(&i.offset)
                            || matches!(i.opcode, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS | v12::RERAISE))
                    })
                })
                .map(|k| raw[k].offset);
        }
        if join.is_none() && after_jump.is_none() {
            continue;
        }
        let (Some(s), Some(mut e)) = (pos(st, push_off), pos(st, after.last().copied().unwrap_or(raw[c.end - 1].offset))) else {
            continue;
        };
        let mut own: HashSet<u32> = raw[c.push..c.end].iter().map(|i| i.offset).chain(after.iter().copied()).collect();
        // The code after the statement when only its handlers reach it (a body that always
        // leaves, `try: return …`, in a loop): 3.12 leaves it after the function, right after
        // the chain — the rest of the loop's body, up to its jump back to the head —; 3.11 has
        // it right after the chain too, where the chain goes (after the body's return). It moves
        // with the chain: entered only at its start (the handlers' join), never falling through
        // at its end.
        if let (None, Some(_), Some(&j)) = (join, after_jump, joins.first()) {
            if after.is_empty() && joins.iter().all(|&t| t == j) && j > push_off && raw.get(c.end).is_some_and(|i| i.offset == j) && pos(st, j) == Some(e + 1) {
                let mut k = e + 1;
                let mut end = None;
                while let Some((key, outs)) = st.get(k) {
                    let handler_code = spans.iter().any(|&(a, b)| a <= *key && *key <= b)
                        || at.get(key).is_some_and(|&i| raw[i].opcode == v12::PUSH_EXC_INFO);
                    if handler_code {
                        break;
                    }
                    if outs.last().is_some_and(ends_block) {
                        end = Some(k);
                    }
                    k += 1;
                }
                if let Some(end) = end {
                    let inner: HashSet<u32> = st[e + 2..=end].iter().map(|(k, _)| *k).collect();
                    let entered_inside = st[..s]
                        .iter()
                        .chain(&st[end + 1..])
                        .any(|(_, o)| o.iter().any(|o| o.jump.is_some_and(|(_, t)| inner.contains(&t))));
                    if !entered_inside {
                        own.extend(st[e + 1..=end].iter().map(|(k, _)| *k));
                        e = end;
                    }
                }
            }
        }
        if s > e || !st[s..=e].iter().all(|(k, _)| own.contains(k) || *k > code_len) {
            continue;
        }
        let block: Vec<_> = st.drain(s..=e).collect();
        let Some(j) = pos(st, join.or(after_jump).unwrap()) else {
            // (Not expected: put it back.)
            st.splice(s..s, block);
            continue;
        };
        let mut insert = Vec::new();
        let j = match join {
            Some(join) => {
                // Before the instructions that emit nothing just before the join (a dropped
                // `END_FOR` a loop's `FOR_ITER` targets): a key that emits nothing stands for the
                // next output, which must stay the join's.
                let j0 = j;
                let mut j = j;
                while j > 0 && st[j - 1].1.is_empty() {
                    j -= 1;
                }
                // (Unless the body jumps there — a loop in the body ending it: 3.13 ends a loop
                // with `END_FOR; POP_TOP`, both dropped, where 3.12 has a line `NOP` after its
                // `END_FOR` —: the chain goes after them, behind the jump to the join added below,
                // which the body's jump there then reaches, as 3.11's loop exit reaches its jump
                // over the chain.)
                let body_jumps_in = j < j0 && {
                    let dropped: HashSet<u32> = st[j..j0].iter().map(|(k, _)| *k).collect();
                    st.iter().any(|(k, o)| {
                        o.iter().any(|o| o.jump.is_some_and(|(_, t)| dropped.contains(&t)))
                            && protected_by(entries, placed.cover_as.get(k).copied().unwrap_or(*k), push_off)
                    })
                };
                if body_jumps_in {
                    j = j0;
                }
                let before = st[..j].iter().rev().find_map(|(k, o)| o.last().map(|o| (*k, *o)));
                // (The chain of a statement nested in the body, placed before the same join: the
                // body ends with that statement, then its own jump over the chain, as 3.11's, to
                // which the nested statement's jumps to the join go — 3.12 jumps straight on.)
                let nested_before = before.is_some_and(|(k, o)| {
                    o.jump.is_none()
                        && o.op == v11::RERAISE
                        && chains.iter().any(|n| n.push != c.push && raw[n.end - 1].offset == k && protected_by(entries, raw[n.push].offset, push_off))
                });
                if let Some((_, o)) = before.filter(|(_, o)| !ends_block(o) || nested_before || body_jumps_in) {
                    let key = next_key;
                    next_key += 2;
                    // Protected as the statement is (by an enclosing try), as its clean-up block.
                    placed.cover_as.insert(key, raw[c.end - 1].offset);
                    insert.push((key, vec![Out { op: 0, arg: 0, line: o.line, jump: Some((Jump::Always, join)) }]));
                    if nested_before {
                        let own: HashSet<u32> = block.iter().map(|(k, _)| *k).collect();
                        for (k, outs) in st.iter_mut() {
                            let k0 = placed.cover_as.get(k).copied().unwrap_or(*k);
                            if own.contains(k) || !protected_by(entries, k0, push_off) {
                                continue;
                            }
                            for o in outs.iter_mut() {
                                if matches!(o.jump, Some((_, t)) if t == join) {
                                    o.jump = Some((o.jump.unwrap().0, key));
                                }
                            }
                        }
                    }
                }
                j
            }
            None => {
                // (After the handler code of a with nested in the body that `place_with` put
                // right after this same jump — the with's normal path ending the body with it —:
                // that code is part of the body, as in 3.11's layout.)
                let nested_with: HashSet<u32> = with_code
                    .iter()
                    .filter(|(cleanup, _)| protected_by(entries, *cleanup, push_off))
                    .flat_map(|(_, keys)| keys.iter().copied())
                    .collect();
                let mut k = j + 1;
                while st.get(k).is_some_and(|(key, _)| nested_with.contains(key)) {
                    k += 1;
                }
                let ends = st[j + 1..k].iter().rev().find_map(|(_, o)| o.last()).is_some_and(ends_block);
                if k > j + 1 && ends {
                    k
                } else {
                    j + 1
                }
            }
        };
        insert.extend(block);
        st.splice(j..j, insert);
    }
    placed
}

/// The exception table of the laid-out stream: each key's entry (`cover_as` for added keys),
/// at its new offsets, adjacent ranges to the same handler joined. `offsets` are the new
/// offsets of the keys (`layout::encode`), `code_end` the length of the new code.
pub(super) fn table(
    placed: &Placed,
    entries: &[Entry],
    offsets: &BTreeMap<u32, u32>,
    code_end: u32,
) -> Vec<Entry> {
    let cover = |o: u32| entries.iter().find(|e| e.start <= o && o < e.end).copied();
    let new_off = |o: u32| -> u32 { *offsets.range(o..).next().map(|(_, v)| v).unwrap_or(&code_end) };
    let keys: Vec<u32> = placed.stream.iter().filter(|(_, o)| !o.is_empty()).map(|(k, _)| *k).collect();
    let mut out: Vec<Entry> = Vec::new();
    for (n, &k) in keys.iter().enumerate() {
        let Some(e) = cover(placed.cover_as.get(&k).copied().unwrap_or(k)) else { continue };
        let start = offsets[&k];
        let end = keys.get(n + 1).map_or(code_end, |k2| offsets[k2]);
        let e = Entry { start, end, target: new_off(e.target), ..e };
        match out.last_mut() {
            Some(p) if p.end == e.start && (p.target, p.depth, p.lasti) == (e.target, e.depth, e.lasti) => p.end = e.end,
            _ => out.push(e),
        }
    }
    out
}

/// `with` statements' handler code in 3.11's layout (before `place` lays out try statements).
///
/// 3.12 (and 3.13, normalised) put a `with`'s handler code after the whole function: `PUSH_EXC_INFO;
/// WITH_EXCEPT_START; POP_JUMP_IF_TRUE S; RERAISE 2`, `S: POP_TOP; POP_EXCEPT; POP_TOP; POP_TOP`, a
/// jump back to where the statement's normal path goes on (`J`), then the clean-up block `COPY 3;
/// POP_EXCEPT; RERAISE 1`; the normal path (the body, then `__exit__(None, None, None)`) falls
/// through into `J` or jumps there. 3.11 has the test, the clean-up block and `S` right after the
/// normal path, `S` falling through into `J` (the normal path jumping forward to it). So the
/// chain moves, in 3.11's order, before `J` (a jump to `J` added before it where the normal path
/// falls through; `S`'s jump dropped), or after the normal path's own jump when `J` is elsewhere
/// (the head of an enclosing loop: `S` keeps its jump). Every moved instruction keeps its
/// exception-table entry; a chain not in this shape stays where it is (the lifter then falls back
/// with its reason). The normal path is found from the body's entry followed by the exit call (a
/// statement nested in the body has handler code after the function, whose clean-up block the
/// body's entry protects too), and the handler code of a try/finally nested in the body moves into
/// the body first (`finally_chains_into_body`). An `async with` has the same code with its awaits
/// of `__aexit__`'s result: in the handler between `WITH_EXCEPT_START` and the test
/// (`GET_AWAITABLE 2; LOAD_CONST None; SEND; YIELD_VALUE; RESUME 3; JUMP_BACKWARD_NO_INTERRUPT;
/// CLEANUP_THROW; END_SEND`), in each exit call before its `POP_TOP` (the same loop, its
/// `CLEANUP_THROW` after the function); they move with the instructions around them.
pub(super) fn place_with(
    raw: &[RawInstr],
    at: &BTreeMap<u32, usize>,
    consts: &[Const],
    entries: &[Entry],
    stream: Vec<(u32, Vec<Out>)>,
    code_len: u32,
) -> Placed {
    let mut placed = Placed { stream, cover_as: BTreeMap::new() };
    let placed = &mut placed;
    let ops = |k: usize, n: usize| raw.get(k..k + n).map(|s| s.iter().map(|i| (i.opcode, i.arg)).collect::<Vec<_>>());
    let none = |k: usize| raw.get(k).is_some_and(|i| i.opcode == v12::LOAD_CONST && matches!(consts.get(i.arg as usize), Some(Const::None)));
    let mut next_key = placed.stream.iter().map(|(k, _)| *k).max().unwrap_or(0).max(code_len) + 2;
    let jump_targets: HashSet<u32> = raw.iter().filter_map(|i| v12::jump_target(i.op_offset, i.opcode, i.arg)).collect();
    // The length of an await of `__aexit__`'s result at `k` (with its `CLEANUP_THROW` inside the
    // loop, as in an `async with`'s handler, or not), or 0.
    let aexit_await = |k: usize, inline: bool| {
        let mut want = vec![v12::GET_AWAITABLE, v12::LOAD_CONST, v12::SEND, v12::YIELD_VALUE, v12::RESUME, v12::JUMP_BACKWARD_NO_INTERRUPT];
        if inline {
            want.push(v12::CLEANUP_THROW);
        }
        want.push(v12::END_SEND);
        let ok = raw.get(k..k + want.len()).is_some_and(|w| w.iter().map(|i| i.opcode).eq(want.iter().copied()) && w[0].arg == 2);
        if ok {
            want.len()
        } else {
            0
        }
    };
    for p in (0..raw.len()).filter(|&p| raw[p].opcode == v12::PUSH_EXC_INFO && raw.get(p + 1).is_some_and(|i| i.opcode == v12::WITH_EXCEPT_START)) {
        // (`t`: the test of `__exit__`'s result, after the await of `__aexit__`'s.)
        let t = p + 2 + aexit_await(p + 2, true);
        let awaited = t > p + 2;
        let (s, x) = (t + 2, t + 6);
        let push_off = raw[p].offset;
        let Some(c) = entries
            .iter()
            .find(|e| e.lasti && e.start <= push_off && push_off < e.end)
            .and_then(|e| at.get(&e.target).copied())
        else {
            continue;
        };
        let jumps_to_s = raw.get(t).is_some_and(|j| {
            j.opcode == v12::POP_JUMP_IF_TRUE && v12::jump_target(j.op_offset, j.opcode, j.arg) == raw.get(s).map(|i| i.offset)
        });
        let shape = jumps_to_s
            && ops(t + 1, 1).as_deref() == Some(&[(v12::RERAISE, 2)][..])
            && ops(s, 4).is_some_and(|v| v.iter().map(|o| o.0).eq([v12::POP_TOP, v12::POP_EXCEPT, v12::POP_TOP, v12::POP_TOP]))
            && ops(c, 3).as_deref() == Some(&[(v12::COPY, 3), (v12::POP_EXCEPT, 0), (v12::RERAISE, 1)][..])
            && c > x;
        if !shape {
            continue;
        }
        // The normal path: the end of the protected body, line NOPs, `__exit__(None, None, None)`
        // (after `SWAP 2` for a final `return x`). (The body's last entry in code order need not
        // be its end: the handler code of a statement nested in the body comes after it, its
        // clean-up protected by this body's entry.)
        // (`exit_len`: its length, the await of `__aexit__`'s result included.)
        let exit_await = if awaited { 7 } else { 0 };
        let exit_len = 5 + exit_await;
        let exit_call = |n: usize| {
            (n..n + 3).all(none)
                && ops(n + 3, 1).as_deref() == Some(&[(v12::CALL, 2)][..])
                && aexit_await(n + 4, false) == exit_await
                && ops(n + 4 + exit_await, 1).as_deref() == Some(&[(v12::POP_TOP, 0)][..])
        };
        // (The body's entries, and those of the statements nested in it — a try/except that ends
        // the body is followed by the exit call, its body's entry targeting its own handler.)
        let mut nested_ends: Vec<u32> =
            entries.iter().filter(|e| protected_by(entries, e.start, push_off)).map(|e| e.end).collect();
        nested_ends.sort_unstable_by(|a, b| b.cmp(a));
        let mut ends: Vec<u32> = entries.iter().filter(|e| e.lasti && e.target == push_off).map(|e| e.end).collect();
        ends.sort_unstable_by(|a, b| b.cmp(a));
        let normal_end = |end: u32| {
            let mut n = at.get(&end).copied()?;
            while raw.get(n).is_some_and(|i| i.opcode == v12::NOP) {
                n += 1;
            }
            let swap = ops(n, 1).as_deref() == Some(&[(v12::SWAP, 2)][..]);
            (n < p && exit_call(if swap { n + 1 } else { n })).then_some(n)
        };
        let found = ends.iter().find_map(|&e| normal_end(e)).or_else(|| nested_ends.iter().find_map(|&e| normal_end(e)));
        let Some(n) = found.or_else(|| ends.first().and_then(|&e| at.get(&e).copied())) else {
            continue;
        };
        if found.is_some() {
            finally_chains_into_body(raw, at, entries, &mut placed.stream, &mut placed.cover_as, &mut next_key, p, n);
        }
        let st = &mut placed.stream;
        let pos = |st: &Vec<(u32, Vec<Out>)>, key: u32| st.iter().position(|(k, _)| *k == key);
        if ops(n, 1).as_deref() == Some(&[(v12::SWAP, 2)][..]) && exit_call(n + 1) {
            // A body ending with `return x`: `SWAP 2`, the exit call, pops, `RETURN_VALUE`. 3.11
            // has the chain and `S` (with what follows it: its jump or a copy of the code after
            // the statement) right after the return.
            let mut r = n + 1 + exit_len;
            while raw.get(r).is_some_and(|i| matches!(i.opcode, v12::POP_TOP | v12::SWAP | v12::NOP)) {
                r += 1;
            }
            if raw.get(r).is_none_or(|i| i.opcode != v12::RETURN_VALUE) || r >= p {
                continue;
            }
            let keys: Vec<u32> = (p..s).chain([c, c + 1, c + 2]).chain(s..c).map(|k| raw[k].offset).collect();
            if keys.iter().any(|&k| pos(st, k).is_none()) {
                continue;
            }
            let block: Vec<(u32, Vec<Out>)> = keys.iter().map(|&k| st[pos(st, k).expect("checked above")].clone()).collect();
            st.retain(|(k, _)| !keys.contains(k));
            let Some(at_r) = pos(st, raw[r].offset) else { continue };
            st.splice(at_r + 1..at_r + 1, block);
            continue;
        }
        if !exit_call(n) {
            continue;
        }
        let after = n + exit_len;
        let outs = |st: &Vec<(u32, Vec<Out>)>, r: &[RawInstr]| -> Option<Vec<(u8, u32, Option<(Jump, u32)>, u32)>> {
            r.iter().try_fold(Vec::new(), |mut v, i| {
                v.extend(st[pos(st, i.offset)?].1.iter().map(|o| (o.op, o.arg, o.jump, o.line)));
                Some(v)
            })
        };
        // What follows `S`: a jump to `J`, or (3.12 copies small exit blocks) a copy of the normal
        // path's continuation up to its return or raise — then `J` is that continuation.
        let (j, copy) = match raw.get(x) {
            Some(i) if c == x + 1 && v12::is_unconditional_jump(i.opcode) => match v12::jump_target(i.op_offset, i.opcode, i.arg) {
                Some(j) => (j, false),
                None => continue,
            },
            Some(_) => {
                let ends = raw[c - 1].opcode;
                let straight = raw[x..c - 1].iter().all(|i| v12::jump_target(i.op_offset, i.opcode, i.arg).is_none());
                // (The same instructions, protected alike: by the same handler, if any.)
                let cover = |i: &RawInstr| entries.iter().find(|e| e.start <= i.offset && i.offset < e.end).map(|e| (e.target, e.depth, e.lasti));
                let same = after + (c - x) <= p
                    && outs(st, &raw[x..c]).is_some_and(|o| !o.is_empty() && Some(o) == outs(st, &raw[after..after + (c - x)]))
                    && raw[x..c].iter().map(cover).eq(raw[after..after + (c - x)].iter().map(cover));
                if !(matches!(ends, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS) && straight && same) {
                    continue;
                }
                (raw[after].offset, true)
            }
            None => continue,
        };
        // Where the chain goes, and whether `S`'s jump stays.
        let mut fall_to_after = false;
        let (before_j, anchor) = match raw.get(after) {
            Some(i) if i.offset == j => (true, j),
            Some(i) if v12::is_unconditional_jump(i.opcode) && v12::jump_target(i.op_offset, i.opcode, i.arg) == Some(j) => (false, i.offset),
            // The normal path leaves otherwise, by straight-line code up to its own jump, return
            // or raise (a body ending with `break` in a `while` loop, whose exit 3.12 copies into
            // it: `return n`): after that, as 3.11 has the chain after the `break`'s jump; `S`
            // keeps its jump to `J`.
            // (Where that code is a join — the code after the loop, which the loop's test also
            // reaches: the `break` falls into it —, before it, behind a jump to it, as 3.11's
            // `break` jumps there over the chain.)
            Some(i) if !copy && jump_targets.contains(&i.offset) => {
                fall_to_after = true;
                (false, i.offset)
            }
            Some(_) if !copy => {
                let Some(end) = (after..p).find(|&k| {
                    let i = raw[k];
                    v12::is_unconditional_jump(i.opcode) || matches!(i.opcode, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS)
                }) else {
                    continue;
                };
                if raw[after..end].iter().any(|i| v12::is_jump(i.opcode) || i.opcode == v12::PUSH_EXC_INFO) {
                    continue;
                }
                (false, raw[end].offset)
            }
            _ => continue,
        };
        let mut keys: Vec<u32> = (p..s).chain([c, c + 1, c + 2]).chain(s..s + 4).map(|k| raw[k].offset).collect();
        // (The loop's test at the bottom, which `S` jumps to and whose exit jumps back to the
        // code after the loop: 3.12 lays it out after the function when only `S` reaches it. It
        // comes with `S`, which falls into it, its exit falling into that code: 3.11's layout.)
        let mut emptied: Option<u32> = None;
        let test = at.get(&j).copied().filter(|&t| fall_to_after && t > c).and_then(|t| {
            let e = (t..raw.len()).find(|&k| {
                v12::is_unconditional_jump(raw[k].opcode) && v12::jump_target(raw[k].op_offset, raw[k].opcode, raw[k].arg) == Some(anchor)
            })?;
            let (lo, hi) = (raw[t].offset, raw[e].offset);
            let inside = |o: u32| lo <= o && o <= hi;
            let own = raw[t..e].iter().all(|i| {
                !matches!(i.opcode, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS | v12::RERAISE | v12::PUSH_EXC_INFO)
                    && v12::jump_target(i.op_offset, i.opcode, i.arg).is_none_or(|g| inside(g) || i.opcode == v12::JUMP_BACKWARD && g < raw[p].offset)
            });
            // (Reached only from `S` and from itself.)
            let reached_only = raw.iter().enumerate().all(|(k, i)| {
                k == x || (t..=e).contains(&k) || v12::jump_target(i.op_offset, i.opcode, i.arg).is_none_or(|g| !inside(g))
            });
            (own && reached_only && raw[t..=e].iter().all(|i| pos(st, i.offset).is_some())).then_some((t, e))
        });
        if let Some((t, e)) = test {
            keys.extend(raw[t..=e].iter().map(|i| i.offset));
            emptied = Some(raw[e].offset);
        } else if !before_j {
            keys.push(raw[x].offset);
        }
        let dropped: Vec<u32> = if copy { raw[x..c].iter().map(|i| i.offset).collect() } else { vec![raw[x].offset] };
        let moved: Vec<u32> = keys.iter().copied().chain(dropped).collect();
        if moved.iter().any(|&k| pos(st, k).is_none()) || pos(st, anchor).is_none() {
            continue;
        }
        let mut block: Vec<(u32, Vec<Out>)> = Vec::new();
        for &k in &keys {
            let q = pos(st, k).expect("checked above");
            block.push(if emptied == Some(k) { (k, Vec::new()) } else { st[q].clone() });
        }
        st.retain(|(k, _)| !moved.contains(k));
        let Some(mut at_j) = pos(st, anchor) else { continue };
        let mut insert = Vec::new();
        if before_j || fall_to_after {
            // Before the instructions that emit nothing just before `J` (they stand for `J`).
            while at_j > 0 && st[at_j - 1].1.is_empty() {
                at_j -= 1;
            }
            let before = st[..at_j].iter().rev().find_map(|(k, o)| o.last().map(|o| (*k, *o)));
            if let Some((k, o)) = before.filter(|(_, o)| !ends_block(o)) {
                // The normal path's jump to `J`, protected as the instruction before it.
                let key = next_key;
                next_key += 2;
                let covered_as = placed.cover_as.get(&k).copied().unwrap_or(k);
                placed.cover_as.insert(key, covered_as);
                let to = if fall_to_after { anchor } else { j };
                insert.push((key, vec![Out { op: 0, arg: 0, line: o.line, jump: Some((Jump::Always, to)) }]));
            }
        } else {
            at_j += 1;
        }
        insert.extend(block);
        st.splice(at_j..at_j, insert);
    }
    std::mem::replace(placed, Placed { stream: Vec::new(), cover_as: BTreeMap::new() })
}

/// The handler code of the try/finally statements nested in the body of the `with` whose
/// `PUSH_EXC_INFO` is `raw[p]` (its normal exit call at `raw[n]`, after line `NOP`s), moved into
/// the body, as 3.11 lays it out: 3.12 puts a finally's exceptional copy `PUSH_EXC_INFO; … F …;
/// RERAISE 0; COPY 3; POP_EXCEPT; RERAISE 1` after the function (its clean-up block protected by
/// the with's handler), 3.11 after the statement's normal copy, inside the with body, the normal
/// path jumping over it to the exit call (`place` does not move these chains). Each moved
/// instruction keeps its table entry; the added jump is protected as the instruction before it.
#[allow(clippy::too_many_arguments)]
fn finally_chains_into_body(
    raw: &[RawInstr],
    at: &BTreeMap<u32, usize>,
    entries: &[Entry],
    st: &mut Vec<(u32, Vec<Out>)>,
    cover_as: &mut BTreeMap<u32, u32>,
    next_key: &mut u32,
    p: usize,
    n: usize,
) {
    let push_off = raw[p].offset;
    let pos = |st: &Vec<(u32, Vec<Out>)>, key: u32| st.iter().position(|(k, _)| *k == key);
    // The body's end: the line `NOP`s before the exit call.
    let mut m = n;
    while m > 0 && raw[m - 1].opcode == v12::NOP {
        m -= 1;
    }
    let with_covers = |o: u32| entries.iter().find(|e| e.start <= o && o < e.end).is_some_and(|e| e.lasti && e.target == push_off);
    let mut keys: Vec<u32> = Vec::new();
    for q in (n + 1..raw.len()).filter(|&q| raw[q].opcode == v12::PUSH_EXC_INFO && q != p) {
        let mut r = q + 1;
        while raw.get(r).is_some_and(|i| {
            !matches!(i.opcode, v12::RERAISE | v12::PUSH_EXC_INFO | v12::POP_EXCEPT | v12::CHECK_EXC_MATCH | v12::WITH_EXCEPT_START)
        }) {
            r += 1;
        }
        let cleanup = raw.get(r + 1..r + 4).map(|s| s.iter().map(|i| (i.opcode, i.arg)).collect::<Vec<_>>());
        let finally = raw.get(r).is_some_and(|i| (i.opcode, i.arg) == (v12::RERAISE, 0))
            && cleanup.as_deref() == Some(&[(v12::COPY, 3), (v12::POP_EXCEPT, 0), (v12::RERAISE, 1)][..])
            // (Its jumps stay inside it.)
            && raw[q..r].iter().all(|i| v12::jump_target(i.op_offset, i.opcode, i.arg).is_none_or(|t| at.get(&t).is_some_and(|&t| q < t && t <= r)));
        if finally && with_covers(raw[r + 1].offset) && raw[q..r + 4].iter().all(|i| pos(st, i.offset).is_some()) {
            keys.extend(raw[q..r + 4].iter().map(|i| i.offset));
        }
    }
    if keys.is_empty() {
        return;
    }
    let block: Vec<(u32, Vec<Out>)> = keys.iter().map(|&k| st[pos(st, k).expect("checked above")].clone()).collect();
    st.retain(|(k, _)| !keys.contains(k));
    let Some(mut at_m) = pos(st, raw[m].offset) else {
        // (Not expected: put them back at the end.)
        st.extend(block);
        return;
    };
    // Before the instructions that emit nothing just before the body's end (a dropped `END_FOR`
    // a loop's `FOR_ITER` targets): they stand for the next output, which must stay the end's.
    while at_m > 0 && st[at_m - 1].1.is_empty() {
        at_m -= 1;
    }
    let mut insert = Vec::new();
    let before = st[..at_m].iter().rev().find_map(|(k, o)| o.last().map(|o| (*k, *o)));
    if let Some((k, o)) = before.filter(|(_, o)| !ends_block(o)) {
        // The body's fall-through, now a jump over the moved code to its end.
        let key = *next_key;
        *next_key += 2;
        cover_as.insert(key, cover_as.get(&k).copied().unwrap_or(k));
        insert.push((key, vec![Out { op: 0, arg: 0, line: o.line, jump: Some((Jump::Always, raw[m].offset)) }]));
    }
    insert.extend(block);
    st.splice(at_m..at_m, insert);
}
