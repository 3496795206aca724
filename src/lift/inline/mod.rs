//! Translating nested code objects in place: comprehensions and inner functions (moved from lift.rs).
use super::*;

mod capture;
mod functions;
mod genexpr;

pub(super) use capture::*;
pub(super) use functions::*;
pub(super) use genexpr::*;
use crate::py311::decode::{instructions, Instr};
use crate::py311::CodeInfo;
use std::collections::{HashMap, HashSet};

impl Translator<'_> {
    // -- Comprehensions and generator expressions ---------------------------------------------

    /// Translates the comprehension or generator expression `co_consts[code]`, called with the
    /// iterator `iter`, in place (3.11 compiles it as a nested function called at once): its
    /// statements go to `out`, its locals renamed apart (`$cK.x`: they do not leak), its free
    /// variables mapped to the enclosing names of `closure`. Returns the register of its return
    /// value (the container built; for a generator expression, None).
    pub(in crate::lift) fn inline_child(
        &mut self,
        code: u32,
        closure: &[String],
        iter: Reg,
        mode: Option<YieldMode>,
        out: &mut Block,
    ) -> Result<Reg> {
        let line = self.line;
        let path = self.path.clone();
        let (mut body, _) = self.translate_child((self.ci, &path), code, closure, Some(iter), mode)?;
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
        closure: &[String],
        dot0: Option<Reg>,
        mode: Option<YieldMode>,
    ) -> Result<(Block, Vec<String>)> {
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
        let k = self.ncomp;
        self.ncomp += 1;
        let lp = child.localsplus();
        let nfree = child.freevars.len();
        if closure.len() != nfree {
            return Err(Fallback::shape("closure of a comprehension", line));
        }
        let first_free = lp.len() - nfree;
        let locals: Vec<String> = lp
            .iter()
            .enumerate()
            .map(|(i, n)| {
                if i >= first_free {
                    closure[i - first_free].clone()
                } else if n == ".0" {
                    n.clone()
                } else {
                    format!("$c{k}.{n}")
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
                self.const_index(c)
            })
            .collect();
        let mut sub = Translator {
            ci: child,
            instrs: &instrs,
            cfg: &cfg,
            loops: &loops,
            ctx: Vec::new(),
            pdoms: HashMap::new(),
            consts: std::mem::take(&mut self.consts),
            const_regs: std::mem::take(&mut self.const_regs),
            nregs: self.nregs,
            ntemps: self.ntemps,
            nflags: self.nflags,
            budget: self.budget + 4 * instrs.len() + 64,
            kwnames: None,
            line,
            locals: locals.clone(),
            dot0,
            const_map: Some(const_map),
            path,
            global_regs: std::mem::take(&mut self.global_regs),
            attr_regs: std::mem::take(&mut self.attr_regs),
            yield_mode: mode,
            ncomp: self.ncomp,
            real_cells: std::mem::take(&mut self.real_cells),
            first_free,
            stored_globals: self.stored_globals.clone(),
            known_funcs: std::mem::take(&mut self.known_funcs),
            func_regs: std::mem::take(&mut self.func_regs),
            inlining: std::mem::take(&mut self.inlining),
            plain_funcs: HashSet::new(),
            tuple_lens: HashMap::new(),
            map_keys: HashMap::new(),
            fn_defaults: std::mem::take(&mut self.fn_defaults),
        };
        for (i, c) in child.localsplus().iter().enumerate().take(first_free) {
            if child.cellvars.contains(c) && captured_by_function(child, c, &HashSet::new()) {
                sub.real_cells.insert(sub.locals[i].clone());
            }
        }
        let res = sub.region(0, cfg.exit(), Vec::new(), false);
        self.consts = sub.consts;
        self.const_regs = sub.const_regs;
        self.nregs = sub.nregs;
        self.ntemps = sub.ntemps;
        self.nflags = sub.nflags;
        self.budget = sub.budget;
        self.global_regs = sub.global_regs;
        self.attr_regs = sub.attr_regs;
        self.ncomp = sub.ncomp;
        self.real_cells = sub.real_cells;
        self.known_funcs = sub.known_funcs;
        self.func_regs = sub.func_regs;
        self.inlining = sub.inlining;
        self.fn_defaults = sub.fn_defaults;
        self.line = line;
        let (body, end) = res?;
        if end.is_some() {
            return Err(Fallback::shape("nested code that does not return", line));
        }
        Ok((body, locals))
    }
}
