//! `try`/`except`/`else` statements, recognised from a code object's exception table and the
//! handler code CPython 3.11 lays out for them (docs/design-exceptions.md, "Lifter"):
//!
//! ```text
//!      NOP                                    ← the `try` line
//! s:   … body …                              ← protected: s to e -> T [depth d]
//! e:   … else …  JUMP_FORWARD join           ← (no else: just the jump)
//! T:   PUSH_EXC_INFO
//!      … E …  CHECK_EXC_MATCH                ← each typed handler, in order
//!      POP_JUMP_FORWARD_IF_FALSE next
//!      STORE_FAST e | POP_TOP                ← `as e` | no name
//!      … H …  POP_EXCEPT [e = None; del e]  JUMP_FORWARD join   (or return/break/continue,
//!                                                each path with its POP_EXCEPT and cleanup)
//! A:   e = None; del e; RERAISE 1           ← an exception inside H (`as e` only)
//! next: … the next handler … | RERAISE 0     ← no handler matched
//! C:   COPY 3; POP_EXCEPT; RERAISE 1          ← an exception inside the handlers
//! ```
//!
//! with the handler code protected by entries to `A` and `C` (depth d + 1, lasti). A statement
//! whose body protects nothing (`try: pass`) has no entry to `T`: its handlers are dead code.
//! A statement may be nested in another one's body, else clause or handler (its code then lies
//! inside that part; a POP_EXCEPT of the outer handler inside the inner statement is recognised by
//! the outer `as` name's clean-up after it; first in a body, it starts the outer body too:
//! `body_starts`). A `try: B finally: F` is recognised (`finally_shape`) with
//! statements with handlers in B — try/except/else/finally is a
//! try/except statement as B. A `with` (`with_stmt`) is one more kind of statement, nested like
//! the others (in a try or with body, a try in its body). A return, break or continue leaving
//! B (also from a handler of the try/except that B is) passes a copy of F, skipped: the
//! statement is a `Try` whose `finally` else clause is F (`TryShape::exits`). Every other use of
//! the table falls back, naming the construct: an F copied before an exit that is no
//! straight-line code, except*, async with/for, other nestings, and any other handler shape.
//!
//! What the recogniser yields (`Tries`) is used by `cfg` (leaders, the handler chains as
//! exceptional successors of the try's first block) and `structure` (`Translator::translate_try`).
//! Depends on `py311` only.
use super::cfg::Node;
use super::state::{stmt, Stack, Translator, Val};
use super::{with_stmt, Fallback, Result};
use crate::bezoar::ir::{Block, Const, Handler, StmtKind};
use crate::py311::decode::Instr;
use crate::py311::exception_table::{self, Entry, HandlerKind};
use crate::py311::opcode::*;
use crate::py311::CodeInfo;
use std::collections::HashSet;
use std::ops::Range;

/// One `try: … except …: … [else: …]` (instruction indices).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct TryShape {
    /// The protected body, with the unprotected instructions that end statements of it (the
    /// stack clean-up and jump of a `break`/`continue`, a `return`'s RETURN_VALUE).
    pub(super) body: Range<usize>,
    /// Where the body's normal completion goes: the else clause, or the jump to the end.
    pub(super) orelse: usize,
    /// Stack depth at the statement (values of enclosing statements, e.g. a `for` iterator).
    pub(super) depth: usize,
    /// `PUSH_EXC_INFO`.
    pub(super) push: usize,
    pub(super) handlers: Vec<HandlerShape>,
    /// Where the handler chain's code ends: `RERAISE 0` (no handler matched), or the clean-up
    /// block after a bare `except:` (which matches everything).
    pub(super) reraise: usize,
    /// The clean-up block `COPY 3; POP_EXCEPT; RERAISE 1`.
    pub(super) cleanup: usize,
    /// One past the clean-up block `COPY 3; POP_EXCEPT; RERAISE 1`: where the statement's code ends.
    pub(super) end: usize,
    /// The line of the statement's first handler (for messages).
    pub(super) line: u32,
    /// The code of the statements nested in this one (in its body, else or a handler).
    pub(super) inner: Vec<Range<usize>>,
    /// A `try: B finally: F` (`finally_shape`): lifted as `try: B except: F; raise else: F`,
    /// which is what 3.11's code for it is — the exceptional copy of F is a bare handler ending in
    /// `RERAISE 0`, the normal copy follows the body. Its one handler's body starts at `F`.
    pub(super) finally: bool,
    /// A finally's copies of F before the return, break or continue statements leaving its body
    /// (unprotected, each followed by the exit's own pops and return or jump); skipped by the
    /// translation, which then lifts F once, from the exceptional copy, as the `Try`'s
    /// `finally` else clause (run after the body however it ended).
    pub(super) exits: Vec<Range<usize>>,
    /// With `exits`: the normal copy of F after the body (skipped too).
    pub(super) normal: Range<usize>,
    /// A `with`'s exits that leave enclosing withs too (`with a, b:` with a return): the copies
    /// of their exit calls after this statement's own copy, innermost first, and the index of
    /// the exit's return or jump. An enclosing with takes the copy at its depth as its exit.
    pub(super) onward: Vec<(Vec<usize>, usize)>,
}

/// One `except E [as name]:` of a `TryShape`, or a bare `except:` (an empty `test`, `check` and
/// `bind` at its `POP_TOP`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct HandlerShape {
    /// The straight-line code computing `E` (after `PUSH_EXC_INFO` or the previous handler's
    /// jump target, up to `CHECK_EXC_MATCH`).
    pub(super) test: Range<usize>,
    /// `CHECK_EXC_MATCH`.
    pub(super) check: usize,
    /// The local slot of `as name`.
    pub(super) name: Option<u32>,
    /// The `STORE_FAST name` / `POP_TOP` of the exception; the handler's body follows it.
    pub(super) bind: usize,
    pub(super) line: u32,
}

/// The recognised statements of a code object.
#[derive(Clone, Debug, Default)]
pub(super) struct Tries {
    /// Statements whose handlers can run, in code order.
    pub(super) tries: Vec<TryShape>,
    /// The code has handler code (of `tries` or dead): its opcodes are allowed.
    pub(super) handlers: bool,
    /// Instructions the translation skips: each handler's `STORE_FAST name`/`POP_TOP` of the
    /// exception, and the `name = None; del name` after each of its `POP_EXCEPT`s (Bezoar's
    /// `Handler` binds and unbinds the name itself).
    pub(super) skip: HashSet<usize>,
    /// The first instruction of each copy of a `with`'s exit call before a return, break or
    /// continue leaving its body (skipped: the statement's `finally` else clause calls the exit),
    /// with the statement's `PUSH_EXC_INFO`: the translation pops the bound `__exit__` there, as
    /// the copy does.
    pub(super) exit_pops: std::collections::HashMap<usize, usize>,
}

fn reason(what: &str, line: u32) -> Fallback {
    Fallback::new(format!("exception handling ({what})"), line)
}

fn shape(line: u32) -> Fallback {
    reason("exception handler shape", line)
}

