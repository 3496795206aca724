//! 3.13 bytecode → the forms the lifter translates, by way of 3.12's: "version differences end at
//! decoding".
//!
//! `normalise` rewrites a 3.13 `CodeInfo` (and the code objects nested in it) into the 3.12
//! `CodeInfo` CPython 3.12 would have compiled for the same meaning, then hands it to
//! `py312::normalise`, which turns 3.12 forms into 3.11 ones (calls, attributes, jumps, inlined
//! comprehensions …). So only what 3.13 changed since 3.12 is here:
//!
//! - `TO_BOOL` before a conditional jump or `not` is dropped (3.12's jumps and `UNARY_NOT` test
//!   truth themselves), elsewhere (`not not x`) it is `UNARY_NOT; UNARY_NOT`; `COMPARE_OP`'s
//!   operator moves from `oparg >> 5` to `oparg >> 4`, its to-bool bit 16 likewise;
//! - `LOAD_CONST names; CALL_KW n` → `KW_NAMES names; CALL n`;
//! - `LOAD_FAST_LOAD_FAST`, `STORE_FAST_LOAD_FAST`, `STORE_FAST_STORE_FAST` → the two instructions;
//! - `CONVERT_VALUE`, `FORMAT_SIMPLE`, `FORMAT_WITH_SPEC` → `FORMAT_VALUE` with its flags;
//! - `MAKE_FUNCTION; SET_FUNCTION_ATTRIBUTE f…` → `MAKE_FUNCTION` with the flags, and the
//!   `LOAD_FAST`s of a closure's cells (3.13 has no `LOAD_CLOSURE` in `co_code`) → `LOAD_CLOSURE`;
//! - `PUSH_NULL` after the callable (3.13's `[callable, NULL]`) → `PUSH_NULL; SWAP 2` (3.12's
//!   `[NULL, callable]`). `LOAD_GLOBAL`/`LOAD_ATTR` with their NULL bit keep their arguments: 3.13
//!   pushes `[f, NULL]` / `[meth, self]` where 3.12 pushes `[NULL, f]` / `[meth, self]`, and
//!   3.13's `CALL` reads its operands in that order, so reading them as 3.12's is the same call;
//! - `END_FOR; POP_TOP` → `END_FOR` (3.12's pops both); the rest by name (same meaning).
//!
//! What has no 3.12 form is an `Err` naming the construct, its 3.13 opcode and its line (the
//! function then runs in plain CPython with that reason); a generator or coroutine nested in the
//! function is only scanned by the lifter, so there every instruction keeps a form to scan.
//! Depends on `py311` (`CodeInfo`, the exception table), `py312` (its opcodes and its
//! normalisation), `pyver::layout` and this version's `opcode` and `decode`.
use super::opcode as v13;
use crate::py311::exception_table::{self, Entry};
use crate::py311::oparg;
use crate::py311::{CodeInfo, CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR};
use crate::py312::opcode as v12;
use crate::pyver::layout;
use std::collections::{BTreeMap, HashMap, HashSet};

/// `SET_FUNCTION_ATTRIBUTE`'s closure flag (`MAKE_FUNCTION`'s in 3.12).
const MF_CLOSURE: u32 = 8;
/// `FORMAT_VALUE`'s "a spec is on the stack" flag (3.12).
const FVS_HAVE_SPEC: u32 = 4;

/// The 3.11 form of a 3.13 code object and of every code object nested in it (through 3.12's).
/// Err is the fallback reason ("<construct> (<opcode>) at line N").
pub fn normalise(ci: &CodeInfo) -> Result<CodeInfo, String> {
    // The function compiled, even an `async def`, is translated, never only scanned (3.13's
    // await loop is 3.12's but for YIELD_VALUE's argument and RESUME's depth bit, and the jump
    // back of its CLEANUP_THROW handler, which `py312::normalise` takes either way).
    crate::py312::normalise::normalise(&to_312_at(ci, false)?)
}

/// The 3.12 form of a 3.13 code object (nested ones too): `co_code` in 3.12's opcodes and cache
/// sizes, the line and exception tables moved to the new offsets, the rest unchanged.
pub fn to_312(ci: &CodeInfo) -> Result<CodeInfo, String> {
    to_312_at(ci, true)
}

/// `to_312`; `nested`: `ci` is nested in the function compiled. A generator is only scanned (the
/// lifter falls back on one compiled), and so is a coroutine nested in the function, so they
/// may keep a scan form where they have no 3.12 one; the function compiled, if a coroutine, may not.
fn to_312_at(ci: &CodeInfo, nested: bool) -> Result<CodeInfo, String> {
    let scan_kinds = if nested { CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR } else { CO_GENERATOR | CO_ASYNC_GENERATOR };
    let scanned_only = ci.flags & scan_kinds != 0 && !ci.is_genexpr();
    let mut children = BTreeMap::new();
    for (k, child) in &ci.children {
        children.insert(*k, to_312_at(child, true)?);
    }
    let stream = match rewrite(ci) {
        Ok(s) => s,
        // A generator or coroutine function is never translated, only scanned for the variables
        // and globals it writes: what 3.13 spells differently there does not make the enclosing
        // function fall back (the lifter gives its own reason for the function itself).
        Err(_) if scanned_only => scan_form(ci),
        Err(e) => return Err(e),
    };
    let mut stream = stream;
    let moved = !scanned_only && share_handler_exits(ci, &mut stream);
    let table = truth_tests_protected(ci, exception_table::entries(&ci.exceptiontable))?;
    let (code, offsets, lines) = layout::encode(&stream, ci.code.len() as u32, &V12)?;
    let end = code.len() as u32;
    let new_off = |o: u32| -> u32 { *offsets.range(o..).next().map(|(_, v)| v).unwrap_or(&end) };
    let entries: Vec<Entry> = if moved {
        per_instruction_table(&stream, &table, &offsets, end)
    } else {
        table
            .iter()
            .map(|e| Entry { start: new_off(e.start), end: new_off(e.end), target: new_off(e.target), ..*e })
            .filter(|e| e.start < e.end)
            .collect()
    };
    Ok(CodeInfo { code, lines, exceptiontable: exception_table::encode(&entries), children, ..ci.clone() })
}

