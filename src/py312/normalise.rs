//! 3.12 bytecode → the 3.11 forms the lifter translates: "version differences end at decoding".
//!
//! `normalise` rewrites a 3.12 `CodeInfo` (and its nested code objects) into a `CodeInfo` whose
//! `co_code` is 3.11 bytecode: 3.11 opcode numbers and inline-cache sizes, 3.11 instruction
//! shapes (`PRECALL` before `CALL`, `LOAD_METHOD`, `POP_JUMP_FORWARD/BACKWARD_IF_*`,
//! `JUMP_IF_*_OR_POP`, the loop's `FOR_ITER` target past the loop …), with the line table and the
//! exception table moved to the new offsets. Byte offsets change (one 3.12 instruction may become
//! two); nothing after the lifter sees them (tracebacks are placed from lines and the real code
//! object), so the lifter, its passes and its goldens stay version-neutral.
//!
//! What has no 3.11 form is an `Err` naming the construct and its line (the function then runs
//! in plain CPython with that reason). docs/versions.md has the table of rewrites.
//! Depends on `py311` (the target forms, `CodeInfo`, the exception-table reader) and on this
//! version's `opcode` and `decode`.
use super::opcode as v12;
use crate::py311::exception_table::{self, Entry};
use crate::py311::opcode as v11;
use super::decode::RawInstr;
use crate::bezoar::ir::Const;
use crate::py311::{self, CodeInfo, CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR};
use crate::pyver::layout;
use std::collections::{BTreeMap, HashSet};

/// `co_flags` of a 3.11 comprehension's code object.
const CO_OPTIMIZED: u32 = 0x1;
const CO_NEWLOCALS: u32 = 0x2;
const CO_NESTED: u32 = 0x10;

/// `CALL_INTRINSIC_1` arguments (Include/internal/pycore_intrinsics.h).
const INTRINSIC_PRINT: u32 = 1;
const INTRINSIC_IMPORT_STAR: u32 = 2;
const INTRINSIC_STOPITERATION_ERROR: u32 = 3;
const INTRINSIC_ASYNC_GEN_WRAP: u32 = 4;
const INTRINSIC_UNARY_POSITIVE: u32 = 5;
const INTRINSIC_LIST_TO_TUPLE: u32 = 6;
/// `CALL_INTRINSIC_2`'s `except*` helper.
const INTRINSIC_PREPARE_RERAISE_STAR: u32 = 1;

/// A jump in the normalised stream whose direction (and so its 3.11 opcode) is known only once
/// the target's new offset is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Jump {
    /// `JUMP_FORWARD` / `JUMP_BACKWARD`.
    Always,
    /// `JUMP_BACKWARD_NO_INTERRUPT` (always backward).
    NoInterrupt,
    /// `POP_JUMP_{FORWARD,BACKWARD}_IF_*`, by `pop_jump_sense`'s `(tests None, jumps when it holds)`.
    Pop(bool, bool),
    /// A forward-only 3.11 jump kept as is (`FOR_ITER`, `JUMP_IF_*_OR_POP`, `SEND`).
    Forward(u8),
}

/// One instruction of the normalised stream.
#[derive(Clone, Copy, Debug)]
pub(super) struct Out {
    /// The 3.11 opcode (for a jump, fixed at encoding from `jump`).
    pub(super) op: u8,
    pub(super) arg: u32,
    pub(super) line: u32,
    /// The jump and its target as a 3.12 byte offset.
    pub(super) jump: Option<(Jump, u32)>,
}

impl Out {
    fn new(op: u8, arg: u32, line: u32) -> Self {
        Out { op, arg, line, jump: None }
    }
}

/// The 3.11 form of a 3.12 code object and of every code object nested in its constants.
/// Err is the fallback reason ("<construct> (<3.12 opcode>) at line N").
pub fn normalise(ci: &CodeInfo) -> Result<CodeInfo, String> {
    if ci.flags & CO_COROUTINE != 0 {
        // The function compiled is an `async def`: translated (its await loops take 3.11's form,
        // `await_loops`), never only scanned, whose NOPs would be lifted as its body.
        return translate(ci, &[]);
    }
    normalise_at(ci, &[])
}

/// `normalise` of the code object at `path` (`co_consts` indices from the function compiled:
/// how the constants of the comprehensions made here name their Python objects).
fn normalise_at(ci: &CodeInfo, path: &[u32]) -> Result<CodeInfo, String> {
    match translate(ci, path) {
        // A generator or coroutine function (not a generator expression) is never translated,
        // only scanned for the variables and globals it writes: what 3.12 spells differently
        // there (`await`'s cleanup handler, …) does not make the enclosing function fall back,
        // and the lifter gives its own reason for the function itself, as on 3.11.
        Err(_) if ci.flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR) != 0 && !ci.is_genexpr() => {
            Ok(scan_only(ci))
        }
        r => r,
    }
}

/// A generator's or coroutine's code for scanning only: the instructions with a same-named 3.11
/// form that is not a jump (stores, loads, calls …), every other one a `NOP`; the exception
/// table kept as it is (it is only tested for being empty).
fn scan_only(ci: &CodeInfo) -> CodeInfo {
    let raw = super::decode::instructions(&ci.code, &ci.lines);
    let stream: Vec<(u32, Vec<Out>)> = raw
        .iter()
        .map(|r| {
            let name = v12::name(r.opcode);
            let out = match v11::OPCODES.iter().find(|&&(n, _, _)| n == name) {
                Some(&(_, op11, _)) if !v11::is_jump(op11) && r.opcode < v12::MIN_INSTRUMENTED_OPCODE => {
                    Out::new(op11, if op11 >= v11::HAVE_ARGUMENT { r.arg } else { 0 }, r.line)
                }
                _ => Out::new(v11::NOP, 0, r.line),
            };
            (r.offset, vec![out])
        })
        .collect();
    let (code, _, lines) = encode(&stream, ci.code.len() as u32).expect("no jumps to lay out");
    // Nothing nested in it is translated either.
    let children = ci.children.iter().map(|(k, c)| (*k, scan_only(c))).collect();
    CodeInfo { code, lines, children, ..ci.clone() }
}

