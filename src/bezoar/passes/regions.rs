//! Internal regions (HiPy's fine-grained fallback, at the granularity of a stretch of code): a
//! stretch of a block that contains a loop and makes only operations that touch nothing but the
//! values it is given and the objects it creates (arithmetic, strings, displays, subscripts,
//! method calls and calls of values it was given) runs as one generated Python function, its
//! live-in values passed in and its live-out values returned, instead of being reduced operation
//! by operation.
//!
//! The rewrite, for a stretch S with live-ins i.. and live-outs o..:
//!
//! ```text
//!   rR := op region.K(i..)        # the tuple (o..), or None when the region declined
//!   rOk := op is_not(rR, None)
//!   if rOk:  store o_j (rR[j]) ..
//!   else:    S                    # unchanged: the operation-by-operation translation
//! ```
//!
//! Soundness is decided at run time by the region object (`poppy_jit._regions`): it runs the
//! function only when every live-in is *closed* (an immutable atom, a tuple or frozenset of
//! closed values, or one of a fixed set of builtins), so that everything the code can reach is
//! builtin data it was given or made, and any exception makes it decline: the `else` branch then
//! runs S as before and raises exactly where CPython does. A region is therefore pure (always
//! unordered) and re-running it is invisible.
//!
//! This module decides the stretches statically and writes their Python source; it depends on
//! `bezoar::ir` only.
use super::visit;
use crate::bezoar::ir::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;

/// One region: the Python source of its function and what explain shows of it.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionCode {
    pub index: u32,
    /// Source line of the stretch's first statement.
    pub line: u32,
    /// The name of the function `source` defines.
    pub name: String,
    /// `def <name>(params): ...`.
    pub source: String,
    /// Globals of the function's namespace: `k{i}` is the function's constant `i`.
    pub consts: Vec<u32>,
    /// Live-ins, in parameter order (variable names, `global NAME`, registers `rN`).
    pub inputs: Vec<String>,
    /// Live-outs, in the order of the returned tuple.
    pub outputs: Vec<VarName>,
    /// Per live-in: whether it may be a list, dict or set of closed values (the caller's, or one
    /// the run owns) — the stretch mutates nothing it did not make itself, so running it on that
    /// container only reads it (`containers_read`). Otherwise the live-in must be closed.
    pub reads: Vec<bool>,
}

/// Whether regions are formed (`PYTHONPOPPY_REGIONS=0` turns them off).
pub fn regions_enabled() -> bool {
    std::env::var("PYTHONPOPPY_REGIONS").map(|v| v != "0").unwrap_or(true)
}

/// Form the regions of `f` (rewriting its body) and return their code.
pub fn form_regions(f: &mut Function) -> Vec<RegionCode> {
    let mut body = std::mem::take(&mut f.body);
    let mut uses: HashMap<Reg, u32> = HashMap::new();
    let mut var_refs: HashMap<VarName, u32> = HashMap::new();
    visit(&body, &mut |k| {
        for r in stmt_uses(k) {
            *uses.entry(r).or_insert(0) += 1;
        }
        if let Some(v) = stmt_var(k) {
            *var_refs.entry(v.clone()).or_insert(0) += 1;
        }
    });
    let mut former = Former {
        nregs: f.nregs,
        consts: std::mem::take(&mut f.consts),
        uses,
        var_refs,
        params: f.params.iter().cloned().collect(),
        next_temp: next_temp(&body),
        depth: 0,
        regions: Vec::new(),
    };
    let mut defined: BTreeSet<VarName> = f.params.iter().cloned().collect();
    former.block(&mut body, &mut defined);
    f.body = body;
    f.nregs = former.nregs;
    f.consts = former.consts;
    former.regions
}

/// One more than the largest `$tN` of the function.
fn next_temp(b: &Block) -> u32 {
    let mut n = 0;
    visit(b, &mut |k| {
        if let Some(v) = stmt_var(k) {
            if let VarKind::Temp(t) = v.kind() {
                n = n.max(t + 1);
            }
        }
    });
    n
}

/// Replace the operand `from` by `to` in `b` (nested blocks included).
fn rename(b: &mut [Stmt], from: Reg, to: Reg) {
    let sub = |r: &mut Reg| {
        if *r == from {
            *r = to;
        }
    };
    for s in b {
        match &mut s.kind {
            StmtKind::Let(_, Expr::Call { func, args, .. }) => {
                sub(func);
                args.iter_mut().for_each(sub);
            }
            StmtKind::Let(_, Expr::Op(_, args)) => args.iter_mut().for_each(sub),
            StmtKind::Store(_, r) | StmtKind::Return(r) | StmtKind::Raise(r) => sub(r),
            StmtKind::If { cond, then_body, else_body } => {
                sub(cond);
                rename(then_body, from, to);
                rename(else_body, from, to);
            }
            StmtKind::For { iter, body, .. } => {
                sub(iter);
                rename(body, from, to);
            }
            StmtKind::Loop { body } => rename(body, from, to),
            StmtKind::Try { body, handlers, orelse, .. } => {
                rename(body, from, to);
                for h in handlers {
                    if let Some((test, r)) = &mut h.test {
                        sub(r);
                        rename(test, from, to);
                    }
                    rename(&mut h.body, from, to);
                }
                rename(orelse, from, to);
            }
            _ => {}
        }
    }
}

/// Registers a statement uses as operands (not those of nested blocks).
fn stmt_uses(k: &StmtKind) -> Vec<Reg> {
    match k {
        StmtKind::Let(_, Expr::Call { func, args, .. }) => std::iter::once(*func).chain(args.iter().copied()).collect(),
        StmtKind::Let(_, Expr::Op(_, args)) => args.clone(),
        StmtKind::Store(_, r) | StmtKind::Return(r) | StmtKind::Raise(r) => vec![*r],
        StmtKind::If { cond, .. } => vec![*cond],
        StmtKind::For { iter, .. } => vec![*iter],
        StmtKind::Try { handlers, .. } => handlers.iter().filter_map(|h| h.test.as_ref().map(|t| t.1)).collect(),
        _ => vec![],
    }
}

