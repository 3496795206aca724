//! Inner functions, lambdas and closures: `MAKE_FUNCTION` (a comprehension waiting for its call,
//! a real function object, or nothing for a plain inner function whose calls are all inlined),
//! the closure tuple (`LOAD_CLOSURE`s + `BUILD_TUPLE`), and `inline_call`, which translates a
//! call of a known inner function in place.
use super::super::state::{pop, pop_reg, stmt, Stack, Translator, Val};
use super::super::{Fallback, Result};
use super::super::state::KnownFunc;
use crate::bezoar::ir::*;
use crate::bezoar::passes::{assigned, drop_tail_continues, nest_after_exits, returns_in_loops, tail_returns_to};
use crate::py311::decode::{instructions, Instr};
use crate::py311::opcode::*;
use crate::py311::oparg;
use crate::py311::{
    CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR, CO_ITERABLE_COROUTINE, CO_VARARGS, CO_VARKEYWORDS,
};

/// The local holding the cell of the captured variable `name`.
pub(in crate::lift) fn cell_local(name: &VarName) -> VarName {
    VarKind::Cell(Box::new(name.clone())).into()
}

/// Whether the top `n` stack entries are cells (`LOAD_CLOSURE`s), about to become a closure.
pub(in crate::lift) fn is_closure_tuple(stack: &Stack, n: u32) -> bool {
    n > 0 && stack.len() >= n as usize && stack[stack.len() - n as usize..].iter().all(|v| matches!(v, Val::Cell(_)))
}

/// `BUILD_TUPLE` of cells: the closure of the function made next.
pub(in crate::lift) fn closure_tuple(stack: &mut Stack, n: u32) {
    let cells = stack.split_off(stack.len() - n as usize);
    stack.push(Val::Cells(cells.into_iter().map(|v| match v { Val::Cell(n) => n, _ => unreachable!() }).collect()));
}