fn translate(ci: &CodeInfo, path: &[u32]) -> Result<CodeInfo, String> {
    let raw = super::decode::instructions(&ci.code, &ci.lines);
    let table = exception_table::entries(&ci.exceptiontable);
    let at: BTreeMap<u32, usize> = raw.iter().enumerate().map(|(i, r)| (r.offset, i)).collect();
    // Jump targets (3.12 offsets): a fused sequence must not have one inside it.
    let mut targets: HashSet<u32> = raw.iter().filter_map(|r| v12::jump_target(r.op_offset, r.opcode, r.arg)).collect();
    targets.extend(table.iter().map(|e| e.target));

    // Handlers 3.11 does not have, dropped with their table entries: a generator's implicit
    // one (3.12 writes it out: StopIteration → RuntimeError, which 3.11 does inside the
    // generator machinery), and an inlined comprehension's, which restores the variables it
    // saved (`SWAP 2; POP_TOP; … STORE_FAST …; RERAISE 0`: its 3.11 form has its own frame).
    let generator = ci.flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR) != 0;
    let mut dropped_handlers = HashSet::new();
    let mut skip: HashSet<u32> = HashSet::new();
    for e in &table {
        let Some(&i) = at.get(&e.target) else { continue };
        let (h, next) = (&raw[i], raw.get(i + 1));
        if generator
            && h.opcode == v12::CALL_INTRINSIC_1
            && h.arg == INTRINSIC_STOPITERATION_ERROR
            && next.is_some_and(|n| n.opcode == v12::RERAISE)
        {
            dropped_handlers.insert(e.target);
            skip.extend([raw[i].offset, raw[i + 1].offset]);
        } else if h.opcode == v12::SWAP && h.arg == 2 && next.is_some_and(|n| n.opcode == v12::POP_TOP) {
            let len = raw[i..].iter().position(|x| !matches!(x.opcode, v12::SWAP | v12::POP_TOP | v12::STORE_FAST));
            if let Some(len) = len.filter(|&n| raw[i + n].opcode == v12::RERAISE && raw[i + n].arg == 0) {
                dropped_handlers.insert(e.target);
                skip.extend(raw[i..=i + len].iter().map(|x| x.offset));
            }
        }
    }
    let awaits = await_loops(ci, &raw, &table, &at);
    skip.extend(awaits.skip.iter().copied());
    let mut children = BTreeMap::new();
    for (k, child) in &ci.children {
        let mut p = path.to_vec();
        p.push(*k);
        children.insert(*k, normalise_at(child, &p)?);
    }
    let send_exits = awaits.send_exits.clone();
    let mut cx =
        Ctx { ci, path, raw, at, targets, skip, localsplus: ci.localsplus(), children, comps: Vec::new(), send_exits };
    let stream = cx.stream(0, cx.raw.len(), None)?;
    let code_len = ci.code.len() as u32;
    // The exception table in 3.12 offsets, each entry as it covers the normalised code.
    // The code a dropped handler protected is protected as the handler itself was (an inlined
    // comprehension's restoring handler inside a try body is covered by the try's entry, and so
    // is the call of the comprehension made in its place), or not at all.
    let kept: Vec<Entry> = table.iter().filter_map(|e| awaits.retarget(e)).collect();
    let table12: Vec<Entry> = kept
        .iter()
        .filter_map(|e| {
            if !dropped_handlers.contains(&e.target) {
                return Some(*e);
            }
            let c = kept.iter().find(|c| c.start <= e.target && e.target < c.end && !dropped_handlers.contains(&c.target))?;
            Some(Entry { start: e.start, end: e.end, ..*c })
        })
        // (Entries that cover only dropped code — the dropped handlers — cover nothing.)
        .filter(|e| cx.raw.iter().any(|r| e.start <= r.offset && r.offset < e.end && !cx.skip.contains(&r.offset)))
        .collect();
    // try/except and with handler code in 3.11's layout (`handlers`): the with statements first
    // (a with in a handler is inside the try's chain, which then moves as a whole).
    let stream = super::handlers::place_with(&cx.raw, &cx.at, &ci.consts, &table12, stream, code_len);
    // (A `break`'s copy of the code after its loop → 3.11's jump to it, `breaks`.)
    let broken = super::breaks::rewrite(&cx.raw, &cx.at, &table12, &cx.targets, stream.stream);
    let placed = super::handlers::place(&cx.raw, &cx.at, &ci.consts, &table12, &cx.targets, broken, code_len);
    let placed = super::handlers::Placed { cover_as: stream.cover_as.into_iter().chain(placed.cover_as).collect(), ..placed };
    // Then each finally statement's exceptional copy after its normal copy (`finally`).
    let placed = super::finally::place(&cx.raw, &cx.at, &table12, placed, code_len);
    let (code, offsets, lines) = encode(&placed.stream, code_len)?;
    let entries = super::handlers::table(&placed, &table12, &offsets, code.len() as u32);
    let mut children = cx.children;
    let mut consts = ci.consts.clone();
    for (k, comp) in cx.comps {
        debug_assert_eq!(k as usize, consts.len());
        consts.push(Const::Opaque { co_index: k, repr: format!("<code object {} line {}>", comp.qualname, comp.firstlineno) });
        children.insert(k, comp);
    }
    Ok(CodeInfo { code, lines, exceptiontable: exception_table::encode(&entries), children, consts, ..ci.clone() })
}

/// The state of one code object's normalisation.
struct Ctx<'a> {
    ci: &'a CodeInfo,
    path: &'a [u32],
    raw: Vec<RawInstr>,
    /// Index in `raw` of each 3.12 offset.
    at: BTreeMap<u32, usize>,
    targets: HashSet<u32>,
    /// Instructions dropped (the handlers above).
    skip: HashSet<u32>,
    localsplus: Vec<String>,
    /// The nested code objects, normalised.
    children: BTreeMap<u32, CodeInfo>,
    /// The code objects made for inlined comprehensions, with their new `co_consts` indices
    /// (after the real ones: nothing resolves them to Python objects).
    comps: Vec<(u32, CodeInfo)>,
    /// The `END_SEND`s that end a coroutine's await loop (`await_loops`).
    send_exits: HashSet<u32>,
}

/// How the variables of an inlined comprehension's body map into the code object made for it
/// (3.11's layout: `.0`, the comprehension's own variables, then its free variables).
struct Remap {
    /// The variables the comprehension saved and cleared: its own (child slots 1..).
    own: Vec<String>,
    /// Those of them that are cells (captured by code nested in the body).
    cells: Vec<String>,
    /// The enclosing variables it uses, in first-use order.
    free: Vec<String>,
    /// The code objects made for the comprehensions nested in this one's body, by their index
    /// in its `co_consts` (after the copied ones).
    children: Vec<(u32, CodeInfo)>,
}

impl Remap {
    fn free_slot(&mut self, name: &str) -> u32 {
        let j = match self.free.iter().position(|f| f == name) {
            Some(j) => j,
            None => {
                self.free.push(name.to_string());
                self.free.len() - 1
            }
        };
        (1 + self.own.len() + j) as u32
    }
}

