//! Control: loops (`for`, `while`, their else clauses), `break`/`continue`, returns and the
//! tests of conditional jumps; `GET_ITER`, which starts a `for` loop (`iter_snapshot`: the items
//! or, when reading them at once is not safe, the iterator; lowering chooses fold or lazy loop).
//!
//! A loop found by `cfg::Cfg::find_loops` is translated as a region from its head
//! (`structure`); inside it, reaching the head is `continue` and reaching its follow (or else
//! clause) is `break`. `GET_ITER` sees only the `Emitter`.
use super::cfg::{Node, Term};
use super::state::{pop_reg, stmt, Emitter, LoopCtx, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::pop_jump_sense;

impl Translator<'_> {
    /// `continue`/`break` when `cur` is the innermost loop's head, follow or else clause.
    pub(super) fn loop_exit(&mut self, cur: Node, stack: &Stack) -> Result<Option<Block>> {
        let line = self.line;
        let Some(c) = self.ctx.last() else {
            return Ok(None);
        };
        let (expected, kind, flag) = if cur == c.head {
            (&c.body_stack, StmtKind::Continue, None)
        } else if Some(cur) == c.follow {
            (&c.outer_stack, StmtKind::Break, c.flag.clone())
        } else if Some(cur) == c.alt {
            (&c.outer_stack, StmtKind::Break, None)
        } else {
            return Ok(None);
        };
        if expected != stack {
            return Err(Fallback::shape("stack at a break or continue", line));
        }
        let mut out = Vec::new();
        if let Some(flag) = flag {
            let t = self.em.bind_const(Const::Bool(true), line, &mut out);
            out.push(stmt(StmtKind::Store(flag, t), line));
        }
        out.push(stmt(kind, line));
        Ok(Some(out))
    }

    /// Translates the loop headed by `h` (and its else clause); returns where control continues.
    pub(super) fn translate_loop(&mut self, h: Node, stack: &mut Stack, out: &mut Block) -> Result<Option<Node>> {
        let loops = self.code.loops;
        let info = &loops[&h];
        let blk = &self.code.cfg.blocks[h];
        let line = self.code.instrs
            [if blk.body.is_empty() { blk.term_instr.unwrap_or(blk.body.start) } else { blk.body.start }]
        .line;
        self.line = line;
        let flag = info.alt.map(|_| self.em.broke_flag());
        if let Some(flag) = &flag {
            let f = self.em.bind_const(Const::Bool(false), line, out);
            out.push(stmt(StmtKind::Store(flag.clone(), f), line));
        }
        let mut ctx = LoopCtx {
            head: h,
            latch: info.latch,
            follow: info.follow,
            alt: info.alt,
            flag: flag.clone(),
            body_stack: stack.clone(),
            outer_stack: stack.clone(),
        };
        if let Term::ForIter { body: entry, .. } = blk.term {
            let Some(&Val::Iter(iter)) = stack.last() else {
                return Err(Fallback::shape("FOR_ITER without an iterator", line));
            };
            ctx.outer_stack.pop();
            let item = self.em.new_reg();
            let mut body_stack = stack.clone();
            body_stack.push(Val::Reg(item));
            self.ctx.push(ctx);
            let body = self.region(entry, h, body_stack, false);
            let ctx = self.ctx.pop().expect("pushed above");
            let (body, end) = body?;
            if end.is_some_and(|e| e != *stack) {
                return Err(Fallback::shape("stack changed by a loop body", line));
            }
            out.push(stmt(StmtKind::For { iter, item, body }, line));
            *stack = ctx.outer_stack;
        } else {
            self.ctx.push(ctx);
            let body = self.region(h, h, stack.clone(), true);
            self.ctx.pop();
            let (body, end) = body?;
            if end.is_some_and(|e| e != *stack) {
                return Err(Fallback::shape("stack changed by a loop body", line));
            }
            out.push(stmt(StmtKind::Loop { body }, line));
        }
        if let (Some(alt), Some(flag)) = (info.alt, flag) {
            // The else clause runs unless a break set the flag.
            let broke = self.em.bind(Expr::Load(flag), line, out);
            let follow = info.follow.expect("an else clause comes with a follow");
            let (mut else_body, else_end) = self.region(alt, follow, stack.clone(), false)?;
            let mut then_body = Vec::new();
            let (merged, after) = self.merge(&mut then_body, Some(stack.clone()), &mut else_body, else_end, line)?;
            out.push(stmt(StmtKind::If { cond: broke, then_body, else_body }, line));
            out.extend(after);
            *stack = merged.expect("the break side reaches the follow");
        }
        Ok(info.follow)
    }

    /// The `bool` register of a `POP_JUMP_*` test of `x`, and whether the jump is taken when it
    /// is true.
    pub(super) fn test(&mut self, ins: &Instr, x: Reg, out: &mut Block) -> (Reg, bool) {
        let (none_test, jump_if) = pop_jump_sense(ins.opcode).expect("a POP_JUMP instruction");
        if !none_test {
            (self.em.bind(Expr::Op(Intrinsic::Truth, vec![x]), ins.line, out), jump_if)
        } else {
            // Phrase the condition so the fall-through path is `then`.
            let none = self.em.bind_const(Const::None, ins.line, out);
            (self.em.bind(Expr::Op(Intrinsic::Is { negate: jump_if }, vec![x, none]), ins.line, out), false)
        }
    }

    /// `RETURN_VALUE`: the value on top of an otherwise empty stack.
    pub(super) fn return_value(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let v = pop_reg(stack, ins.line)?;
        if !stack.is_empty() {
            return Err(Fallback::shape("values left on the stack at return", ins.line));
        }
        out.push(stmt(StmtKind::Return(v), ins.line));
        Ok(())
    }
}