impl Translator<'_> {
    /// `LOAD_CLOSURE` (the cell of a local) and `MAKE_FUNCTION`.
    pub(in crate::lift) fn closure_op(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let arg = ins.arg;
        match ins.opcode {
            LOAD_CLOSURE => stack.push(Val::Cell(self.code.local(arg, line)?)),
            MAKE_FUNCTION => {
                let Val::Code(code) = pop(stack, line)? else {
                    return Err(Fallback::shape("MAKE_FUNCTION without a code object", line));
                };
                let child = &self.code.ci.children[&code];
                if !child.is_comprehension() {
                    return self.make_function(code, arg, stack, out);
                }
                if arg & !oparg::MF_CLOSURE != 0 {
                    return Err(Fallback::shape("comprehension with defaults", line));
                }
                let closure = if arg & oparg::MF_CLOSURE != 0 {
                    match pop(stack, line)? {
                        Val::Cells(names) => names,
                        _ => return Err(Fallback::shape("closure of a comprehension", line)),
                    }
                } else {
                    Vec::new()
                };
                stack.push(Val::Func { code, closure });
            }
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }

    /// A call `g(a, b)` of an inner function that the @poppy function defines once (`def g` or
    /// `g = lambda ...`, stored straight into a local assigned nowhere else) with exactly its
    /// positional parameters: its body is translated in place (parameters stored into its renamed
    /// locals, returns into `$cK.$ret`), so its calls run inside λO like the function's own. Its
    /// free variables are the real cells of the enclosing function, so late binding and
    /// `nonlocal` hold. `None` when the function is not of that kind (then it is called).
    pub(in crate::lift) fn inline_call(
        &mut self,
        (owner, owner_path, code): KnownFunc,
        args: &[Reg],
        kwnames: &[String],
        out: &mut Block,
    ) -> Option<Reg> {
        let child = &owner.children[&code];
        // Bind every parameter from the call (no defaults): positional ones in order, the rest
        // by keyword (not positional-only ones), each once.
        let nparams = (child.argcount + child.kwonlyargcount) as usize;
        let npos = args.len() - kwnames.len();
        let mut bound: Vec<Option<Reg>> = vec![None; nparams];
        if npos > child.argcount as usize || args.len() > nparams {
            return None;
        }
        for (i, a) in args[..npos].iter().enumerate() {
            bound[i] = Some(*a);
        }
        for (name, a) in kwnames.iter().zip(&args[npos..]) {
            let i = child.varnames[..nparams].iter().position(|p| p == name)?;
            if i < child.posonlyargcount as usize || bound[i].is_some() {
                return None;
            }
            bound[i] = Some(*a);
        }
        // Parameters not given take their defaults (when the def's defaults are known).
        let (ndefaults, kwdefaults) = self.shared.fn_defaults.get(&code).cloned().unwrap_or_default();
        let argcount = child.argcount as usize;
        let mut fills = Vec::new();
        for (i, b) in bound.iter().enumerate() {
            if b.is_some() {
                continue;
            }
            let name = &child.varnames[i];
            if i < argcount && i >= argcount - ndefaults.min(argcount) {
                fills.push((i, VarKind::Defaults(code), Const::Int((i + ndefaults - argcount) as i64)));
            } else if i >= argcount && kwdefaults.contains(name) {
                fills.push((i, VarKind::KwDefaults(code), Const::Str(name.clone())));
            } else {
                return None; // CPython's TypeError comes from calling the real function
            }
        }
        let mut default_stmts = Vec::new();
        for (i, holder, key) in fills {
            let h = self.em.bind(Expr::Load(holder.into()), self.line, &mut default_stmts);
            let k = self.em.bind_const(key, self.line, &mut default_stmts);
            bound[i] = Some(self.em.bind(Expr::Op(Intrinsic::GetItem, vec![h, k]), self.line, &mut default_stmts));
        }
        let args: Vec<Reg> = bound.into_iter().collect::<Option<_>>()?;
        let plain = child.flags & (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE) == 0
            && child.exceptiontable.is_empty()
            && !instructions(&child.code, &child.lines).any(|i| matches!(i.opcode, STORE_GLOBAL | DELETE_GLOBAL));
        if !plain || self.shared.inlining.contains(&code) {
            return None;
        }
        let line = self.line;
        // Translate into a scratch state: on failure nothing is kept (the call stays a call).
        let saved = (self.em.clone(), self.shared.budget, self.shared.ncomp, self.shared.real_cells.clone());
        let k = self.shared.ncomp; // the number translate_child gives the inlined locals
        self.shared.inlining.insert(code);
        let free: Vec<VarName> = child.freevars.iter().map(VarName::local).collect();
        let translated = self.translate_child((&owner, &owner_path), code, &free, None, None);
        self.shared.inlining.remove(&code);
        let args = &args[..];
        let result = translated.ok().and_then(|(mut body, locals)| {
            nest_after_exits(&mut body);
            drop_tail_continues(&mut body, false);
            if returns_in_loops(&body, false) {
                return None;
            }
            let ret: VarName = VarKind::InlinedRet(k).into();
            let mut l = line;
            if !tail_returns_to(&mut body, &mut l, &ret) {
                return None;
            }
            let mut stmts: Block = args
                .iter()
                .zip(&locals)
                .map(|(a, p)| stmt(StmtKind::Store(p.clone(), *a), line))
                .collect();
            // Each call starts with the function's other locals unbound (as in a new frame).
            let own = &locals[args.len()..locals.len() - child.freevars.len()];
            let stored = assigned(&body);
            stmts.extend(own.iter().filter(|x| stored.contains(*x)).map(|x| stmt(StmtKind::Unbind(x.clone()), line)));
            stmts.extend(body);
            let r = self.em.bind(Expr::Load(ret), line, &mut stmts);
            Some((stmts, r))
        });
        match result {
            Some((stmts, r)) => {
                out.extend(default_stmts);
                out.extend(stmts);
                Some(r)
            }
            None => {
                (self.em, self.shared.budget, self.shared.ncomp, self.shared.real_cells) = saved;
                None
            }
        }
    }

    /// `MAKE_FUNCTION` of an inner function or lambda: a real function object, built at run time
    /// from its code object, defaults and the real cells of the variables it captures. Calling
    /// it is an ordinary external call (it runs in CPython).
    fn make_function(&mut self, code: u32, flags: u32, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = self.line;
        if self.code.plain_funcs.contains(&code) {
            // Every call of it is inlined: no function object (its local holds None, unused).
            // Defaults and annotations were evaluated, as in CPython; the defaults are kept in
            // locals for the inlined calls that use them.
            let mut operands: [Option<Val>; 4] = Default::default();
            for (i, bit) in [oparg::MF_CLOSURE, oparg::MF_ANNOTATIONS, oparg::MF_KWDEFAULTS, oparg::MF_DEFAULTS].into_iter().enumerate() {
                if flags & bit != 0 {
                    operands[i] = Some(pop(stack, line)?);
                }
            }
            let mut info = (0, Vec::new());
            if let Some(Val::Reg(d)) = operands[3].clone() {
                let n = match self.em.facts.consts.get(&d).and_then(|k| self.em.consts.get(*k as usize)) {
                    Some(Const::Tuple(items)) => Some(items.len()),
                    _ => self.em.facts.tuple_lens.get(&d).copied(),
                };
                if let Some(n) = n {
                    out.push(stmt(StmtKind::Store(VarKind::Defaults(code).into(), d), line));
                    info.0 = n;
                }
            }
            if let Some(Val::Reg(d)) = operands[2].clone() {
                if let Some(keys) = self.em.facts.map_keys.get(&d).cloned() {
                    out.push(stmt(StmtKind::Store(VarKind::KwDefaults(code).into(), d), line));
                    info.1 = keys;
                }
            }
            self.shared.fn_defaults.insert(code, info);
            let none = self.em.bind_const(Const::None, line, out);
            stack.push(Val::Reg(none));
            return Ok(());
        }
        let closure = if flags & oparg::MF_CLOSURE != 0 {
            let Val::Cells(names) = pop(stack, line)? else {
                return Err(Fallback::shape("closure tuple", line));
            };
            let mut cells = Vec::new();
            for n in names {
                if !self.shared.real_cells.contains(&n) {
                    return Err(Fallback::shape("captured variable without a cell", line));
                }
                cells.push(self.em.bind(Expr::Load(cell_local(&n)), line, out));
            }
            Some(self.em.bind(Expr::Op(Intrinsic::BuildTuple, cells), line, out))
        } else {
            None
        };
        let operand = |bit: u32, stack: &mut Stack| -> Result<Option<Reg>> {
            Ok(if flags & bit != 0 { Some(pop_reg(stack, line)?) } else { None })
        };
        let annotations = operand(oparg::MF_ANNOTATIONS, stack)?;
        let kwdefaults = operand(oparg::MF_KWDEFAULTS, stack)?;
        let defaults = operand(oparg::MF_DEFAULTS, stack)?;
        let k = match &self.code.const_map {
            Some(m) => m[code as usize],
            None => code,
        };
        let code_reg = self.em.bind(Expr::Const(k), line, out);
        let globals = self.em.bind_const(Const::Globals, line, out);
        let mut args = vec![code_reg, globals];
        for r in [defaults, kwdefaults, annotations, closure] {
            args.push(match r {
                Some(r) => r,
                None => self.em.bind_const(Const::None, line, out),
            });
        }
        let f = self.em.bind(Expr::Op(Intrinsic::MakeFunction, args), line, out);
        stack.push(Val::Reg(f));
        Ok(())
    }
}
