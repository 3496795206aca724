//! Containers: tuple, list, set, dict and slice displays, the in-place additions that build
//! displays and comprehensions (`LIST_APPEND`, `MAP_ADD`, ...), and unpacking.
//!
//! Sees only the `Emitter` (registers, constants, register facts) and the symbolic stack.
use super::state::{pop_reg, pop_regs, reg_below, Emitter, Stack, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;
use crate::py311::oparg;

pub(super) fn translate(em: &mut Emitter, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
    let line = ins.line;
    let arg = ins.arg;
    match ins.opcode {
        BUILD_TUPLE | BUILD_LIST => {
            let op = if ins.opcode == BUILD_TUPLE { Intrinsic::BuildTuple } else { Intrinsic::BuildList };
            let args = pop_regs(stack, arg as usize, line)?;
            em.push_op(op, args, line, stack, out);
        }
        BUILD_MAP | BUILD_SET | BUILD_SLICE => {
            let (op, n) = match ins.opcode {
                BUILD_MAP => (Intrinsic::BuildMap, 2 * arg as usize),
                BUILD_SET => (Intrinsic::BuildSet, arg as usize),
                _ => (Intrinsic::BuildSlice, arg as usize),
            };
            let args = pop_regs(stack, n, line)?;
            em.push_op(op, args, line, stack, out);
        }
        BUILD_CONST_KEY_MAP => {
            // Stack: the values, then a constant tuple of the keys.
            let keys = pop_reg(stack, line)?;
            let values = pop_regs(stack, arg as usize, line)?;
            let known = match em.facts.consts.get(&keys).and_then(|&k| em.consts.get(k as usize)) {
                Some(Const::Tuple(items)) if items.len() == values.len() => Some(items.clone()),
                _ => None,
            };
            let mut args = Vec::with_capacity(2 * values.len());
            for (i, v) in values.into_iter().enumerate() {
                let key = match &known {
                    Some(items) => em.bind_const(items[i].clone(), line, out),
                    None => {
                        let i = em.bind_const(Const::Int(i as i64), line, out);
                        em.bind(Expr::Op(Intrinsic::GetItem, vec![keys, i]), line, out)
                    }
                };
                args.extend([key, v]);
            }
            em.push_op(Intrinsic::BuildMap, args, line, stack, out);
        }
        LIST_EXTEND | SET_UPDATE | DICT_UPDATE => {
            // `seq` is added to the container `arg` entries below it (which stays on the stack).
            let seq = pop_reg(stack, line)?;
            let target = reg_below(stack, arg as usize, "container operand", line)?;
            let op = match ins.opcode {
                LIST_EXTEND => Intrinsic::ListExtend,
                SET_UPDATE => Intrinsic::SetUpdate,
                _ => Intrinsic::DictUpdate,
            };
            em.bind(Expr::Op(op, vec![target, seq]), line, out);
        }
        LIST_APPEND | SET_ADD => {
            // `[a, *r, b]` / `{a, *r, b}`: adding one item is extending by a 1-tuple.
            let item = pop_reg(stack, line)?;
            let target = reg_below(stack, arg as usize, "container operand", line)?;
            let one = em.bind(Expr::Op(Intrinsic::BuildTuple, vec![item]), line, out);
            let op = if ins.opcode == LIST_APPEND { Intrinsic::ListExtend } else { Intrinsic::SetUpdate };
            em.bind(Expr::Op(op, vec![target, one]), line, out);
        }
        MAP_ADD => {
            // `{k: v for ...}`: `d[k] = v` on the dict `arg` entries below (it stays).
            let [key, value]: [Reg; 2] = pop_regs(stack, 2, line)?.try_into().expect("two registers");
            let target = reg_below(stack, arg as usize, "container operand", line)?;
            em.bind(Expr::Op(Intrinsic::SetItem, vec![target, key, value]), line, out);
        }
        LIST_TO_TUPLE => {
            let args = pop_regs(stack, 1, line)?;
            em.push_op(Intrinsic::ListToTuple, args, line, stack, out);
        }
        UNPACK_SEQUENCE | UNPACK_EX => {
            let x = pop_reg(stack, line)?;
            let (op, n) = if ins.opcode == UNPACK_SEQUENCE {
                (Intrinsic::UnpackSequence(arg), arg)
            } else {
                let (before, after) = oparg::unpack_ex(arg);
                (Intrinsic::UnpackEx { before, after }, before + 1 + after)
            };
            let t = em.bind(Expr::Op(op, vec![x]), line, out);
            let items: Vec<Reg> = (0..n)
                .map(|i| {
                    let i = em.bind_const(Const::Int(i as i64), line, out);
                    em.bind(Expr::Op(Intrinsic::GetItem, vec![t, i]), line, out)
                })
                .collect();
            // The first item ends on top (it is stored first).
            stack.extend(items.into_iter().rev().map(Val::Reg));
        }
        _ => return Err(Fallback::unsupported(ins)),
    }
    Ok(())
}
