//! 3.12's layout of a `try: … finally: F` statement's exceptional copy of F → 3.11's, on the
//! normalised stream (after `handlers` laid out the try/except and with statements).
//!
//! Both versions emit F twice: the normal copy right after the protected body, and the
//! exceptional copy `PUSH_EXC_INFO; F; RERAISE 0; COPY 3; POP_EXCEPT; RERAISE 1` that the body's
//! entries target. 3.11 puts the exceptional copy right after the normal one, which jumps over it
//! to the code after the statement (`JUMP_FORWARD J`), or after the normal copy's own jump when
//! that code is elsewhere (a loop's head: `JUMP_BACKWARD`). 3.12 puts it after the whole
//! function, and the normal copy falls through into the code after the statement; the lifter
//! then takes that code (up to the loop's `continue`, in a loop) as part of the statement's normal
//! path: it means the same, but each iteration's code after the statement is then inside the
//! statement, and a loop's iterations wait for each other (p624, p625).
//!
//! `place` moves the exceptional copy, as a whole block (each instruction keeping its key, its
//! outputs and its exception-table entry), to 3.11's place: after the normal copy — found as the
//! same instructions right after the body's last protected instruction (or jumped to from the
//! body), protected as the statement is, the last such copy (the body's exits — return, break,
//! continue — each have a copy of F of their own, laid out where they leave, before it) — with a
//! jump to the code after it (protected as the normal copy; the normal copy's own jumps to that
//! code, an `if` ending F, then go to it, as the exceptional copy's go to its `RERAISE 0`), or
//! after the normal copy's own unconditional jump. Only that block moves and nothing falls through
//! into it or out of it, so the code means what it meant; a statement not in this shape (F empty,
//! a handler reached otherwise) stays where it is.
//! Depends on this version's `opcode` and the stream types of `normalise`/`handlers`.
use super::decode::RawInstr;
use super::handlers::{ends_block, protected_by, Placed};
use super::normalise::{Jump, Out};
use super::opcode as v12;
use crate::py311::exception_table::Entry;
use std::collections::{BTreeMap, HashSet};

/// Whether `raw[push..]` is a finally statement's exceptional copy: `PUSH_EXC_INFO`, F (no
/// handler test, no return or re-raise, jumps inside itself only), `RERAISE 0`, then the clean-up
/// block the entry covering `PUSH_EXC_INFO` targets. Returns the index of the `RERAISE 0`.
pub(super) fn exceptional_copy(raw: &[RawInstr], at: &BTreeMap<u32, usize>, entries: &[Entry], push: usize) -> Option<usize> {
    let push_off = raw[push].offset;
    let e = entries.iter().find(|e| e.lasti && e.start <= push_off && push_off < e.end)?;
    let cleanup = *at.get(&e.target)?;
    if cleanup < push + 3 || raw[push + 1].opcode == v12::POP_TOP {
        // (A bare `except:` starts with the exception's `POP_TOP`; F is not empty.)
        return None;
    }
    let ops: Vec<(u8, u32)> = raw.get(cleanup..cleanup + 3)?.iter().map(|i| (i.opcode, i.arg)).collect();
    if ops != [(v12::COPY, 3), (v12::POP_EXCEPT, 0), (v12::RERAISE, 1)] {
        return None;
    }
    let r = cleanup - 1;
    if (raw[r].opcode, raw[r].arg) != (v12::RERAISE, 0) {
        return None;
    }
    let (lo, hi) = (raw[push + 1].offset, raw[r].offset);
    for i in &raw[push + 1..r] {
        if matches!(
            i.opcode,
            v12::PUSH_EXC_INFO
                | v12::POP_EXCEPT
                | v12::CHECK_EXC_MATCH
                | v12::CHECK_EG_MATCH
                | v12::WITH_EXCEPT_START
                | v12::RERAISE
                | v12::RETURN_VALUE
                | v12::RETURN_CONST
                | v12::SEND
                | v12::YIELD_VALUE
        ) {
            return None;
        }
        if v12::jump_target(i.op_offset, i.opcode, i.arg).is_some_and(|t| t < lo || t > hi) {
            return None;
        }
    }
    Some(r)
}