/// The variable a statement reads or writes (not those of nested blocks).
fn stmt_var(k: &StmtKind) -> Option<&VarName> {
    match k {
        StmtKind::Let(_, Expr::Load(v)) | StmtKind::Store(v, _) | StmtKind::Delete(v) | StmtKind::Unbind(v) => Some(v),
        _ => None,
    }
}

/// Definite assignment after `s` (conservative: a loop's body may not run; a branch that leaves
/// counts like one that falls through).
fn def_update(s: &StmtKind, d: &mut BTreeSet<VarName>) {
    match s {
        StmtKind::Store(v, _) => {
            d.insert(v.clone());
        }
        StmtKind::Delete(v) | StmtKind::Unbind(v) => {
            d.remove(v);
        }
        StmtKind::If { then_body, else_body, .. } => {
            let mut a = d.clone();
            then_body.iter().for_each(|s| def_update(&s.kind, &mut a));
            let mut b = d.clone();
            else_body.iter().for_each(|s| def_update(&s.kind, &mut b));
            *d = a.intersection(&b).cloned().collect();
        }
        // What a try may delete (its handlers' `as` names included) is not defined after it.
        StmtKind::Try { handlers, .. } => {
            for b in s.blocks() {
                for x in super::deleted(b) {
                    d.remove(&x);
                }
            }
            for x in handlers.iter().filter_map(|h| h.name.as_ref()) {
                d.remove(x);
            }
        }
        _ => {}
    }
}

/// The builtins a region may read as globals (checked again at run time by identity:
/// `poppy_jit._regions._BUILTINS`, which must list the same names).
pub const REGION_BUILTINS: &[&str] = &[
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "chr", "complex", "dict", "divmod", "enumerate", "filter",
    "float", "format", "frozenset", "hash", "hex", "int", "isinstance", "iter", "len", "list", "map", "max", "min",
    "next", "oct", "ord", "pow", "range", "repr", "reversed", "round", "set", "slice", "sorted", "str", "sum",
    "tuple", "zip",
];

/// The operations a region may contain: those that, on builtin data, run only builtin code and
/// touch nothing but their operands (and the objects those reach).
fn op_ok(op: &Intrinsic) -> bool {
    match op {
        Intrinsic::Binary { .. }
        | Intrinsic::Unary(_)
        | Intrinsic::Compare(_)
        | Intrinsic::Is { .. }
        | Intrinsic::Contains { .. }
        | Intrinsic::Truth
        | Intrinsic::GetItem
        | Intrinsic::BuildTuple
        | Intrinsic::BuildList
        | Intrinsic::BuildMap
        | Intrinsic::BuildSet
        | Intrinsic::BuildSlice
        | Intrinsic::FormatValue { .. }
        | Intrinsic::BuildString
        | Intrinsic::IterSnapshot
        | Intrinsic::IterPrivate
        | Intrinsic::SetItem
        | Intrinsic::DelItem
        | Intrinsic::ListExtend
        | Intrinsic::SetUpdate
        | Intrinsic::ListToTuple
        | Intrinsic::UnpackSequence(_)
        | Intrinsic::UnpackEx { .. } => true,
        // No dunder or private names: `x.__class__.__subclasses__()` reaches every class.
        Intrinsic::GetAttr(name) | Intrinsic::SplitGetItem(name) => !name.starts_with('_'),
        _ => false,
    }
}

/// Whether `s` may be part of a region; `loops`: how many loops of the region enclose it (a
/// `break`/`continue` must stay inside the region).
fn stmt_ok(s: &StmtKind, loops: u32) -> bool {
    match s {
        StmtKind::Let(_, e) => match e {
            Expr::Const(_) | Expr::Load(_) | Expr::Call { .. } => true,
            // A global that is not one of the builtins the region accepts would make it decline
            // at run time (a call of an external, say): end the stretch here instead.
            Expr::Global(name) => REGION_BUILTINS.contains(&name.as_str()),
            Expr::Op(op, _) => op_ok(op),
        },
        StmtKind::Store(..) => true,
        StmtKind::Delete(_) | StmtKind::Unbind(_) | StmtKind::Return(_) | StmtKind::Raise(_) => false,
        StmtKind::Break | StmtKind::Continue => loops > 0,
        StmtKind::If { then_body, else_body, .. } => {
            then_body.iter().chain(else_body).all(|s| stmt_ok(&s.kind, loops))
        }
        StmtKind::For { body, .. } | StmtKind::Loop { body } => body.iter().all(|s| stmt_ok(&s.kind, loops + 1)),
        // A region is one Python call: if it raised midway inside a try body, the stores it made
        // before the raising point would be lost. No region contains a try.
        StmtKind::Try { .. } => false,
    }
}

/// Whether every call in `s` calls a register defined before it in the stretch (`defs`, which
/// collects the registers the stretch defines).
fn callees_inside(s: &Stmt, defs: &mut HashSet<Reg>) -> bool {
    let mut ok = true;
    visit(std::slice::from_ref(s), &mut |k| match k {
        StmtKind::Let(r, e) => {
            if let Expr::Call { func, .. } = e {
                ok &= defs.contains(func);
            }
            defs.insert(*r);
        }
        StmtKind::For { item, .. } => {
            defs.insert(*item);
        }
        _ => {}
    });
    ok
}