impl Ctx<'_> {
    /// Whether `raw[i]` is reached only as a while loop's exit from its test at the bottom: after
    /// `POP_JUMP_IF_X raw[i]; JUMP_BACKWARD head`.
    fn while_exit(&self, i: usize) -> bool {
        i >= 2 && self.raw[i - 1].opcode == v12::JUMP_BACKWARD && {
            let c = self.raw[i - 2];
            v12::pop_jump_sense(c.opcode).is_some() && v12::jump_target(c.op_offset, c.opcode, c.arg) == Some(self.raw[i].offset)
        }
    }

    /// The offset of `X` when `raw[i]` (`POP_JUMP_IF_X L; JUMP_BACKWARD head`, a conditional
    /// jump 3.12 threaded back to an enclosing loop's head `head`) is part of the test of a while
    /// loop that ends that loop's body, or a jump out of that while loop, with the bottom copy of
    /// the test after the body:
    ///
    /// ```text
    ///     POP_JUMP_IF_X L; JUMP_BACKWARD head      (raw[i], raw[i + 1]: the top test's jump)
    /// L:  … (the rest of the test) …
    /// B:  … body …
    ///     POP_JUMP_IF_Y X; JUMP_BACKWARD B         (the bottom copy's last jump)
    /// X:  JUMP_BACKWARD head
    /// ```
    ///
    /// 3.11's jumps go forward to `X` (`POP_JUMP_FORWARD_IF_not-X X`), which the lifter takes for
    /// the loop's exit, the two copies of the test then being one (`lift::cfg`'s loop
    /// inversion); jumping back to `head` from there does the same, one jump later. (Kept as a
    /// backward jump to `head`, the loop's `continue`s, which go to the top test, made the
    /// lifter's structure recovery go round a cycle of regions.) `raw[i]` is in the test when
    /// only test code (no store, return or loop) lies between it and `B`, or inside the loop
    /// (the bottom copy's other jumps, a `break`).
    fn while_top_exit(&self, i: usize, hi: usize, head: u32) -> Option<u32> {
        let here = self.raw[i].offset;
        let jump_back = |k: usize| {
            let j = self.raw[k];
            (j.opcode == v12::JUMP_BACKWARD).then(|| v12::jump_target(j.op_offset, j.opcode, j.arg)).flatten()
        };
        // The first bottom copy's exit jumping back to `head` after `raw[i]`.
        let k = (i + 2..hi.saturating_sub(2)).find(|&k| {
            let (c, x) = (self.raw[k], self.raw[k + 2]);
            v12::pop_jump_sense(c.opcode).is_some()
                && v12::jump_target(c.op_offset, c.opcode, c.arg) == Some(x.offset)
                && jump_back(k + 1).is_some()
                && !self.targets.contains(&self.raw[k + 1].offset)
                && jump_back(k + 2) == Some(head)
                && !self.skip.contains(&x.offset)
        })?;
        let body = jump_back(k + 1)?;
        let in_test = || {
            let b = *self.at.get(&body)?;
            self.raw[i + 2..b]
                .iter()
                .all(|r| {
                    !matches!(
                        r.opcode,
                        v12::STORE_FAST
                            | v12::STORE_NAME
                            | v12::STORE_GLOBAL
                            | v12::STORE_DEREF
                            | v12::STORE_ATTR
                            | v12::STORE_SUBSCR
                            | v12::RETURN_VALUE
                            | v12::RETURN_CONST
                            | v12::FOR_ITER
                    )
                })
                .then_some(())
        };
        (body <= here || (body > here && in_test().is_some())).then_some(self.raw[k + 2].offset)
    }

    /// The outputs of the small exit block the backward jump `j` goes to, when it is straight-line
    /// code (at most 8 instructions, none of them a jump or dropped) up to a `return`, each
    /// instruction protected as `j` is by the exception table, already in `stream`.
    fn exit_block(&self, stream: &[(u32, Vec<Out>)], j: RawInstr) -> Option<Vec<Out>> {
        let t = *self.at.get(&v12::jump_target(j.op_offset, j.opcode, j.arg)?)?;
        let table = exception_table::entries(&self.ci.exceptiontable);
        let cover = |o: u32| table.iter().find(|e| e.start <= o && o < e.end).map(|e| (e.target, e.depth, e.lasti));
        let mut outs = Vec::new();
        for k in t..(t + 8).min(self.raw.len()) {
            let i = self.raw[k];
            if v12::is_jump(i.opcode) || self.skip.contains(&i.offset) || cover(i.offset) != cover(j.offset) {
                return None;
            }
            let (_, o) = stream.iter().rev().find(|(key, _)| *key == i.offset)?;
            if o.is_empty() || o.iter().any(|o| o.jump.is_some()) {
                return None;
            }
            outs.extend(o.iter().copied());
            if matches!(i.opcode, v12::RETURN_VALUE | v12::RETURN_CONST) {
                return Some(outs);
            }
        }
        None
    }

    /// The normalised instructions of `raw[lo..hi]`, each 3.12 instruction's outputs under its
    /// offset (none when it is dropped). With `remap`, the instructions are an inlined
    /// comprehension's body, its variables renumbered into the code object made for it.
    fn stream(&mut self, lo: usize, hi: usize, mut remap: Option<&mut Remap>) -> Result<Vec<(u32, Vec<Out>)>, String> {
        let mut stream: Vec<(u32, Vec<Out>)> = Vec::with_capacity(hi - lo);
        let mut i = lo;
        while i < hi {
            let r = self.raw[i];
            let line = r.line;
            let arg = r.arg;
            let mut outs = Vec::new();
            let raw = &self.raw;
            let free = |k: usize| k < hi && !self.targets.contains(&raw[k].offset);
            let op12 = |k: usize| raw.get(k).filter(|_| k < hi).map(|x| x.opcode);
            if self.skip.contains(&r.offset) {
                stream.push((r.offset, outs));
                i += 1;
                continue;
            }
            // `a and b` / `a or b` as a value: COPY 1; POP_JUMP_IF_FALSE L; POP_TOP → JUMP_IF_FALSE_OR_POP L.
            if r.opcode == v12::COPY
                && arg == 1
                && matches!(op12(i + 1), Some(v12::POP_JUMP_IF_FALSE | v12::POP_JUMP_IF_TRUE))
                && op12(i + 2) == Some(v12::POP_TOP)
                && free(i + 1)
                && free(i + 2)
            {
                let j = raw[i + 1];
                let op = if j.opcode == v12::POP_JUMP_IF_FALSE { v11::JUMP_IF_FALSE_OR_POP } else { v11::JUMP_IF_TRUE_OR_POP };
                let target = v12::jump_target(j.op_offset, j.opcode, j.arg).unwrap();
                stream.push((r.offset, vec![Out { op, arg: 0, line, jump: Some((Jump::Forward(op), target)) }]));
                stream.push((j.offset, Vec::new()));
                stream.push((raw[i + 2].offset, Vec::new()));
                i += 3;
                continue;
            }
            // A conditional jump over a backward jump (3.12 has no backward conditional jumps):
            // POP_JUMP_IF_X L; JUMP_BACKWARD T; L: → POP_JUMP_BACKWARD_IF_not-X T.
            if let Some((none, when)) = v12::pop_jump_sense(r.opcode) {
                if op12(i + 1) == Some(v12::JUMP_BACKWARD) && free(i + 1) {
                    let b = raw[i + 1];
                    let over = v12::jump_target(r.op_offset, r.opcode, arg).unwrap();
                    let after = b.op_offset + 2 + 2 * v12::cache_entries(b.opcode) as u32;
                    if over == after {
                        let mut target = v12::jump_target(b.op_offset, b.opcode, b.arg).unwrap();
                        // A while loop's test at its top whose exit 3.12 threaded to an enclosing
                        // loop's head: 3.11 jumps forward to the exit of the bottom copy of the
                        // test, itself a jump back to that head (`while_top_exit`).
                        if let Some(exit) = self.while_top_exit(i, hi, target) {
                            target = exit;
                        }
                        stream.push((r.offset, vec![Out { op: 0, arg: 0, line, jump: Some((Jump::Pop(none, !when), target)) }]));
                        stream.push((b.offset, Vec::new()));
                        i += 2;
                        continue;
                    }
                }
            }
            let fail = |what: &str| format!("{what} ({}) at line {line}", v12::name(r.opcode));
            if r.opcode == v12::LOAD_FAST_AND_CLEAR {
                i = self.comprehension(i, hi, &mut stream, remap.as_deref_mut())?;
                continue;
            }
            // In a comprehension's body: its own variables and the enclosing ones.
            if let Some(m) = remap.as_deref_mut() {
                let name = || self.localsplus.get(arg as usize).cloned().ok_or_else(|| fail("unexpected local index"));
                let own = |n: &str| m.own.iter().position(|o| o == n).map(|j| 1 + j as u32);
                let out = match r.opcode {
                    v12::LOAD_FAST | v12::LOAD_FAST_CHECK | v12::STORE_FAST | v12::DELETE_FAST => {
                        let n = name()?;
                        let op = match r.opcode {
                            v12::STORE_FAST => v11::STORE_FAST,
                            v12::DELETE_FAST => v11::DELETE_FAST,
                            _ => v11::LOAD_FAST,
                        };
                        match own(&n) {
                            Some(slot) => Some(Out::new(op, slot, line)),
                            None if op == v11::LOAD_FAST => Some(Out::new(v11::LOAD_DEREF, m.free_slot(&n), line)),
                            None if op == v11::STORE_FAST => Some(Out::new(v11::STORE_DEREF, m.free_slot(&n), line)),
                            None => return Err(fail("del of an enclosing variable in a comprehension")),
                        }
                    }
                    v12::LOAD_DEREF | v12::STORE_DEREF | v12::LOAD_CLOSURE => {
                        let n = name()?;
                        let op = match r.opcode {
                            v12::LOAD_DEREF => v11::LOAD_DEREF,
                            v12::STORE_DEREF => v11::STORE_DEREF,
                            _ => v11::LOAD_CLOSURE,
                        };
                        let slot = match own(&n) {
                            Some(slot) if m.cells.contains(&n) => slot,
                            Some(_) => return Err(fail("unexpected cell in an inlined comprehension")),
                            None => m.free_slot(&n),
                        };
                        Some(Out::new(op, slot, line))
                    }
                    v12::MAKE_CELL | v12::COPY_FREE_VARS | v12::DELETE_DEREF => {
                        return Err(fail("closure inside an inlined comprehension"))
                    }
                    // Code nested in the body is the function's (its constants are named by
                    // their path through the comprehension's code object, which Python does
                    // not have: only code whose constants are all plain values).
                    v12::LOAD_CONST if self.ci.children.get(&arg).is_some_and(|c| !plain_consts(c)) => {
                        return Err(fail("nested code with constants of its own inside an inlined comprehension"))
                    }
                    v12::RETURN_VALUE | v12::RETURN_CONST | v12::YIELD_VALUE => {
                        return Err(fail("unexpected bytecode shape in an inlined comprehension"))
                    }
                    _ => None,
                };
                if let Some(out) = out {
                    stream.push((r.offset, vec![out]));
                    i += 1;
                    continue;
                }
            }
            let target = v12::jump_target(r.op_offset, r.opcode, arg);
            match r.opcode {
                v12::CACHE | v12::END_FOR => {}
                v12::CALL => {
                    outs.push(Out::new(v11::PRECALL, arg, line));
                    outs.push(Out::new(v11::CALL, arg, line));
                }
                v12::LOAD_ATTR if arg & 1 == 1 => outs.push(Out::new(v11::LOAD_METHOD, arg >> 1, line)),
                v12::LOAD_ATTR => outs.push(Out::new(v11::LOAD_ATTR, arg >> 1, line)),
                v12::COMPARE_OP => outs.push(Out::new(v11::COMPARE_OP, arg >> 4, line)),
                v12::RETURN_CONST => {
                    outs.push(Out::new(v11::LOAD_CONST, arg, line));
                    outs.push(Out::new(v11::RETURN_VALUE, 0, line));
                }
                v12::BINARY_SLICE => {
                    outs.push(Out::new(v11::BUILD_SLICE, 2, line));
                    outs.push(Out::new(v11::BINARY_SUBSCR, 0, line));
                }
                v12::STORE_SLICE => {
                    outs.push(Out::new(v11::BUILD_SLICE, 2, line));
                    outs.push(Out::new(v11::STORE_SUBSCR, 0, line));
                }
                v12::LOAD_FAST_CHECK => outs.push(Out::new(v11::LOAD_FAST, arg, line)),
                v12::YIELD_VALUE => outs.push(Out::new(v11::YIELD_VALUE, 0, line)),
                v12::POP_JUMP_IF_FALSE | v12::POP_JUMP_IF_TRUE | v12::POP_JUMP_IF_NONE | v12::POP_JUMP_IF_NOT_NONE => {
                    let (none, when) = v12::pop_jump_sense(r.opcode).unwrap();
                    outs.push(Out { op: 0, arg: 0, line, jump: Some((Jump::Pop(none, when), target.unwrap())) });
                }
                // A while loop's exit from its test at the bottom (`POP_JUMP_IF_FALSE X; JUMP_BACKWARD
                // head; X: here`) jumping back to a small exit block: 3.12 lays that test out after
                // the function when only a with's suppressed path reaches it, and its exit jumps back
                // to the copy of the code after the loop (`return n`; 3.13 with
                // `JUMP_BACKWARD_NO_INTERRUPT`). A copy of that block, as 3.11 has it there, with the
                // block's lines: the same instructions run, protected alike (checked); no loop is
                // made of it.
                v12::JUMP_BACKWARD | v12::JUMP_BACKWARD_NO_INTERRUPT
                    if remap.is_none() && self.while_exit(i) && self.exit_block(&stream, r).is_some() =>
                {
                    outs = self.exit_block(&stream, r).expect("checked");
                }
                v12::JUMP_FORWARD | v12::JUMP_BACKWARD => {
                    outs.push(Out { op: 0, arg: 0, line, jump: Some((Jump::Always, target.unwrap())) })
                }
                v12::JUMP_BACKWARD_NO_INTERRUPT => {
                    outs.push(Out { op: 0, arg: 0, line, jump: Some((Jump::NoInterrupt, target.unwrap())) })
                }
                // 3.12's FOR_ITER targets the END_FOR after the loop, which the iterator's end
                // skips; END_FOR is dropped, so its offset is the next instruction's: 3.11's target.
                v12::FOR_ITER => outs.push(Out {
                    op: v11::FOR_ITER,
                    arg: 0,
                    line,
                    jump: Some((Jump::Forward(v11::FOR_ITER), target.unwrap())),
                }),
                // A coroutine's await loop (`await_loops`): 3.11's SEND pops the awaited object
                // itself where 3.12's leaves it to END_SEND. In an inlined comprehension's body
                // (3.11: a comprehension that is a coroutine of its own) it falls back, as there.
                v12::SEND if remap.is_none() && target.is_some_and(|t| self.send_exits.contains(&t)) => {
                    outs.push(Out { op: v11::SEND, arg: 0, line, jump: Some((Jump::Forward(v11::SEND), target.unwrap())) })
                }
                v12::END_SEND if remap.is_none() && self.send_exits.contains(&r.offset) => {}
                v12::SEND | v12::END_SEND | v12::CLEANUP_THROW => return Err(fail("yield or await")),
                v12::CALL_INTRINSIC_1 => match arg {
                    INTRINSIC_UNARY_POSITIVE => outs.push(Out::new(v11::UNARY_POSITIVE, 0, line)),
                    INTRINSIC_LIST_TO_TUPLE => outs.push(Out::new(v11::LIST_TO_TUPLE, 0, line)),
                    INTRINSIC_PRINT => outs.push(Out::new(v11::PRINT_EXPR, 0, line)),
                    INTRINSIC_IMPORT_STAR => outs.push(Out::new(v11::IMPORT_STAR, 0, line)),
                    INTRINSIC_ASYNC_GEN_WRAP => outs.push(Out::new(v11::ASYNC_GEN_WRAP, 0, line)),
                    INTRINSIC_STOPITERATION_ERROR => return Err(fail("StopIteration handler of a generator")),
                    _ => return Err(fail("generic type parameters")),
                },
                v12::CALL_INTRINSIC_2 if arg == INTRINSIC_PREPARE_RERAISE_STAR => {
                    outs.push(Out::new(v11::PREP_RERAISE_STAR, 0, line))
                }
                v12::CALL_INTRINSIC_2 => return Err(fail("generic type parameters")),
                v12::LOAD_SUPER_ATTR => return Err(fail("super() attribute")),
                v12::LOAD_LOCALS | v12::LOAD_FROM_DICT_OR_GLOBALS | v12::LOAD_FROM_DICT_OR_DEREF => {
                    return Err(fail("class body"))
                }
                op => {
                    // Same name, same meaning: the rest of the instruction set.
                    let name = v12::name(op);
                    match v11::OPCODES.iter().find(|&&(n, _, _)| n == name) {
                        Some(&(_, op11, _)) if !v11::is_jump(op11) && op < v12::MIN_INSTRUMENTED_OPCODE => {
                            outs.push(Out::new(op11, if op11 >= v11::HAVE_ARGUMENT { arg } else { 0 }, line))
                        }
                        _ => return Err(format!("unsupported opcode {name} at line {line}")),
                    }
                }
            }
            stream.push((r.offset, outs));
            i += 1;
        }
        Ok(stream)
    }

    /// A list, set or dict comprehension that 3.12 inlined (PEP 709), starting at the
    /// `LOAD_FAST_AND_CLEAR` at `raw[i]` with its iterator on the stack:
    ///
    /// ```text
    /// LOAD_FAST_AND_CLEAR a1 … ak; SWAP k+1; BUILD_LIST 0; SWAP 2
    /// FOR_ITER … (body) … JUMP_BACKWARD; END_FOR
    /// (SWAP n | STORE_FAST a_j | STORE_FAST result | POP_TOP)*   — until every a_j is restored
    /// ```
    ///
    /// becomes 3.11's form: a `<listcomp>` code object (made here, at a new constant index)
    /// called with the iterator, its closure the enclosing variables the body uses:
    /// `LOAD_CLOSURE …; BUILD_TUPLE; LOAD_CONST comp; MAKE_FUNCTION 8; SWAP 2; PRECALL 0; CALL 0`,
    /// then whatever the tail did with the result. Pushes the parent's stream and returns the
    /// index after the tail.
    ///
    /// In a comprehension's body (`outer`), the code object made is that comprehension's child
    /// and its closure comes from that comprehension's variables.
    fn comprehension(
        &mut self,
        i: usize,
        hi: usize,
        stream: &mut Vec<(u32, Vec<Out>)>,
        mut outer: Option<&mut Remap>,
    ) -> Result<usize, String> {
        let line = self.raw[i].line;
        let shape = |what: &str| format!("unexpected bytecode shape (inlined comprehension: {what}) at line {line}");
        let raw = self.raw.clone();
        let get = |k: usize| if k < hi { Ok(raw[k]) } else { Err(shape("cut short")) };
        let mut own = Vec::new();
        let mut j = i;
        while get(j)?.opcode == v12::LOAD_FAST_AND_CLEAR {
            let n = self.localsplus.get(get(j)?.arg as usize).cloned().ok_or_else(|| shape("local index"))?;
            if self.ci.freevars.contains(&n) {
                return Err(format!(
                    "comprehension variable {n} is also a free variable of the function (LOAD_FAST_AND_CLEAR) at line {line}"
                ));
            }
            own.push(n);
            j += 1;
        }
        // Those captured by code in the body: a fresh cell each (`MAKE_CELL` after the saves).
        let mut cells = Vec::new();
        while get(j)?.opcode == v12::MAKE_CELL {
            let n = self.localsplus.get(get(j)?.arg as usize).cloned().ok_or_else(|| shape("local index"))?;
            if !own.contains(&n) {
                return Err(shape("MAKE_CELL of another variable"));
            }
            cells.push(n);
            j += 1;
        }
        // (A saved variable that is a cell of the function but not made a cell here holds plain
        // values in the body: the cell itself was saved and is restored after.)
        let k = own.len();
        let (swap, build, swap2, for_iter) = (get(j)?, get(j + 1)?, get(j + 2)?, get(j + 3)?);
        if swap.opcode != v12::SWAP || swap.arg as usize != k + 1 {
            return Err(shape("no SWAP after the saved variables"));
        }
        let name = match build.opcode {
            v12::BUILD_LIST => "<listcomp>",
            v12::BUILD_SET => "<setcomp>",
            v12::BUILD_MAP => "<dictcomp>",
            _ => return Err(shape("no BUILD_LIST, BUILD_SET or BUILD_MAP")),
        };
        if for_iter.opcode == v12::GET_ANEXT {
            // `async for` in a comprehension: 3.11 makes its iterator with GET_AITER in the
            // function, which the lifter names (3.12's GET_AITER is just before this).
            let at = if i > 0 && self.raw[i - 1].opcode == v12::GET_AITER { self.raw[i - 1].line } else { line };
            return Err(format!("unsupported opcode GET_AITER at line {at}"));
        }
        if build.arg != 0 || swap2.opcode != v12::SWAP || swap2.arg != 2 || for_iter.opcode != v12::FOR_ITER {
            return Err(shape("head"));
        }
        let s = j + 3;
        let end_off = v12::jump_target(for_iter.op_offset, for_iter.opcode, for_iter.arg).unwrap();
        let end = *self.at.get(&end_off).ok_or_else(|| shape("loop end"))?;
        if end >= hi || self.raw[end].opcode != v12::END_FOR {
            return Err(shape("no END_FOR"));
        }
        // The body, as the code object's.
        let mut remap = Remap { own: own.clone(), cells: cells.clone(), free: Vec::new(), children: Vec::new() };
        let body = self.stream(s, end, Some(&mut remap))?;
        let nfree = remap.free.len() as u32;
        let mut child: Vec<(u32, Vec<Out>)> = Vec::new();
        let mut prefix = Vec::new();
        if nfree > 0 {
            prefix.push(Out::new(v11::COPY_FREE_VARS, nfree, line));
        }
        for c in &cells {
            let slot = 1 + own.iter().position(|o| o == c).unwrap() as u32;
            prefix.push(Out::new(v11::MAKE_CELL, slot, line));
        }
        prefix.push(Out::new(v11::RESUME, 0, line));
        prefix.push(Out::new(build.opcode, 0, build.line));
        prefix.push(Out::new(v11::LOAD_FAST, 0, for_iter.line));
        child.push((build.offset, prefix));
        child.extend(body);
        child.push((self.raw[end].offset, vec![Out::new(v11::RETURN_VALUE, 0, self.raw[end].line)]));
        let (code, _, lines) = encode(&child, self.raw[end].offset + 2)?;
        let index = (self.ci.consts.len() + outer.as_ref().map_or(self.comps.len(), |o| o.children.len())) as u32;
        // The function's constants at the same indices — those that are Python objects only the
        // real code object has named by their path in it (nested code is never loaded by the
        // body: it falls back on it) —, then the nested comprehensions'.
        let mut consts: Vec<Const> = self
            .ci
            .consts
            .iter()
            .enumerate()
            .map(|(c, k)| match k {
                Const::Opaque { repr, .. } => {
                    let mut path = self.path.to_vec();
                    path.push(c as u32);
                    Const::Nested { path, repr: repr.clone() }
                }
                k => k.clone(),
            })
            .collect();
        let qualname = format!("{}.<locals>.{name}", outer.as_ref().map_or(self.ci.qualname.as_str(), |_| "<comprehension>"));
        for (k, comp) in &remap.children {
            debug_assert_eq!(*k as usize, consts.len());
            consts.push(Const::Opaque { co_index: *k, repr: format!("<code object {} line {}>", comp.qualname, comp.firstlineno) });
        }
        let mut varnames = vec![py311::ITER_ARG.to_string()];
        varnames.extend(own.iter().cloned());
        let made = (
            index,
            CodeInfo {
                name: name.to_string(),
                qualname,
                filename: self.ci.filename.clone(),
                firstlineno: line,
                argcount: 1,
                posonlyargcount: 0,
                kwonlyargcount: 0,
                flags: CO_OPTIMIZED | CO_NEWLOCALS | CO_NESTED,
                varnames,
                cellvars: cells.clone(),
                freevars: remap.free.clone(),
                names: self.ci.names.clone(),
                consts,
                code,
                lines,
                exceptiontable: Vec::new(),
                children: self.children.clone().into_iter().chain(remap.children.drain(..)).collect(),
            },
        );
        // The call, where the saved variables were loaded; the closure's cells are the
        // function's variables, or in a comprehension's body, that comprehension's.
        let mut call = Vec::new();
        for f in &remap.free {
            let slot = match outer.as_deref_mut() {
                None => self.localsplus.iter().position(|n| n == f).ok_or_else(|| shape("free variable"))? as u32,
                Some(o) => match o.own.iter().position(|n| n == f) {
                    Some(j) => 1 + j as u32,
                    None => o.free_slot(f),
                },
            };
            call.push(Out::new(v11::LOAD_CLOSURE, slot, line));
        }
        match outer.as_deref_mut() {
            None => self.comps.push(made),
            Some(o) => o.children.push(made),
        }
        if nfree > 0 {
            call.push(Out::new(v11::BUILD_TUPLE, nfree, line));
        }
        call.push(Out::new(v11::LOAD_CONST, index, line));
        call.push(Out::new(v11::MAKE_FUNCTION, if nfree > 0 { py311::oparg::MF_CLOSURE } else { 0 }, line));
        call.push(Out::new(v11::SWAP, 2, line));
        call.push(Out::new(v11::PRECALL, 0, line));
        call.push(Out::new(v11::CALL, 0, line));
        stream.push((self.raw[i].offset, call));
        for x in &self.raw[i + 1..=end] {
            stream.push((x.offset, Vec::new()));
        }
        // The tail: the stack CPython left ([saved…, result] after the swaps of the head), the
        // saved variables restored (dropped here: the code object had its own), the result
        // stored or left on the stack.
        #[derive(Clone, Copy, PartialEq)]
        enum Item {
            Iter,
            Saved(usize),
            Result,
        }
        let mut st = vec![Item::Iter];
        st.extend((0..k).map(Item::Saved));
        let n = st.len();
        st.swap(n - 1, n - 1 - k);
        st.push(Item::Result);
        let n = st.len();
        st.swap(n - 1, n - 2);
        if st.pop() != Some(Item::Iter) {
            return Err(shape("stack"));
        }
        let mut t = end + 1;
        // Inside a handler (cold code), 3.12 lays the restoring handler out here, jumped over:
        // `END_FOR; JUMP_FORWARD T; <restoring handler, dropped>; T: <restoring tail>`.
        let mut over = None;
        if let Ok(j) = get(t) {
            let target = v12::jump_target(j.op_offset, j.opcode, j.arg);
            if let Some(&tt) = target.filter(|_| j.opcode == v12::JUMP_FORWARD).and_then(|o| self.at.get(&o)) {
                let only_jump = self.raw.iter().filter(|x| v12::jump_target(x.op_offset, x.opcode, x.arg) == target).count() == 1;
                if tt > t + 1 && tt < hi && only_jump && self.raw[t + 1..tt].iter().all(|x| self.skip.contains(&x.offset)) {
                    for x in &self.raw[t..tt] {
                        stream.push((x.offset, Vec::new()));
                    }
                    over = Some(self.raw[tt].offset);
                    t = tt;
                }
            }
        }
        while st.iter().any(|x| matches!(x, Item::Saved(_))) {
            let x = get(t)?;
            if self.targets.contains(&x.offset) && Some(x.offset) != over {
                return Err(shape("a jump into the restoring tail"));
            }
            let mut outs = Vec::new();
            match x.opcode {
                v12::SWAP if (x.arg as usize) <= st.len() && x.arg >= 2 => {
                    let n = st.len();
                    st.swap(n - 1, n - x.arg as usize);
                }
                v12::STORE_FAST => match st.pop() {
                    Some(Item::Saved(a)) if self.localsplus.get(x.arg as usize) == Some(&own[a]) => {}
                    Some(Item::Result) => {
                        let n = self.localsplus.get(x.arg as usize).ok_or_else(|| shape("local index"))?;
                        outs.push(match outer.as_deref_mut() {
                            None => Out::new(v11::STORE_FAST, x.arg, x.line),
                            Some(o) => match o.own.iter().position(|m| m == n) {
                                Some(j) => Out::new(v11::STORE_FAST, 1 + j as u32, x.line),
                                None => Out::new(v11::STORE_DEREF, o.free_slot(n), x.line),
                            },
                        })
                    }
                    _ => return Err(shape("restoring tail")),
                },
                v12::POP_TOP if st.last() == Some(&Item::Result) => {
                    st.pop();
                    outs.push(Out::new(v11::POP_TOP, 0, x.line));
                }
                _ => return Err(shape("restoring tail")),
            }
            stream.push((x.offset, outs));
            t += 1;
        }
        Ok(t)
    }
}