/// 3.13 gives each exit of the handlers of a try nested in an `as` handler its own copy of the
/// outer handler's continuation — its `POP_EXCEPT`, the `as` name's clean-up and the code after
/// the outer statement up to a `return`, or the jump to that code — where 3.12 has one copy,
/// after the nested statement's clean-up block, which the inner handlers' exits jump to:
///
/// ```text
/// 3.13:  H1: … POP_EXCEPT; <e2 clean-up>; C1: POP_EXCEPT; <e clean-up>; … RETURN_VALUE
///        H2: … POP_EXCEPT; C2: POP_EXCEPT; <e clean-up>; … RETURN_VALUE
///            RERAISE 0; COPY 3; POP_EXCEPT; RERAISE 1
/// 3.12:  H1: … POP_EXCEPT; <e2 clean-up>; JUMP_FORWARD C
///        H2: … POP_EXCEPT; JUMP_FORWARD C
///            RERAISE 0; COPY 3; POP_EXCEPT; RERAISE 1
///        C:  POP_EXCEPT; <e clean-up>; … RETURN_VALUE
/// ```
///
/// (p623's `reraise_in_inner_body`; `py312::handlers` lays 3.12's form out as 3.11's). The last
/// copy `C2` — straight-line from the last `POP_EXCEPT` (the outer handler's) to a
/// `RETURN_VALUE` followed by the nested statement's `RERAISE 0` and clean-up block, after the
/// last inner handler's `as` clean-up if it names the exception —
/// moves after that block, its handler jumping to it; every other copy (the same instructions
/// and exception-table protection, the same lines where an instruction can raise, fallen into)
/// becomes a jump to it. Whether anything
/// moved: the exception table is then rebuilt per instruction (`per_instruction_table`).
fn share_handler_exits(ci: &CodeInfo, stream: &mut Vec<(u32, Vec<Out>)>) -> bool {
    let raw = super::decode::instructions(&ci.code, &ci.lines);
    let table = exception_table::entries(&ci.exceptiontable);
    let cover = |o: u32| table.iter().find(|e| e.start <= o && o < e.end).map(|e| (e.target, e.depth, e.lasti));
    let mut targets: HashSet<u32> = raw.iter().filter_map(|r| v13::jump_target(r.op_offset, r.opcode, r.arg)).collect();
    targets.extend(table.iter().map(|e| e.target));
    let ends_flow = |op: u8| {
        v13::is_jump(op) || matches!(op, v13::RETURN_VALUE | v13::RETURN_CONST | v13::RERAISE | v13::RAISE_VARARGS)
    };
    let mut moved = false;
    let shape = |at: usize, want: &[(u8, Option<u32>)]| {
        raw.get(at..at + want.len()).is_some_and(|w| w.iter().zip(want).all(|(x, &(op, arg))| x.opcode == op && arg.map_or(true, |a| a == x.arg)))
    };
    for r in 0..raw.len() {
        // The last copy: raw[c..=r], then the last inner handler's `as` clean-up block, if it
        // has a name (LOAD_CONST None; STORE_FAST n; DELETE_FAST n; RERAISE 1), and the nested
        // statement's RERAISE 0; COPY 3; POP_EXCEPT; RERAISE 1. It goes after the last.
        if !matches!(raw[r].opcode, v13::RETURN_VALUE | v13::JUMP_FORWARD | v13::JUMP_BACKWARD) {
            continue;
        }
        let name_cleanup = [(v13::LOAD_CONST, None), (v13::STORE_FAST, None), (v13::DELETE_FAST, None), (v13::RERAISE, Some(1))];
        let mut block_end = r + 1;
        if shape(block_end, &name_cleanup) {
            block_end += 4;
        }
        if !shape(block_end, &[(v13::RERAISE, Some(0)), (v13::COPY, Some(3)), (v13::POP_EXCEPT, None), (v13::RERAISE, Some(1))]) {
            continue;
        }
        let block_end = block_end + 3;
        // (The outer handler's POP_EXCEPT: the last one before the return.)
        let Some(c) = (1..r)
            .rev()
            .take(16)
            .take_while(|&k| !ends_flow(raw[k].opcode) && !targets.contains(&raw[k + 1].offset))
            .find(|&k| raw[k].opcode == v13::POP_EXCEPT)
        else {
            continue;
        };
        if ends_flow(raw[c - 1].opcode) {
            continue;
        }
        if (c + 1..=r).any(|k| targets.contains(&raw[k].offset) || ends_flow(raw[k].opcode) && k != r) || targets.contains(&raw[c].offset) {
            continue;
        }
        let len = r + 1 - c;
        // Lines matter where an instruction can raise (its traceback's line); the POP_EXCEPT
        // and `as` clean-up of the copies have the line of the handler they follow.
        let quiet = |k: usize| {
            matches!(raw[k].opcode, v13::POP_EXCEPT | v13::LOAD_CONST | v13::STORE_FAST | v13::NOP | v13::JUMP_FORWARD)
                || (raw[k].opcode == v13::DELETE_FAST && raw[k - 1].opcode == v13::STORE_FAST && raw[k - 1].arg == raw[k].arg)
        };
        let same = |p: usize| {
            (0..len).all(|k| {
                let (a, b) = (raw[p + k], raw[c + k]);
                let target = |x: crate::pyver::decode::RawInstr| v13::jump_target(x.op_offset, x.opcode, x.arg);
                a.opcode == b.opcode
                    && (if v13::is_jump(a.opcode) { target(a) == target(b) } else { a.arg == b.arg })
                    && (a.line == b.line || quiet(c + k))
                    && cover(a.offset) == cover(b.offset)
                    && (k == 0 || !targets.contains(&a.offset))
            })
        };
        let mut copies: Vec<usize> =
            (1..c.saturating_sub(len - 1)).filter(|&p| p + len <= c && same(p) && !ends_flow(raw[p - 1].opcode)).collect();
        // Where 3.12's one copy is: right after the clean-up block when 3.13 has one there too
        // (the target of the nested body's own jumps, e.g. from an `if` branch), which the last
        // copy then jumps to as well; else the last copy, moved there.
        let in_place = block_end + len < raw.len() && same(block_end + 1);
        if in_place {
            copies.push(c);
        }
        if copies.is_empty() {
            continue;
        }
        let key = |stream: &[(u32, Vec<Out>)], k: usize| stream.iter().position(|(o, _)| *o == raw[k].offset);
        let (Some(first), Some(last), Some(dest), Some(before)) = (key(stream, c), key(stream, r), key(stream, block_end), key(stream, c - 1)) else {
            continue;
        };
        let shared = if in_place { raw[block_end + 1].offset } else { raw[c].offset };
        let to_c = Out { op: v12::JUMP_FORWARD, arg: 0, line: raw[c].line, target: Some(shared) };
        for &p in &copies {
            for k in p..p + len {
                if let Some(i) = key(stream, k) {
                    stream[i].1 = if k == p { vec![Out { line: raw[p].line, ..to_c }] } else { Vec::new() };
                }
            }
        }
        if in_place {
            continue;
        }
        // The inner handler's exit jumps to the copy, which goes after the clean-up block.
        stream[before].1.push(Out { line: raw[c - 1].line, ..to_c });
        let block: Vec<(u32, Vec<Out>)> = stream.drain(first..=last).collect();
        let dest = dest - block.len();
        for (j, item) in block.into_iter().enumerate() {
            stream.insert(dest + 1 + j, item);
        }
        moved = true;
    }
    moved
}