/// How deep regions nest inside the fallback of another (each level copies its stretch).
const MAX_NESTED: u32 = 2;

fn has_loop(b: &[Stmt]) -> bool {
    let mut found = false;
    visit(b, &mut |k| found |= matches!(k, StmtKind::For { .. } | StmtKind::Loop { .. }));
    found
}

struct Former {
    nregs: u32,
    consts: Vec<Const>,
    uses: HashMap<Reg, u32>,
    var_refs: HashMap<VarName, u32>,
    params: HashSet<VarName>,
    /// The next free `$tN`.
    next_temp: u32,
    /// How many regions' fallback stretches enclose the one being looked at.
    depth: u32,
    regions: Vec<RegionCode>,
}

impl Former {
    fn block(&mut self, b: &mut Block, defined: &mut BTreeSet<VarName>) {
        let mut i = 0;
        while i < b.len() {
            if !stmt_ok(&b[i].kind, 0) {
                self.nested(&mut b[i], defined);
                def_update(&b[i].kind, defined);
                i += 1;
                continue;
            }
            // The stretch: ok statements whose calls call what the stretch itself computed (a
            // callee from before it, an external say, would make the region decline).
            let mut j = i;
            let mut defs: HashSet<Reg> = HashSet::new();
            while j < b.len() && stmt_ok(&b[j].kind, 0) && callees_inside(&b[j], &mut defs) {
                j += 1;
            }
            // It ends with its last loop: what follows gains nothing from running in the region.
            let Some(end) = (i..j).rev().find(|&p| has_loop(&b[p..p + 1])).map(|p| p + 1) else {
                let stop = j.max(i + 1);
                for k in i..stop {
                    self.nested(&mut b[k], defined);
                    def_update(&b[k].kind, defined);
                }
                i = stop;
                continue;
            };
            // It starts with its first statement the rest of it needs: the registers (and
            // variables stored but not read again in it) that only code after the stretch reads
            // — the method of `xs.extend([... for q in xs])`, looked up before the comprehension
            // — are computed where they are, before the region; inside it, the method would
            // carry a reference to its live-in out of the region, which must then decline for
            // any container.
            let first_loop = (i..end).find(|&p| has_loop(&b[p..p + 1])).unwrap_or(i);
            let loaded_after = |k: usize, v: &VarName| {
                let mut found = false;
                visit(&b[k + 1..end], &mut |s| found |= matches!(s, StmtKind::Let(_, Expr::Load(x)) if x == v));
                found
            };
            let mut needed: HashSet<Reg> = HashSet::new();
            visit(&b[first_loop..end], &mut |k| needed.extend(stmt_uses(k)));
            let mut movable = vec![false; first_loop - i];
            for k in (i..first_loop).rev() {
                movable[k - i] = match &b[k].kind {
                    StmtKind::Let(r, _) => !needed.contains(r),
                    // `store fh r5` of `with open(k) as fh:`, before the stretch proper
                    StmtKind::Store(v, _) => !loaded_after(k, v),
                    _ => false,
                };
                if !movable[k - i] {
                    needed.extend(stmt_uses(&b[k].kind));
                }
            }
            let lead = movable.iter().take_while(|m| **m).count();
            if lead > 0 {
                for k in i..i + lead {
                    def_update(&b[k].kind, defined);
                }
                i += lead;
                continue;
            }
            let mut after: HashSet<Reg> = HashSet::new();
            visit(&b[end..], &mut |k| after.extend(stmt_uses(k)));
            let rewrite = self.make(&b[i..end], defined, &after);
            match rewrite {
                Some((mut stmts, renamed)) => {
                    // When the region declines, its stretch runs operation by operation: the
                    // loops in it may hold smaller regions (an outer loop over a list the run
                    // built, an inner one over each of its strings). Bounded: each level copies.
                    if self.depth < MAX_NESTED {
                        self.depth += 1;
                        if let Some(StmtKind::If { else_body, .. }) =
                            stmts.iter_mut().rev().map(|s| &mut s.kind).find(|k| matches!(k, StmtKind::If { .. }))
                        {
                            let mut d = defined.clone();
                            for st in else_body.iter_mut() {
                                self.nested(st, &d);
                                def_update(&st.kind, &mut d);
                            }
                        }
                        self.depth -= 1;
                    }
                    for s in &b[i..end] {
                        def_update(&s.kind, defined);
                    }
                    for (from, to) in renamed {
                        rename(&mut b[end..], from, to);
                    }
                    let n = stmts.len();
                    b.splice(i..end, stmts);
                    i += n;
                }
                None => {
                    for k in i..end {
                        self.nested(&mut b[k], defined);
                        def_update(&b[k].kind, defined);
                    }
                    i = end;
                }
            }
        }
    }