/// Whether two instructions of F's copies are the same: 3.12 checks a variable that may be
/// unbound with `LOAD_FAST_CHECK`, and the copies may differ there (a copy after the variable's
/// assignment loads it with `LOAD_FAST`); both are 3.11's `LOAD_FAST`, which checks.
fn same_op(a: &RawInstr, b: &RawInstr) -> bool {
    let op = |i: &RawInstr| if i.opcode == v12::LOAD_FAST_CHECK { v12::LOAD_FAST } else { i.opcode };
    (op(a), a.arg) == (op(b), b.arg)
}

pub(super) fn place(raw: &[RawInstr], at: &BTreeMap<u32, usize>, entries: &[Entry], mut placed: Placed, code_len: u32) -> Placed {
    let cover = |o: u32| entries.iter().find(|e| e.start <= o && o < e.end).map(|e| (e.target, e.depth, e.lasti));
    let mut next_key = placed.stream.iter().map(|(k, _)| *k).max().unwrap_or(0).max(code_len) + 2;
    for push in (0..raw.len()).filter(|&p| raw[p].opcode == v12::PUSH_EXC_INFO) {
        let Some(r) = exceptional_copy(raw, at, entries, push) else { continue };
        let push_off = raw[push].offset;
        // Protected by the statement: by its entry, or by a nested statement's whose handler code
        // is (`try: … except …:` as the body of the finally).
        let in_body = |o: u32| protected_by(entries, o, push_off);
        let f = &raw[push + 1..r];
        let n = f.len();
        let cleanup = raw[r + 1].offset;
        // The normal copy: F's instructions right after a protected instruction of the body (line
        // `NOP`s between), or jumped to from one, not protected by the statement, protected as its
        // clean-up block is (by the enclosing statement's handler, or none); the last of them (the
        // body's exits have their own copies, before it).
        let jumped_from_body = |o: u32| {
            raw.iter().any(|i| in_body(i.offset) && v12::jump_target(i.op_offset, i.opcode, i.arg) == Some(o))
        };
        let normal: Vec<usize> = (1..(push + 1).saturating_sub(n))
            .filter(|&q| {
                let mut b = q - 1;
                // (Reached from the body by falling through, or by a jump from it to the copy or
                // to the line `NOP`s before it: an `if` ending the body, after an exit's copy.)
                let mut reached = false;
                while b > 0 && raw[b].opcode == v12::NOP && !in_body(raw[b].offset) {
                    reached |= jumped_from_body(raw[b].offset);
                    b -= 1;
                }
                (in_body(raw[b].offset) || reached || jumped_from_body(raw[q].offset))
                    && raw[q..q + n].iter().zip(f).all(|(a, b)| same_op(a, b))
                    && raw[q..q + n].iter().all(|i| !in_body(i.offset) && cover(i.offset) == cover(cleanup))
            })
            .collect();
        let Some(&q) = normal.last() else { continue };
        let st = &mut placed.stream;
        let pos = |st: &Vec<(u32, Vec<Out>)>, key: u32| st.iter().position(|(k, _)| *k == key);
        // The exceptional copy and its clean-up block, together in the stream, reached only
        // through the exception table (jumps inside F aside), nothing falling through into it.
        let own: HashSet<u32> = raw[push..r + 4].iter().map(|i| i.offset).collect();
        let (Some(s), Some(e)) = (pos(st, push_off), pos(st, raw[r + 3].offset)) else { continue };
        if s > e || !st[s..=e].iter().all(|(k, _)| own.contains(k)) {
            continue;
        }
        let jumped_into =
            st.iter().any(|(k, o)| !own.contains(k) && o.iter().any(|o| o.jump.is_some_and(|(_, t)| own.contains(&t))));
        let falls_in = st[..s].iter().rev().find_map(|(_, o)| o.last()).is_some_and(|o| !ends_block(o));
        if jumped_into || falls_in {
            continue;
        }
        let block: Vec<_> = st.drain(s..=e).collect();
        let last = raw[q + n - 1].offset;
        let Some(l) = pos(st, last) else {
            // (Not expected: put it back.)
            st.splice(s..s, block);
            continue;
        };
        // What follows the normal copy: its own jump (3.11 puts the copy after it), or the code
        // after the statement (3.11 jumps over the copy to it).
        // (Its own: protected as the normal copy is. A jump protected otherwise ends an
        // enclosing statement's body — `handlers::place` adds one before the chain it places —:
        // the copy goes before it, behind a jump of its own.)
        let next = st[l + 1..].iter().position(|(_, o)| !o.is_empty()).map(|k| l + 1 + k);
        let own_jump = next.is_some_and(|k| {
            st[k].1.len() == 1
                && matches!(st[k].1[0].jump, Some((Jump::Always | Jump::NoInterrupt, _)))
                && cover(*placed.cover_as.get(&st[k].0).unwrap_or(&st[k].0)) == cover(last)
        });
        let mut insert = Vec::new();
        let at_ = match next {
            Some(k) if own_jump => k + 1,
            Some(_) => {
                let Some(&(join, _)) = st.get(l + 1) else { unreachable!("next is after l") };
                let line = st[l].1.last().map_or(raw[q + n - 1].line, |o| o.line);
                let key = next_key;
                next_key += 2;
                placed.cover_as.insert(key, last);
                insert.push((key, vec![Out { op: 0, arg: 0, line, jump: Some((Jump::Always, join)) }]));
                // The normal copy's own jumps to the code after it (an `if` ending F) go to that
                // jump, as the exceptional copy's go to its `RERAISE 0` (3.11's layout).
                let after = [join, raw.get(q + n).map_or(join, |i| i.offset)];
                let copy: HashSet<u32> = raw[q..q + n].iter().map(|i| i.offset).collect();
                for (_, outs) in st.iter_mut().filter(|(k, _)| copy.contains(k)) {
                    for o in outs.iter_mut() {
                        if let Some((kind, t)) = o.jump {
                            if after.contains(&t) {
                                o.jump = Some((kind, key));
                            }
                        }
                    }
                }
                l + 1
            }
            None => {
                st.splice(s..s, block);
                continue;
            }
        };
        insert.extend(block);
        st.splice(at_..at_, insert);
    }
    placed
}