/// What a coroutine's await loops need beyond the instruction-by-instruction rewrite. 3.12
/// compiles `await e` as
///
/// ```text
///     GET_AWAITABLE; LOAD_CONST None
///  S: SEND E; Y: YIELD_VALUE 2; RESUME 3; JUMP_BACKWARD_NO_INTERRUPT S
///  E: END_SEND
///  …
///  C: CLEANUP_THROW; JUMP_BACKWARD E          (exception table: Y → C, depth 2)
/// ```
///
/// where 3.11 has `… SEND E'; YIELD_VALUE; RESUME 3; JUMP_BACKWARD_NO_INTERRUPT S; E': …`:
/// its SEND pops the finished awaitable (3.12's `END_SEND`) and its `gen_throw` does what the
/// `CLEANUP_THROW` handler does (a `StopIteration` from the awaitable's `throw` is the await's
/// value, anything else is raised at the await). So `END_SEND` is dropped (SEND's target becomes
/// the next instruction, 3.11's) and the handler with it; an exception at `Y` is then handled
/// where one raised by `CLEANUP_THROW` was (the enclosing `try`'s handler, or none — the
/// coroutine's StopIteration handler, dropped as a generator's). Only in a coroutine, and only
/// for that exact shape; any other `SEND`/`END_SEND`/`CLEANUP_THROW` keeps its fallback.
struct AwaitLoops {
    /// The dropped handlers' instructions (`CLEANUP_THROW` and its jump back).
    skip: HashSet<u32>,
    /// The handler offsets, each with the entry that covers it (None: no handler).
    throw_handlers: BTreeMap<u32, Option<Entry>>,
    /// The `END_SEND`s reached only from their loop's `SEND` (and the dropped handlers).
    send_exits: HashSet<u32>,
}