    /// Look for regions inside the blocks nested in `s`.
    fn nested(&mut self, s: &mut Stmt, defined: &BTreeSet<VarName>) {
        match &mut s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                self.block(then_body, &mut defined.clone());
                self.block(else_body, &mut defined.clone());
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => self.block(body, &mut defined.clone()),
            // Inside a try (a `with` is one): its body, each handler's body and its else. A
            // region never raises (an exception makes it decline, and the stretch then runs
            // operation by operation, raising where CPython does, for these handlers), so the
            // statement is unchanged around it. What is defined at a handler's start: what was
            // before the try, less what the body may delete (it may raise anywhere); a subset
            // of what is, which only keeps more stretches out. A handler's test stays
            // straight-line (it holds no loop, so no region).
            StmtKind::Try { body, handlers, orelse, .. } => {
                let mut d = defined.clone();
                for x in super::deleted(body) {
                    d.remove(&x);
                }
                self.block(body, &mut defined.clone());
                for h in handlers.iter_mut() {
                    self.block(&mut h.body, &mut d.clone());
                }
                self.block(orelse, &mut d.clone());
            }
            _ => {}
        }
    }

    fn new_reg(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }

    fn const_index(&mut self, c: Const) -> u32 {
        match self.consts.iter().position(|k| *k == c && !matches!(k, Const::Float(_))) {
            Some(i) => i as u32,
            None => {
                self.consts.push(c);
                self.consts.len() as u32 - 1
            }
        }
    }

    /// The rewrite of the stretch `s` (None: it cannot be a region), and the registers it
    /// defines that `after` (what follows it) uses, each with the register that replaces it
    /// there (read from a temporary both branches store).
    fn make(&mut self, s: &[Stmt], defined: &BTreeSet<VarName>, after: &HashSet<Reg>) -> Option<(Vec<Stmt>, Vec<(Reg, Reg)>)> {
        // Variables: read before they are surely written in the stretch (live-ins), written,
        // and how often the stretch names each.
        let mut exposed: Vec<VarName> = Vec::new();
        let mut stored: Vec<VarName> = Vec::new();
        let mut inside: HashMap<VarName, u32> = HashMap::new();
        let mut local_def: BTreeSet<VarName> = BTreeSet::new();
        exposure(s, &mut local_def, &mut exposed, &mut stored, &mut inside);
        if exposed.iter().any(|v| !defined.contains(v)) {
            return None; // may be unbound at the start: keep CPython's UnboundLocalError in place
        }
        let outside = |v: &VarName| self.params.contains(v) || self.var_refs.get(v).copied().unwrap_or(0) > inside[v];
        let outputs: Vec<VarName> =
            stored.iter().filter(|v| outside(v) || exposed.contains(v)).cloned().collect();
        // Registers used but defined before the stretch, and globals read.
        let mut defined_regs: HashSet<Reg> = HashSet::new();
        let mut used_regs: Vec<Reg> = Vec::new();
        let mut globals: Vec<String> = Vec::new();
        visit(s, &mut |k| {
            for r in stmt_uses(k) {
                if !used_regs.contains(&r) {
                    used_regs.push(r);
                }
            }
            match k {
                StmtKind::Let(r, e) => {
                    defined_regs.insert(*r);
                    if let Expr::Global(n) = e {
                        if !globals.contains(n) {
                            globals.push(n.clone());
                        }
                    }
                }
                StmtKind::For { item, .. } => {
                    defined_regs.insert(*item);
                }
                _ => {}
            }
        });
        let outer_regs: Vec<Reg> = used_regs.into_iter().filter(|r| !defined_regs.contains(r)).collect();
        // Registers of the stretch's own statements used after it leave through temporaries.
        let escaping: Vec<Reg> = s
            .iter()
            .filter_map(|st| match &st.kind {
                StmtKind::Let(r, _) if after.contains(r) => Some(*r),
                _ => None,
            })
            .collect();
        let temps: Vec<VarName> = escaping
            .iter()
            .map(|_| {
                self.next_temp += 1;
                VarName::from(VarKind::Temp(self.next_temp - 1))
            })
            .collect();

        let index = self.regions.len() as u32;
        let line = s[0].line;
        let name = format!("region_{index}");
        let mut vars: Vec<VarName> = exposed.clone();
        for v in stored.iter().chain(inside.keys()) {
            if !vars.contains(v) {
                vars.push(v.clone());
            }
        }
        let mut params: Vec<String> = Vec::new();
        let mut inputs: Vec<String> = Vec::new();
        for v in &exposed {
            params.push(format!("v{}", vars.iter().position(|x| x == v).unwrap()));
            inputs.push(v.to_string());
        }
        for (gi, g) in globals.iter().enumerate() {
            params.push(format!("g{gi}"));
            inputs.push(format!("global {g}"));
        }
        for r in &outer_regs {
            params.push(format!("r{r}"));
            inputs.push(format!("r{r}"));
        }
        let mut gen = Gen {
            out: String::new(),
            pending: Vec::new(),
            acc_reads: Vec::new(),
            acc_movable: true,
            uses: &self.uses,
            consts: &self.consts,
            used_consts: BTreeSet::new(),
            vars: &vars,
            globals: &globals,
        };
        gen.block(s, 1);
        let outs: Vec<String> =
            outputs.iter().map(|v| gen.var(v)).chain(escaping.iter().map(|r| format!("r{r}"))).collect();
        let ret = if outs.is_empty() { "()".to_string() } else { format!("({},)", outs.join(", ")) };
        let mut source = format!("def {name}({}):\n", params.join(", "));
        source.push_str(&gen.out);
        let _ = writeln!(source, "    return {ret}");
        let consts: Vec<u32> = gen.used_consts.iter().copied().collect();

        // The rewrite.
        let at = |kind| Stmt { kind, line };
        let mut out = Vec::new();
        let mut args = Vec::new();
        for v in &exposed {
            let r = self.new_reg();
            out.push(at(StmtKind::Let(r, Expr::Load(v.clone()))));
            args.push(r);
        }
        for g in &globals {
            let r = self.new_reg();
            out.push(at(StmtKind::Let(r, Expr::Global(g.clone()))));
            args.push(r);
        }
        args.extend(&outer_regs);
        let res = self.new_reg();
        out.push(at(StmtKind::Let(res, Expr::Op(Intrinsic::Region(index), args))));
        let none_k = self.const_index(Const::None);
        let none = self.new_reg();
        out.push(at(StmtKind::Let(none, Expr::Const(none_k))));
        let ok = self.new_reg();
        out.push(at(StmtKind::Let(ok, Expr::Op(Intrinsic::Is { negate: true }, vec![res, none]))));
        let mut then_body = Vec::new();
        for (j, v) in outputs.iter().enumerate() {
            let k = self.const_index(Const::Int(j as i64));
            let kr = self.new_reg();
            then_body.push(at(StmtKind::Let(kr, Expr::Const(k))));
            let x = self.new_reg();
            then_body.push(at(StmtKind::Let(x, Expr::Op(Intrinsic::GetItem, vec![res, kr]))));
            then_body.push(at(StmtKind::Store(v.clone(), x)));
        }
        let mut else_body = s.to_vec();
        let mut renamed = Vec::new();
        for (j, (r, t)) in escaping.iter().zip(&temps).enumerate() {
            let k = self.const_index(Const::Int((outputs.len() + j) as i64));
            let kr = self.new_reg();
            then_body.push(at(StmtKind::Let(kr, Expr::Const(k))));
            let x = self.new_reg();
            then_body.push(at(StmtKind::Let(x, Expr::Op(Intrinsic::GetItem, vec![res, kr]))));
            then_body.push(at(StmtKind::Store(t.clone(), x)));
            else_body.push(at(StmtKind::Store(t.clone(), *r)));
        }
        out.push(at(StmtKind::If { cond: ok, then_body, else_body }));
        for (r, t) in escaping.iter().zip(&temps) {
            let r2 = self.new_reg();
            out.push(at(StmtKind::Let(r2, Expr::Load(t.clone()))));
            renamed.push((*r, r2));
        }
        let mut shown = outputs.clone();
        shown.extend(temps.iter().cloned());
        let reads = containers_read(s, &exposed, globals.len(), outer_regs.len());
        self.regions.push(RegionCode { index, line, name, source, consts, inputs, outputs: shown, reads });
        Some((out, renamed))
    }
}