/// The statements with handlers in `ci` (whose instructions are `instrs`), or the fallback.
pub(super) fn recognise(ci: &CodeInfo, instrs: &[Instr]) -> Result<Tries> {
    let entries = exception_table::entries(&ci.exceptiontable);
    let mut out = Tries::default();
    if entries.is_empty() {
        return Ok(out);
    }
    let at = |off: u32| instrs.binary_search_by_key(&off, |i| i.offset).ok();
    let upto = |off: u32| instrs.partition_point(|i| i.offset < off);
    // Statements other than try/except, named.
    for e in &entries {
        let kind = exception_table::handler_kind(instrs, e.target).or_else(|| exception_table::handler_kind(instrs, e.start));
        match kind {
            Some(HandlerKind::Except) | None => {}
            // (3.12 and 3.13 normalise their try/finally into 3.11's layout; the recogniser
            // checks that layout, the two copies of the finally body included.)
            Some(HandlerKind::Finally) => {}
            Some(HandlerKind::With) => {}
            Some(k) => return Err(reason(k.name(), ci.line_at(e.start))),
        }
    }
    // Every handler chain (`PUSH_EXC_INFO`), live (an entry's target) or dead (`try: pass`).
    // (A `with` body's entry has `lasti` set: `with_stmt`.)
    let body_entry = |e: &Entry| !e.lasti || with_stmt::is_body_entry(instrs, e);
    let targets: HashSet<u32> = entries.iter().filter(|e| body_entry(e)).map(|e| e.target).collect();
    let mut chains = Vec::new();
    for (k, ins) in instrs.iter().enumerate().filter(|(_, i)| i.opcode == PUSH_EXC_INFO) {
        let live = targets.contains(&ins.offset);
        chains.push((chain(ci, instrs, k)?, live));
    }
    // Each entry belongs to exactly one statement: its body (to T), its handler code (to its
    // clean-up block or an `as` clean-up block).
    let mut bodies: Vec<Vec<Entry>> = vec![Vec::new(); chains.len()];
    for e in entries.iter().filter(|e| body_entry(e)) {
        match chains.iter().position(|(c, _)| e.target == instrs[c.push].offset) {
            Some(o) => bodies[o].push(*e),
            None => return Err(shape(ci.line_at(e.start))),
        }
    }
    // Each statement's code: from its body's first protected instruction (a dead one's handler
    // chain) to its clean-up block's end.
    let mut spans: Vec<Range<usize>> = chains
        .iter()
        .zip(&bodies)
        .map(|((c, live), es)| match es.iter().map(|e| e.start).min() {
            Some(s) if *live => upto(s).min(c.push)..c.end,
            _ => c.push..c.end,
        })
        .collect();
    body_starts(instrs, &chains, &mut spans);
    for es in &mut bodies {
        es.sort_by_key(|e| e.start);
    }
    // The copies of finally clauses before exits, with what follows them up to the exit's return
    // or jump: in the body of a try/except nested in a finally body they cut its protected range
    // as a return does. (Finally and with statements first: their shapes do not depend on the
    // statements nested in them.)
    let mut fin_code: HashSet<usize> = HashSet::new();
    let n = chains.len();
    for (pass, k) in (0..2).flat_map(|p| (0..n).map(move |k| (p, k))) {
        // A with's copies of its exit call in the chains of exits of the withs nested in it (the
        // copy at the depth of this one below them): (the copy, the exit's return or jump, the
        // copies after it).
        let is_with = |j: usize| chains[j].1 && with_stmt::is_with(instrs, chains[j].0.push);
        let inside = |a: &Range<usize>, b: &Range<usize>| a != b && b.start <= a.start && a.end <= b.end;
        let mut claims: Vec<(usize, usize, Vec<usize>)> = Vec::new();
        if pass == 0 && is_with(k) {
            for j in (0..n).filter(|&j| is_with(j) && inside(&spans[j], &spans[k])) {
                let between = (0..n).filter(|&m| is_with(m) && inside(&spans[j], &spans[m]) && inside(&spans[m], &spans[k])).count();
                for (o, e) in &chains[j].0.onward {
                    if let Some(&copy) = o.get(between) {
                        claims.push((copy, *e, o[between + 1..].to_vec()));
                    }
                }
            }
        }
        let (c, live) = &mut chains[k];
        let es = &bodies[k];
        if !*live || (pass == 0) != (c.finally || with_stmt::is_with(instrs, c.push)) {
            continue;
        }
        let own = spans[k].clone();
        // The code of statements nested in this one's body.
        let nested = |i: usize| spans.iter().any(|sp| sp.contains(&i) && *sp != own && sp.start >= own.start && sp.end <= own.end);
        if with_stmt::is_with(instrs, c.push) {
            with_stmt::body_shape(ci, instrs, c, es, &nested, &upto, &claims)?;
            continue;
        }
        if c.finally {
            // (Instructions that no entry of this statement or of one nested in it protects (an
            // enclosing statement's may): a copy of the finally clause before an exit.)
            let span = own.start..c.end;
            let unprotected = |i: usize| {
                !entries.iter().any(|e| upto(e.start) <= i && i < upto(e.end) && at(e.target).is_some_and(|t| span.contains(&t)))
            };
            finally_shape(instrs, c, es, own.start, &nested, &unprotected, &upto, &at, ci.line_at(es[0].start))?;
            for r in &c.exits {
                if let Some(e) = exit_end(instrs, r.end) {
                    fin_code.extend(r.start..=e);
                }
            }
            continue;
        }
        let (first, last) = (es[0], es[es.len() - 1]);
        // Between the protected parts: only what ends a statement of the body without raising
        // (a `return`, `break` or `continue` leaves the statement's block first), and the code of
        // statements nested in the body (the first of them may start the body: its own body is
        // protected by its handlers only).
        let gap_ok =
            |w: &[Entry]| (upto(w[0].end)..upto(w[1].start)).all(|i| unwinding(instrs[i].opcode) || nested(i) || fin_code.contains(&i));
        let lead_ok = (own.start..upto(first.start)).all(|i| instrs[i].opcode == NOP || nested(i));
        if !lead_ok || es.windows(2).any(|w| !gap_ok(w)) || es.iter().any(|e| e.depth != first.depth) {
            // The body's protected range is cut: something inside it has its own handler.
            return Err(reason("nested try", ci.line_at(first.start)));
        }
        c.depth = first.depth as usize;
        let (start, mut end) = (own.start, upto(last.end));
        c.orelse = end;
        // The body's last statement may be such a `return`/`break`/`continue`: the else
        // clause (if any) starts after it. (With no else clause, a final jump is taken as the
        // body's normal end followed by the same jump: the same thing.)
        let mut k = end;
        while instrs.get(k).is_some_and(|i| matches!(i.opcode, NOP | POP_TOP | SWAP)) {
            k += 1;
        }
        if let Some(i) = instrs.get(k) {
            if i.opcode == RETURN_VALUE || (is_unconditional_jump(i.opcode) && k + 1 < c.push) {
                end = k + 1;
                c.orelse = end;
            }
        }
        c.body = start..end;
    }
    // A try/except whose body's last statement leaves through a copy of an enclosing finally
    // clause (one of its exits, then the exit's pops, constant and return or jump): its body runs
    // up to that return or jump (what follows is its else clause, or the jump to its end).
    let fin_exits: Vec<Range<usize>> = chains.iter().filter(|(c, l)| *l && c.finally).flat_map(|(c, _)| c.exits.clone()).collect();
    for (c, live) in chains.iter_mut() {
        if !*live || c.finally || with_stmt::is_with(instrs, c.push) {
            continue;
        }
        let mut k = c.orelse;
        while instrs.get(k).is_some_and(|i| i.opcode == NOP) {
            k += 1;
        }
        let Some(r) = fin_exits.iter().find(|r| r.start == k) else { continue };
        if let Some(e) = exit_end(instrs, r.end).filter(|&e| e < c.push) {
            c.body.end = e + 1;
            c.orelse = e + 1;
        }
    }
    for e in entries.iter().filter(|e| !body_entry(e)) {
        let (s, end) = (upto(e.start), upto(e.end));
        let owned = chains.iter().any(|(c, live)| {
            let cleanup = instrs[c.cleanup].offset;
            (e.target == cleanup || is_as_cleanup(ci, instrs, c, at(e.target)))
                && (!live || e.depth as usize == c.depth + 1)
                && c.push <= s
                && end <= c.end
        });
        if !owned {
            return Err(shape(ci.line_at(e.start)));
        }
    }
    // Statements nested in one another: the inner one wholly inside the outer one's body, else
    // clause or handlers.
    for (k, (c, _)) in chains.iter_mut().enumerate() {
        let own = &spans[k];
        c.inner = spans.iter().filter(|sp| *sp != own && sp.start >= own.start && sp.end <= own.end).cloned().collect();
    }
    let live: Vec<TryShape> = chains.into_iter().filter(|(_, l)| *l).map(|(c, _)| c).collect();
    for a in &live {
        for b in &live {
            let (sa, sb) = (a.body.start..a.end, b.body.start..b.end);
            if sa == sb || !(sa.start < sb.end && sb.start < sa.end) || sb.start < sa.start || sb.end > sa.end {
                continue;
            }
            let within = |r: Range<usize>| r.start <= sb.start && sb.end <= r.end;
            if !(within(a.body.start..a.orelse) || within(a.orelse..a.push) || within(a.push + 1..a.reraise)) {
                return Err(reason("nested try", instrs[sb.start].line));
            }
        }
    }
    for a in &live {
        for b in &live {
            let (sa, sb) = (a.body.start..a.end, b.body.start..b.end);
            let overlap = sa.start < sb.end && sb.start < sa.end;
            let nested = (sa.start <= sb.start && sb.end <= sa.end) || (sb.start <= sa.start && sa.end <= sb.end);
            if sa != sb && overlap && !nested {
                return Err(reason("nested try", instrs[sa.start.max(sb.start)].line));
            }
        }
    }
    for t in &live {
        if t.body.is_empty() || t.orelse > t.push {
            return Err(shape(t.line));
        }
        for r in t.exits.iter().chain([&t.normal]) {
            out.skip.extend(r.clone());
            if with_stmt::is_with(instrs, t.push) {
                out.exit_pops.insert(r.start, t.push);
            }
        }
        for (k, h) in t.handlers.iter().enumerate() {
            if t.finally {
                continue;
            }
            out.skip.insert(h.bind);
            // The handler's code runs to the next handler's test (or `RERAISE 0`).
            let stop = t.handlers.get(k + 1).map_or(t.reraise, |n| n.test.start);
            let Some(name) = h.name else { continue };
            // (Inside a statement nested in the handler, a POP_EXCEPT followed by this name's
            // clean-up leaves this handler too: a break, continue or return out of both.)
            let inner = |p: usize| t.inner.iter().any(|r| r.contains(&p));
            for p in (h.bind + 1..stop).filter(|&p| instrs[p].opcode == POP_EXCEPT) {
                if is_unbind(ci, instrs, p + 1, name) {
                    out.skip.extend(p + 1..p + 4);
                } else if !inner(p) {
                    return Err(shape(h.line));
                }
            }
        }
    }
    out.tries = live;
    out.handlers = true;
    Ok(out)
}

