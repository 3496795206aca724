//! `match` statements: the pattern opcodes CPython 3.11 compiles them to. The control flow
//! (subject kept on the stack, `COPY`, `POP_JUMP_*`, `UNPACK_*`, `DELETE_SUBSCR` for `**rest`)
//! is the ordinary translation; here only the opcodes that test and destructure the subject,
//! each an intrinsic with CPython's semantics and errors (`poppy_jit._intrinsics`):
//! `MATCH_SEQUENCE`/`MATCH_MAPPING` (type flags; the subject stays), `GET_LEN` (`len`, the
//! subject stays), `MATCH_KEYS` (values for the keys or None; subject and keys stay),
//! `MATCH_CLASS n` (attributes or None; pops subject, class and keyword names).
//!
//! Depends on `py311` instructions and `bezoar::ir`.
use super::state::{pop_reg, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;

fn top(stack: &Stack, depth: usize, line: u32) -> Result<Reg> {
    match stack.len().checked_sub(depth).and_then(|i| stack.get(i)) {
        Some(Val::Reg(r)) => Ok(*r),
        Some(_) => Err(Fallback::shape("match subject", line)),
        None => Err(Fallback::shape("stack underflow", line)),
    }
}

/// Blocks the translation may visit per instruction (`Shared::budget`): a `match` statement's
/// failure paths share their clean-up blocks (`POP_TOP` chains), which the structure recovery
/// visits once per path, so code with patterns gets a larger (still linear) allowance.
pub(super) fn budget_per_instr(instrs: &[Instr]) -> usize {
    if instrs.iter().any(|i| matches!(i.opcode, MATCH_SEQUENCE | MATCH_MAPPING | MATCH_CLASS | MATCH_KEYS)) {
        32
    } else {
        4
    }
}

impl Translator<'_> {
    pub(super) fn pattern_op(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let (op, args) = match ins.opcode {
            MATCH_SEQUENCE => (Intrinsic::MatchSequence, vec![top(stack, 1, line)?]),
            MATCH_MAPPING => (Intrinsic::MatchMapping, vec![top(stack, 1, line)?]),
            GET_LEN => (Intrinsic::GetLen, vec![top(stack, 1, line)?]),
            MATCH_KEYS => (Intrinsic::MatchKeys, vec![top(stack, 2, line)?, top(stack, 1, line)?]),
            MATCH_CLASS => {
                let names = pop_reg(stack, line)?;
                let cls = pop_reg(stack, line)?;
                let subject = pop_reg(stack, line)?;
                (Intrinsic::MatchClass(ins.arg), vec![subject, cls, names])
            }
            _ => return Err(Fallback::unsupported(ins)),
        };
        let r = self.em.bind(Expr::Op(op, args), line, out);
        stack.push(Val::Reg(r));
        Ok(())
    }
}