/// Method names that change a list, dict or set (the only mutable objects a region can reach
/// when its containers hold closed values).
const MUTATORS: &[&str] = &[
    "add", "append", "clear", "difference_update", "discard", "extend", "insert", "intersection_update", "pop",
    "popitem", "remove", "reverse", "setdefault", "sort", "symmetric_difference_update", "update",
];

/// Which live-ins (exposed variables, then `globals` globals, then `outer` registers: the
/// parameter order) may be containers of closed values the region only reads. A list, dict or
/// set given to a region, holding closed values, is the only mutable object it can reach that
/// it did not make; so the region only reads it if every operation that could change an object
/// (item stores and deletes, `extend`/`update`, in-place operators, the methods in `MUTATORS`)
/// changes one the stretch made itself: its receiver is a display or a constant, or a variable
/// that the stretch assigns only such values (then not a live-in). An in-place operator on a
/// variable that is a live-in (`total += x` where `total` was set before the stretch) is fine
/// when that live-in is closed: such a live-in must be. Anything else: every live-in must be
/// closed (the region declines on a container without touching it, as before).
fn containers_read(s: &[Stmt], exposed: &[VarName], globals: usize, outer: usize) -> Vec<bool> {
    let mut defs: HashMap<Reg, Expr> = HashMap::new();
    let mut stores: HashMap<VarName, Vec<Reg>> = HashMap::new();
    visit(s, &mut |k| match k {
        StmtKind::Let(r, e) => {
            defs.insert(*r, e.clone());
        }
        StmtKind::Store(v, r) => stores.entry(v.clone()).or_default().push(*r),
        _ => {}
    });
    let makes = |e: &Expr| match e {
        Expr::Const(_) => true,
        Expr::Op(op, _) => matches!(
            op,
            Intrinsic::Binary { inplace: false, .. }
                | Intrinsic::Unary(_)
                | Intrinsic::Compare(_)
                | Intrinsic::Is { .. }
                | Intrinsic::Contains { .. }
                | Intrinsic::Truth
                | Intrinsic::BuildTuple
                | Intrinsic::BuildList
                | Intrinsic::BuildMap
                | Intrinsic::BuildSet
                | Intrinsic::BuildSlice
                | Intrinsic::FormatValue { .. }
                | Intrinsic::BuildString
                | Intrinsic::ListToTuple
        ),
        _ => false,
    };
    // A variable the stretch assigns only values it makes (or in-place updates of itself).
    let own_var = |v: &VarName| {
        stores.get(v).map_or(true, |rs| {
            rs.iter().all(|r| match defs.get(r) {
                Some(Expr::Op(Intrinsic::Binary { inplace: true, .. }, a)) => {
                    matches!(defs.get(&a[0]), Some(Expr::Load(x)) if x == v)
                }
                Some(e) => makes(e),
                None => false,
            })
        })
    };
    let mut closed: HashSet<VarName> = HashSet::new();
    let mut ok = true;
    visit(s, &mut |k| {
        let StmtKind::Let(_, Expr::Op(op, args)) = k else { return };
        let changes = match op {
            Intrinsic::SetItem | Intrinsic::DelItem | Intrinsic::ListExtend | Intrinsic::SetUpdate => true,
            Intrinsic::Binary { inplace, .. } => *inplace,
            Intrinsic::GetAttr(name) => MUTATORS.contains(&name.as_str()),
            _ => false,
        };
        if !changes {
            return;
        }
        match defs.get(&args[0]) {
            Some(e) if makes(e) => {}
            Some(Expr::Load(v)) if own_var(v) => {
                if exposed.contains(v) {
                    closed.insert(v.clone()); // it may still hold the live-in: that must be closed
                }
            }
            _ => ok = false,
        }
    });
    if !ok {
        return vec![false; exposed.len() + globals + outer];
    }
    let mut reads: Vec<bool> = exposed.iter().map(|v| !closed.contains(v)).collect();
    reads.extend(std::iter::repeat(false).take(globals)); // builtins: closed
    reads.extend(std::iter::repeat(true).take(outer));
    reads
}

