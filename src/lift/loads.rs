//! Loads and stores: locals (`load`/`store`/`del`), locals living in real cells (`cell_get`,
//! `cell_set`, `make_cell` on the holder `$cell.x`), constants, globals (read as `global x`, or in
//! program order as `load_global`/`setitem` on the globals dict when the function assigns them),
//! attributes and subscripts.
//!
//! Touches the `Emitter`, the code scope's slot names, and of the shared state the cells, the
//! known inner functions and the stored globals.
use super::inline::cell_local;
use super::state::{pop_reg, pop_regs, stmt, Stack, Translator, Val};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::opcode::*;
use crate::py311::{oparg, ITER_ARG};

impl Translator<'_> {
    pub(super) fn load_store(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let ci = self.code.ci;
        let line = ins.line;
        let arg = ins.arg;
        let em = &mut self.em;
        match ins.opcode {
            LOAD_DEREF | STORE_DEREF | MAKE_CELL if self.shared.real_cells.contains(&self.code.local(arg, line)?) => {
                return self.cell_access(ins, stack, out);
            }
            LOAD_FAST | LOAD_DEREF => {
                let name = self.code.local(arg, line)?;
                match self.code.dot0 {
                    Some(it) if matches!(name.kind(), VarKind::Local(n) if n == ITER_ARG) => stack.push(Val::Iter(it)),
                    _ => {
                        // A cell read by inlined comprehensions only is an ordinary local.
                        let known = self.shared.known_funcs.get(&name).cloned();
                        let r = em.bind(Expr::Load(name), line, out);
                        if let Some(k) = known {
                            em.facts.funcs.insert(r, k);
                        }
                        stack.push(Val::Reg(r));
                    }
                }
            }
            STORE_FAST | STORE_DEREF => {
                let v = pop_reg(stack, line)?;
                out.push(stmt(StmtKind::Store(self.code.local(arg, line)?, v), line));
            }
            MAKE_CELL | COPY_FREE_VARS => {}
            DELETE_FAST => out.push(stmt(StmtKind::Delete(self.code.local(arg, line)?), line)),
            DELETE_DEREF => {
                // `del x` of the function's own cell variable that only inlined comprehensions
                // read (no real cell): an ordinary `del` (UnboundLocalError when x is unbound,
                // as CPython's for a cell variable; the comprehensions' later reads raise
                // NameError, `passes::free_reads`). A real cell, or a free variable, falls back.
                let name = self.code.local(arg, line)?;
                if arg as usize >= self.code.first_free || self.shared.real_cells.contains(&name) {
                    return Err(Fallback::new(
                        "del of a variable an inner function captures (DELETE_DEREF)",
                        line,
                    ));
                }
                out.push(stmt(StmtKind::Delete(name), line));
            }
            LOAD_CONST if ci.children.contains_key(&arg) => stack.push(Val::Code(arg)),
            LOAD_CONST => {
                let k = self.code.constant(arg, line)?;
                let r = em.bind(Expr::Const(k), line, out);
                stack.push(Val::Reg(r));
            }
            LOAD_GLOBAL => {
                let (push_null, index) = oparg::load_global(arg);
                if push_null {
                    stack.push(Val::Null);
                }
                let name = self.code.name(index, line)?;
                let r = if self.shared.stored_globals.contains(&name) {
                    let g = em.bind_const(Const::Globals, line, out);
                    em.bind(Expr::Op(Intrinsic::LoadGlobal(name.clone()), vec![g]), line, out)
                } else {
                    em.bind(Expr::Global(name.clone()), line, out)
                };
                em.facts.globals.insert(r, name);
                stack.push(Val::Reg(r));
            }
            IMPORT_NAME => {
                // `__import__(name, globals, None, fromlist, level)`: a sequential external call.
                let fromlist = pop_reg(stack, line)?;
                let level = pop_reg(stack, line)?;
                let g = em.bind_const(Const::Globals, line, out);
                let name = self.code.name(arg, line)?;
                let r = em.bind(Expr::Op(Intrinsic::ImportName(name), vec![g, fromlist, level]), line, out);
                stack.push(Val::Reg(r));
            }
            IMPORT_FROM => {
                // The module stays on the stack (popped after the last name).
                let m = match stack.last() {
                    Some(Val::Reg(m)) => *m,
                    _ => return Err(Fallback::shape("IMPORT_FROM without a module", line)),
                };
                let name = self.code.name(arg, line)?;
                let r = em.bind(Expr::Op(Intrinsic::ImportFrom(name), vec![m]), line, out);
                stack.push(Val::Reg(r));
            }
            STORE_GLOBAL => {
                // A sequential store into the module's globals (later reads of the name in this
                // function are `load_global`, ordered after it).
                let v = pop_reg(stack, line)?;
                let g = em.bind_const(Const::Globals, line, out);
                let k = em.bind_const(Const::Str(self.code.name(arg, line)?), line, out);
                em.bind(Expr::Op(Intrinsic::SetItem, vec![g, k, v]), line, out);
            }
            LOAD_ATTR | LOAD_METHOD => {
                let obj = pop_reg(stack, line)?;
                if ins.opcode == LOAD_METHOD {
                    // Pushed as NULL + bound method: the call is then a plain call of it.
                    stack.push(Val::Null);
                }
                let name = self.code.name(arg, line)?;
                let r = em.bind(Expr::Op(Intrinsic::GetAttr(name.clone()), vec![obj]), line, out);
                em.facts.attrs.insert(r, name);
                stack.push(Val::Reg(r));
            }
            STORE_ATTR | DELETE_ATTR => {
                let name = self.code.name(arg, line)?;
                let obj = pop_reg(stack, line)?;
                let (op, args) = if ins.opcode == STORE_ATTR {
                    (Intrinsic::SetAttr(name), vec![obj, pop_reg(stack, line)?])
                } else {
                    (Intrinsic::DelAttr(name), vec![obj])
                };
                em.bind(Expr::Op(op, args), line, out);
            }
            BINARY_SUBSCR => {
                let args = pop_regs(stack, 2, line)?;
                em.push_op(Intrinsic::GetItem, args, line, stack, out);
            }
            STORE_SUBSCR => {
                // Stack: value, obj, key.
                let [v, obj, key]: [Reg; 3] = pop_regs(stack, 3, line)?.try_into().expect("three registers");
                em.bind(Expr::Op(Intrinsic::SetItem, vec![obj, key, v]), line, out);
            }
            DELETE_SUBSCR => {
                let args = pop_regs(stack, 2, line)?;
                em.bind(Expr::Op(Intrinsic::DelItem, args), line, out);
            }
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }

    /// `LOAD_DEREF`/`STORE_DEREF`/`MAKE_CELL` of a local that lives in a real cell, held in the
    /// local `$cell.x`.
    fn cell_access(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let arg = ins.arg;
        let name = self.code.local(arg, line)?;
        let em = &mut self.em;
        match ins.opcode {
            LOAD_DEREF => {
                let cell = em.bind(Expr::Load(cell_local(&name)), line, out);
                let code_name = super::state::name_at(&self.code.ci.localsplus(), arg, line)?;
                let op = Intrinsic::CellGet { name: code_name, free: arg as usize >= self.code.first_free };
                em.push_op(op, vec![cell], line, stack, out);
            }
            STORE_DEREF => {
                let v = pop_reg(stack, line)?;
                let cell = em.bind(Expr::Load(cell_local(&name)), line, out);
                em.bind(Expr::Op(Intrinsic::CellSet, vec![cell, v]), line, out);
            }
            MAKE_CELL => {
                // A parameter's cell starts with the argument; any other starts empty.
                let init = if (arg as usize) < self.code.ci.nparams() && self.code.dot0.is_none() {
                    vec![em.bind(Expr::Load(name.clone()), line, out)]
                } else {
                    vec![]
                };
                let cell = em.bind(Expr::Op(Intrinsic::MakeCell, init), line, out);
                out.push(stmt(StmtKind::Store(cell_local(&name), cell), line));
            }
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }
}