impl AwaitLoops {
    /// `e` with a dropped throw handler replaced by the one that handles its `CLEANUP_THROW`.
    fn retarget(&self, e: &Entry) -> Option<Entry> {
        match self.throw_handlers.get(&e.target) {
            None => Some(*e),
            Some(None) => None,
            Some(Some(outer)) => Some(Entry { start: e.start, end: e.end, ..*outer }),
        }
    }
}

fn await_loops(ci: &CodeInfo, raw: &[RawInstr], table: &[Entry], at: &BTreeMap<u32, usize>) -> AwaitLoops {
    let mut out = AwaitLoops { skip: HashSet::new(), throw_handlers: BTreeMap::new(), send_exits: HashSet::new() };
    if ci.flags & CO_COROUTINE == 0 {
        return out;
    }
    let target = |x: &RawInstr| v12::jump_target(x.op_offset, x.opcode, x.arg);
    // The loops: SEND E; YIELD_VALUE; RESUME 3; JUMP_BACKWARD_NO_INTERRUPT SEND; E: END_SEND —
    // or, in an `async with`'s exit handler, with its CLEANUP_THROW between the jump and E.
    let mut loops: BTreeMap<u32, u32> = BTreeMap::new(); // END_SEND offset → its SEND's
    let mut inline_handlers: HashSet<usize> = HashSet::new();
    for j in 1..raw.len().saturating_sub(4) {
        let w = &raw[j..];
        let (e, inline) = match (w[4].opcode, w.get(5).map(|x| x.opcode)) {
            (v12::END_SEND, _) => (4, false),
            (v12::CLEANUP_THROW, Some(v12::END_SEND)) => (5, true),
            _ => continue,
        };
        let shape = raw[j - 1].opcode == v12::LOAD_CONST
            && w[0].opcode == v12::SEND
            && target(&w[0]) == Some(w[e].offset)
            && w[1].opcode == v12::YIELD_VALUE
            && (w[2].opcode, w[2].arg) == (v12::RESUME, 3)
            && w[3].opcode == v12::JUMP_BACKWARD_NO_INTERRUPT
            && target(&w[3]) == Some(w[0].offset);
        if shape {
            loops.insert(w[e].offset, w[0].offset);
            if inline {
                inline_handlers.insert(j + 4);
            }
        }
    }
    // The handlers: the entry over a loop's YIELD_VALUE only, to `CLEANUP_THROW; JUMP_* E` (or
    // to the one inside the loop, which falls through to E).
    for e in table {
        let Some(&h) = at.get(&e.target) else { continue };
        let over_yield = at.get(&e.start).is_some_and(|&y| raw[y].opcode == v12::YIELD_VALUE && raw[y].offset + 2 == e.end);
        let apart = raw[h].opcode == v12::CLEANUP_THROW
            && raw.get(h + 1).is_some_and(|j| {
                matches!(j.opcode, v12::JUMP_BACKWARD | v12::JUMP_BACKWARD_NO_INTERRUPT)
                    && target(j).is_some_and(|t| loops.contains_key(&t))
            });
        if over_yield && (apart || inline_handlers.contains(&h)) {
            let outer = table.iter().find(|o| o.start <= e.target && e.target < o.end).copied();
            out.throw_handlers.insert(e.target, outer);
            out.skip.insert(raw[h].offset);
            if apart {
                out.skip.insert(raw[h + 1].offset);
            }
        }
    }
    // An END_SEND reached otherwise (or a handler's target) keeps its fallback.
    let handler_targets: HashSet<u32> = table.iter().map(|e| e.target).collect();
    for (&end, &send) in &loops {
        let only_loop = raw
            .iter()
            .filter(|x| target(x) == Some(end))
            .all(|x| x.offset == send || out.skip.contains(&x.offset));
        if only_loop && !handler_targets.contains(&end) {
            out.send_exits.insert(end);
        }
    }
    out
}

