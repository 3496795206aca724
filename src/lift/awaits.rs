//! `async def` bodies (`@poppy async def`): CPython 3.11 compiles `await e` as
//! `GET_AWAITABLE; LOAD_CONST None; SEND out; YIELD_VALUE; RESUME 3;
//! JUMP_BACKWARD_NO_INTERRUPT SEND; out:` and starts the body with `RETURN_GENERATOR; POP_TOP`.
//! `rewrite` checks that shape and folds each loop into its `GET_AWAITABLE` (the rest become
//! NOPs), so the CFG sees straight-line code; `Translator::await_op` then translates
//! `GET_AWAITABLE` as "the awaited value": `await f(...)` as a call of `op await_call(f)` (an
//! annotated external keeps its class), any other `await x` as `op await(x)` (one sequential
//! external). In 3.11 an `await` has no exception-table entry of its own: the loops are folded
//! before the statements with handlers are recognised (`exceptions::recognise`), so a try
//! statement around an await sees straight-line code, and its entries are the user's only.
//!
//! `async with` (docs/design-exceptions.md, "async with"): its three awaits — of `__aenter__()`'s
//! result (`GET_AWAITABLE 1` after `BEFORE_ASYNC_WITH`) and of `__aexit__(…)`'s
//! (`GET_AWAITABLE 2` after the exit call or `WITH_EXCEPT_START`) — are removed with their loops:
//! the callables that `BEFORE_ASYNC_WITH` is translated to (`op async_with_enter`,
//! `op async_with_exit`) call the method and await its result themselves, as one sequential
//! external each. What is left is `with`'s 3.11 layout, `BEFORE_ASYNC_WITH` in place of
//! `BEFORE_WITH`, which `with_stmt` recognises and translates as a `with`.
//!
//! Depends on `py311` instructions and `bezoar::ir`; nothing here runs code.
use super::state::{pop_reg, stmt, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;

fn nop(i: &mut Instr) {
    i.opcode = NOP;
    i.arg = 0;
}

/// Folds the `RETURN_GENERATOR` prologue and every `await` loop of a coroutine's instructions,
/// and removes an `async with`'s awaits (its `GET_AWAITABLE 1`/`2` and their loops: each
/// instruction keeps its offset, which is how the exception table and the jumps name it).
pub(super) fn rewrite(instrs: &mut Vec<Instr>) -> Result<()> {
    let mut removed = vec![false; instrs.len()];
    let mut i = 0;
    while i < instrs.len() {
        match instrs[i].opcode {
            RETURN_GENERATOR => {
                if instrs.get(i + 1).map(|n| n.opcode) != Some(POP_TOP) {
                    return Err(Fallback::shape("RETURN_GENERATOR", instrs[i].line));
                }
                nop(&mut instrs[i]);
                nop(&mut instrs[i + 1]);
                i += 2;
            }
            GET_AWAITABLE => {
                let line = instrs[i].line;
                let Some(w) = instrs.get(i..i + 7) else {
                    return Err(Fallback::shape("await", line));
                };
                let ok = w[1].opcode == LOAD_CONST
                    && w[2].opcode == SEND
                    && w[2].jump_target() == Some(w[6].offset)
                    && w[3].opcode == YIELD_VALUE
                    && w[4].opcode == RESUME
                    && w[4].arg == 3
                    && w[5].opcode == JUMP_BACKWARD_NO_INTERRUPT
                    && w[5].jump_target() == Some(w[2].offset);
                if !ok {
                    return Err(Fallback::shape("await", line));
                }
                // An `async with`'s await: after `BEFORE_ASYNC_WITH` (of `__aenter__()`), after
                // the exit call `__aexit__(None, None, None)` or `WITH_EXCEPT_START` (of
                // `__aexit__(…)`).
                let prev = i.checked_sub(1).map(|p| instrs[p].opcode);
                match (instrs[i].arg, prev) {
                    (0, _) => {}
                    (1, Some(BEFORE_ASYNC_WITH)) | (2, Some(CALL | WITH_EXCEPT_START)) => removed[i..i + 6].fill(true),
                    _ => return Err(Fallback::shape("await", line)),
                }
                for k in i + 1..i + 6 {
                    nop(&mut instrs[k]);
                }
                i += 6;
            }
            _ => i += 1,
        }
    }
    if removed.contains(&true) {
        let mut k = 0;
        instrs.retain(|_| {
            k += 1;
            !removed[k - 1]
        });
    }
    Ok(())
}

impl Translator<'_> {
    /// `GET_AWAITABLE` after `rewrite`: replaces the top of the stack by the awaited value.
    pub(super) fn await_op(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let v = pop_reg(stack, line)?;
        // `await f(...)`: the call was the last statement and its result is used by nothing else.
        let fused = !stack.contains(&Val::Reg(v))
            && matches!(out.last(), Some(Stmt { kind: StmtKind::Let(r, Expr::Call { .. }), .. }) if *r == v);
        if fused {
            let g = self.em.new_reg();
            let call = out.pop().expect("checked above");
            let StmtKind::Let(r, Expr::Call { func, args, kwnames }) = call.kind else { unreachable!() };
            out.push(stmt(StmtKind::Let(g, Expr::Op(Intrinsic::AwaitCall, vec![func])), call.line));
            out.push(stmt(StmtKind::Let(r, Expr::Call { func: g, args, kwnames }), call.line));
            stack.push(Val::Reg(r));
        } else {
            let r = self.em.bind(Expr::Op(Intrinsic::Await, vec![v]), line, out);
            stack.push(Val::Reg(r));
        }
        Ok(())
    }
}
