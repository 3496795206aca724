//! Operators: binary, in-place, unary, comparisons, `is`, `in`, and f-string pieces
//! (`FORMAT_VALUE`, `BUILD_STRING`). Each becomes one `op` intrinsic on its operands.
//!
//! Sees only the `Emitter` and the symbolic stack.
use super::state::{pop_regs, Emitter, Stack};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;
use crate::py311::oparg;

pub(super) fn translate(em: &mut Emitter, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
    let line = ins.line;
    let arg = ins.arg;
    let (op, nargs) = match ins.opcode {
        BINARY_OP => {
            let (op, inplace) = oparg::binary_op(arg).ok_or_else(|| Fallback::unsupported(ins))?;
            (Intrinsic::Binary { op, inplace }, 2)
        }
        COMPARE_OP => {
            let op = oparg::compare_op(arg).ok_or_else(|| Fallback::unsupported(ins))?;
            (Intrinsic::Compare(op), 2)
        }
        IS_OP | CONTAINS_OP => {
            let negate = oparg::negated(arg);
            let op = if ins.opcode == IS_OP { Intrinsic::Is { negate } } else { Intrinsic::Contains { negate } };
            (op, 2)
        }
        UNARY_NEGATIVE | UNARY_POSITIVE | UNARY_INVERT | UNARY_NOT => {
            let op = match ins.opcode {
                UNARY_NEGATIVE => UnaryOp::Neg,
                UNARY_POSITIVE => UnaryOp::Pos,
                UNARY_INVERT => UnaryOp::Invert,
                _ => UnaryOp::Not,
            };
            (Intrinsic::Unary(op), 1)
        }
        FORMAT_VALUE if oparg::format_convert_only(arg) => {
            // (The normalised form of 3.13's CONVERT_VALUE before a computed spec.)
            let (conv, _) = oparg::format_value(arg);
            if conv == Conversion::None {
                return Err(Fallback::unsupported(ins));
            }
            (Intrinsic::Convert(conv), 1)
        }
        FORMAT_VALUE => {
            let (conv, has_spec) = oparg::format_value(arg);
            (Intrinsic::FormatValue { conv, has_spec }, 1 + has_spec as usize)
        }
        BUILD_STRING => (Intrinsic::BuildString, arg as usize),
        _ => return Err(Fallback::unsupported(ins)),
    };
    let args = pop_regs(stack, nargs, line)?;
    em.push_op(op, args, line, stack, out);
    Ok(())
}