/// Walk `b` in order: variables loaded while not surely assigned in the stretch (`exposed`),
/// variables stored, and how often each variable is named.
fn exposure(
    b: &[Stmt],
    local: &mut BTreeSet<VarName>,
    exposed: &mut Vec<VarName>,
    stored: &mut Vec<VarName>,
    inside: &mut HashMap<VarName, u32>,
) {
    for s in b {
        if let Some(v) = stmt_var(&s.kind) {
            *inside.entry(v.clone()).or_insert(0) += 1;
        }
        match &s.kind {
            StmtKind::Let(_, Expr::Load(v)) => {
                if !local.contains(v) && !exposed.contains(v) {
                    exposed.push(v.clone());
                }
            }
            StmtKind::Store(v, _) => {
                local.insert(v.clone());
                if !stored.contains(v) {
                    stored.push(v.clone());
                }
            }
            StmtKind::If { then_body, else_body, .. } => {
                let mut a = local.clone();
                exposure(then_body, &mut a, exposed, stored, inside);
                let mut c = local.clone();
                exposure(else_body, &mut c, exposed, stored, inside);
                *local = a.intersection(&c).cloned().collect();
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => {
                exposure(body, &mut local.clone(), exposed, stored, inside);
            }
            _ => {}
        }
    }
}

/// Python source of a stretch. Single-use registers of side-effect-free expressions are folded
/// into the expression that uses them (`pending`); pure expressions may so move past each other
/// but never past a statement that may mutate something (pending ones are written out first),
/// except reads of variables and constants (`movable`), which only a store to the variable
/// invalidates. (Keeping `s` unnamed until `s += x` lets CPython extend the string in place.)
/// Exceptions need not be kept in place: any exception makes the region decline.
struct Pending {
    reg: Reg,
    text: String,
    /// For `truth`: the text of its operand.
    bare: Option<String>,
    /// The variables the text reads.
    reads: Vec<String>,
    /// Only variables and constants: no object state is read.
    movable: bool,
}

struct Gen<'a> {
    out: String,
    pending: Vec<Pending>,
    /// What the operands taken since the last reset read (see `operand`).
    acc_reads: Vec<String>,
    acc_movable: bool,
    uses: &'a HashMap<Reg, u32>,
    consts: &'a [Const],
    used_consts: BTreeSet<u32>,
    vars: &'a [VarName],
    globals: &'a [String],
}