/// Whether every constant of `ci` and of the code nested in it is a plain value (code nested in
/// an inlined comprehension's body is reached through the comprehension's made code object, so
/// its constants cannot name Python objects by their path).
fn plain_consts(ci: &CodeInfo) -> bool {
    ci.consts.iter().all(|c| !matches!(c, Const::Opaque { .. } | Const::Nested { .. }))
        && ci.children.is_empty()
}

/// Lays out the stream as 3.11 bytecode: `(co_code, 3.12 offset → new offset, co_lines)`.
#[allow(clippy::type_complexity)]
fn encode(stream: &[(u32, Vec<Out>)], code_len: u32) -> Result<(Vec<u8>, BTreeMap<u32, u32>, Vec<(u32, u32, u32)>), String> {
    const V11: layout::Isa =
        layout::Isa { cache_entries: v11::cache_entries, is_backward_jump: v11::is_backward_jump, extended_arg: v11::EXTENDED_ARG };
    layout::encode(stream, code_len, &V11)
}

impl layout::Item for Out {
    fn line(&self) -> u32 {
        self.line
    }
    fn target(&self) -> Option<u32> {
        self.jump.map(|(_, t)| t)
    }
    fn opcode(&self, forward: bool) -> u8 {
        resolve(self, forward)
    }
    fn arg(&self) -> u32 {
        self.arg
    }
}

