//! A `break` out of a `for` loop whose exit block 3.12 copied → 3.11's jump, on the normalised
//! stream (before `handlers::place` lays out the try statements).
//!
//! 3.12 copies a small exit block (the code after the loop up to its `return`, e.g. `return y`)
//! into each `break` of the loop: `POP_TOP` (the iterator), then the copy. 3.11 pops and jumps to
//! the one copy after the loop. In a try body that matters: a body ending with `break` ends with
//! a jump in 3.11, after which the handler chain goes; in 3.12 it ends with the copy, and the
//! chain stayed after the whole function, outside the loop its handlers jump back into (the
//! lifter's "loop layout" fallback).
//!
//! `rewrite` replaces each such copy inside the loop's body (between its `FOR_ITER` and its
//! `END_FOR`; handler chains, laid out after the function, are `handlers::place`'s) by a jump to
//! the code after the loop, when the two are the same instructions with the same lines and the
//! same exception-table protection, and the copy ends with its return or raise: the jump runs
//! exactly the instructions the copy would have. A copy that is a lone `RETURN_CONST` stays
//! (`POP_TOP; LOAD_CONST k; RETURN_VALUE` is also 3.11's `return k` in a loop).
//! Depends on this version's `opcode` and the stream types of `normalise`.
use super::decode::RawInstr;
use super::normalise::{Jump, Out};
use super::opcode as v12;
use crate::py311::exception_table::Entry;
use std::collections::{BTreeMap, HashSet};

pub(super) fn rewrite(
    raw: &[RawInstr],
    at: &BTreeMap<u32, usize>,
    entries: &[Entry],
    targets: &HashSet<u32>,
    mut stream: Vec<(u32, Vec<Out>)>,
) -> Vec<(u32, Vec<Out>)> {
    let cover = |o: u32| entries.iter().find(|e| e.start <= o && o < e.end).map(|e| (e.target, e.depth, e.lasti));
    let pos: BTreeMap<u32, usize> = stream.iter().enumerate().map(|(p, (k, _))| (*k, p)).collect();
    for (i, fi) in raw.iter().enumerate().filter(|(_, r)| r.opcode == v12::FOR_ITER) {
        let Some(&end_for) = v12::jump_target(fi.op_offset, fi.opcode, fi.arg).and_then(|t| at.get(&t)) else { continue };
        if raw[end_for].opcode != v12::END_FOR {
            continue;
        }
        // The code after the loop: straight-line up to its return or raise. (After the line
        // `NOP`s that may follow the `END_FOR`, which the copy has not: the jump goes past them.)
        let mut a0 = end_for + 1;
        while raw.get(a0).is_some_and(|r| r.opcode == v12::NOP) && !targets.contains(&raw[a0].offset) {
            a0 += 1;
        }
        let mut a1 = a0;
        let exit = loop {
            let Some(r) = raw.get(a1) else { break false };
            if a1 > a0 && targets.contains(&r.offset) || v12::is_jump(r.opcode) {
                break false;
            }
            if matches!(r.opcode, v12::RETURN_VALUE | v12::RETURN_CONST | v12::RAISE_VARARGS) {
                break true;
            }
            a1 += 1;
        };
        if !exit || (a1 == a0 && raw[a0].opcode == v12::RETURN_CONST) {
            continue;
        }
        let len = a1 + 1 - a0;
        let outs_len = |st: &Vec<(u32, Vec<Out>)>, k: usize| pos.get(&raw[k].offset).map(|&p| st[p].1.len());
        for q in i + 2..(end_for + 1).saturating_sub(len) {
            let same = raw[q - 1].opcode == v12::POP_TOP
                && (0..len).all(|d| {
                    let (c, o) = (raw[q + d], raw[a0 + d]);
                    (c.opcode, c.arg, c.line) == (o.opcode, o.arg, o.line)
                        && cover(c.offset) == cover(o.offset)
                        && (d == 0 || !targets.contains(&c.offset))
                        && outs_len(&stream, q + d).is_some_and(|x| Some(x) == outs_len(&stream, a0 + d))
                });
            if !same {
                continue;
            }
            let line = raw[q - 1].line;
            stream[pos[&raw[q].offset]].1 = vec![Out { op: 0, arg: 0, line, jump: Some((Jump::Always, raw[a0].offset)) }];
            for d in 1..len {
                stream[pos[&raw[q + d].offset]].1.clear();
            }
        }
    }
    stream
}
