//! The dispatch of one straight-line instruction to its opcode family (the state it works on
//! is in `state`).
//!
//! Families: `loads` (locals, cells, constants, globals, attributes, subscripts), `calls`,
//! `containers` (displays, unpacking), `operators` (and f-strings), `control` (`for`), `inline`
//! (closures, comprehensions, generator expressions). Depends on `py311` for instructions and
//! opcode numbers and on `bezoar::ir`; nothing here is run-time code.
use super::state::{pop, CodeScope, Emitter, Shared, Stack, Translator, Val};
use super::{containers, control, operators, Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;
use std::collections::HashMap;

impl<'a> Translator<'a> {
    pub(super) fn new(em: Emitter, code: CodeScope<'a>, shared: Shared, line: u32) -> Self {
        Translator { em, code, shared, ctx: Vec::new(), pdoms: HashMap::new(), kwnames: None, line, open_tries: Vec::new(), in_handler: 0, in_finally: 0, try_follows: Vec::new(), tries_done: Default::default(), with_exits: HashMap::new() }
    }

    pub(super) fn spend(&mut self, n: usize) -> Result<()> {
        self.shared.budget = self
            .shared
            .budget
            .checked_sub(n)
            .ok_or_else(|| Fallback::new("control flow too irregular (blocks shared by too many paths)", self.line))?;
        Ok(())
    }

    /// Translates one straight-line instruction, by family.
    pub(super) fn instr(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        match ins.opcode {
            NOP | RESUME | CACHE | PRECALL => Ok(()),
            POP_TOP | PUSH_NULL | SWAP | COPY | POP_EXCEPT => stack_op(ins, stack),
            LOAD_CLOSURE | MAKE_FUNCTION => self.closure_op(ins, stack, out),
            BUILD_TUPLE if super::inline::is_closure_tuple(stack, ins.arg) => {
                super::inline::closure_tuple(stack, ins.arg);
                Ok(())
            }
            RETURN_GENERATOR | YIELD_VALUE => self.yield_op(ins, stack, out),
            GET_AWAITABLE => self.await_op(ins, stack, out),
            MATCH_SEQUENCE | MATCH_MAPPING | MATCH_KEYS | MATCH_CLASS | GET_LEN => self.pattern_op(ins, stack, out),
            LOAD_FAST | STORE_FAST | DELETE_FAST | LOAD_DEREF | STORE_DEREF | DELETE_DEREF | MAKE_CELL | COPY_FREE_VARS
            | LOAD_CONST | LOAD_GLOBAL | STORE_GLOBAL | LOAD_ATTR | LOAD_METHOD | STORE_ATTR | DELETE_ATTR
            | BINARY_SUBSCR | STORE_SUBSCR | DELETE_SUBSCR | IMPORT_NAME | IMPORT_FROM => self.load_store(ins, stack, out),
            KW_NAMES | CALL | CALL_FUNCTION_EX | DICT_MERGE => self.call(ins, stack, out),
            GET_ITER => control::get_iter(&mut self.em, ins, stack, out),
            BEFORE_WITH | BEFORE_ASYNC_WITH => self.before_with(ins, stack, out),
            LOAD_ASSERTION_ERROR => {
                let r = self.em.bind(Expr::Op(Intrinsic::AssertionError, vec![]), ins.line, out);
                stack.push(Val::Reg(r));
                Ok(())
            }
            BUILD_TUPLE | BUILD_LIST | BUILD_MAP | BUILD_CONST_KEY_MAP | BUILD_SET | BUILD_SLICE | LIST_EXTEND
            | LIST_APPEND | SET_UPDATE | SET_ADD | DICT_UPDATE | MAP_ADD | LIST_TO_TUPLE | UNPACK_SEQUENCE
            | UNPACK_EX => containers::translate(&mut self.em, ins, stack, out),
            BINARY_OP | COMPARE_OP | IS_OP | CONTAINS_OP | UNARY_NEGATIVE | UNARY_POSITIVE | UNARY_INVERT
            | UNARY_NOT | FORMAT_VALUE | BUILD_STRING => operators::translate(&mut self.em, ins, stack, out),
            _ => Err(Fallback::unsupported(ins)),
        }
    }
}

/// `POP_TOP`, `PUSH_NULL`, `SWAP`, `COPY`: the symbolic stack only.
fn stack_op(ins: &Instr, stack: &mut Stack) -> Result<()> {
    let line = ins.line;
    match ins.opcode {
        POP_TOP => {
            pop(stack, line)?;
        }
        PUSH_NULL => stack.push(Val::Null),
        // The end of an `except` handler: the saved exception state (`exceptions`' placeholder).
        POP_EXCEPT => {
            if stack.pop() != Some(Val::Null) {
                return Err(Fallback::shape("POP_EXCEPT", line));
            }
        }
        SWAP | COPY => {
            let depth = ins.arg as usize;
            if depth == 0 || depth > stack.len() {
                return Err(Fallback::shape("stack underflow", line));
            }
            let (top, other) = (stack.len() - 1, stack.len() - depth);
            if ins.opcode == SWAP {
                stack.swap(top, other);
            } else {
                stack.push(stack[other].clone());
            }
        }
        _ => return Err(Fallback::unsupported(ins)),
    }
    Ok(())
}