/// Where each live statement's body starts (`spans[k].start`, from its first protected
/// instruction): a statement nested first in another one's body is protected by its own handlers
/// only, so the outer body starts where the inner statement does — and at the `NOP` of the outer
/// `try` line when the inner one's `NOP` follows it.
fn body_starts(instrs: &[Instr], chains: &[(TryShape, bool)], spans: &mut [Range<usize>]) {
    loop {
        let mut changed = false;
        for k in 0..spans.len() {
            if !chains[k].1 || spans[k].start >= chains[k].0.push {
                continue;
            }
            let s = spans[k].start;
            let push = chains[k].0.push;
            if let Some(sp) = spans.iter().find(|sp| sp.start < s && s < sp.end && sp.end <= push) {
                let mut start = sp.start;
                if start >= 2 && instrs[start - 1].opcode == NOP && instrs[start - 2].opcode == NOP {
                    start -= 1;
                }
                spans[k].start = start;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// After a copy of a finally clause ending at `e` (before an exit): the exit's pops, a constant
/// returned, and its return or jump — the index of that return or jump.
fn exit_end(instrs: &[Instr], mut e: usize) -> Option<usize> {
    while instrs.get(e).is_some_and(|x| matches!(x.opcode, POP_TOP | SWAP | NOP)) {
        e += 1;
    }
    if instrs.get(e).is_some_and(|x| x.opcode == LOAD_CONST) && instrs.get(e + 1).is_some_and(|x| x.opcode == RETURN_VALUE) {
        e += 1;
    }
    instrs.get(e).is_some_and(|x| x.opcode == RETURN_VALUE || is_unconditional_jump(x.opcode)).then_some(e)
}

/// An instruction that unwinds the stack or leaves, and cannot raise.
fn unwinding(op: u8) -> bool {
    matches!(op, NOP | POP_TOP | SWAP | RETURN_VALUE) || is_unconditional_jump(op)
}

/// The body of the finally statement `c` (its table entries `es`; the body starts at `start`):
/// its protected ranges, cut only by unprotected `NOP`s and by the code of statements nested in
/// it (`nested`: a try/except whose body is protected by its own handlers — 3.11's
/// try/except/finally is a try/except statement as the body of the finally), followed (after the
/// `NOP` of its last line, if any) by the normal copy of F, instruction for instruction the
/// handler's; no jump out of the body other than to that copy and no return (a return, break or
/// continue in the body places a copy of F before leaving: not lifted yet).
#[allow(clippy::too_many_arguments)]
fn finally_shape(
    instrs: &[Instr],
    c: &mut TryShape,
    es: &[Entry],
    start: usize,
    nested: &dyn Fn(usize) -> bool,
    unprotected: &dyn Fn(usize) -> bool,
    upto: &dyn Fn(u32) -> usize,
    at: &dyn Fn(u32) -> Option<usize>,
    line: u32,
) -> Result<()> {
    let fb = || reason("try/finally: a return, break or continue in its body", line);
    let (first, last) = (es[0], es[es.len() - 1]);
    let fexc = &instrs[c.push + 1..c.reraise];
    let covered = |i: usize| es.iter().any(|e| upto(e.start) <= i && i < upto(e.end));
    // F may be copied before exits of the body when it is straight-line code that deletes no
    // variable (what is defined at an exit is what is defined at the raising points:
    // `lower_finally_normal`).
    let copyable = fexc.iter().all(|i| {
        i.jump_target().is_none() && !matches!(i.opcode, DELETE_FAST | DELETE_NAME | DELETE_GLOBAL | DELETE_DEREF)
    });
    let is_copy = |i: usize| {
        copyable
            && !fexc.is_empty()
            && instrs.get(i..i + fexc.len()).is_some_and(|n| n.iter().zip(fexc).all(|(a, b)| (a.opcode, a.arg) == (b.opcode, b.arg)))
    };
    // A copy of F at `i` before an exit: then the exit's pops (a loop's iterator), a constant
    // returned, and the return or a jump (out of the code before the handler, `push`): the index
    // of that return or jump.
    // (`in_nested`: the copy lies in the code of a statement nested in the body — after the
    // `POP_EXCEPT` of a return, break or continue in one of its handlers —, where no table entry
    // protects it.)
    let exit_tail_in = |i: usize, in_nested: bool| {
        if !is_copy(i) {
            return None;
        }
        let mut e = i + fexc.len();
        while instrs.get(e).is_some_and(|x| matches!(x.opcode, POP_TOP | SWAP | NOP)) {
            e += 1;
        }
        if instrs.get(e).is_some_and(|x| x.opcode == LOAD_CONST) && instrs.get(e + 1).is_some_and(|x| x.opcode == RETURN_VALUE) {
            e += 1;
        }
        let leaves = instrs.get(e).is_some_and(|x| {
            x.opcode == RETURN_VALUE
                || (is_unconditional_jump(x.opcode) && x.jump_target().and_then(at).is_some_and(|t| !(start..c.push).contains(&t)))
        });
        let free = |j: usize| if in_nested { unprotected(j) } else { !covered(j) && !nested(j) };
        (leaves && e < c.push && (i..=e).all(free)).then_some(e)
    };
    let exit_tail = |i: usize| exit_tail_in(i, false);
    let skip_nops = |mut j: usize| {
        while instrs.get(j).is_some_and(|x| x.opcode == NOP) {
            j += 1;
        }
        j
    };
    // The body's exits after its last protected instruction (a final `if …: break`): copies of F
    // before exits, each followed by another copy — the last copy is the normal one.
    let mut orelse = upto(last.end);
    while let Some(e) = exit_tail(skip_nops(orelse)).filter(|&e| is_copy(skip_nops(e + 1))) {
        orelse = e + 1;
    }
    let mut k = orelse;
    if instrs.get(k).is_some_and(|i| i.opcode == NOP) && fexc.first().is_none_or(|i| i.opcode != NOP) {
        k += 1;
    }
    let same = instrs
        .get(k..k + fexc.len())
        .is_some_and(|n| n.iter().zip(fexc).all(|(a, b)| (a.opcode, a.arg) == (b.opcode, b.arg)));
    // A body every path of which leaves (by its exits or raising) has no normal copy: its
    // protected code runs up to the handler. (Taken only with exits, below.)
    let no_normal = !same && orelse == c.push;
    if start >= orelse || !(same || no_normal) || (same && k + fexc.len() > c.push) || es.iter().any(|e| e.depth != first.depth) {
        return Err(fb());
    }
    let mut exits = Vec::new();
    let mut i = start;
    while i < orelse {
        let ins = &instrs[i];
        let inner = nested(i);
        if !(covered(i) || inner || ins.opcode == NOP) {
            // Unprotected code that is no nested statement: a copy of F before an exit of the
            // body — then the exit's pops (a loop's iterator), a constant returned, and the
            // return or the jump out of the body.
            let Some(e) = exit_tail(i).filter(|&e| e < orelse) else {
                return Err(fb());
            };
            exits.push(i..i + fexc.len());
            i = e + 1;
            continue;
        }
        if inner && unprotected(i) {
            // A copy of F before a return, break or continue in a handler of a nested statement.
            if let Some(e) = exit_tail_in(i, true).filter(|&e| e < orelse) {
                exits.push(i..i + fexc.len());
                i = e + 1;
                continue;
            }
        }
        // (A nested `with`'s `BEFORE_WITH` is right before its code.)
        let nested_with = matches!(ins.opcode, BEFORE_WITH | BEFORE_ASYNC_WITH) && nested(i + 1);
        if ins.opcode == RETURN_VALUE
            || (!inner && !nested_with && matches!(ins.opcode, PUSH_EXC_INFO | POP_EXCEPT | RERAISE | BEFORE_WITH | BEFORE_ASYNC_WITH))
        {
            return Err(fb());
        }
        if let Some(t) = ins.jump_target() {
            match at(t) {
                Some(t) if (start..orelse).contains(&t) || t == orelse || t == k => {}
                _ => return Err(fb()),
            }
        }
        i += 1;
    }
    c.depth = first.depth as usize;
    c.body = start..orelse;
    c.orelse = orelse;
    if !exits.is_empty() {
        c.exits = exits;
        c.normal = if same { k..k + fexc.len() } else { orelse..orelse };
    } else if no_normal {
        return Err(fb());
    }
    Ok(())
}

/// `LOAD_CONST None; STORE_FAST name; DELETE_FAST name` at `p`.
fn is_unbind(ci: &CodeInfo, instrs: &[Instr], p: usize, name: u32) -> bool {
    matches!(
        instrs.get(p..p + 3),
        Some([a, b, c]) if a.opcode == LOAD_CONST
            && matches!(ci.consts.get(a.arg as usize), Some(Const::None))
            && (b.opcode, b.arg) == (STORE_FAST, name)
            && (c.opcode, c.arg) == (DELETE_FAST, name)
    )
}

/// Whether the instruction at `p` starts an `as` clean-up block (`name = None; del name;
/// RERAISE 1`) of one of `c`'s handlers.
fn is_as_cleanup(ci: &CodeInfo, instrs: &[Instr], c: &TryShape, p: Option<usize>) -> bool {
    let Some(p) = p else { return false };
    c.handlers.iter().filter_map(|h| h.name).any(|n| {
        is_unbind(ci, instrs, p, n) && instrs.get(p + 3).is_some_and(|r| (r.opcode, r.arg) == (RERAISE, 1))
    })
}

/// The handler chain starting at `PUSH_EXC_INFO` (index `push`); the body range and depth are
/// filled in from the table by the caller.
fn chain(ci: &CodeInfo, instrs: &[Instr], push: usize) -> Result<TryShape> {
    if with_stmt::is_with(instrs, push) {
        return with_stmt::chain(ci, instrs, push);
    }
    let line = instrs.get(push + 1).map_or(instrs[push].line, |i| i.line);
    let at = |off: u32| instrs.binary_search_by_key(&off, |i| i.offset).ok();
    let is_cleanup = |k: usize| {
        instrs.get(k..k + 3).map(|s| s.iter().map(|i| (i.opcode, i.arg)).collect::<Vec<_>>()).as_deref()
            == Some(&[(COPY, 3), (POP_EXCEPT, 0), (RERAISE, 1)][..])
    };
    let mut handlers = Vec::new();
    let mut p = push + 1;
    if exception_table::handler_kind(instrs, instrs[push].offset) == Some(HandlerKind::Finally) {
        // `PUSH_EXC_INFO; … F …; RERAISE 0` then the clean-up: F straight-line or with jumps
        // inside itself only, leaving by the re-raise (or a raise) alone — no return, break or
        // continue (a `POP_EXCEPT`), no statement with handlers inside it.
        let fin = |l: u32| reason("try/finally: a branch ending its finally clause, or a return, break, continue or try in it", l);
        let mut r = p;
        while instrs.get(r).is_some_and(|i| i.opcode != RERAISE) {
            let i = &instrs[r];
            if matches!(
                i.opcode,
                PUSH_EXC_INFO | POP_EXCEPT | RETURN_VALUE | CHECK_EXC_MATCH | CHECK_EG_MATCH | WITH_EXCEPT_START | BEFORE_WITH
                    | BEFORE_ASYNC_WITH | YIELD_VALUE | SEND
            ) {
                return Err(fin(i.line));
            }
            r += 1;
        }
        if instrs.get(r).map(|i| (i.opcode, i.arg)) != Some((RERAISE, 0)) || !is_cleanup(r + 1) {
            return Err(fin(line));
        }
        if (p..r).any(|k| instrs[k].jump_target().is_some_and(|t| !at(t).is_some_and(|t| p <= t && t <= r))) {
            return Err(fin(instrs[p].line));
        }
        handlers.push(HandlerShape { test: p..p, check: p, name: None, bind: p, line: instrs[p].line });
        return Ok(TryShape {
            body: 0..0,
            orelse: 0,
            depth: 0,
            push,
            handlers,
            reraise: r,
            cleanup: r + 1,
            end: r + 4,
            line,
            inner: Vec::new(),
            finally: true,
            exits: Vec::new(),
            normal: 0..0,
            onward: Vec::new(),
        });
    }
    loop {
        let Some(first) = instrs.get(p) else { return Err(shape(line)) };
        if first.opcode == POP_TOP {
            // A bare `except:` (always the last handler): its body runs to the clean-up block,
            // the target of the table entry protecting the handler code from `PUSH_EXC_INFO`.
            handlers.push(HandlerShape { test: p..p, check: p, name: None, bind: p, line: first.line });
            let push_off = instrs[push].offset;
            let cleanup = exception_table::entries(&ci.exceptiontable)
                .into_iter()
                .find(|e| e.lasti && e.start <= push_off && push_off < e.end)
                .and_then(|e| at(e.target));
            let Some(cleanup) = cleanup.filter(|&k| k > p && is_cleanup(k)) else { return Err(shape(first.line)) };
            let end = cleanup + 3;
            return Ok(TryShape { body: 0..0, orelse: 0, depth: 0, push, handlers, reraise: cleanup, cleanup, end, line, inner: Vec::new(), finally: false, exits: Vec::new(), normal: 0..0, onward: Vec::new() });
        }
        // The test: straight-line code up to CHECK_EXC_MATCH.
        let mut c = p;
        while instrs.get(c).is_some_and(|i| i.opcode != CHECK_EXC_MATCH) {
            let i = &instrs[c];
            if i.jump_target().is_some()
                || matches!(i.opcode, RETURN_VALUE | RAISE_VARARGS | RERAISE | PUSH_EXC_INFO | POP_EXCEPT | CHECK_EG_MATCH)
            {
                return Err(shape(first.line));
            }
            c += 1;
        }
        let (Some(jump), Some(bind)) = (instrs.get(c + 1), instrs.get(c + 2)) else { return Err(shape(first.line)) };
        if c == p || jump.opcode != POP_JUMP_FORWARD_IF_FALSE {
            return Err(shape(first.line));
        }
        let name = match bind.opcode {
            STORE_FAST => Some(bind.arg),
            POP_TOP => None,
            _ => return Err(shape(first.line)),
        };
        handlers.push(HandlerShape { test: p..c, check: c, name, bind: c + 2, line: first.line });
        let Some(next) = jump.jump_target().and_then(at) else { return Err(shape(first.line)) };
        if next <= c + 2 {
            return Err(shape(first.line));
        }
        p = next;
        if (instrs[p].opcode, instrs[p].arg) == (RERAISE, 0) {
            break;
        }
    }
    if !is_cleanup(p + 1) {
        return Err(shape(line));
    }
    Ok(TryShape { body: 0..0, orelse: 0, depth: 0, push, handlers, reraise: p, cleanup: p + 1, end: p + 4, line, inner: Vec::new(), finally: false, exits: Vec::new(), normal: 0..0, onward: Vec::new() })
}

// ---------------------------------------------------------------------------------------------
// Translation

impl Translator<'_> {
    /// The try statement whose body starts at node `cur`, unless it is being translated (of two
    /// starting there, the outer one: the other is the first statement of its body).
    pub(super) fn try_at(&self, cur: Node) -> Option<&TryShape> {
        let tries = self.code.tries?;
        tries
            .tries
            .iter()
            .filter(|t| self.code.cfg.node_at(t.body.start) == Some(cur) && !self.open_tries.contains(&t.push))
            .max_by_key(|t| t.end)
    }

    /// Whether the translation skips instruction `i` (see `Tries::skip`).
    pub(super) fn skipped(&self, i: usize) -> bool {
        self.code.tries.is_some_and(|t| t.skip.contains(&i))
    }

    /// At a skipped copy of a `with`'s exit call (`Tries::exit_pops`): pops the statement's bound
    /// `__exit__`, which must be on top of the stack.
    pub(super) fn exit_pop(&mut self, i: usize, stack: &mut Stack) -> Result<()> {
        let Some(push) = self.code.tries.and_then(|t| t.exit_pops.get(&i)).copied() else { return Ok(()) };
        let want = self.with_exits.get(&push).copied();
        match stack.pop() {
            Some(Val::Reg(r)) if Some(r) == want => Ok(()),
            _ => Err(reason("with: statement shape", self.line)),
        }
    }

    /// Translates the try statement `t` (entered at its body's first block) into a `Try`;
    /// returns where control continues after it (`None` when every path left).
    pub(super) fn translate_try(&mut self, t: &TryShape, stack: &mut Stack, out: &mut Block) -> Result<Option<Node>> {
        self.tries_done.insert(t.push);
        let instrs = self.code.instrs;
        let cfg = self.code.cfg;
        let try_line = match t.body.start.checked_sub(1).map(|i| &instrs[i]) {
            Some(nop) if nop.opcode == NOP => nop.line,
            _ => instrs[t.body.start].line,
        };
        if with_stmt::is_with(instrs, t.push) {
            return self.translate_with(t, stack, out);
        }
        let bad = |line: u32| Err(shape(line));
        if stack.len() != t.depth {
            return bad(try_line);
        }
        let (Some(entry), Some(body_end)) = (cfg.node_at(t.body.start), cfg.node_at(t.orelse)) else {
            return bad(try_line);
        };
        let at_head = self.ctx.last().is_some_and(|c| c.head == entry);
        if !t.exits.is_empty() {
            self.open_tries.push(t.push);
            let r = self.finally_parts(t, entry, body_end, at_head, stack);
            self.open_tries.pop();
            let (body, handlers, orelse, reached) = r?;
            out.push(stmt(StmtKind::Try { body, handlers, orelse, finally: true }, try_line));
            // (On after the normal copy of F, which is skipped.)
            return Ok(reached.then_some(body_end));
        }
        let join = self.try_join(t)?;
        self.open_tries.push(t.push);
        let r = self.try_parts(t, entry, body_end, join, at_head, stack);
        self.open_tries.pop();
        let (body, handlers, orelse, reached) = r?;
        out.push(stmt(StmtKind::Try { body, handlers, orelse, finally: false }, try_line));
        Ok(reached.then_some(join))
    }

    /// The parts of a try/finally whose body leaves by return, break or continue (`t.exits`):
    /// the body (each exit's copy of F skipped), the exceptional copy of F as a bare handler
    /// ending in a bare raise, and F once more, translated from that copy (straight-line code),
    /// as the `finally` else clause; whether the body's end is reached (then the translation goes
    /// on at the normal copy of F, skipped, and what follows it).
    #[allow(clippy::type_complexity)]
    fn finally_parts(&mut self, t: &TryShape, entry: Node, body_end: Node, at_head: bool, stack: &Stack) -> Result<(Block, Vec<Handler>, Block, bool)> {
        let instrs = self.code.instrs;
        let cfg = self.code.cfg;
        let fb = |line: u32| reason("try/finally: a return, break or continue in its body", line);
        let (body, end) = self.part(entry, body_end, stack.clone(), at_head)?;
        let reached = match end {
            Some(s) if s == *stack => true,
            None => false,
            Some(_) => return Err(shape(t.line)),
        };
        let [h] = &t.handlers[..] else { return Err(fb(t.line)) };
        let Some(start) = cfg.node_at(h.bind) else { return Err(shape(h.line)) };
        let mut hstack = stack.clone();
        hstack.extend([Val::Null, Val::Null]);
        self.in_finally += 1;
        self.in_handler += 1;
        let r = self.part(start, cfg.exit(), hstack, false);
        self.in_handler -= 1;
        self.in_finally -= 1;
        let (hbody, hend) = r?;
        if hend.is_some() {
            return Err(fb(h.line));
        }
        let handlers = vec![Handler { test: None, name: None, body: hbody }];
        let mut fstack = stack.clone();
        let mut orelse = Vec::new();
        for ins in &instrs[t.push + 1..t.reraise] {
            self.line = ins.line;
            self.instr(ins, &mut fstack, &mut orelse)?;
        }
        if fstack != *stack {
            return Err(fb(t.line));
        }
        Ok((body, handlers, orelse, reached))
    }

    #[allow(clippy::type_complexity)]
    fn try_parts(
        &mut self,
        t: &TryShape,
        entry: Node,
        body_end: Node,
        join: Node,
        at_head: bool,
        stack: &Stack,
    ) -> Result<(Block, Vec<Handler>, Block, bool)> {
        let instrs = self.code.instrs;
        let cfg = self.code.cfg;
        let same = |end: &Option<Stack>, line: u32| match end {
            Some(s) if s != stack => Err(shape(line)),
            _ => Ok(end.is_some()),
        };
        // (Nor may the body's regions run past the statement's join.)
        self.try_follows.push(join);
        let r = self.part(entry, body_end, stack.clone(), at_head);
        self.try_follows.pop();
        let (body, end) = r?;
        let mut reached = false;
        let orelse = if same(&end, t.line)? {
            let (orelse, end) = self.part(body_end, join, stack.clone(), false)?;
            reached |= same(&end, t.line)?;
            orelse
        } else {
            // The body always leaves: the else clause is never run.
            Vec::new()
        };
        let mut handlers = Vec::new();
        for h in &t.handlers {
            if h.test.is_empty() {
                // A bare `except:`: the exception's `POP_TOP` is skipped; the body runs with the
                // saved exception state on the stack.
                let Some(start) = cfg.node_at(h.bind) else { return Err(shape(h.line)) };
                let mut hstack = stack.clone();
                hstack.push(Val::Null);
                if t.finally {
                    // The exceptional copy of a finally clause runs with the exception still on
                    // the stack, and ends with `RERAISE 0` (a bare raise: `structure`).
                    hstack.push(Val::Null);
                    self.in_finally += 1;
                }
                self.in_handler += 1;
                let r = self.part(start, join, hstack, false);
                self.in_handler -= 1;
                if t.finally {
                    self.in_finally -= 1;
                }
                let (body, end) = r?;
                reached |= same(&end, h.line)?;
                handlers.push(Handler { test: None, name: None, body });
                continue;
            }
            // The test: `E` computed with the exception state and the exception on the stack
            // (placeholders nothing may use: a `Val::Null` cannot be an operand).
            let mut tstack = stack.clone();
            tstack.extend([Val::Null, Val::Null]);
            let mut test = Vec::new();
            for k in h.test.clone() {
                self.line = instrs[k].line;
                self.instr(&instrs[k], &mut tstack, &mut test)?;
            }
            let e = match tstack.pop() {
                Some(Val::Reg(e)) if tstack.len() == stack.len() + 2 => e,
                _ => return Err(shape(h.line)),
            };
            // The body, from the binding of the exception (skipped), with the saved exception
            // state on the stack (`POP_EXCEPT` pops it).
            let Some(start) = cfg.node_at(h.bind) else { return Err(shape(h.line)) };
            let mut hstack = stack.clone();
            hstack.push(Val::Null);
            self.in_handler += 1;
            let r = self.part(start, join, hstack, false);
            self.in_handler -= 1;
            let (body, end) = r?;
            reached |= same(&end, h.line)?;
            let name = match h.name {
                Some(n) => Some(self.code.local(n, h.line)?),
                None => None,
            };
            handlers.push(Handler { test: Some((test, e)), name, body });
        }
        Ok((body, handlers, orelse, reached))
    }

    /// `region` for a part of a try statement (its body, else clause or a handler) ending at
    /// `follow`: no region inside it may run past `follow`.
    pub(super) fn part(&mut self, entry: Node, follow: Node, stack: Stack, first: bool) -> Result<(Block, Option<Stack>)> {
        self.try_follows.push(follow);
        let r = self.region(entry, follow, stack, first);
        self.try_follows.pop();
        r
    }

    /// Where the statement's normal paths meet: the target of the forward jump ending the else
    /// clause and of those ending the handlers (after their `POP_EXCEPT` and clean-up), other
    /// than a `break`/`continue` of the innermost loop. `cfg.exit()` when no path gets there (no
    /// region then stops at it).
    fn try_join(&self, t: &TryShape) -> Result<Node> {
        let instrs = self.code.instrs;
        let cfg = self.code.cfg;
        let index_of = |off: u32| instrs.binary_search_by_key(&off, |i| i.offset).ok();
        let mut ends = Vec::new();
        if t.push > 0 {
            ends.push(t.push - 1);
        }
        for (k, h) in t.handlers.iter().enumerate() {
            let stop = t.handlers.get(k + 1).map_or(t.reraise, |n| n.test.start);
            let inner = |p: usize| t.inner.iter().any(|r| r.contains(&p));
            for p in (h.bind + 1..stop).filter(|&p| instrs[p].opcode == POP_EXCEPT && !inner(p)) {
                ends.push(if h.name.is_some() { p + 4 } else { p + 1 });
            }
        }
        let loop_nodes: Vec<Node> = self.ctx.last().map_or(Vec::new(), |c| [Some(c.head), c.follow, c.alt].into_iter().flatten().collect());
        let mut join = None;
        for i in ends {
            let ins = &instrs[i];
            if ins.opcode != JUMP_FORWARD {
                continue;
            }
            let Some(node) = ins.jump_target().and_then(index_of).and_then(|j| cfg.node_at(j)) else {
                return Err(shape(ins.line));
            };
            if loop_nodes.contains(&node) {
                continue;
            }
            match join {
                Some(j) if j != node => return Err(shape(ins.line)),
                _ => join = Some(node),
            }
        }
        Ok(join.unwrap_or(cfg.exit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lift::tests::code_infos;
    use crate::py311::decode::instructions;

    fn recognised(src: &str) -> std::result::Result<Tries, String> {
        let ci = &code_infos(&format!("{src}\nc = f.__code__\n"), &["c"])[0];
        let instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        recognise(ci, &instrs).map_err(|f| f.to_string())
    }

    #[test]
    fn try_except_else_shapes() {
        let t = recognised(
            "def f(items):\n    out = []\n    for it in items:\n        try:\n            label = g(it)['label']\n        \
             except (KeyError, ValueError) as e:\n            if e.args:\n                continue\n            return e\n        \
             except OSError:\n            break\n        else:\n            log(it)\n        out.append(label)\n    return out\n",
        )
        .unwrap();
        assert_eq!(t.tries.len(), 1);
        let s = &t.tries[0];
        assert_eq!(s.depth, 1, "the for iterator");
        assert_eq!(s.handlers.len(), 2);
        assert!(s.handlers[0].name.is_some() && s.handlers[1].name.is_none());
        assert_eq!((s.handlers[0].line, s.handlers[1].line), (6, 10));
        // The two exits of the `as e` handler each unbind `e` (3 instructions each), plus the
        // two bindings.
        assert_eq!(t.skip.len(), 2 + 2 * 3);
        // A dead handler (nothing protected) is no statement.
        let t = recognised("def f(x):\n    try:\n        pass\n    except E:\n        x = 1\n    return x\n").unwrap();
        assert!(t.tries.is_empty());
        // Two statements one after the other.
        let t = recognised(
            "def f(x):\n    try:\n        x = g(x)\n    except E:\n        x = 1\n    try:\n        x = g(x)\n    \
             except F as e:\n        x = e\n    return x\n",
        )
        .unwrap();
        assert_eq!(t.tries.len(), 2);
        // Nested: in a body, in a handler (with its `as` name's clean-ups not confused with the
        // inner statement's), in an else clause.
        for src in [
            "def f(x):\n    try:\n        g(x)\n        try:\n            h(x)\n        except F:\n            pass\n        k(x)\n    \
             except E:\n        pass\n",
            "def f(x):\n    try:\n        g(x)\n    except E as e:\n        try:\n            h(e)\n        except F as e2:\n            \
             x = e2\n    return x\n",
            "def f(x):\n    try:\n        g(x)\n    except E:\n        pass\n    else:\n        try:\n            h(x)\n        \
             except F:\n            pass\n    return x\n",
        ] {
            let t = recognised(src).unwrap();
            assert_eq!(t.tries.len(), 2, "{src}");
            assert_eq!(t.tries.iter().map(|s| s.inner.len()).sum::<usize>(), 1, "{src}");
        }
    }

    #[test]
    fn try_except_finally_is_a_try_except_in_a_finally_body() {
        // 3.11's code: the try/except statement is the protected body of the finally, whose
        // table entries resume after the inner handlers' code; the inner statement is first in
        // the outer body (both start at the same instruction).
        for src in [
            "def f(xs):\n    for x in xs:\n        try:\n            g(x)\n        except (E, F) as e:\n            h(e)\n        \
             else:\n            k(x)\n        finally:\n            log(x)\n",
            "def f(x):\n    try:\n        y = g(x)\n    except:\n        y = 1\n    finally:\n        log(x)\n    return y\n",
        ] {
            let t = recognised(src).unwrap();
            assert_eq!(t.tries.len(), 2, "{src}");
            let (inner, outer) = (&t.tries[0], &t.tries[1]);
            assert!(outer.finally && !inner.finally, "{src}");
            assert_eq!(outer.body.start, inner.body.start, "{src}");
            assert_eq!(outer.body.end, inner.end, "the finally's body is the try/except statement: {src}");
            assert_eq!(outer.inner, vec![inner.body.start..inner.end], "{src}");
        }
        // A statement first in a try/except body: the outer body starts at the `NOP` of its own
        // `try` line, before the inner one's.
        let t = recognised(
            "def f(x):\n    try:\n        try:\n            y = g(x)\n        except E:\n            y = 1\n        k(y)\n    \
             except F:\n        y = 2\n    return y\n",
        )
        .unwrap();
        let (inner, outer) = (&t.tries[0], &t.tries[1]);
        assert_eq!(outer.body.start + 1, inner.body.start);
    }

    #[test]
    fn bare_and_base_exception_handlers() {
        // A bare `except:` ends the chain (no `RERAISE 0`): its body runs to the clean-up block.
        let t = recognised("def f(x):\n    try:\n        g(x)\n    except:\n        h(x)\n").unwrap();
        assert_eq!(t.tries.len(), 1);
        let s = &t.tries[0];
        assert_eq!((s.handlers.len(), s.reraise, s.cleanup), (1, s.cleanup, s.end - 3));
        assert!(s.handlers[0].test.is_empty());
        // After typed handlers, and handlers naming what is not an Exception.
        let t = recognised(
            "def f(xs):\n    for x in xs:\n        try:\n            g(x)\n        except ValueError as e:\n            \
             h(e)\n        except (KeyboardInterrupt, SystemExit):\n            break\n        except BaseException:\n            \
             continue\n        except:\n            return x\n",
        )
        .unwrap();
        let s = &t.tries[0];
        assert_eq!(s.handlers.len(), 4);
        assert!(s.handlers[3].test.is_empty() && !s.handlers[2].test.is_empty());
    }

    #[test]
    fn try_finally_with_exits_in_its_body() {
        // The copies of F before a `return x` (in a loop: the iterator popped after it), a
        // `return None`, a `break` and a `continue`, and a final `if …: break` after the last
        // protected instruction; the normal copy last.
        for (src, n) in [
            (
                "def f(xs):\n    for x in xs:\n        try:\n            if x:\n                return g(x)\n            if h(x):\n                \
                 return None\n            if k(x):\n                continue\n            y = 1\n        finally:\n            log(x)\n    return 0\n",
                3,
            ),
            ("def f(xs):\n    for x in xs:\n        try:\n            if g(x):\n                break\n        finally:\n            log(x)\n", 1),
        ] {
            let t = recognised(src).unwrap();
            let [s] = &t.tries[..] else { panic!("{src}") };
            assert!(s.finally, "{src}");
            assert_eq!(s.exits.len(), n, "{src}");
            assert!(s.exits.iter().all(|e| e.end <= s.normal.start && e.len() == s.normal.len()), "{src}");
            assert!(s.normal.end < s.push && s.exits.iter().chain([&s.normal]).all(|r| r.clone().all(|i| t.skip.contains(&i))));
        }
    }

    #[test]
    fn exits_from_handlers_and_with_bodies() {
        // A finally clause's copies before the returns of a handler and of the body of the
        // try/except that is its body (no normal copy: every path leaves), and before a break and
        // a continue of a named handler.
        for (src, n) in [
            (
                "def f(x):\n    try:\n        if x:\n            return g(x)\n    except E:\n        return 2\n    \
                 finally:\n        h(x)\n    return 1\n",
                2,
            ),
            ("def f(x):\n    try:\n        return g(x)\n    except E:\n        return h(x)\n    finally:\n        k(x)\n", 2),
            (
                "def f(xs):\n    for x in xs:\n        try:\n            g(x)\n        except E as e:\n            if e.args:\n                \
                 break\n            continue\n        finally:\n            k(x)\n",
                2,
            ),
        ] {
            let t = recognised(src).unwrap();
            let [inner, outer] = &t.tries[..] else { panic!("{src}") };
            assert!(outer.finally && !inner.finally, "{src}");
            assert_eq!(outer.exits.len(), n, "{src}");
            assert!(outer.exits.iter().all(|r| r.clone().all(|i| t.skip.contains(&i))), "{src}");
        }
        // A with's copies of its exit call before a return, a continue and a break; the last one
        // (a final `if …: break` after the last protected instruction) followed by the normal
        // copy, which goes on where the suppressed path does.
        let t = recognised(
            "def f(xs, m):\n    for x in xs:\n        with m as v:\n            if x:\n                return g(x)\n            if v:\n                \
             continue\n            h(x)\n            if x is None:\n                break\n    return 0\n",
        )
        .unwrap();
        let [w] = &t.tries[..] else { panic!() };
        assert_eq!(w.exits.len(), 3);
        assert!(w.exits.iter().all(|r| r.len() == 6 && t.exit_pops.get(&r.start) == Some(&w.push)));
        // An exit through two withs: the inner one's copy, then the outer one's, which the outer
        // statement takes as its exit.
        let t = recognised("def f(a, b, xs):\n    for x in xs:\n        with a, b:\n            if x:\n                return g(x)\n            if xs:\n                break\n            h()\n    return 0\n").unwrap();
        let [inner, outer] = &t.tries[..] else { panic!() };
        assert_eq!((inner.exits.len(), outer.exits.len()), (2, 2));
        assert_eq!(inner.onward.len(), 2);
        assert!(inner.onward.iter().all(|(o, _)| o.len() == 1 && outer.exits.iter().any(|r| r.start == o[0])));
        assert!(outer.exits.iter().all(|r| t.exit_pops.get(&r.start) == Some(&outer.push)));
        // A final return: the body runs up to it (no normal copy).
        let t = recognised("def f(m, x):\n    with m:\n        if x:\n            return 1\n        return g(x)\n").unwrap();
        let [w] = &t.tries[..] else { panic!() };
        assert_eq!(w.exits.len(), 2);
        assert_eq!(w.body.end, w.orelse);
        assert!(w.orelse <= w.push && w.exits.iter().all(|r| r.end < w.orelse));
    }

    #[test]
    fn other_statements_fall_back_with_their_reason() {
        let cases = [
            (
                // (An exit through two finally clauses: the copy of the inner one is followed by
                // the outer one's.)
                "def f(xs):\n    for x in xs:\n        try:\n            try:\n                if g(x):\n                    break\n            \
                 finally:\n                h(x)\n        finally:\n            k(x)\n",
                "exception handling (try/finally: a return, break or continue in its body) at line 5",
            ),
            (
                // (A finally clause copied before an exit must be straight-line code deleting no
                // variable.)
                "def f(xs):\n    for x in xs:\n        try:\n            if g(x):\n                break\n        finally:\n            del xs\n",
                "exception handling (try/finally: a return, break or continue in its body) at line 4",
            ),
            (
                "def f(xs):\n    for x in xs:\n        try:\n            g(x)\n        finally:\n            if h(x):\n                continue\n",
                "exception handling (try/finally: a branch ending its finally clause, or a return, break, continue or try in it) at line 7",
            ),
            (
                // (An exit through a with and a finally: the exit call's copy, then F's.)
                "def f(a, x):\n    try:\n        with a:\n            if x:\n                return g(x)\n            h()\n    finally:\n        k()\n",
                "exception handling (with: a return, break, continue or statement with handlers in its body) at line 3",
            ),
            ("def f(x):\n    try:\n        g(x)\n    except* E:\n        h(x)\n", "exception handling (except*) at line 3"),
            (
                "async def f(xs):\n    async for x in xs:\n        await g(x)\n",
                "exception handling (async for) at line 2",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(recognised(src).unwrap_err(), want, "{src}");
        }
    }

    #[test]
    fn try_statements_in_an_async_def() {
        // The await loops folded first (as `lift` does): a try around awaits, awaits in its
        // handler and finally clause (whose await loop would otherwise be a branch in F); an
        // `async with` is a with (its awaits removed).
        let fold = |src: &str| {
            let ci = &code_infos(&format!("{src}\nc = f.__code__\n"), &["c"])[0];
            let mut instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
            super::super::awaits::rewrite(&mut instrs).unwrap();
            recognise(ci, &instrs).map(|t| t.tries.len()).map_err(|f| f.to_string())
        };
        let src = "async def f(x):\n    try:\n        a = await g(x)\n    except E as e:\n        a = await g(e)\n    \
                   finally:\n        await h()\n    return a\n";
        assert_eq!(fold(src), Ok(2));
        let src = "async def f(m):\n    async with m as v:\n        r = await g(v)\n    return r\n";
        assert_eq!(fold(src), Ok(1));
    }
}