/// On 3.12's own bytecode (needs a 3.12 interpreter): the exceptional copy of F follows its normal
/// copy, as in 3.11's code, where 3.12 puts it after the whole function.
#[cfg(all(test, poppy_py = "3.12"))]
mod tests {
    use crate::py311::testing::{code_info_of, names, well_formed};

    /// The opcode names of the normalised `src`, and where the exceptional copy starts in them.
    fn layout(src: &str) -> (Vec<&'static str>, usize) {
        let ci = super::super::normalise::normalise(&code_info_of(src)).unwrap();
        well_formed(&ci);
        let n = names(&ci);
        let push = n.iter().rposition(|&o| o == "PUSH_EXC_INFO").unwrap();
        (n, push)
    }

    #[test]
    fn the_exceptional_copy_follows_the_normal_one() {
        // Code after the statement: the normal copy jumps over the exceptional one to it.
        for after in ["    return 1\n", "    k(x)\n"] {
            let (n, push) = layout(&format!("def f(x):\n    try:\n        g(x)\n    finally:\n        h(x)\n{after}"));
            assert_eq!(n[push - 3..push], ["CALL", "POP_TOP", "JUMP_FORWARD"], "{after}: {n:?}");
            assert_eq!(n[push + 1..push + 4], ["LOAD_GLOBAL", "LOAD_FAST", "PRECALL"], "{n:?}");
        }
        // In a loop, the code after the statement and the loop's jump back come after both
        // copies (3.12 has them in the normal copy's path, before the exceptional one).
        let (n, push) = layout(
            "def f(xs):\n    out = []\n    for x in xs:\n        try:\n            y = g(x)\n        except E:\n            \
             y = 0\n        finally:\n            h(x)\n        out.append(y)\n    return out\n",
        );
        assert_eq!(n[push - 3..push], ["CALL", "POP_TOP", "JUMP_FORWARD"], "{n:?}");
        let back = n.iter().position(|&o| o == "JUMP_BACKWARD").unwrap();
        assert!(back > push, "the loop's jump back after the exceptional copy: {n:?}");
        // The statement ends the loop's body: after the loop's own jump back, as 3.11.
        let (n, push) = layout("def f(xs):\n    for x in xs:\n        try:\n            g(x)\n        finally:\n            h(x)\n");
        assert_eq!(n[push - 3..push], ["CALL", "POP_TOP", "JUMP_BACKWARD"], "{n:?}");
    }
}
