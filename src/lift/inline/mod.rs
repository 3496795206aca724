//! Comprehension and closure inlining: nested code objects translated in place, in the same
//! registers and constant pool, with their locals renamed apart (`$cK.x`).
//!
//! - `capture`: before translation, which inner functions can be inlined and which locals need
//!   real cells.
//! - this module: `translate_child` (a nested code object in a child `Translator`) and
//!   `inline_child` (a list/set/dict comprehension, or a generator expression's loop).
//! - `functions`: `MAKE_FUNCTION`, closures, and calls of known inner functions (`inline_call`).
//! - `genexpr`: generator expressions and their consumers.
//!
//! The child translator takes over the function-wide state (`Emitter`, `Shared`) and hands it
//! back; on a failed `inline_call` both are rolled back and the call stays a call.
mod capture;
mod functions;
mod genexpr;

pub(super) use capture::{
    bound_before, captured_by_function, free_needs_cell, known_functions,
};
pub(super) use functions::{cell_local, closure_tuple, is_closure_tuple};

use super::cfg::Cfg;
use super::state::{CodeScope, Translator, YieldMode};
use super::{is_supported, Fallback, Result};
use crate::bezoar::ir::*;
use crate::bezoar::passes::has_return;
use crate::py311::decode::{instructions, Instr};
use crate::py311::{CodeInfo, ITER_ARG};
use std::collections::HashSet;

impl Translator<'_> {
    /// Translates the comprehension or generator expression `co_consts[code]`, called with the
    /// iterator `iter`, in place (3.11 compiles it as a nested function called at once): its
    /// statements go to `out`, its locals renamed apart (`$cK.x`: they do not leak), its free
    /// variables mapped to the enclosing names of `closure`. Returns the register of its return
    /// value (the container built; for a generator expression, None).
    pub(in crate::lift) fn inline_child(
        &mut self,
        code: u32,
        closure: &[VarName],
        iter: Reg,
        mode: Option<YieldMode>,
        out: &mut Block,
    ) -> Result<Reg> {
        let line = self.line;
        let path = self.code.path.clone();
        let (mut body, _) = self.translate_child((self.code.ci, &path), code, closure, Some(iter), mode)?;
        let ret = match body.pop() {
            Some(Stmt { kind: StmtKind::Return(r), .. }) if !has_return(&body) => r,
            _ => return Err(Fallback::shape("comprehension without a single final return", line)),
        };
        out.extend(body);
        Ok(ret)
    }

    /// Translates the nested code object `co_consts[code]` for inlining (see `inline_child`):
    /// its statements, returns included, and the Bezoar names of its fast locals.
    pub(in crate::lift) fn translate_child(
        &mut self,
        (ci, owner_path): (&CodeInfo, &[u32]),
        code: u32,
        closure: &[VarName],
        dot0: Option<Reg>,
        mode: Option<YieldMode>,
    ) -> Result<(Block, Vec<VarName>)> {
        let child = &ci.children[&code];
        let line = self.line;
        let instrs: Vec<Instr> = instructions(&child.code, &child.lines).collect();
        if let Some(bad) = instrs.iter().find(|i| !is_supported(i.opcode)) {
            return Err(Fallback::unsupported(bad));
        }
        if !child.exceptiontable.is_empty() {
            return Err(Fallback::shape("exception table in a comprehension", line));
        }
        let cfg = Cfg::build(&instrs)?;
        let loops = cfg.find_loops(&instrs)?;
        let k = self.shared.ncomp;
        self.shared.ncomp += 1;
        if dot0.is_some() {
            let own_code = child.is_genexpr() || !crate::pyver::COMPREHENSIONS_INLINED;
            self.shared.comp_free.insert(k, own_code);
        } else {
            self.shared.comp_free.remove(&k);
        }
        let lp = child.localsplus();
        let nfree = child.freevars.len();
        if closure.len() != nfree {
            return Err(Fallback::shape("closure of a comprehension", line));
        }
        let first_free = lp.len() - nfree;
        let locals: Vec<VarName> = lp
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if i >= first_free {
                    closure[i - first_free].clone()
                } else if n == ITER_ARG {
                    VarName::local(n)
                } else {
                    VarKind::Inlined { ctx: k, name: n.clone() }.into()
                }
            })
            .collect();
        let mut path = owner_path.to_vec();
        path.push(code);
        let const_map = child
            .consts
            .iter()
            .enumerate()
            .map(|(j, c)| {
                let c = match c {
                    Const::Opaque { repr, .. } => {
                        let mut p = path.clone();
                        p.push(j as u32);
                        Const::Nested { path: p, repr: repr.clone() }
                    }
                    c => c.clone(),
                };
                self.em.const_index(c)
            })
            .collect();
        let mut shared = std::mem::take(&mut self.shared);
        shared.budget += 4 * instrs.len() + 64;
        let scope = CodeScope {
            ci: child,
            instrs: &instrs,
            cfg: &cfg,
            loops: &loops,
            locals: locals.clone(),
            first_free,
            dot0,
            const_map: Some(const_map),
            path,
            plain_funcs: HashSet::new(),
            yield_mode: mode,
            tries: None,
        };
        let mut sub = Translator::new(self.em.begin_child(), scope, shared, line);
        for (i, c) in child.localsplus().iter().enumerate().take(first_free) {
            if child.cellvars.contains(c) && captured_by_function(child, c, &HashSet::new()) {
                sub.shared.real_cells.insert(sub.code.locals[i].clone());
            }
        }
        let res = sub.region(0, cfg.exit(), Vec::new(), false);
        self.em.end_child(sub.em);
        self.shared = sub.shared;
        self.line = line;
        let (body, end) = res?;
        if end.is_some() {
            return Err(Fallback::shape("nested code that does not return", line));
        }
        Ok((body, locals))
    }
}