impl Gen<'_> {
    fn var(&self, v: &VarName) -> String {
        format!("v{}", self.vars.iter().position(|x| x == v).expect("every variable of the stretch is named"))
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// The text of operand `r`: its pending expression (taken), or its name.
    fn operand(&mut self, r: Reg) -> String {
        match self.take(r) {
            Some(p) => p.text,
            None => format!("r{r}"),
        }
    }

    fn take(&mut self, r: Reg) -> Option<Pending> {
        let i = self.pending.iter().position(|p| p.reg == r)?;
        let p = self.pending.remove(i);
        self.acc_reads.extend(p.reads.iter().cloned());
        self.acc_movable &= p.movable;
        Some(p)
    }

    /// For an `if`: the operand of a pending `truth`, else the operand.
    fn condition(&mut self, r: Reg) -> String {
        match self.take(r) {
            Some(p) => p.bare.unwrap_or(p.text),
            None => format!("r{r}"),
        }
    }

    /// Before a statement that may mutate an object: write out the pending expressions that read
    /// object state (in their order).
    fn flush(&mut self, depth: usize) {
        self.flush_where(depth, |p| !p.movable);
    }

    /// Before a block, a jump, or the end of one: write out every pending expression.
    fn flush_all(&mut self, depth: usize) {
        self.flush_where(depth, |_| true);
    }

    fn flush_where(&mut self, depth: usize, pick: impl Fn(&Pending) -> bool) {
        let (out, keep): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.pending).into_iter().partition(|p| pick(p));
        self.pending = keep;
        for p in out {
            self.line(depth, &format!("r{} = {}", p.reg, p.text));
        }
    }

    fn constant(&mut self, k: u32) -> String {
        match &self.consts[k as usize] {
            Const::None => "None".into(),
            Const::Bool(b) => if *b { "True" } else { "False" }.into(),
            Const::Int(i) if *i >= 0 => i.to_string(),
            _ => {
                self.used_consts.insert(k);
                format!("k{k}")
            }
        }
    }

    fn block(&mut self, b: &[Stmt], depth: usize) {
        let start = self.out.len();
        let mut i = 0;
        while i < b.len() {
            if self.augmented(&b[i], b.get(i + 1), depth) {
                i += 2;
                continue;
            }
            self.stmt(&b[i], depth);
            i += 1;
        }
        self.flush_all(depth);
        if self.out.len() == start {
            self.line(depth, "pass");
        }
    }

    /// `r := load v; r2 := op inplace(r, y); store v r2` as `v op= y` (true when written).
    fn augmented(&mut self, s: &Stmt, next: Option<&Stmt>, depth: usize) -> bool {
        let (StmtKind::Let(r, Expr::Op(Intrinsic::Binary { op, inplace: true }, args)), Some(StmtKind::Store(v, r2))) =
            (&s.kind, next.map(|n| &n.kind))
        else {
            return false;
        };
        let target = self.var(v);
        let loaded = self.pending.iter().any(|p| p.reg == args[0] && p.text == target);
        if r != r2 || self.uses.get(r) != Some(&1) || !loaded {
            return false;
        }
        let _ = self.operand(args[0]);
        let y = self.operand(args[1]);
        self.flush(depth);
        self.flush_where(depth, |p| p.reads.contains(&target));
        self.line(depth, &format!("{target} {}= {y}", binop(*op)));
        true
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        match &s.kind {
            StmtKind::Let(r, e) => self.let_(*r, e, depth),
            StmtKind::Store(v, r) => {
                let x = self.operand(*r);
                let v = self.var(v);
                // What reads `v` must read it before it is rebound.
                self.flush_where(depth, |p| p.reads.contains(&v));
                self.line(depth, &format!("{v} = {x}"));
            }
            StmtKind::If { cond, then_body, else_body } => {
                let c = self.condition(*cond);
                self.flush_all(depth);
                self.line(depth, &format!("if {c}:"));
                self.block(then_body, depth + 1);
                if !else_body.is_empty() {
                    self.line(depth, "else:");
                    self.block(else_body, depth + 1);
                }
            }
            StmtKind::For { iter, item, body } => {
                let it = self.operand(*iter);
                self.flush_all(depth);
                // `for r in xs: store v r` with r used once is `for v in xs:`.
                let target = match body.first().map(|s| &s.kind) {
                    Some(StmtKind::Store(v, r)) if r == item && self.uses.get(item) == Some(&1) => Some(self.var(v)),
                    _ => None,
                };
                let skip = target.is_some();
                let target = target.unwrap_or_else(|| format!("r{item}"));
                self.line(depth, &format!("for {target} in {it}:"));
                let body: &[Stmt] = if skip { &body[1..] } else { body };
                self.block(body, depth + 1);
            }
            StmtKind::Loop { body } => {
                self.flush_all(depth);
                self.line(depth, "while True:");
                self.block(body, depth + 1);
            }
            StmtKind::Break => {
                self.flush_all(depth);
                self.line(depth, "break");
            }
            StmtKind::Continue => {
                self.flush_all(depth);
                self.line(depth, "continue");
            }
            StmtKind::Return(_) | StmtKind::Raise(_) | StmtKind::Delete(_) | StmtKind::Unbind(_) | StmtKind::Try { .. } => {
                unreachable!("not in a region")
            }
        }
    }

    fn let_(&mut self, r: Reg, e: &Expr, depth: usize) {
        let single = self.uses.get(&r).copied().unwrap_or(0) == 1;
        let used = self.uses.get(&r).copied().unwrap_or(0) > 0;
        // Side-effect-free expressions (given builtin data).
        self.acc_reads.clear();
        self.acc_movable = true;
        let pure = match e {
            Expr::Const(k) => Some((self.constant(*k), None)),
            Expr::Load(v) => {
                let name = self.var(v);
                self.acc_reads.push(name.clone());
                Some((name, None))
            }
            Expr::Global(n) => Some((format!("g{}", self.globals.iter().position(|g| g == n).unwrap()), None)),
            Expr::Op(op, args) => self.pure_op(op, args).map(|t| {
                self.acc_movable = false;
                t
            }),
            Expr::Call { .. } => None,
        };
        if let Some((text, bare)) = pure {
            if single {
                let reads = std::mem::take(&mut self.acc_reads);
                self.pending.push(Pending { reg: r, text, bare, reads, movable: self.acc_movable });
            } else {
                // Unused, it is still evaluated: it may raise, and then CPython does.
                self.flush(depth);
                self.line(depth, &if used { format!("r{r} = {text}") } else { text });
            }
            return;
        }
        let bind = |text: String| if used { format!("r{r} = {text}") } else { text };
        match e {
            Expr::Call { func, args, kwnames } => {
                let f = self.operand(*func);
                let mut a: Vec<String> = args.iter().map(|x| self.operand(*x)).collect();
                let npos = a.len() - kwnames.len();
                for (k, name) in kwnames.iter().enumerate() {
                    a[npos + k] = format!("{name}={}", a[npos + k]);
                }
                self.flush(depth);
                self.line(depth, &bind(format!("{f}({})", a.join(", "))));
            }
            Expr::Op(op, args) => {
                let a: Vec<String> = args.iter().map(|x| self.operand(*x)).collect();
                self.flush(depth);
                let none = |g: &mut Self, stmt: String| {
                    g.line(depth, &stmt);
                    if used {
                        g.line(depth, &format!("r{r} = None"));
                    }
                };
                match op {
                    Intrinsic::Binary { op, inplace: true } => {
                        self.line(depth, &format!("r{r} = {}", a[0]));
                        self.line(depth, &format!("r{r} {}= {}", binop(*op), a[1]));
                    }
                    Intrinsic::SetItem => none(self, format!("{}[{}] = {}", a[0], a[1], a[2])),
                    Intrinsic::DelItem => none(self, format!("del {}[{}]", a[0], a[1])),
                    Intrinsic::ListExtend => match one_tuple(&a[1]) {
                        Some(x) => none(self, format!("{}.append({x})", a[0])),
                        None => none(self, format!("{}.extend({})", a[0], a[1])),
                    },
                    Intrinsic::SetUpdate => match one_tuple(&a[1]) {
                        Some(x) => none(self, format!("{}.add({x})", a[0])),
                        None => none(self, format!("{}.update({})", a[0], a[1])),
                    },
                    Intrinsic::UnpackSequence(n) => {
                        let names: Vec<String> = (0..*n).map(|i| format!("r{r}_{i}")).collect();
                        self.line(depth, &format!("({},) = {}", names.join(", "), a[0]));
                        self.line(depth, &format!("r{r} = ({},)", names.join(", ")));
                    }
                    Intrinsic::UnpackEx { before, after } => {
                        let mut names: Vec<String> = (0..*before).map(|i| format!("r{r}_{i}")).collect();
                        names.push(format!("*r{r}_m"));
                        names.extend((0..*after).map(|i| format!("r{r}_{}", before + 1 + i)));
                        self.line(depth, &format!("({},) = {}", names.join(", "), a[0]));
                        let vals: Vec<String> = names.iter().map(|n| n.trim_start_matches('*').to_string()).collect();
                        self.line(depth, &format!("r{r} = ({},)", vals.join(", ")));
                    }
                    _ => unreachable!("pure_op covers every other operation of a region"),
                }
            }
            _ => unreachable!(),
        }
    }

    /// The text of a side-effect-free operation (None: it is written as statements).
    fn pure_op(&mut self, op: &Intrinsic, args: &[Reg]) -> Option<(String, Option<String>)> {
        let pure = matches!(
            op,
            Intrinsic::Binary { inplace: false, .. }
                | Intrinsic::Unary(_)
                | Intrinsic::Compare(_)
                | Intrinsic::Is { .. }
                | Intrinsic::Contains { .. }
                | Intrinsic::Truth
                | Intrinsic::GetAttr(_)
                | Intrinsic::SplitGetItem(_)
                | Intrinsic::GetItem
                | Intrinsic::BuildTuple
                | Intrinsic::BuildList
                | Intrinsic::BuildMap
                | Intrinsic::BuildSet
                | Intrinsic::BuildSlice
                | Intrinsic::FormatValue { .. }
                | Intrinsic::BuildString
                | Intrinsic::IterSnapshot
                | Intrinsic::IterPrivate
                | Intrinsic::ListToTuple
        );
        if !pure {
            return None;
        }
        let a: Vec<String> = args.iter().map(|x| self.operand(*x)).collect();
        let text = match op {
            Intrinsic::Binary { op, .. } => format!("({} {} {})", a[0], binop(*op), a[1]),
            Intrinsic::Unary(u) => match u {
                UnaryOp::Neg => format!("(-{})", a[0]),
                UnaryOp::Pos => format!("(+{})", a[0]),
                UnaryOp::Invert => format!("(~{})", a[0]),
                UnaryOp::Not => format!("(not {})", a[0]),
            },
            Intrinsic::Compare(c) => {
                let o = match c {
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Eq => "==",
                    CmpOp::Ne => "!=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                format!("({} {o} {})", a[0], a[1])
            }
            Intrinsic::Is { negate } => format!("({} {} {})", a[0], if *negate { "is not" } else { "is" }, a[1]),
            Intrinsic::Contains { negate } => format!("({} {} {})", a[0], if *negate { "not in" } else { "in" }, a[1]),
            Intrinsic::Truth => return Some((format!("(True if {} else False)", a[0]), Some(a[0].clone()))),
            Intrinsic::GetAttr(n) => format!("{}.{n}", a[0]),
            Intrinsic::SplitGetItem(m) => {
                let (idx, rest) = a[1..].split_last().expect("split_getitem has an index");
                format!("{}.{m}({})[{idx}]", a[0], rest.join(", "))
            }
            Intrinsic::GetItem => format!("{}[{}]", a[0], a[1]),
            Intrinsic::BuildTuple => format!("({})", a.iter().map(|x| format!("{x},")).collect::<String>()),
            Intrinsic::BuildList => format!("[{}]", a.join(", ")),
            Intrinsic::BuildMap => {
                let kv: Vec<String> = a.chunks(2).map(|p| format!("{}: {}", p[0], p[1])).collect();
                format!("{{{}}}", kv.join(", "))
            }
            Intrinsic::BuildSet if a.is_empty() => "set()".into(),
            Intrinsic::BuildSet => format!("{{{}}}", a.join(", ")),
            Intrinsic::BuildSlice => format!("slice({})", a.join(", ")),
            Intrinsic::FormatValue { conv, has_spec } => {
                let c = match conv {
                    Conversion::None => "",
                    Conversion::Str => "!s",
                    Conversion::Repr => "!r",
                    Conversion::Ascii => "!a",
                };
                if a.iter().any(|x| x.contains('"')) {
                    // A nested f-string cannot reuse its quotes (3.11): the builtins instead.
                    let x = match conv {
                        Conversion::None => a[0].clone(),
                        Conversion::Str => format!("str({})", a[0]),
                        Conversion::Repr => format!("repr({})", a[0]),
                        Conversion::Ascii => format!("ascii({})", a[0]),
                    };
                    format!("format({x}, {})", a.get(1).map(String::as_str).unwrap_or("''"))
                } else {
                    let spec = if *has_spec { format!(":{{{}}}", a[1]) } else { String::new() };
                    format!("f\"{{{}{c}{spec}}}\"", a[0])
                }
            }
            Intrinsic::BuildString => format!("\"\".join(({}))", a.iter().map(|x| format!("{x},")).collect::<String>()),
            Intrinsic::IterSnapshot | Intrinsic::IterPrivate => a[0].clone(),
            Intrinsic::ListToTuple => format!("tuple({})", a[0]),
            _ => unreachable!(),
        };
        Some((text, None))
    }
}

/// `(x,)` → `x` (a one-item tuple display built for `list.extend`/`set.update`).
fn one_tuple(text: &str) -> Option<&str> {
    let inner = text.strip_prefix('(')?.strip_suffix(",)")?;
    // Only when the whole text is that one display (not `(a,)` inside something longer).
    let mut depth = 0i32;
    for ch in inner.chars() {
        match ch {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => return None,
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    (depth == 0).then_some(inner)
}

fn binop(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::And => "&",
        BinOp::FloorDiv => "//",
        BinOp::LShift => "<<",
        BinOp::MatMul => "@",
        BinOp::Mul => "*",
        BinOp::Mod => "%",
        BinOp::Or => "|",
        BinOp::Pow => "**",
        BinOp::RShift => ">>",
        BinOp::Sub => "-",
        BinOp::TrueDiv => "/",
        BinOp::Xor => "^",
    }
}