/// The exception table of `stream` laid out at `offsets`, each instruction protected as its 3.13
/// offset was by `table` (entries of adjacent instructions with the same handler joined): for a
/// stream in which `share_handler_exits` moved code.
fn per_instruction_table(stream: &[(u32, Vec<Out>)], table: &[Entry], offsets: &BTreeMap<u32, u32>, end: u32) -> Vec<Entry> {
    let new_off = |o: u32| -> u32 { *offsets.range(o..).next().map(|(_, v)| v).unwrap_or(&end) };
    let mut out: Vec<Entry> = Vec::new();
    let live: Vec<&(u32, Vec<Out>)> = stream.iter().filter(|(_, outs)| !outs.is_empty()).collect();
    for (i, (o, _)) in live.iter().enumerate() {
        let start = offsets[o];
        let stop = live.get(i + 1).map_or(end, |(n, _)| offsets[n]);
        let Some(e) = table.iter().find(|e| e.start <= *o && *o < e.end) else { continue };
        let entry = Entry { start, end: stop, target: new_off(e.target), ..*e };
        match out.last_mut() {
            Some(l) if l.end == start && (l.target, l.depth, l.lasti) == (entry.target, entry.depth, entry.lasti) => l.end = stop,
            _ => out.push(entry),
        }
    }
    out
}

const V12: layout::Isa =
    layout::Isa { cache_entries: v12::cache_entries, is_backward_jump: v12::is_backward_jump, extended_arg: v12::EXTENDED_ARG };

/// One 3.12 instruction of the rewritten stream; a jump keeps its opcode (3.12 and 3.13 have the
/// same jumps, each with one direction) and its target as a 3.13 offset.
#[derive(Clone, Copy, Debug)]
struct Out {
    op: u8,
    arg: u32,
    line: u32,
    target: Option<u32>,
}

impl Out {
    fn new(op: u8, arg: u32, line: u32) -> Self {
        Out { op, arg, line, target: None }
    }
}

impl layout::Item for Out {
    fn line(&self) -> u32 {
        self.line
    }
    fn target(&self) -> Option<u32> {
        self.target
    }
    fn opcode(&self, _forward: bool) -> u8 {
        self.op
    }
    fn arg(&self) -> u32 {
        self.arg
    }
}

/// The 3.12 opcode of the same name, if it is not a jump.
fn same_name(op13: u8) -> Option<u8> {
    let name = v13::name(op13);
    if op13 >= v13::MIN_INSTRUMENTED_OPCODE {
        return None;
    }
    v12::OPCODES.iter().find(|&&(n, _, _)| n == name).map(|&(_, op, _)| op).filter(|&op| !v12::is_jump(op))
}

fn plain(op12: u8, arg: u32, line: u32) -> Out {
    Out::new(op12, if op12 >= v12::HAVE_ARGUMENT { arg } else { 0 }, line)
}

