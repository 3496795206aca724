//! Calls: `KW_NAMES` + `CALL` (3.11's `[NULL, f, args]` / `[f, self, args]` stack shapes),
//! `f(*a, **k)` (`CALL_FUNCTION_EX` → `star_call`, with `DICT_MERGE` for `**m`).
//!
//! A `CALL` may also be where nested code is translated in place: a comprehension called with
//! its iterator (`inline_child`), a generator expression's consumer (`consume_genexpr`), or a
//! known inner function (`inline_call`); those live in `inline`. Touches the `Emitter`, the
//! pending `KW_NAMES` and the register facts about known inner functions.
use super::state::{pop, pop_reg, pop_regs, reg_below, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;
use crate::py311::oparg;

impl Translator<'_> {
    pub(super) fn call(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let arg = ins.arg;
        match ins.opcode {
            KW_NAMES => {
                let names = match self.code.ci.consts.get(arg as usize) {
                    Some(Const::Tuple(items)) => items
                        .iter()
                        .map(|k| match k {
                            Const::Str(s) => Some(s.clone()),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>(),
                    _ => None,
                };
                self.kwnames = Some(names.ok_or_else(|| Fallback::shape("KW_NAMES constant", line))?);
            }
            CALL => return self.call_n(arg as usize, line, stack, out),
            CALL_FUNCTION_EX => {
                // Stack: NULL, f, args, [kwargs]. The call is made by calling a `star_call`
                // object with no arguments (the external gets exactly these arguments).
                let kwargs = if oparg::call_ex_has_kwargs(arg) { Some(pop_reg(stack, line)?) } else { None };
                let args = pop_reg(stack, line)?;
                let f = pop_reg(stack, line)?;
                if pop(stack, line)? != Val::Null {
                    return Err(Fallback::shape("CALL_FUNCTION_EX operands", line));
                }
                let mut operands = vec![f, args];
                operands.extend(kwargs);
                let call = self.em.bind(Expr::Op(Intrinsic::StarCall, operands), line, out);
                let r = self.em.bind(Expr::Call { func: call, args: vec![], kwnames: vec![] }, line, out);
                stack.push(Val::Reg(r));
            }
            DICT_MERGE => {
                // `f(**m)`: merge m into the keyword dict `arg` entries below (it stays); the
                // callee (for error messages) is two entries below that.
                let m = pop_reg(stack, line)?;
                let d = reg_below(stack, arg as usize, "DICT_MERGE operands", line)?;
                let f = reg_below(stack, arg as usize + 2, "DICT_MERGE operands", line)?;
                self.em.bind(Expr::Op(Intrinsic::DictMerge, vec![d, m, f]), line, out);
            }
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }

    /// `CALL` with `n` arguments.
    fn call_n(&mut self, n: usize, line: u32, stack: &mut Stack, out: &mut Block) -> Result<()> {
        if n == 0 && stack.len() >= 2 {
            if let (Val::Func { code, closure }, Val::Iter(it)) = (&stack[stack.len() - 2], &stack[stack.len() - 1]) {
                // A comprehension or generator expression called with its iterator.
                let (code, closure, it) = (*code, closure.clone(), *it);
                stack.truncate(stack.len() - 2);
                if self.code.ci.children[&code].is_genexpr() {
                    stack.push(Val::Genexpr { code, closure, iter: it });
                } else {
                    let r = self.inline_child(code, &closure, it, None, out)?;
                    stack.push(Val::Reg(r));
                }
                return Ok(());
            }
        }
        if stack.len() >= n && stack[stack.len() - n..].iter().any(|v| matches!(v, Val::Genexpr { .. })) {
            return self.consume_genexpr(n, stack, out);
        }
        let mut args = pop_regs(stack, n, line)?;
        let callable = pop(stack, line)?;
        let below = pop(stack, line)?;
        // 3.11: `[NULL, f, args]` calls f; `[f, self, args]` calls f with self prepended.
        let func = match (below, callable) {
            (Val::Null, Val::Reg(f)) => f,
            (Val::Reg(f), Val::Reg(selfv)) => {
                args.insert(0, selfv);
                f
            }
            _ => return Err(Fallback::shape("CALL operands", line)),
        };
        let kwnames = self.kwnames.take().unwrap_or_default();
        if kwnames.len() > args.len() {
            return Err(Fallback::shape("more keyword names than arguments", line));
        }
        if let Some((k, _)) = self.em.facts.funcs.get(&func).cloned() {
            if let Some(r) = self.inline_call(k, &args, &kwnames, out) {
                self.em.facts.funcs.remove(&func);
                stack.push(Val::Reg(r));
                return Ok(());
            }
        }
        let r = self.em.bind(Expr::Call { func, args, kwnames }, line, out);
        stack.push(Val::Reg(r));
        Ok(())
    }
}
