//! Operators: binary, in-place, unary, comparisons, `is`, `in`, and f-string pieces
//! (`FORMAT_VALUE`, `BUILD_STRING`). Each becomes one `op` intrinsic on its operands.
//!
//! Sees only the `Emitter` and the symbolic stack.
use super::translator::{pop_regs, Emitter, Stack};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;

pub(super) fn translate(em: &mut Emitter, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
    let line = ins.line;
    let arg = ins.arg;
    let (op, nargs) = match ins.opcode {
        BINARY_OP => {
            const OPS: [BinOp; 13] = [
                BinOp::Add,
                BinOp::And,
                BinOp::FloorDiv,
                BinOp::LShift,
                BinOp::MatMul,
                BinOp::Mul,
                BinOp::Mod,
                BinOp::Or,
                BinOp::Pow,
                BinOp::RShift,
                BinOp::Sub,
                BinOp::TrueDiv,
                BinOp::Xor,
            ];
            let op = *OPS.get(arg as usize % 13).filter(|_| arg < 26).ok_or_else(|| Fallback::unsupported(ins))?;
            (Intrinsic::Binary { op, inplace: arg >= 13 }, 2)
        }
        COMPARE_OP => {
            const CMPS: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne, CmpOp::Gt, CmpOp::Ge];
            let op = *CMPS.get(arg as usize).ok_or_else(|| Fallback::unsupported(ins))?;
            (Intrinsic::Compare(op), 2)
        }
        IS_OP | CONTAINS_OP => {
            let negate = arg == 1;
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
        FORMAT_VALUE => {
            let conv = [Conversion::None, Conversion::Str, Conversion::Repr, Conversion::Ascii][(arg & 3) as usize];
            let has_spec = arg & 4 != 0;
            (Intrinsic::FormatValue { conv, has_spec }, 1 + has_spec as usize)
        }
        BUILD_STRING => (Intrinsic::BuildString, arg as usize),
        _ => return Err(Fallback::unsupported(ins)),
    };
    let args = pop_regs(stack, nargs, line)?;
    em.push_op(op, args, line, stack, out);
    Ok(())
}