/// `table` with each conditional jump whose `TO_BOOL` is dropped (`rewrite`), or that follows a
/// comparison with the to-bool bit, protected as that `TO_BOOL` or comparison was: the jump then tests truth itself (which may raise, in `__bool__`), where 3.13's
/// jump on an exact bool cannot, and 3.13 leaves some of them outside the try body's entry (a
/// `continue` at the end of an `if` in a loop in a try body). A jump protected otherwise than
/// its `TO_BOOL` falls back.
fn truth_tests_protected(ci: &CodeInfo, mut table: Vec<Entry>) -> Result<Vec<Entry>, String> {
    let raw = super::decode::instructions(&ci.code, &ci.lines);
    let cover = |t: &[Entry], o: u32| t.iter().position(|e| e.start <= o && o < e.end);
    for w in raw.windows(3) {
        let (b, j, next) = (w[0], w[1], w[2]);
        // (And a comparison with the to-bool bit, whose result 3.13 converts in the comparison:
        // the jump after it tests the comparison's result itself once normalised.)
        let to_bool = b.opcode == v13::TO_BOOL || (b.opcode == v13::COMPARE_OP && b.arg & 16 != 0);
        if !to_bool || !tested(Some(j.opcode)) {
            continue;
        }
        match (cover(&table, b.offset), cover(&table, j.offset)) {
            (Some(a), None) => {
                let e = table[a];
                table.push(Entry { start: j.offset, end: next.offset, ..e });
            }
            (a, c) if a.map(|a| (table[a].target, table[a].depth, table[a].lasti)) == c.map(|c| (table[c].target, table[c].depth, table[c].lasti)) => {}
            _ => return Err(format!("unexpected bytecode shape (a truth test protected apart from its jump) at line {}", j.line)),
        }
    }
    table.sort_by_key(|e| e.start);
    Ok(table)
}

/// Whether the instruction `op` tests the truth of the value on top (what `TO_BOOL` gives it).
fn tested(op: Option<u8>) -> bool {
    matches!(op, Some(v13::POP_JUMP_IF_TRUE | v13::POP_JUMP_IF_FALSE | v13::UNARY_NOT))
}

