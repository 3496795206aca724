//! Generator expressions. One passed to a consumer that reads it completely
//! (`GENEXPR_CONSUMERS`) is translated in place as a loop collecting its items (`any`/`all`: a
//! loop that breaks), guarded by a run-time check that the consumer is that builtin; its
//! `yield`s then append to the list (`YieldMode`). Otherwise a real generator object is passed.
use super::super::state::{pop, pop_reg, stmt, Stack, Translator, Val, YieldMode};
use super::super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::{instructions, Instr};
use crate::py311::opcode::*;

/// Builtins that consume a generator expression completely before doing anything observable
/// with its items, so materialising the items first (a loop) is equivalent; and `any`/`all`,
/// which are lowered as a loop with a `break`. `join` is `str.join` (a bound method).
pub(in crate::lift) const GENEXPR_CONSUMERS: [&str; 12] =
    ["list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max", "any", "all", "join"];

impl Translator<'_> {
    /// `CALL` with `n` arguments one of which is a generator expression. When the callee is a
    /// consumer for which it is equivalent (`GENEXPR_CONSUMERS`), the generator is inlined as a
    /// loop that materialises its items (`any`/`all`: a loop that breaks), guarded by a run-time
    /// check that the callee is that builtin. Otherwise — or when the check fails — a real
    /// generator is built from the nested code object and passed (it then runs in CPython, inside
    /// the call or whenever the callee consumes it), its closure the real cells of the variables
    /// it captures — the lifter translates the function again with real cells for them
    /// (`Shared::want_cells`), so late binding is CPython's. (When the consumer check fails for a
    /// generator over local variables inlined as a loop, the run raises instead.)
    pub(in crate::lift) fn consume_genexpr(&mut self, n: usize, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = self.line;
        let escapes = || Fallback::new("generator expression used other than as an argument of a call", line);
        let mut vals = stack.split_off(stack.len() - n);
        let callable = pop(stack, line)?;
        let below = pop(stack, line)?;
        let kwnames = self.kwnames.take().unwrap_or_default();
        let (func, self_arg) = match (below, callable) {
            (Val::Null, Val::Reg(f)) => (f, None),
            (Val::Reg(f), Val::Reg(s)) => (f, Some(s)),
            _ => return Err(escapes()),
        };
        let gpos: Vec<usize> = (0..n).filter(|&i| matches!(vals[i], Val::Genexpr { .. })).collect();
        let g = gpos[0];
        let Val::Genexpr { code, closure, iter } = vals[g].clone() else { unreachable!() };
        let name = match (self_arg, self.em.facts.globals.get(&func), self.em.facts.attrs.get(&func)) {
            (None, Some(g), _) if g != "join" && GENEXPR_CONSUMERS.contains(&g.as_str()) => Some(g.clone()),
            (None, _, Some(a)) if a == "join" => Some(a.clone()),
            _ => None,
        };
        let npos = n - kwnames.len();
        let only = |allowed: &[&str]| kwnames.iter().all(|k| allowed.contains(&k.as_str()));
        let child = &self.code.ci.children[&code];
        let nloops = instructions(&child.code, &child.lines).filter(|i| i.opcode == FOR_ITER).count();
        let inlinable = g == 0
            && gpos.len() == 1
            && match name.as_deref() {
                Some("sum") => npos <= 2 && only(&["start"]),
                // sorted() builds its list before calling key functions or comparing.
                Some("sorted") => npos == 1,
                Some("min" | "max") => npos == 1 && only(&["default"]),
                Some("any" | "all") => n == 1 && nloops == 1,
                Some(_) => n == 1,
                None => false,
            };
        let closures: Vec<VarName> = gpos
            .iter()
            .flat_map(|&i| match &vals[i] {
                Val::Genexpr { closure, .. } => closure.clone(),
                _ => vec![],
            })
            .collect();
        let in_cells = closures.iter().all(|n| self.shared.real_cells.contains(n));
        if !inlinable && !closures.is_empty() && !in_cells {
            // The generator runs in CPython (inside the call, or later if the callee keeps it)
            // and reads the captured variables when it runs: they must be real cells. Ask the
            // lifter to translate the function again with cells for them (the function's own
            // locals; inside inlined code, fall back).
            let top = self.code.path.is_empty() && self.code.dot0.is_none();
            if top && closures.iter().all(|n| matches!(n.kind(), VarKind::Local(_))) {
                self.shared.want_cells.extend(closures.iter().map(|n| n.as_str().to_string()));
            }
            let why = match name.as_deref() {
                Some(nm @ ("any" | "all")) if nloops != 1 => {
                    format!("{nm}() over a generator expression with several for clauses")
                }
                Some(nm) => format!(
                    "generator expression passed to {nm}() with other arguments (they could interleave with it)"
                ),
                None => "generator expression passed to a callee other than \
                         list/tuple/set/frozenset/dict/sorted/sum/min/max/any/all/str.join"
                    .to_string(),
            };
            let captures: Vec<String> = closures.iter().map(|v| v.to_string()).collect();
            return Err(Fallback::new(format!("{why}, capturing local variables ({})", captures.join(", ")), line));
        }
        // The call with real generator objects in place of the generator expressions.
        let real_call = |this: &mut Self, vals: &mut Vec<Val>, out: &mut Block| -> Result<Reg> {
            for &i in &gpos {
                let Val::Genexpr { code, iter, closure } = vals[i].clone() else { unreachable!() };
                let code_reg = match &this.code.const_map {
                    Some(m) => this.em.bind(Expr::Const(m[code as usize]), line, out),
                    None => this.em.bind(Expr::Const(code), line, out),
                };
                let globals = this.em.bind_const(Const::Globals, line, out);
                let mut operands = vec![code_reg, globals, iter];
                // Its closure: the real cells of what it captures (checked above).
                for n in &closure {
                    operands.push(this.em.bind(Expr::Load(super::cell_local(n)), line, out));
                }
                let gen = this.em.bind(Expr::Op(Intrinsic::MakeGenexpr, operands), line, out);
                vals[i] = Val::Reg(gen);
            }
            let mut args = vals
                .iter()
                .map(|v| match v {
                    Val::Reg(r) => Ok(*r),
                    _ => Err(escapes()),
                })
                .collect::<Result<Vec<Reg>>>()?;
            if let Some(s) = self_arg {
                args.insert(0, s);
            }
            Ok(this.em.bind(Expr::Call { func, args, kwnames: kwnames.clone() }, line, out))
        };
        if !inlinable {
            let r = real_call(self, &mut vals, out)?;
            stack.push(Val::Reg(r));
            return Ok(());
        }
        let name = name.expect("inlinable consumers have a name");
        let rest = vals[1..]
            .iter()
            .map(|v| match v {
                Val::Reg(r) => Ok(*r),
                _ => Err(escapes()),
            })
            .collect::<Result<Vec<Reg>>>()?;
        let result = self.em.temp();
        let is_builtin = self.em.bind(Expr::Op(Intrinsic::IsConsumer(name.clone()), vec![func]), line, out);
        let mut then_body = Vec::new();
        let r = if name == "any" || name == "all" {
            let flag = self.em.temp();
            let init = self.em.bind_const(Const::Bool(name == "all"), line, &mut then_body);
            then_body.push(stmt(StmtKind::Store(flag.clone(), init), line));
            let mode = YieldMode::AnyAll { flag: flag.clone(), all: name == "all" };
            self.inline_child(code, &closure, iter, Some(mode), &mut then_body)?;
            self.em.bind(Expr::Load(flag), line, &mut then_body)
        } else {
            let lst = self.em.bind(Expr::Op(Intrinsic::BuildList, vec![]), line, &mut then_body);
            self.inline_child(code, &closure, iter, Some(YieldMode::Collect(lst)), &mut then_body)?;
            let mut args = vec![lst];
            args.extend(rest);
            self.em.bind(Expr::Call { func, args, kwnames: kwnames.clone() }, line, &mut then_body)
        };
        then_body.push(stmt(StmtKind::Store(result.clone(), r), line));
        let mut else_body = Vec::new();
        let r = if closure.is_empty() {
            real_call(self, &mut vals, &mut else_body)?
        } else {
            // A shadowed builtin and a generator over local variables: refuse loudly.
            let k = self.em.bind_const(Const::Str(name.clone()), line, &mut else_body);
            self.em.bind(Expr::Op(Intrinsic::ConsumerMismatch, vec![func, k]), line, &mut else_body)
        };
        else_body.push(stmt(StmtKind::Store(result.clone(), r), line));
        out.push(stmt(StmtKind::If { cond: is_builtin, then_body, else_body }, line));
        let r = self.em.bind(Expr::Load(result), line, out);
        stack.push(Val::Reg(r));
        Ok(())
    }

    /// `RETURN_GENERATOR` and `YIELD_VALUE` of a generator expression translated in place
    /// (anywhere else: a generator function, which is not lifted).
    pub(in crate::lift) fn yield_op(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = ins.line;
        let Some(mode) = self.code.yield_mode.clone() else {
            return Err(Fallback::unsupported(ins));
        };
        match ins.opcode {
            RETURN_GENERATOR => stack.push(Val::Null),
            YIELD_VALUE => {
                let v = pop_reg(stack, line)?;
                let em = &mut self.em;
                match mode {
                    YieldMode::Collect(lst) => {
                        let one = em.bind(Expr::Op(Intrinsic::BuildTuple, vec![v]), line, out);
                        em.bind(Expr::Op(Intrinsic::ListExtend, vec![lst, one]), line, out);
                    }
                    YieldMode::AnyAll { flag, all } => {
                        let t = em.bind(Expr::Op(Intrinsic::Truth, vec![v]), line, out);
                        let mut leave = Vec::new();
                        let r = em.bind_const(Const::Bool(!all), line, &mut leave);
                        leave.push(stmt(StmtKind::Store(flag, r), line));
                        leave.push(stmt(StmtKind::Break, line));
                        let (then_body, else_body) = if all { (Vec::new(), leave) } else { (leave, Vec::new()) };
                        out.push(stmt(StmtKind::If { cond: t, then_body, else_body }, line));
                    }
                }
                // What `yield` evaluates to (the consumer sends nothing): None.
                let none = em.bind_const(Const::None, line, out);
                stack.push(Val::Reg(none));
            }
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }
}