/// The 3.11 opcode of `o` (for a jump, in the given direction).
fn resolve(o: &Out, forward: bool) -> u8 {
    match o.jump {
        None => o.op,
        Some((Jump::Always, _)) => {
            if forward {
                v11::JUMP_FORWARD
            } else {
                v11::JUMP_BACKWARD
            }
        }
        // (3.13 jumps back to the code after a try statement from its handlers with it; once
        // the handlers are laid out before that code, `handlers`, the jump is forward.)
        Some((Jump::NoInterrupt, _)) => {
            if forward {
                v11::JUMP_FORWARD
            } else {
                v11::JUMP_BACKWARD_NO_INTERRUPT
            }
        }
        Some((Jump::Forward(op), _)) => op,
        Some((Jump::Pop(none, when), _)) => match (none, when, forward) {
            (false, true, true) => v11::POP_JUMP_FORWARD_IF_TRUE,
            (false, false, true) => v11::POP_JUMP_FORWARD_IF_FALSE,
            (true, true, true) => v11::POP_JUMP_FORWARD_IF_NONE,
            (true, false, true) => v11::POP_JUMP_FORWARD_IF_NOT_NONE,
            (false, true, false) => v11::POP_JUMP_BACKWARD_IF_TRUE,
            (false, false, false) => v11::POP_JUMP_BACKWARD_IF_FALSE,
            (true, true, false) => v11::POP_JUMP_BACKWARD_IF_NONE,
            (true, false, false) => v11::POP_JUMP_BACKWARD_IF_NOT_NONE,
        },
    }
}

/// The rewrites on 3.12's own bytecode (needs a 3.12 interpreter).
#[cfg(all(test, poppy_py = "3.12"))]
mod tests_312 {
    use super::*;
    use crate::py311::decode::{instructions, Instr};
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    use crate::py311::testing::{code_info_of, names, well_formed};

    fn normalised(src: &str) -> CodeInfo {
        normalise(&code_info_of(src)).unwrap()
    }

    #[test]
    fn calls_attributes_jumps_and_returns_take_3_11_forms() {
        let ci = normalised(
            "def f(o, xs, a, b):\n    o.m(xs[1:], k=1)\n    y = o.z\n    c = a and b\n    \
             while a < b:\n        a += 1\n    for x in xs:\n        if x is None:\n            continue\n    return None\n",
        );
        well_formed(&ci);
        let n = names(&ci);
        for (a, b) in [("LOAD_METHOD", "LOAD_ATTR"), ("PRECALL", "CALL"), ("BUILD_SLICE", "BINARY_SUBSCR")] {
            assert!(n.windows(2).any(|w| w[0] == a) && n.contains(&b), "{a} {b} in {n:?}");
        }
        assert!(n.contains(&"JUMP_IF_FALSE_OR_POP"), "{n:?}");
        assert!(n.contains(&"POP_JUMP_BACKWARD_IF_TRUE"), "{n:?}");
        assert_eq!(n[n.len() - 2..], ["LOAD_CONST", "RETURN_VALUE"]);
        assert!(!n.contains(&"<unknown>"), "{n:?}");
        // PRECALL n before each CALL n.
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        for w in ins.windows(2).filter(|w| w[1].opcode == v11::CALL) {
            assert_eq!((w[0].opcode, w[0].arg), (v11::PRECALL, w[1].arg));
        }
    }