/// The 3.12 stream of `ci`: each 3.13 instruction's outputs under its offset.
fn rewrite(ci: &CodeInfo) -> Result<Vec<(u32, Vec<Out>)>, String> {
    let raw = super::decode::instructions(&ci.code, &ci.lines);
    let table = exception_table::entries(&ci.exceptiontable);
    // Jump and handler targets: a fused sequence must not have one inside it.
    let mut targets: HashSet<u32> = raw.iter().filter_map(|r| v13::jump_target(r.op_offset, r.opcode, r.arg)).collect();
    targets.extend(table.iter().map(|e| e.target));
    let localsplus = ci.localsplus();
    let is_cell = |slot: u32| {
        localsplus.get(slot as usize).is_some_and(|n| ci.cellvars.contains(n) || ci.freevars.contains(n))
    };
    let closure = closure_loads(&raw)?;
    let same_jump = same_jump_backs(&raw, &table);
    let n = raw.len();
    let op = |k: usize| raw.get(k).map(|x| x.opcode);
    let free = |k: usize| k < n && !targets.contains(&raw[k].offset);
    let mut stream: Vec<(u32, Vec<Out>)> = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        let r = raw[i];
        let (line, arg) = (r.line, r.arg);
        let fail = |what: &str| format!("{what} ({}) at line {line}", v13::name(r.opcode));
        // A load of a local: `LOAD_CLOSURE` when it is one of a closure's cells.
        let load = |slot: u32, is_closure: bool| -> Result<Out, String> {
            if !is_closure {
                return Ok(Out::new(v12::LOAD_FAST, slot, line));
            }
            if !is_cell(slot) {
                return Err(fail("unexpected bytecode shape (a closure of a local that is not a cell)"));
            }
            Ok(Out::new(v12::LOAD_CLOSURE, slot, line))
        };
        let marks = closure.get(&i).copied().unwrap_or(0);
        let mut outs = Vec::new();
        match r.opcode {
            v13::CACHE => {}
            // Dropped before a jump or `not` (they test truth in 3.12); elsewhere the value is
            // `bool(x)` (`not not x` compiles to a lone TO_BOOL): `not not x` in 3.12, which
            // tests truth the same way.
            v13::TO_BOOL => {
                if !tested(op(i + 1)) {
                    outs.push(Out::new(v12::UNARY_NOT, 0, line));
                    outs.push(Out::new(v12::UNARY_NOT, 0, line));
                }
            }
            // The to-bool bit (16) makes the result `bool(a < b)`: nothing to do where it is
            // tested, `not not` where it is a value (`not not a == b`).
            v13::COMPARE_OP => {
                outs.push(Out::new(v12::COMPARE_OP, (arg >> 5) << 4, line));
                if arg & 16 != 0 && !tested(op(i + 1)) && op(i + 1) != Some(v13::TO_BOOL) {
                    outs.push(Out::new(v12::UNARY_NOT, 0, line));
                    outs.push(Out::new(v12::UNARY_NOT, 0, line));
                }
            }
            v13::LOAD_CONST if op(i + 1) == Some(v13::CALL_KW) && free(i + 1) => {
                let call = raw[i + 1];
                stream.push((r.offset, vec![Out::new(v12::KW_NAMES, arg, line)]));
                stream.push((call.offset, vec![Out::new(v12::CALL, call.arg, call.line)]));
                i += 2;
                continue;
            }
            v13::CALL_KW => return Err(fail("keyword call with computed names")),
            v13::LOAD_FAST => outs.push(load(arg, marks >= 1)?),
            v13::LOAD_FAST_LOAD_FAST => {
                outs.push(load(arg >> 4, marks >= 2)?);
                outs.push(load(arg & 15, marks >= 1)?);
            }
            v13::STORE_FAST_LOAD_FAST => {
                outs.push(Out::new(v12::STORE_FAST, arg >> 4, line));
                outs.push(load(arg & 15, marks >= 1)?);
            }
            v13::STORE_FAST_STORE_FAST => {
                outs.push(Out::new(v12::STORE_FAST, arg >> 4, line));
                outs.push(Out::new(v12::STORE_FAST, arg & 15, line));
            }
            // f-strings: the conversion fused with the formatting that follows it (3.12 converts
            // in FORMAT_VALUE, after the spec is evaluated: a constant spec keeps the order).
            v13::CONVERT_VALUE if op(i + 1) == Some(v13::FORMAT_SIMPLE) && free(i + 1) => {
                stream.push((r.offset, vec![Out::new(v12::FORMAT_VALUE, arg & 3, line)]));
                stream.push((raw[i + 1].offset, Vec::new()));
                i += 2;
                continue;
            }
            v13::CONVERT_VALUE
                if op(i + 1) == Some(v13::LOAD_CONST) && op(i + 2) == Some(v13::FORMAT_WITH_SPEC) && free(i + 1) && free(i + 2) =>
            {
                let (spec, fmt) = (raw[i + 1], raw[i + 2]);
                stream.push((r.offset, Vec::new()));
                stream.push((spec.offset, vec![Out::new(v12::LOAD_CONST, spec.arg, spec.line)]));
                stream.push((fmt.offset, vec![Out::new(v12::FORMAT_VALUE, (arg & 3) | FVS_HAVE_SPEC, fmt.line)]));
                i += 3;
                continue;
            }
            // Before a computed spec: the conversion alone, where 3.13 does it (before the spec's
            // own formatting runs), then `FORMAT_WITH_SPEC` formats the converted value. 3.11 has
            // no instruction for it: `FORMAT_VALUE` with a flag of the normalised form only
            // (`py311::oparg::FVC_CONVERT_ONLY`), which the lifter reads as a conversion.
            v13::CONVERT_VALUE => outs.push(Out::new(v12::FORMAT_VALUE, (arg & 3) | oparg::FVC_CONVERT_ONLY, line)),
            v13::FORMAT_SIMPLE => outs.push(Out::new(v12::FORMAT_VALUE, 0, line)),
            v13::FORMAT_WITH_SPEC => outs.push(Out::new(v12::FORMAT_VALUE, FVS_HAVE_SPEC, line)),
            v13::MAKE_FUNCTION => {
                let mut flags = 0;
                let mut j = i + 1;
                while op(j) == Some(v13::SET_FUNCTION_ATTRIBUTE) && free(j) {
                    flags |= raw[j].arg;
                    j += 1;
                }
                stream.push((r.offset, vec![Out::new(v12::MAKE_FUNCTION, flags, line)]));
                stream.extend(raw[i + 1..j].iter().map(|x| (x.offset, Vec::new())));
                i = j;
                continue;
            }
            v13::SET_FUNCTION_ATTRIBUTE => return Err(fail("function attribute set apart from MAKE_FUNCTION")),
            v13::PUSH_NULL => {
                outs.push(Out::new(v12::PUSH_NULL, 0, line));
                outs.push(Out::new(v12::SWAP, 2, line));
            }
            v13::END_FOR if op(i + 1) == Some(v13::POP_TOP) && free(i + 1) => {
                stream.push((r.offset, vec![Out::new(v12::END_FOR, 0, line)]));
                stream.push((raw[i + 1].offset, Vec::new()));
                i += 2;
                continue;
            }
            v13::END_FOR => return Err(fail("unexpected bytecode shape (END_FOR without POP_TOP)")),
            // The location bits only (3.13 adds an exception-depth bit).
            v13::RESUME => outs.push(Out::new(v12::RESUME, arg & 3, line)),
            o if v13::is_jump(o) => {
                let name = v13::name(o);
                let op12 = v12::OPCODES.iter().find(|&&(n, _, _)| n == name).map(|&(_, op, _)| op);
                let target = v13::jump_target(r.op_offset, o, arg).map(|t| same_jump.get(&t).copied().unwrap_or(t));
                match op12 {
                    Some(op12) if v12::is_jump(op12) => outs.push(Out { op: op12, arg: 0, line, target }),
                    _ => return Err(format!("unsupported opcode {name} at line {line}")),
                }
            }
            o => match same_name(o) {
                Some(op12) => outs.push(plain(op12, arg, line)),
                None => return Err(format!("unsupported opcode {} at line {line}", v13::name(o))),
            },
        }
        stream.push((r.offset, outs));
        i += 1;
    }
    Ok(stream)
}

/// For each `Y: JUMP_BACKWARD h` right after `X: JUMP_BACKWARD h` (the same target, line and
/// exception-table protection), `X` (the first of a run of them): 3.13 may lay a while loop's
/// exits from the top and the bottom copies of its test out as two such jumps back to an
/// enclosing loop's head, where 3.12 and 3.11 have one (the lifter takes the two copies of the
/// test for one when their exits are the same place: `lift::cfg`'s loop inversion). `X` does not
/// fall through into `Y`, so `Y` is reached by jumps only, and jumping to `X` does the same.
fn same_jump_backs(raw: &[crate::pyver::decode::RawInstr], table: &[Entry]) -> HashMap<u32, u32> {
    let cover = |o: u32| table.iter().find(|e| e.start <= o && o < e.end).map(|e| (e.target, e.depth, e.lasti));
    let back = |r: &crate::pyver::decode::RawInstr| {
        (r.opcode == v13::JUMP_BACKWARD).then(|| v13::jump_target(r.op_offset, r.opcode, r.arg)).flatten()
    };
    let mut alias = HashMap::new();
    for w in raw.windows(2) {
        let (x, y) = (w[0], w[1]);
        if back(&x).is_some() && back(&x) == back(&y) && x.line == y.line && cover(x.offset) == cover(y.offset) {
            let first = alias.get(&x.offset).copied().unwrap_or(x.offset);
            alias.insert(y.offset, first);
        }
    }
    alias
}

