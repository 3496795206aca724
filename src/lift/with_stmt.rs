//! `with` statements (docs/design-exceptions.md, "Stage 3"), lifted onto Bezoar's `Try` as PEP 343
//! defines them:
//!
//! ```text
//! enter := with_enter(m); exit := with_exit(m)     ← BEFORE_WITH: both looked up on the type
//! v := enter()                                      ← a call like any other (classified as such)
//! try:
//!     store v; B                                    ← `as` target included: CPython protects it
//! except as $e:                                     ← bare handler: the exception is handled
//!     res := exit(exc_type($e), $e, exc_traceback($e))
//!     if not truth(res): reraise_handled            ← RERAISE 2: same object, same traceback
//! else:
//!     exit(None, None, None)                        ← the code after the protected range
//! ```
//!
//! CPython 3.11's code for it (`with m as v: B`):
//!
//! ```text
//!      LOAD m; BEFORE_WITH                 ← pushes the bound __exit__, then __enter__()'s result
//! s:   STORE_FAST v | POP_TOP | UNPACK …   ← protected: s to e -> T [d + 1] lasti
//!      … B …
//! e:   [NOP] LOAD_CONST None ×3; PRECALL 2; CALL 2; POP_TOP; (JUMP_FORWARD join | return tail …)
//! T:   PUSH_EXC_INFO; WITH_EXCEPT_START; POP_JUMP_FORWARD_IF_TRUE S; RERAISE 2
//!      COPY 3; POP_EXCEPT; RERAISE 1       ← clean-up (T to RERAISE 2, and S -> here [d + 3] lasti)
//! S:   POP_TOP; POP_EXCEPT; POP_TOP; POP_TOP   ← suppressed: on to the join (the next block)
//! ```
//!
//! A body ending with `return x` has `SWAP 2` and the exit call after its protected range, then
//! the return: x goes to the else clause through a temporary. Any other `return`, a `break` or
//! `continue` leaving the body leaves through a copy of the exit call, outside the protected
//! range, which cuts it: the copies are skipped (the bound `__exit__` popped) and the statement
//! is a `Try` whose `finally` else clause calls the exit (run after the body's exits too); an
//! exit through several withs runs their copies in a row, each statement taking its own
//! (`TryShape::onward`). Statements with handlers of their own may be nested in
//! the body (a try statement, another `with` — `with a, b:` is one inside the other): their code
//! cuts the body's protected range, as in a try body. The
//! recogniser (`chain`, `body_shape`) makes a `TryShape` that `exceptions::recognise` checks like
//! the others (its `depth` is the stack at `s`: d + 2, with the exit and the enter result), and
//! `Translator::translate_with` builds the statement. Depends on `py311` only.
use super::cfg::Term;
use super::exceptions::TryShape;
use super::state::{pop_reg, stmt, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::{Block, Const, Expr, Handler, Intrinsic, StmtKind};
use crate::py311::decode::Instr;
use crate::py311::exception_table::Entry;
use crate::py311::opcode::*;
use crate::py311::CodeInfo;

fn reason(what: &str, line: u32) -> Fallback {
    Fallback::new(format!("exception handling (with: {what})"), line)
}

fn shape(line: u32) -> Fallback {
    reason("statement shape", line)
}

/// Whether the handler chain starting at `PUSH_EXC_INFO` (index `push`) is a `with` statement's.
pub(super) fn is_with(instrs: &[Instr], push: usize) -> bool {
    instrs.get(push).is_some_and(|i| i.opcode == PUSH_EXC_INFO)
        && instrs.get(push + 1).is_some_and(|i| i.opcode == WITH_EXCEPT_START)
        && instrs.get(push + 2).is_none_or(|i| i.opcode != GET_AWAITABLE)
}

/// Whether the table entry `e` protects a `with` body: it targets a `with`'s handler. (Unlike a
/// try body's, it has `lasti` set.)
pub(super) fn is_body_entry(instrs: &[Instr], e: &Entry) -> bool {
    instrs.binary_search_by_key(&e.target, |i| i.offset).is_ok_and(|k| is_with(instrs, k))
}

/// The first instruction of the suppressed path `S` of the `with` whose `PUSH_EXC_INFO` is at
/// `push`: the target of the jump on `__exit__`'s result.
fn suppressed(instrs: &[Instr], push: usize) -> Option<usize> {
    let j = instrs.get(push + 2).filter(|j| j.opcode == POP_JUMP_FORWARD_IF_TRUE)?;
    let t = j.jump_target()?;
    instrs.binary_search_by_key(&t, |i| i.offset).ok()
}

/// The handler code of the `with` whose `PUSH_EXC_INFO` is at `push`; the body range and depth
/// are filled in by `body_shape`. (3.11 lays out the test, the clean-up block, then `S`; 3.12
/// and 3.13, normalised, keep their own order — `S` right after the test and the clean-up block
/// last —, which the translation does not depend on: the handler is made, not translated.)
pub(super) fn chain(ci: &CodeInfo, instrs: &[Instr], push: usize) -> Result<TryShape> {
    let line = instrs.get(push + 1).map_or(instrs[push].line, |i| i.line);
    let ops = |k: usize, n: usize| instrs.get(k..k + n).map(|s| s.iter().map(|i| (i.opcode, i.arg)).collect::<Vec<_>>());
    let push_off = instrs[push].offset;
    let cleanup = crate::py311::exception_table::entries(&ci.exceptiontable)
        .into_iter()
        .find(|e| e.lasti && e.start <= push_off && push_off < e.end)
        .and_then(|e| instrs.binary_search_by_key(&e.target, |i| i.offset).ok());
    let (Some(s), Some(cleanup)) = (suppressed(instrs, push), cleanup) else { return Err(shape(line)) };
    let code_ok = ops(push + 3, 1).as_deref() == Some(&[(RERAISE, 2)][..])
        && ops(cleanup, 3).as_deref() == Some(&[(COPY, 3), (POP_EXCEPT, 0), (RERAISE, 1)][..])
        && ops(s, 4).is_some_and(|v| v.iter().map(|p| p.0).eq([POP_TOP, POP_EXCEPT, POP_TOP, POP_TOP]))
        && s > push + 3
        && !(s..s + 4).contains(&cleanup)
        && cleanup > push + 3;
    if !code_ok {
        return Err(shape(line));
    }
    Ok(TryShape {
        body: 0..0,
        orelse: 0,
        depth: 0,
        push,
        handlers: Vec::new(),
        reraise: push + 3,
        cleanup,
        end: s + 4,
        line,
        inner: Vec::new(),
        finally: false,
        exits: Vec::new(),
        normal: 0..0,
        onward: Vec::new(),
    })
}

/// The body of the `with` statement `c` (its table entries `es`): protected ranges starting right
/// after `BEFORE_WITH`, cut only by unprotected `NOP`s, by the code of statements with handlers
/// nested in it (`nested`: their own handler code is protected by their own entries) and by the
/// copies of the exit call before a `return`, `break` or `continue` leaving the body (`exits`),
/// followed (after line `NOP`s) by the exit call `__exit__(None, None, None)`; no other jump out
/// of the body and no other return.
///
/// With exits (`c.exits`: each copy's `LOAD_CONST None ×3; PRECALL 2; CALL 2; POP_TOP`, after a
/// `SWAP 2` that puts a returned value under the bound `__exit__`, and before the exit's own pops,
/// constant and return or jump out of the statement) the statement is lifted as a `Try` whose
/// `finally` else clause is the exit call (`translate_with`). The copy after the body is then its
/// normal end when it goes on where the suppressed path does (the join), and otherwise the body's
/// last statement leaving (a final `return`, `break` or `continue`): one more exit, the body
/// running up to its return or jump.
pub(super) fn body_shape(
    ci: &CodeInfo,
    instrs: &[Instr],
    c: &mut TryShape,
    es: &[Entry],
    nested: &dyn Fn(usize) -> bool,
    upto: &dyn Fn(u32) -> usize,
    claims: &[(usize, usize, Vec<usize>)],
) -> Result<()> {
    let leaves = |l: u32| reason("a return, break, continue or statement with handlers in its body", l);
    let line = instrs.get(c.push + 1).map_or(c.line, |i| i.line);
    let (Some(first), Some(last)) = (es.first(), es.last()) else { return Err(shape(line)) };
    let (start, mut orelse) = (upto(first.start), upto(last.end));
    if start == 0 || start >= orelse || !matches!(instrs[start - 1].opcode, BEFORE_WITH | BEFORE_ASYNC_WITH) {
        return Err(shape(line));
    }
    if es.iter().any(|e| e.depth != first.depth) {
        return Err(shape(line));
    }
    let at = |off: u32| instrs.binary_search_by_key(&off, |i| i.offset).ok();
    let covered = |i: usize| es.iter().any(|e| upto(e.start) <= i && i < upto(e.end));
    let is_exit_call = |i: usize| exit_call_at(ci, instrs, i);
    // A copy of the exit call at `i` leaving the statement: then the exit's pops (a loop's
    // iterator), a constant returned, and the return or a jump out of the statement's code — the
    // index of that return or jump. Nothing of it protected or nested.
    // (Copies of enclosing withs' exit calls may follow, each after the pops of what lies on
    // the stack above their bound `__exit__`: `onward`.)
    let onward_of = |i: usize| {
        let mut e = i + 6;
        let mut onward = Vec::new();
        loop {
            while instrs.get(e).is_some_and(|x| matches!(x.opcode, POP_TOP | SWAP | NOP)) {
                e += 1;
            }
            if !is_exit_call(e) {
                return (e, onward);
            }
            onward.push(e);
            e += 6;
        }
    };
    let exit_tail = |i: usize| {
        if !is_exit_call(i) {
            return None;
        }
        let (mut e, _) = onward_of(i);
        if instrs.get(e).is_some_and(|x| x.opcode == LOAD_CONST) && instrs.get(e + 1).is_some_and(|x| x.opcode == RETURN_VALUE) {
            e += 1;
        }
        let out = instrs.get(e).is_some_and(|x| {
            x.opcode == RETURN_VALUE
                || (is_unconditional_jump(x.opcode) && x.jump_target().and_then(at).is_some_and(|t| !(start..c.push).contains(&t)))
        });
        (out && e < c.push && (i..=e).all(|j| !covered(j) && !nested(j))).then_some(e)
    };
    let skip_nops = |mut j: usize| {
        while instrs.get(j).is_some_and(|x| x.opcode == NOP) {
            j += 1;
        }
        j
    };
    // The body's exits after its last protected instruction (a final `if …: break`): copies
    // each followed by another copy — the last one is the normal end, or the last statement's.
    loop {
        let j = skip_nops(orelse);
        let j = if instrs.get(j).is_some_and(|x| (x.opcode, x.arg) == (SWAP, 2)) { j + 1 } else { j };
        match exit_tail(j) {
            Some(e) if is_exit_call(skip_nops(e + 1)) => orelse = e + 1,
            _ => break,
        }
    }
    let k = skip_nops(orelse);
    // The exits inside the body.
    let mut exits = Vec::new();
    let mut i = start;
    while i < orelse {
        let ins = &instrs[i];
        if !(covered(i) || nested(i) || ins.opcode == NOP) {
            // Unprotected code that is no nested statement: a copy of the exit call before a
            // return, break or continue (a returned value swapped under the exit first).
            let j = if (ins.opcode, ins.arg) == (SWAP, 2) { i + 1 } else { i };
            let Some(e) = exit_tail(j).filter(|&e| e < orelse) else { return Err(leaves(ins.line)) };
            exits.push(j..j + 6);
            i = e + 1;
            continue;
        }
        i += 1;
    }
    // The copies of this statement's exit call in the exits of withs nested in it, which leave
    // it too: each then leaves by a return or a jump out of this statement's code.
    let mut claimed: Vec<std::ops::Range<usize>> = Vec::new();
    let mut onward = Vec::new();
    for (copy, e, rest) in claims {
        let out = instrs.get(*e).is_some_and(|x| {
            x.opcode == RETURN_VALUE
                || (is_unconditional_jump(x.opcode) && x.jump_target().and_then(at).is_some_and(|t| !(start..c.push).contains(&t)))
        });
        if !(out && start < *copy && *e < orelse && is_exit_call(*copy) && !covered(*copy) && nested(*copy)) {
            return Err(leaves(instrs[*copy].line));
        }
        exits.push(*copy..*copy + 6);
        claimed.push(*copy..*e + 1);
        if !rest.is_empty() {
            onward.push((rest.clone(), *e));
        }
    }
    let exit_call = is_exit_call(k);
    // A body that always raises has no normal exit: the handler follows it.
    let raises = !exit_call && instrs[orelse - 1].opcode == RAISE_VARARGS;
    // A body ending with `return x` (its only way out but raising): x goes under the exit, which
    // is called, then x is returned.
    let returns = !exit_call && returns_after(ci, instrs, orelse).is_some_and(|r| r < c.push);
    let mut end = orelse;
    if !exits.is_empty() {
        // Where a path ends up after `i` and the unconditional jumps from there.
        let dest = |mut i: usize| {
            for _ in 0..8 {
                match instrs.get(i) {
                    Some(x) if x.opcode == NOP => i += 1,
                    Some(x) if is_unconditional_jump(x.opcode) => match x.jump_target().and_then(at) {
                        Some(t) => i = t,
                        None => break,
                    },
                    _ => break,
                }
            }
            i
        };
        // (The same place, or a copy of the same `return c`: CPython copies a short block after
        // the statement to the end of its normal path.)
        let same_place = |a: usize, b: usize| {
            let ret = |i: usize| match instrs.get(i..i + 2) {
                Some([l, r]) if l.opcode == LOAD_CONST && r.opcode == RETURN_VALUE => Some(l.arg),
                _ => None,
            };
            a == b || ret(a).is_some_and(|x| ret(b) == Some(x))
        };
        let Some(s) = suppressed(instrs, c.push) else { return Err(shape(line)) };
        if returns {
            // The final `return x`: one more exit.
            let Some(e) = exit_tail(orelse + 1) else { return Err(shape(line)) };
            exits.push(orelse + 1..orelse + 7);
            end = e + 1;
        } else if exit_call && k + 6 <= c.push && !same_place(dest(k + 6), dest(s + 4)) {
            // The last statement leaves (the suppressed path goes on elsewhere): one more exit.
            let Some(e) = exit_tail(k) else { return Err(leaves(instrs[k].line)) };
            exits.push(k..k + 6);
            end = e + 1;
        } else if !raises && (!exit_call || k + 6 > c.push) {
            return Err(shape(line));
        }
    } else if !raises && !returns && (!exit_call || k + 6 > c.push) {
        if instrs.get(orelse).is_some_and(|i| (i.opcode, i.arg) == (SWAP, 2)) {
            return Err(leaves(instrs[orelse].line));
        }
        return Err(shape(line));
    }
    for i in start..orelse {
        let ins = &instrs[i];
        if !(covered(i) || nested(i) || ins.opcode == NOP) || claimed.iter().any(|r| r.contains(&i)) {
            // (An exit's copy and what follows it, checked above.)
            continue;
        }
        let inner = nested(i);
        // (Handler opcodes belong to nested statements only — a nested `with`'s `BEFORE_WITH`
        // right before its code —; a return leaves through a copy of the exit call.)
        let nested_with = matches!(ins.opcode, BEFORE_WITH | BEFORE_ASYNC_WITH) && nested(i + 1);
        if ins.opcode == RETURN_VALUE
            || (!inner
                && !nested_with
                && matches!(ins.opcode, PUSH_EXC_INFO | POP_EXCEPT | RERAISE | BEFORE_WITH | BEFORE_ASYNC_WITH | WITH_EXCEPT_START))
        {
            return Err(leaves(ins.line));
        }
        if let Some(t) = ins.jump_target() {
            match at(t) {
                Some(t) if (start..orelse).contains(&t) || (!raises && (orelse..=k).contains(&t)) => {}
                _ => return Err(leaves(ins.line)),
            }
        }
    }
    // The exits of this statement's own that leave enclosing withs too.
    for r in exits.iter().filter(|r| !claimed.iter().any(|c| c.start == r.start)) {
        let (e, o) = onward_of(r.start);
        if !o.is_empty() {
            let Some(e) = exit_tail(r.start).filter(|&t| t >= e) else { return Err(leaves(instrs[r.start].line)) };
            onward.push((o, e));
        }
    }
    c.depth = first.depth as usize + 1;
    c.body = start..end;
    c.orelse = end;
    c.exits = exits;
    c.onward = onward;
    Ok(())
}

/// `LOAD_CONST None ×3; PRECALL 2; CALL 2; POP_TOP` at `i`: the call `__exit__(None, None, None)`
/// of a `with` (the bound `__exit__` below the three Nones), its result dropped.
fn exit_call_at(ci: &CodeInfo, instrs: &[Instr], i: usize) -> bool {
    let none = |i: &Instr| i.opcode == LOAD_CONST && matches!(ci.consts.get(i.arg as usize), Some(Const::None));
    instrs.get(i..i + 6).is_some_and(|s| {
        s[..3].iter().all(none) && s[3..].iter().map(|i| (i.opcode, i.arg)).eq([(PRECALL, 2), (CALL, 2), (POP_TOP, 0)])
    })
}

/// After a body ending with `return x` (at `orelse`): `SWAP 2`, the exit call, then pops and
/// swaps (of a loop's iterator) and `RETURN_VALUE` — the index of the `RETURN_VALUE`.
fn returns_after(ci: &CodeInfo, instrs: &[Instr], orelse: usize) -> Option<usize> {
    let none = |i: &Instr| i.opcode == LOAD_CONST && matches!(ci.consts.get(i.arg as usize), Some(Const::None));
    let s = instrs.get(orelse..orelse + 7)?;
    let exit_call = (s[0].opcode, s[0].arg) == (SWAP, 2)
        && s[1..4].iter().all(none)
        && s[4..].iter().map(|i| (i.opcode, i.arg)).eq([(PRECALL, 2), (CALL, 2), (POP_TOP, 0)]);
    if !exit_call {
        return None;
    }
    let mut r = orelse + 7;
    while instrs.get(r).is_some_and(|i| matches!(i.opcode, POP_TOP | SWAP | NOP)) {
        r += 1;
    }
    instrs.get(r).filter(|i| i.opcode == RETURN_VALUE).map(|_| r)
}

/// Managers whose `__aenter__`/`__aexit__` depend on running in the task that awaits the
/// function (they record `asyncio.current_task()` to cancel it, or set context variables for the
/// body): an `async with`'s methods run as sequential externals, each in a task of its own, so
/// these would silently lose their effect (a timeout that never fires). Recognised by the name
/// of the callable making the manager in the same block: `asyncio.timeout(…)`, `timeout(…)`, ….
const TASK_BOUND: &[&str] =
    &["timeout", "timeout_at", "TaskGroup", "fail_after", "fail_at", "move_on_after", "move_on_at", "create_task_group", "CancelScope", "Runner"];

/// The name of the task-bound manager maker (`TASK_BOUND`) whose call made `m` in `out`, if any.
fn task_bound_manager(out: &Block, m: crate::bezoar::ir::Reg) -> Option<String> {
    let def = |r: crate::bezoar::ir::Reg| {
        out.iter().rev().find_map(|s| match &s.kind {
            StmtKind::Let(x, e) if *x == r => Some(e.clone()),
            _ => None,
        })
    };
    let Some(Expr::Call { func, .. }) = def(m) else { return None };
    let name = match def(func)? {
        Expr::Global(n) => n,
        Expr::Load(v) => v.as_str().to_string(),
        Expr::Op(Intrinsic::GetAttr(n), _) => n,
        _ => return None,
    };
    TASK_BOUND.contains(&name.as_str()).then_some(name)
}

impl Translator<'_> {
    /// `BEFORE_WITH` (only in a recognised `with`): the manager's `__enter__` and `__exit__`
    /// looked up on its type (in that order, each with CPython's TypeError), then `__enter__()`
    /// called. Leaves the bound `__exit__` and the result on the stack, as CPython does.
    ///
    /// `BEFORE_ASYNC_WITH` (its awaits removed by `awaits::rewrite`): the same with `__aenter__`
    /// and `__aexit__`, each looked up as a callable that calls the method and awaits its result
    /// (one sequential external), so that the code after it is a `with`'s.
    pub(super) fn before_with(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let m = pop_reg(stack, line)?;
        if ins.opcode == BEFORE_ASYNC_WITH {
            if let Some(name) = task_bound_manager(out, m) {
                return Err(reason(&format!("async with on `{name}(…)`, a manager bound to the awaiting task"), line));
            }
        }
        let (enter, exit) = match ins.opcode {
            BEFORE_ASYNC_WITH => (Intrinsic::AsyncWithEnter, Intrinsic::AsyncWithExit),
            _ => (Intrinsic::WithEnter, Intrinsic::WithExit),
        };
        let enter = self.em.bind(Expr::Op(enter, vec![m]), line, out);
        let exit = self.em.bind(Expr::Op(exit, vec![m]), line, out);
        let v = self.em.bind(Expr::Call { func: enter, args: Vec::new(), kwnames: Vec::new() }, line, out);
        stack.extend([Val::Reg(exit), Val::Reg(v)]);
        Ok(())
    }

    /// Translates the `with` statement `t` (entered at its body's first block, the stack holding
    /// the bound `__exit__` and the enter result) into a `Try`; returns where control continues.
    pub(super) fn translate_with(&mut self, t: &TryShape, stack: &mut Stack, out: &mut Block) -> Result<Option<super::cfg::Node>> {
        let instrs = self.code.instrs;
        let cfg = self.code.cfg;
        let line = instrs[t.body.start - 1].line;
        let exc_line = instrs[t.push + 1].line;
        let exit = match stack.len().checked_sub(2).map(|k| &stack[k]) {
            Some(Val::Reg(r)) if stack.len() == t.depth => *r,
            _ => return Err(shape(line)),
        };
        let (Some(entry), Some(body_end)) = (cfg.node_at(t.body.start), cfg.node_at(t.orelse)) else {
            return Err(shape(line));
        };
        // Where the suppressed path goes on (the block after `S`, or where the jump ending it
        // goes): the statement's join.
        let Some(s) = suppressed(instrs, t.push) else { return Err(shape(line)) };
        let join = match cfg.node_at(s).map(|n| &cfg.blocks[n]) {
            Some(b) if b.body == (s..s + 4) => match b.term {
                Term::Next(n) | Term::Jump(n) => n,
                _ => return Err(shape(line)),
            },
            _ => return Err(shape(line)),
        };
        let mut after = stack.clone();
        after.pop();
        let outer: Stack = after[..after.len() - 1].to_vec();
        let at_head = self.ctx.last().is_some_and(|c| c.head == entry);
        if !t.exits.is_empty() {
            // A return, break or continue leaves the body (`body_shape`): each through a copy of
            // the exit call, skipped (the bound `__exit__` popped). The statement is a `Try` whose
            // `finally` else clause is the exit call, run after the body however it ended but by
            // an exception; the code after the normal copy is the statement's join.
            self.with_exits.insert(t.push, exit);
            self.open_tries.push(t.push);
            self.try_follows.push(join);
            let r = self.part(entry, body_end, stack.clone(), at_head);
            self.try_follows.pop();
            self.open_tries.pop();
            self.with_exits.remove(&t.push);
            let (body, end) = r?;
            if end.is_some_and(|s| s != after) {
                return Err(shape(line));
            }
            let exit_line = instrs[t.orelse..t.push].iter().find(|i| i.opcode != NOP).map_or(line, |i| i.line);
            let mut orelse = Vec::new();
            let none = self.em.bind_const(Const::None, exit_line, &mut orelse);
            self.em.bind(Expr::Call { func: exit, args: vec![none, none, none], kwnames: Vec::new() }, exit_line, &mut orelse);
            let handlers = self.with_handler(exit, exc_line);
            out.push(stmt(StmtKind::Try { body, handlers, orelse, finally: true }, line));
            *stack = outer;
            return Ok(Some(join));
        }
        self.open_tries.push(t.push);
        // (No region inside the body may run past its end or the statement's join: `part`.)
        self.try_follows.push(join);
        let r = self.part(entry, body_end, stack.clone(), at_head);
        self.try_follows.pop();
        let returns = instrs[t.orelse].opcode == SWAP;
        let r = r.and_then(|(mut body, end)| match end {
            Some(s) if returns && s.len() == after.len() + 1 && s[..after.len()] == after[..] => {
                // `return x` ends the body: x passes to the else clause (the exit call, then the
                // return) through a temporary, the clause being lowered apart from the body.
                let Some(Val::Reg(x)) = s.last() else { return Err(shape(line)) };
                let tmp = self.em.temp();
                body.push(stmt(StmtKind::Store(tmp.clone(), *x), line));
                let mut orelse = Vec::new();
                let x = self.em.bind(Expr::Load(tmp), line, &mut orelse);
                let mut ostack = after.clone();
                ostack.push(Val::Reg(x));
                let (rest, end) = self.region(body_end, join, ostack, false)?;
                orelse.extend(rest);
                match end {
                    None => Ok((body, orelse)),
                    Some(_) => Err(shape(line)),
                }
            }
            Some(s) if s != after || returns => Err(shape(line)),
            // The body always raises: the exit call after it is never reached.
            None => Ok((body, Vec::new())),
            Some(_) => {
                // (The code after the exit call may leave: `return c` of a constant is loaded
                // after the exit call, a final `break`/`continue` jumps after it.)
                let (orelse, end) = self.region(body_end, join, after.clone(), false)?;
                match end {
                    Some(s) if s == outer => Ok((body, orelse)),
                    None => Ok((body, orelse)),
                    _ => Err(shape(line)),
                }
            }
        });
        self.open_tries.pop();
        let (body, orelse) = r?;
        let handlers = self.with_handler(exit, exc_line);
        out.push(stmt(StmtKind::Try { body, handlers, orelse, finally: false }, line));
        *stack = outer;
        Ok(Some(join))
    }

    /// The handler of a `with` whose bound `__exit__` is `exit`: `__exit__(type(e), e,
    /// e.__traceback__)` with `e` handled, then the exception again unless the result is true
    /// (its `__bool__` may raise).
    fn with_handler(&mut self, exit: crate::bezoar::ir::Reg, exc_line: u32) -> Vec<Handler> {
        let e = self.em.temp();
        let mut hbody = Vec::new();
        let ev = self.em.bind(Expr::Load(e.clone()), exc_line, &mut hbody);
        let ty = self.em.bind(Expr::Op(Intrinsic::ExcType, vec![ev]), exc_line, &mut hbody);
        let tb = self.em.bind(Expr::Op(Intrinsic::ExcTraceback, vec![ev]), exc_line, &mut hbody);
        let res = self.em.bind(Expr::Call { func: exit, args: vec![ty, ev, tb], kwnames: Vec::new() }, exc_line, &mut hbody);
        let ok = self.em.bind(Expr::Op(Intrinsic::Truth, vec![res]), exc_line, &mut hbody);
        let mut reraise = Vec::new();
        self.end_with_raise(Intrinsic::Reraise, Vec::new(), exc_line, &mut reraise);
        hbody.push(stmt(StmtKind::If { cond: ok, then_body: Vec::new(), else_body: reraise }, exc_line));
        vec![Handler { test: None, name: Some(e), body: hbody }]
    }
}