    /// A while loop ending a `for` loop's body, with a `continue`: 3.12 threads its top test's
    /// exit back to the `for` loop's head; normalised, it jumps forward to the exit of the
    /// bottom copy of the test (3.11's), itself the jump back.
    #[test]
    fn while_top_test_jumps_forward_to_its_exit() {
        let ci = normalised(
            "def f(xs, w, g):\n    for x in xs:\n        while w:\n            w = h(w)\n            \
             if g:\n                continue\n    return w\n",
        );
        well_formed(&ci);
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        let head = ins.iter().find(|i| i.opcode == v11::FOR_ITER).unwrap().offset;
        // The top test (the first conditional jump) goes forward to a jump back to the head.
        let top = ins.iter().find(|i| v11::pop_jump_sense(i.opcode).is_some()).unwrap();
        assert_eq!(top.name(), "POP_JUMP_FORWARD_IF_FALSE", "{:?}", names(&ci));
        let exit = ins.iter().find(|i| Some(i.offset) == top.jump_target()).unwrap();
        assert_eq!((exit.opcode, exit.jump_target()), (v11::JUMP_BACKWARD, Some(head)));
        // … right after the bottom copy of the test, which jumps back into the body.
        let k = ins.iter().position(|i| i.offset == exit.offset).unwrap();
        assert_eq!(ins[k - 1].name(), "POP_JUMP_BACKWARD_IF_TRUE");
        assert_eq!(ins[k - 1].jump_target(), Some(ins[ins.iter().position(|i| i == top).unwrap() + 1].offset));
    }

    #[test]
    fn inlined_comprehensions_become_code_objects() {
        let ci = normalised(
            "def f(xs, k):\n    x = 1\n    a = [g(x, k) for x in xs if x]\n    \
             b = {x: [y * x for y in x] for x in xs}\n    return a, b, x\n",
        );
        well_formed(&ci);
        assert!(ci.exceptiontable.is_empty(), "the restore handlers are dropped");
        let comps: Vec<&CodeInfo> = ci.children.values().collect();
        assert_eq!(comps.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["<listcomp>", "<dictcomp>"]);
        assert_eq!((comps[0].varnames.clone(), comps[0].freevars.clone()), (vec![".0".into(), "x".into()], vec!["k".into()]));
        assert!(comps.iter().all(|c| c.is_comprehension() && c.argcount == 1));
        let inner: Vec<&CodeInfo> = comps[1].children.values().filter(|c| c.is_comprehension()).collect();
        assert_eq!(inner.len(), 1);
        assert_eq!(inner[0].varnames, [".0", "y"]);
        assert_eq!(inner[0].freevars, ["x"], "the enclosing comprehension's variable");
        let n = names(&ci);
        assert_eq!(n.iter().filter(|&&o| o == "MAKE_FUNCTION").count(), 2, "{n:?}");
        assert!(!n.contains(&"LOAD_FAST_AND_CLEAR") && !n.contains(&"<unknown>"), "{n:?}");
        assert_eq!(names(comps[0])[..4], ["COPY_FREE_VARS", "RESUME", "BUILD_LIST", "LOAD_FAST"]);
    }

    #[test]
    fn exception_table_moves_with_the_code() {
        let ci = normalised("def f(x):\n    try:\n        g(x)\n    finally:\n        h(x)\n    return 1\n");
        well_formed(&ci);
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        let first = exception_table::entries(&ci.exceptiontable)[0];
        let target = ins.iter().find(|i| i.offset == first.target).unwrap();
        assert_eq!(target.name(), "PUSH_EXC_INFO");
    }

    /// Each `GET_AWAITABLE` of `ci` starts 3.11's await loop (what `lift::awaits` folds).
    fn await_loops_of(ci: &CodeInfo) -> usize {
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        let mut loops = 0;
        for (i, a) in ins.iter().enumerate().filter(|(_, a)| a.opcode == v11::GET_AWAITABLE) {
            let w = &ins[i..i + 7];
            assert_eq!(w.iter().map(|x| x.name()).collect::<Vec<_>>()[1..6], ["LOAD_CONST", "SEND", "YIELD_VALUE", "RESUME", "JUMP_BACKWARD_NO_INTERRUPT"], "at {}", a.offset);
            assert_eq!((w[2].jump_target(), w[4].arg, w[5].jump_target()), (Some(w[6].offset), 3, Some(w[2].offset)));
            loops += 1;
        }
        loops
    }

    #[test]
    fn await_loops_take_3_11_forms() {
        let ci = normalised(
            "async def f(x, g):\n    y = await g(x)\n    while y:\n        y = await x\n    return (await g(y)) + 1\n",
        );
        well_formed(&ci);
        assert!(ci.exceptiontable.is_empty(), "the StopIteration and throw handlers are dropped");
        let n = names(&ci);
        assert_eq!(n[..3], ["RETURN_GENERATOR", "POP_TOP", "RESUME"]);
        for gone in ["END_SEND", "CLEANUP_THROW", "CALL_INTRINSIC_1", "<unknown>"] {
            assert!(!n.contains(&gone), "{gone} in {n:?}");
        }
        assert_eq!(await_loops_of(&ci), 3);
    }

    #[test]
    fn an_await_in_a_try_is_covered_by_the_try_alone() {
        // 3.12 splits the try's range around the YIELD_VALUE (to CLEANUP_THROW, itself covered
        // by the try); 3.11's one range covers the whole loop.
        let ci = normalised("async def f(x):\n    try:\n        y = await x\n    except E:\n        y = 0\n    return y\n");
        well_formed(&ci);
        assert_eq!(await_loops_of(&ci), 1);
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        let entries = exception_table::entries(&ci.exceptiontable);
        let send = ins.iter().find(|i| i.opcode == v11::SEND).unwrap();
        let over: Vec<&Entry> = entries.iter().filter(|e| e.start <= send.offset && send.offset + 8 <= e.end).collect();
        assert_eq!(over.len(), 1, "one entry over SEND … JUMP_BACKWARD_NO_INTERRUPT: {entries:?}");
        assert_eq!(ins.iter().find(|i| i.offset == over[0].target).unwrap().name(), "PUSH_EXC_INFO");
        assert!(entries.iter().all(|e| ins.iter().find(|i| i.offset == e.target).unwrap().name() != "CLEANUP_THROW"));
    }

    #[test]
    fn awaits_that_3_11_does_not_compile_fall_back_as_there() {
        // 3.11: a comprehension that is a coroutine of its own, whose SEND the lifter names.
        let err = normalise(&code_info_of("async def f(xs):\n    return [await x for x in xs]\n")).unwrap_err();
        assert_eq!(err, "yield or await (SEND) at line 2");
        // A coroutine nested in the function is only scanned; an async generator is not a coroutine.
        normalise(&code_info_of("def f(x):\n    async def g():\n        return await x\n    return g\n")).unwrap();
    }

    #[test]
    fn constructs_without_a_3_11_form_name_themselves() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            py.run_bound("class A:\n    def f(self):\n        return super().f()\n", Some(&ns), None).unwrap();
            let code = ns.get_item("A").unwrap().unwrap().getattr("f").unwrap().getattr("__code__").unwrap();
            let err = normalise(&crate::py311::code_info(&code).unwrap()).unwrap_err();
            assert_eq!(err, "super() attribute (LOAD_SUPER_ATTR) at line 3");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_table_round_trips() {
        let entries = vec![
            Entry { start: 4, end: 40, target: 200, depth: 0, lasti: false },
            Entry { start: 200, end: 9000, target: 9002, depth: 3, lasti: true },
        ];
        assert_eq!(exception_table::entries(&exception_table::encode(&entries)), entries);
    }
}