/// The loads of a closure's cells: for each instruction index, how many of its trailing loads
/// (`LOAD_FAST`: 1, `LOAD_FAST_LOAD_FAST`: up to 2) push a cell into the closure tuple of
/// `LOAD_FAST… ; BUILD_TUPLE k; LOAD_CONST code; MAKE_FUNCTION; SET_FUNCTION_ATTRIBUTE 8`.
fn closure_loads(raw: &[crate::pyver::decode::RawInstr]) -> Result<HashMap<usize, u8>, String> {
    let mut marks = HashMap::new();
    for m in 0..raw.len() {
        if raw[m].opcode != v13::MAKE_FUNCTION
            || raw.get(m + 1).map(|x| (x.opcode, x.arg)) != Some((v13::SET_FUNCTION_ATTRIBUTE, MF_CLOSURE))
        {
            continue;
        }
        let line = raw[m].line;
        let shape = || format!("unexpected bytecode shape (a closure's cells) at line {line}");
        if m < 2 || raw[m - 1].opcode != v13::LOAD_CONST || raw[m - 2].opcode != v13::BUILD_TUPLE {
            return Err(shape());
        }
        let mut left = raw[m - 2].arg;
        let mut j = m - 2;
        while left > 0 {
            if j == 0 {
                return Err(shape());
            }
            j -= 1;
            let here = match raw[j].opcode {
                v13::LOAD_FAST => 1,
                v13::LOAD_FAST_LOAD_FAST => 2,
                _ => return Err(shape()),
            }
            .min(left);
            marks.insert(j, here as u8);
            left -= here;
        }
    }
    Ok(marks)
}

/// A generator's or coroutine's code for scanning only (see `py312::normalise`'s `scan_only`):
/// its stores and loads (superinstructions split), every instruction without a 3.12 form of the
/// same name, and every jump, a `NOP`; no exception handler is moved (the table is only tested
/// for being empty).
fn scan_form(ci: &CodeInfo) -> Vec<(u32, Vec<Out>)> {
    super::decode::instructions(&ci.code, &ci.lines)
        .iter()
        .map(|r| {
            let (arg, line) = (r.arg, r.line);
            let outs = match r.opcode {
                v13::LOAD_FAST_LOAD_FAST => vec![Out::new(v12::LOAD_FAST, arg >> 4, line), Out::new(v12::LOAD_FAST, arg & 15, line)],
                v13::STORE_FAST_LOAD_FAST => {
                    vec![Out::new(v12::STORE_FAST, arg >> 4, line), Out::new(v12::LOAD_FAST, arg & 15, line)]
                }
                v13::STORE_FAST_STORE_FAST => {
                    vec![Out::new(v12::STORE_FAST, arg >> 4, line), Out::new(v12::STORE_FAST, arg & 15, line)]
                }
                v13::CALL_KW => vec![Out::new(v12::CALL, arg, line)],
                o => vec![same_name(o).map_or(Out::new(v12::NOP, 0, line), |op12| plain(op12, arg, line))],
            };
            (r.offset, outs)
        })
        .collect()
}

/// The rewrites on 3.13's own bytecode (needs a 3.13 interpreter): the 3.12 forms, then the
/// 3.11 ones the lifter reads.
#[cfg(all(test, poppy_py = "3.13"))]
mod tests {
    use super::*;
    use crate::py311::decode::{instructions, Instr};
    use crate::py311::opcode as v11;
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    use crate::py311::testing::{code_info_of as code_info, names as names11, well_formed};