impl Translator<'_> {
    /// `RAISE_VARARGS 1/2` (`raise e`, `raise e from c`): `r := op raise(e)` (a sequential
    /// operation that always fails) and `raise r` (`bezoar::ir::StmtKind::Raise`), so that
    /// nothing after it in the block runs and the run fails at the raise's place in program
    /// order. Values below on the stack (a
    /// `for` loop's iterator) are dropped, as CPython's unwinding does. The bare `raise` (re-raise
    /// the exception being handled, possibly the caller's) is not compiled.
    pub(super) fn raise_varargs(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let (op, n) = match ins.arg {
            1 => (Intrinsic::Raise { from_cause: false }, 1),
            2 => (Intrinsic::Raise { from_cause: true }, 2),
            // A bare `raise` in a handler re-raises what the handler is handling; elsewhere it
            // re-raises whatever the caller is handling (or is CPython's RuntimeError): not
            // compiled.
            0 if self.in_handler > 0 => (Intrinsic::Reraise, 0),
            _ => return Err(Fallback { opcode: Some(ins.name().into()), ..Fallback::new("bare raise (re-raise)", line) }),
        };
        let ops = super::state::pop_regs(stack, n, line)?;
        self.end_with_raise(op, ops, line, out);
        Ok(())
    }

    /// `r := op <raise>(ops)` then `raise r` (`return r` inside a `while` loop).
    pub(super) fn end_with_raise(&mut self, op: Intrinsic, ops: Vec<crate::bezoar::ir::Reg>, line: u32, out: &mut Block) {
        let r = self.em.bind(Expr::Op(op, ops), line, out);
        // Inside a `while` loop the raise leaves like a return (an exit status the next
        // iteration waits for): a loop whose only way out is the raise would otherwise unroll
        // without bound while the raise waits for the calls before it. A `for` loop has its
        // items (or an ordered `next`) to bound it, so there the raise is no exit and the
        // iterations after it overlap (speculatively).
        let in_while =
            self.ctx.iter().any(|c| !matches!(self.code.cfg.blocks[c.head].term, super::cfg::Term::ForIter { .. }));
        out.push(stmt(if in_while { StmtKind::Return(r) } else { StmtKind::Raise(r) }, line));
    }
}

/// `GET_ITER`: what a `for` loop iterates over (`iter_snapshot`, decided at run time: a tuple of
/// the items, or the iterator to pull from lazily; see `lower::control::lower_for`).
pub(super) fn get_iter(em: &mut Emitter, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
    let x = pop_reg(stack, ins.line)?;
    let r = em.bind(Expr::Op(Intrinsic::IterSnapshot, vec![x]), ins.line, out);
    stack.push(Val::Iter(r));
    Ok(())
}