    fn names12(ci: &CodeInfo) -> Vec<&'static str> {
        crate::py312::decode::instructions(&ci.code, &ci.lines).iter().map(|i| v12::name(i.opcode)).collect()
    }

    /// The 3.13 opcode names `dis` shows for `f` (what the rewrite starts from).
    fn dis_names(src: &str) -> Vec<String> {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            py.run_bound(src, Some(&ns), None).unwrap();
            py.run_bound("import dis\nnames = [i.opname for i in dis.get_instructions(f)]\n", Some(&ns), None).unwrap();
            ns.get_item("names").unwrap().unwrap().extract().unwrap()
        })
    }

    #[test]
    fn new_3_13_instructions_take_3_12_forms() {
        let src = "def f(o, xs, a, b):\n    o.m(xs[1:], k=1)\n    g(a, b)\n    c = a and b\n    \
                   while a < b:\n        a += 1\n    for x in xs:\n        if not x:\n            break\n    \
                   s = f\"{a!r} {b:>3} {c!r:>4} {x:{a}}\"\n    a, b = b, a\n    (o or g)(1)\n    \
                   u, v = o, xs\n    v, u = u, v\n    def h(q=1, *, r=2):\n        return a + q\n    return s, h, u, v\n";
        let seen = dis_names(src);
        for op in [
            "TO_BOOL", "CALL_KW", "LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "CONVERT_VALUE", "FORMAT_SIMPLE",
            "FORMAT_WITH_SPEC", "SET_FUNCTION_ATTRIBUTE", "PUSH_NULL", "END_FOR",
        ] {
            assert!(seen.iter().any(|s| s == op), "3.13 compiles no {op} here: {seen:?}");
        }
        let ci = code_info(src);
        let ci12 = to_312(&ci).unwrap();
        let n = names12(&ci12);
        for gone in ["<unknown>", "TO_BOOL"] {
            assert!(!n.contains(&gone), "{gone} in {n:?}");
        }
        assert!(n.windows(2).any(|w| w == ["KW_NAMES", "CALL"]), "{n:?}");
        assert!(n.windows(2).any(|w| w == ["PUSH_NULL", "SWAP"]), "{n:?}");
        assert!(n.windows(2).any(|w| w == ["COPY", "POP_JUMP_IF_FALSE"]), "{n:?}");
        assert!(n.contains(&"LOAD_CLOSURE") && n.contains(&"FORMAT_VALUE"), "{n:?}");
        let ins = crate::py312::decode::instructions(&ci12.code, &ci12.lines);
        // `a < b` keeps its operator (Py_LT = 0 → 3.12's 0 << 4); the closure and both defaults
        // are MAKE_FUNCTION's flags; the conversions and specs are FORMAT_VALUE's.
        assert!(ins.iter().any(|i| i.opcode == v12::COMPARE_OP && i.arg == 0));
        assert!(ins.iter().any(|i| i.opcode == v12::MAKE_FUNCTION && i.arg == 8 | 2 | 1));
        let formats: Vec<u32> = ins.iter().filter(|i| i.opcode == v12::FORMAT_VALUE).map(|i| i.arg).collect();
        assert_eq!(formats, [2, 4, 2 | 4, 0, 4]);
        // END_FOR alone, and the loop's FOR_ITER targets it.
        let end_for = ins.iter().position(|i| i.opcode == v12::END_FOR).unwrap();
        assert_ne!(ins[end_for + 1].opcode, v12::POP_TOP);
        let fi = ins.iter().find(|i| i.opcode == v12::FOR_ITER).unwrap();
        assert_eq!(v12::jump_target(fi.op_offset, fi.opcode, fi.arg), Some(ins[end_for].offset));

        let ci11 = normalise(&ci).unwrap();
        well_formed(&ci11);
        let n = names11(&ci11);
        assert!(!n.contains(&"<unknown>"), "{n:?}");
        assert!(n.contains(&"JUMP_IF_FALSE_OR_POP") && n.contains(&"POP_JUMP_BACKWARD_IF_TRUE"), "{n:?}");
        let ins: Vec<Instr> = instructions(&ci11.code, &ci11.lines).collect();
        for w in ins.windows(2).filter(|w| w[1].opcode == v11::CALL) {
            assert_eq!((w[0].opcode, w[0].arg), (v11::PRECALL, w[1].arg));
        }
        assert!(ins.windows(3).any(|w| w[0].opcode == v11::KW_NAMES && w[1].opcode == v11::PRECALL && w[1].arg == 2));
    }

    #[test]
    fn truth_values_outside_tests_are_double_nots() {
        // 3.13 folds `not not` into TO_BOOL, or into COMPARE_OP's to-bool bit.
        let src = "def f(x, a, b):\n    return not not x, not not a == b\n";
        let seen = dis_names(src);
        assert!(seen.windows(2).any(|w| w == ["TO_BOOL", "LOAD_FAST_LOAD_FAST"]), "{seen:?}");
        let ci12 = to_312(&code_info(src)).unwrap();
        let n = names12(&ci12);
        assert_eq!(n.windows(2).filter(|w| w == &["UNARY_NOT", "UNARY_NOT"]).count(), 2, "{n:?}");
        assert!(n.windows(3).any(|w| w == ["COMPARE_OP", "UNARY_NOT", "UNARY_NOT"]), "{n:?}");
    }

    #[test]
    fn inlined_comprehensions_become_code_objects() {
        let ci = normalise(&code_info(
            "def f(xs, k):\n    x = 1\n    a = [g(x, k) for x in xs if x]\n    \
             b = {x: [y * x for y in x] for x in xs}\n    return a, b, x\n",
        ))
        .unwrap();
        well_formed(&ci);
        assert!(ci.exceptiontable.is_empty(), "the restore handlers are dropped");
        let comps: Vec<&CodeInfo> = ci.children.values().collect();
        assert_eq!(comps.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["<listcomp>", "<dictcomp>"]);
        assert_eq!((comps[0].varnames.clone(), comps[0].freevars.clone()), (vec![".0".into(), "x".into()], vec!["k".into()]));
        let inner: Vec<&CodeInfo> = comps[1].children.values().filter(|c| c.is_comprehension()).collect();
        assert_eq!(inner.len(), 1);
        assert_eq!(inner[0].freevars, ["x"], "the enclosing comprehension's variable");
        let n = names11(&ci);
        assert!(!n.contains(&"LOAD_FAST_AND_CLEAR") && !n.contains(&"<unknown>"), "{n:?}");
    }

    #[test]
    fn closures_read_their_cells() {
        // A comprehension variable that is a cell of the function but plain inside the
        // comprehension is loaded with LOAD_FAST there, not as a closure's cell.
        let ci = code_info("def f(xs, b):\n    h = lambda: b\n    ys = [b for b in xs]\n    return h, ys, lambda: b\n");
        let ci12 = to_312(&ci).unwrap();
        let ins = crate::py312::decode::instructions(&ci12.code, &ci12.lines);
        let closures = ins.iter().filter(|i| i.opcode == v12::LOAD_CLOSURE).count();
        assert_eq!(closures, 2, "{:?}", names12(&ci12));
        well_formed(&normalise(&ci).unwrap());
    }

    #[test]
    fn exception_table_moves_with_the_code() {
        let ci = normalise(&code_info("def f(x):\n    try:\n        g(x, k=1)\n    finally:\n        h(x)\n    return 1\n")).unwrap();
        well_formed(&ci);
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        let first = exception_table::entries(&ci.exceptiontable)[0];
        assert_eq!(ins.iter().find(|i| i.offset == first.target).unwrap().name(), "PUSH_EXC_INFO");
    }

    /// 3.13's copies of an outer `as` handler's continuation after each exit of a nested try's
    /// handlers are one in the 3.12 form, after the nested statement's clean-up block, which
    /// the exits jump to (p644).
    #[test]
    fn nested_handler_exits_share_one_continuation() {
        let src = "def f(x):\n    try:\n        return int(x)\n    except ValueError as e:\n        try:\n            \
                   out = g(e)\n        except KeyError as k:\n            out = k\n        except OSError:\n            out = 2\n    \
                   return out\n";
        let ci = code_info(src);
        let returns = |names: Vec<&str>| names.iter().filter(|&&n| n == "RETURN_VALUE").count();
        assert_eq!(returns(dis_names(src).iter().map(|s| s.as_str()).collect()), 4, "three copies in 3.13");
        let ci12 = to_312(&ci).unwrap();
        let n = names12(&ci12);
        assert_eq!(returns(n.clone()), 2, "{n:?}");
        // The copy comes right after the nested statement's clean-up block.
        let k = n.iter().rposition(|&x| x == "RETURN_VALUE").unwrap();
        assert_eq!(n[k - 9..k - 5], ["RERAISE", "COPY", "POP_EXCEPT", "RERAISE"], "{n:?}");
        let ci11 = normalise(&ci).unwrap();
        well_formed(&ci11);
        assert!(crate::lift::lift(&ci11).is_ok());
    }

    #[test]
    fn a_conversion_before_a_computed_spec_comes_first() {
        // 3.13 converts x before it formats w (3.12's FORMAT_VALUE would convert after): the
        // conversion alone, then the spec, then the formatting of the converted value with it.
        let ci = to_312(&code_info("def f(x, w):\n    return f\"{x!r:{w}}\"\n")).unwrap();
        let ins = crate::py312::decode::instructions(&ci.code, &ci.lines);
        let got: Vec<(&str, u32)> =
            ins.iter().filter(|i| i.opcode != v12::RESUME).map(|i| (v12::name(i.opcode), i.arg)).collect();
        let convert = 2 | oparg::FVC_CONVERT_ONLY;
        assert_eq!(
            got,
            [("LOAD_FAST", 0), ("FORMAT_VALUE", convert), ("LOAD_FAST", 1), ("FORMAT_VALUE", 0), ("FORMAT_VALUE", 4), ("RETURN_VALUE", 0)]
        );
        well_formed(&normalise(&code_info("def f(x, w):\n    return f\"{x!r:{w}}\"\n")).unwrap());
    }

    #[test]
    fn constructs_without_a_3_12_form_name_themselves() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            py.run_bound("class A:\n    def f(self):\n        return super().f()\n", Some(&ns), None).unwrap();
            let code = ns.get_item("A").unwrap().unwrap().getattr("f").unwrap().getattr("__code__").unwrap();
            let err = normalise(&crate::py311::code_info(&code).unwrap()).unwrap_err();
            assert_eq!(err, "super() attribute (LOAD_SUPER_ATTR) at line 3");
        });
    }

    #[test]
    fn await_loops_take_3_11_forms() {
        // 3.13's loop: YIELD_VALUE 1 (suspended in a yield-from), RESUME with its depth bit, and
        // a JUMP_BACKWARD_NO_INTERRUPT back from CLEANUP_THROW; 3.11's after both normalisations.
        let src = "async def f(x, g):\n    y = await g(x)\n    try:\n        y = await x\n    except E:\n        pass\n    return y\n";
        let seen = dis_names(src);
        assert!(seen.iter().any(|s| s == "END_SEND") && seen.iter().any(|s| s == "CLEANUP_THROW"), "{seen:?}");
        let ci = normalise(&code_info(src)).unwrap();
        well_formed(&ci);
        let n = names11(&ci);
        assert!(!n.contains(&"END_SEND") && !n.contains(&"CLEANUP_THROW") && !n.contains(&"<unknown>"), "{n:?}");
        let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        let sends: Vec<&Instr> = ins.iter().filter(|i| i.opcode == v11::SEND).collect();
        assert_eq!(sends.len(), 2);
        for s in &sends {
            let k = ins.iter().position(|i| i.offset == s.offset).unwrap();
            let w = &ins[k..k + 4];
            assert_eq!(w.iter().map(|x| x.name()).collect::<Vec<_>>(), ["SEND", "YIELD_VALUE", "RESUME", "JUMP_BACKWARD_NO_INTERRUPT"]);
            assert_eq!((s.jump_target(), w[2].arg, w[3].jump_target()), (Some(ins[k + 4].offset), 3, Some(s.offset)));
        }
        // Only the try's handler is left, over the whole second loop.
        let entries = exception_table::entries(&ci.exceptiontable);
        assert!(entries.iter().all(|e| ins.iter().find(|i| i.offset == e.target).unwrap().name() == "PUSH_EXC_INFO"
            || e.start > sends[1].offset), "{entries:?}");
        assert!(entries.iter().any(|e| e.start <= sends[1].offset && sends[1].offset + 8 <= e.end), "{entries:?}");
        let err = normalise(&code_info("async def f(xs):\n    return [await x for x in xs]\n")).unwrap_err();
        assert_eq!(err, "yield or await (SEND) at line 2");
    }

    #[test]
    fn nested_generators_are_scanned() {
        // A generator nested in the function keeps a scannable form (its stores) whatever it holds.
        let ci = normalise(&code_info("def f(xs, w):\n    def gen():\n        nonlocal w\n        for a, b in xs:\n            w = f\"{a!r:{b}}\"\n            yield w\n    return gen\n")).unwrap();
        let gen = ci.children.values().find(|c| c.name == "gen").unwrap();
        assert!(names11(gen).contains(&"STORE_DEREF"), "{:?}", names11(gen));
    }
}
