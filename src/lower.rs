//! Bezoar → λO (PopPy §5.2 and §7).
//!
//! - Every call (and every desugared operation, global lookup, ...) becomes `xcall` threaded on the
//!   sequence variable S, so controllers can rebuild program order at run time.
//! - Mutable variables are promoted to SSA values (local variable promotion, §7) unless they must
//!   live in the memory M; then `load`/`store` on M thread them. M is threaded only when some
//!   variable lives in it, so promoted code carries no M traffic at all.
//! - `if` becomes `ite` over two closures, `for` becomes `fold` over a closure; both take and return
//!   the tuple (S, [M,] promoted variables assigned inside).
//! - Global lookups are single-assignment reads: an unordered call of the host's global loader, so
//!   loading `print` or `llm` never serialises. (Globals the function itself assigns are not
//!   `global` reads: the lifter makes them `load_global`/`setitem` operations on the globals
//!   dict, ordered like any other call.)
//!
//! Closure conversion: nested λO functions capture the outer variables they use, discovered on
//! demand while their body is lowered (`resolve`).
//!
//! Bezoar variables (`bezoar::VarName`) name their λO variables and memory slots by their text;
//! an unbound local of inlined code is reported under its Python name. Depends on `bezoar` (the
//! IR and its analyses) and `lambda_o` (terms, `PrimFactory`), not on the lifter or the host.
use crate::bezoar::passes::{assigned, deleted, promotable, DefinedSet};
use crate::bezoar::{self as bz, Expr, Intrinsic, StmtKind};
use crate::lambda_o::term::*;
use crate::lambda_o::PrimFactory;
use std::collections::{BTreeMap, BTreeSet, HashMap};

#[derive(Clone, Copy, Debug, Default)]
pub struct LowerOptions {
    /// Keep every mutable variable in the memory M (no promotion). For differential tests of the
    /// lowering itself: the result must behave exactly like the promoted version.
    pub force_memory: bool,
}

/// Captured variables are numbered from CAP_BASE while a function is being built, and renumbered to
/// `0..ncaptures` (with the other variables shifted after them) when it is finished.
const CAP_BASE: Var = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Loc {
    level: usize,
    var: Var,
}

struct Builder<P> {
    id: FuncId,
    name: String,
    var_names: Vec<String>,
    body: Vec<Stmt<P>>,
    nparams: u32,
    /// Variables of the parent builder captured by this one, in capture order.
    captures: Vec<Var>,
    capture_index: HashMap<Var, u32>,
}

/// Per-block lowering state: where S, M and each promoted variable currently live.
#[derive(Clone)]
struct State {
    s: Loc,
    m: Option<Loc>,
    env: BTreeMap<bz::VarName, Loc>,
    defined: DefinedSet,
    /// In functions with break/continue/early return: the exit status (a Python int: 0 normal,
    /// 1 break, 2 continue, 3 return) and the return value so far.
    exit: Option<Exit>,
}

/// A lowered branch closure and what it left unchanged.
struct Branch {
    f: Loc,
    defined: DefinedSet,
    same_s: bool,
    same_m: bool,
    same_exit: bool,
}

#[derive(Clone, Copy)]
struct Exit {
    status: Loc,
    retval: Loc,
}

const NORMAL: i64 = 0;
const BREAK: i64 = 1;
const CONTINUE: i64 = 2;
const RETURN: i64 = 3;

struct Lowerer<'a, F: PrimFactory> {
    factory: &'a mut F,
    src: &'a bz::Function,
    promoted: BTreeSet<bz::VarName>,
    use_memory: bool,
    funcs: Vec<Option<Func<F::Prim>>>,
    stack: Vec<Builder<F::Prim>>,
    regs: Vec<Option<Loc>>,
    /// Fresh display operands of operations, by the operation's result register
    /// (`passes::fresh_operands`).
    fresh: std::collections::HashMap<bz::Reg, u32>,
}

/// Lower a Bezoar function to a λO program whose entry takes [S, params...] and returns (S', value).
pub fn lower<F: PrimFactory>(
    src: &bz::Function,
    factory: &mut F,
    opts: &LowerOptions,
) -> Result<Program<F::Prim>, String> {
    let promoted = promotable(src, opts.force_memory);
    let use_memory = crate::bezoar::passes::variables(src).iter().any(|v| !promoted.contains(v));
    let mut lw = Lowerer {
        factory,
        src,
        promoted,
        use_memory,
        funcs: Vec::new(),
        stack: Vec::new(),
        regs: vec![None; src.nregs as usize],
        fresh: crate::bezoar::passes::fresh_operands(src),
    };
    lw.lower_entry()?;
    let funcs = lw.funcs.into_iter().map(|f| f.expect("every function finished")).collect();
    let mut prog = Program { name: src.qualname.clone(), funcs, entry: 0 };
    crate::lambda_o::prune::prune(&mut prog);
    Ok(prog)
}

impl<'a, F: PrimFactory> Lowerer<'a, F> {
    // ---- builders -------------------------------------------------------------------------

    fn push_builder(&mut self, name: String, params: &[&str]) -> Vec<Loc> {
        let id = self.funcs.len() as FuncId;
        self.funcs.push(None);
        self.stack.push(Builder {
            id,
            name,
            var_names: params.iter().map(|p| p.to_string()).collect(),
            body: Vec::new(),
            nparams: params.len() as u32,
            captures: Vec::new(),
            capture_index: HashMap::new(),
        });
        let level = self.level();
        (0..params.len() as Var).map(|var| Loc { level, var }).collect()
    }

    /// Finish the innermost builder with return variable `ret`; returns (its id, the parent
    /// variables it captures).
    fn pop_builder(&mut self, ret: Loc) -> (FuncId, Vec<Var>) {
        let ret = self.resolve(ret);
        let b = self.stack.pop().expect("builder stack");
        let ncap = b.captures.len() as u32;
        let renum = |v: Var| if v >= CAP_BASE { v - CAP_BASE } else { v + ncap };
        let mut var_names: Vec<String> = b.captures.iter().map(|_| String::new()).collect();
        var_names.extend(b.var_names.iter().cloned());
        // Name captured variables after the variable they capture in the parent.
        if let Some(parent) = self.stack.last() {
            for (i, pv) in b.captures.iter().enumerate() {
                var_names[i] = parent.var_names.get(*pv as usize).cloned().unwrap_or_else(|| {
                    // A capture of a capture: its name is in the parent's capture list.
                    format!("c{}", i)
                });
            }
        }
        let body = b
            .body
            .into_iter()
            .map(|s| Stmt { dst: renum(s.dst), op: s.op.map_vars(&renum), line: s.line })
            .collect();
        let func = Func {
            name: b.name,
            ncaptures: ncap,
            nparams: b.nparams,
            nvars: var_names.len() as u32,
            var_names,
            body,
            ret: renum(ret),
        };
        self.funcs[b.id as usize] = Some(func);
        (b.id, b.captures)
    }

    fn level(&self) -> usize {
        self.stack.len() - 1
    }

    /// The variable of the innermost builder that holds `loc`, capturing it through every
    /// enclosing function in between if needed.
    fn resolve(&mut self, loc: Loc) -> Var {
        self.resolve_at(self.level(), loc)
    }

    fn resolve_at(&mut self, level: usize, loc: Loc) -> Var {
        if loc.level == level {
            return loc.var;
        }
        assert!(loc.level < level, "a variable of an inner function escaped");
        let parent_var = self.resolve_at(level - 1, loc);
        let b = &mut self.stack[level];
        if let Some(&i) = b.capture_index.get(&parent_var) {
            return CAP_BASE + i;
        }
        let i = b.captures.len() as u32;
        b.captures.push(parent_var);
        b.capture_index.insert(parent_var, i);
        CAP_BASE + i
    }

    fn emit(&mut self, name: &str, op: Op<F::Prim>, line: u32) -> Loc {
        let level = self.level();
        let b = &mut self.stack[level];
        let var = b.var_names.len() as Var;
        b.var_names.push(name.to_string());
        b.body.push(Stmt { dst: var, op, line });
        Loc { level, var }
    }

    /// A variable of the current function whose defining statement comes later (`define`), so
    /// that a closure can capture itself (recursion for loops).
    fn reserve(&mut self, name: &str) -> Loc {
        let level = self.level();
        let b = &mut self.stack[level];
        b.var_names.push(name.to_string());
        Loc { level, var: (b.var_names.len() - 1) as Var }
    }

    fn define(&mut self, loc: Loc, op: Op<F::Prim>, line: u32) {
        assert_eq!(loc.level, self.level());
        self.stack[loc.level].body.push(Stmt { dst: loc.var, op, line });
    }

    fn prim(&mut self, name: &str, p: F::Prim, line: u32) -> Loc {
        self.emit(name, Op::Prim(p), line)
    }

    fn tuple(&mut self, name: &str, items: &[Loc], line: u32) -> Loc {
        let vars = items.iter().map(|l| self.resolve(*l)).collect();
        self.emit(name, Op::Tuple(vars), line)
    }

    fn proj(&mut self, name: &str, t: Loc, index: u32, line: u32) -> Loc {
        let tuple = self.resolve(t);
        self.emit(name, Op::Proj { index, tuple }, line)
    }

    /// `t := xcall S f(args)`, advancing S; returns the call's result.
    fn xcall(&mut self, st: &mut State, f: Loc, args: &[Loc], kwnames: &[String], name: &str, line: u32) -> Loc {
        let seq = self.resolve(st.s);
        let func = self.resolve(f);
        let args = args.iter().map(|a| self.resolve(*a)).collect();
        let t = self.emit("t", Op::XCall { seq, func, args, kwnames: kwnames.to_vec() }, line);
        st.s = self.proj("S", t, 0, line);
        self.proj(name, t, 1, line)
    }

    /// A value that raises UnboundLocalError for `name` wherever it is used. (The locals of
    /// inlined comprehensions and inner functions, `$cK.x`, are named `x` in the message.)
    fn unbound(&mut self, name: &bz::VarName, line: u32) -> Loc {
        let m = self.emit("M", Op::MemEmpty, line);
        let mem = self.resolve(m);
        let shown = match name.kind() {
            bz::VarKind::Inlined { name, .. } => name.as_str(),
            bz::VarKind::InlinedRet(_) => bz::RETURN_LOCAL,
            _ => name.as_str(),
        };
        self.emit(name.as_str(), Op::MemLoad { mem, name: shown.to_string() }, line)
    }

    fn reg(&self, r: bz::Reg) -> Result<Loc, String> {
        self.regs[r as usize].ok_or_else(|| format!("register r{r} used before it is bound"))
    }

    // ---- functions and blocks ---------------------------------------------------------------

    fn lower_entry(&mut self) -> Result<(), String> {
        let src = self.src;
        let mut params: Vec<&str> = vec!["S"];
        params.extend(src.params.iter().map(|s| s.as_str()));
        let locs = self.push_builder(src.name.clone(), &params);
        let mut st = State { s: locs[0], m: None, env: BTreeMap::new(), defined: DefinedSet::default(), exit: None };
        if self.use_memory {
            st.m = Some(self.emit("M", Op::MemEmpty, src.firstlineno));
        }
        for (p, loc) in src.params.iter().zip(&locs[1..]) {
            st.defined.insert(p);
            self.store(&mut st, p, *loc, src.firstlineno);
        }
        let value = if needs_exits(&src.body) {
            // Exits are threaded as a status; the function's value is chosen at the end.
            let status = self.int(NORMAL, 0);
            let none = self.factory.constant(&bz::Const::None);
            let retval = self.prim("None", none, 0);
            st.exit = Some(Exit { status, retval });
            self.lower_block(&mut st, &src.body)?;
            let exit = st.exit.expect("exit threaded");
            let f = self.helper("select_return", 0);
            self.xcall(&mut st, f, &[exit.status, exit.retval], &[], "value", 0)
        } else {
            let (body, ret) = match src.body.split_last() {
                Some((last, init)) if matches!(last.kind, StmtKind::Return(_)) => (init, Some(last)),
                _ => (&src.body[..], None),
            };
            self.lower_block(&mut st, body)?;
            match ret {
                Some(bz::Stmt { kind: StmtKind::Return(r), .. }) => self.reg(*r)?,
                _ => {
                    let none = self.factory.constant(&bz::Const::None);
                    self.prim("None", none, 0)
                }
            }
        };
        let out = self.tuple("out", &[st.s, value], 0);
        self.pop_builder(out);
        Ok(())
    }

    fn int(&mut self, v: i64, line: u32) -> Loc {
        let p = self.factory.constant(&bz::Const::Int(v));
        self.prim("status", p, line)
    }

    fn helper(&mut self, name: &str, line: u32) -> Loc {
        let p = self.factory.helper(name);
        self.prim(name, p, line)
    }

    /// `st.exit.status := helper(st.exit.status)`.
    fn map_status(&mut self, st: &mut State, helper: &str, line: u32) {
        let exit = st.exit.expect("exit threaded");
        let f = self.helper(helper, line);
        let status = self.xcall(st, f, &[exit.status], &[], "status", line);
        st.exit = Some(Exit { status, ..exit });
    }

    fn store(&mut self, st: &mut State, name: &bz::VarName, value: Loc, line: u32) {
        if self.promoted.contains(name) {
            st.env.insert(name.clone(), value);
        } else {
            let m = st.m.expect("memory threaded when a variable lives in it");
            let mem = self.resolve(m);
            let value = self.resolve(value);
            st.m = Some(self.emit("M", Op::MemStore { mem, name: name.as_str().to_string(), value }, line));
        }
    }

    fn load(&mut self, st: &mut State, name: &bz::VarName, line: u32) -> Loc {
        let value = if self.promoted.contains(name) {
            match st.env.get(name) {
                Some(l) => *l,
                None => self.unbound(name, line),
            }
        } else {
            let mem = self.resolve(st.m.expect("memory threaded"));
            self.emit(name.as_str(), Op::MemLoad { mem, name: name.as_str().to_string() }, line)
        };
        if st.defined.contains(name) {
            value
        } else {
            // May be unbound here: make the error (if any) happen at this point in program order.
            let check = self.factory.bound_check();
            let f = self.prim("bound", check, line);
            self.xcall(st, f, &[value], &[], name.as_str(), line)
        }
    }

    /// The loop-carried / branch-carried tuple layout: S, [M,] `vars`, [status, retval].
    fn carried(&mut self, st: &State, vars: &[bz::VarName], line: u32) -> Vec<Loc> {
        let mut out = vec![st.s];
        out.extend(st.m);
        for v in vars {
            let l = match st.env.get(v) {
                Some(l) => *l,
                None => self.unbound(v, line),
            };
            out.push(l);
        }
        if let Some(e) = st.exit {
            out.push(e.status);
            out.push(e.retval);
        }
        out
    }

    /// Rebind S, M and `vars` from the components of `t` (layout of `carried`).
    fn uncarry(&mut self, st: &mut State, vars: &[bz::VarName], t: Loc, line: u32) {
        let mut i = 0;
        st.s = self.proj("S", t, i, line);
        i += 1;
        if st.m.is_some() {
            st.m = Some(self.proj("M", t, i, line));
            i += 1;
        }
        for v in vars {
            let l = self.proj(v.as_str(), t, i, line);
            st.env.insert(v.clone(), l);
            i += 1;
        }
        if st.exit.is_some() {
            let status = self.proj("status", t, i, line);
            let retval = self.proj("retval", t, i + 1, line);
            st.exit = Some(Exit { status, retval });
        }
    }

    fn lower_block(&mut self, st: &mut State, block: &[bz::Stmt]) -> Result<(), String> {
        for (i, s) in block.iter().enumerate() {
            self.lower_stmt(st, s)?;
            let rest = &block[i + 1..];
            if st.exit.is_some() && !rest.is_empty() && may_exit(s) {
                if matches!(s.kind, StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)) {
                    return Ok(()); // the rest of the block is unreachable
                }
                // The rest runs only if nothing above left the block: ite(status, skip, rest).
                let vars: Vec<bz::VarName> =
                    assigned(rest).into_iter().filter(|v| self.promoted.contains(v)).collect();
                let args = self.carried(st, &vars, s.line);
                let skip = self.lower_branch(st, "skip", &vars, &[], s.line)?;
                let rest = self.lower_branch(st, "rest", &vars, rest, s.line)?;
                let status = st.exit.unwrap().status;
                self.ite_branches(st, status, &skip, &rest, &args, &vars, s.line);
                return Ok(());
            }
        }
        Ok(())
    }

    /// `res := ite(cond, then_f, else_f; args)` and rebind the carried state from `res`.
    #[allow(clippy::too_many_arguments)]
    fn ite(&mut self, st: &mut State, cond: Loc, then_f: Loc, else_f: Loc, args: &[Loc], vars: &[bz::VarName], line: u32) {
        let cond = self.resolve(cond);
        let args = args.iter().map(|l| self.resolve(*l)).collect();
        let then_f = self.resolve(then_f);
        let else_f = self.resolve(else_f);
        let res = self.emit("ite", Op::Ite { cond, then_f, else_f, args }, line);
        self.uncarry(st, vars, res, line);
    }

    fn lower_stmt(&mut self, st: &mut State, s: &bz::Stmt) -> Result<(), String> {
        let line = s.line;
        match &s.kind {
            StmtKind::Let(r, e) => {
                let name = format!("r{r}");
                let fresh = self.fresh.get(r).copied().unwrap_or(0);
                let loc = self.lower_expr(st, e, &name, line, fresh)?;
                self.regs[*r as usize] = Some(loc);
            }
            StmtKind::Store(x, r) => {
                let v = self.reg(*r)?;
                self.store(st, x, v, line);
                st.defined.insert(x);
            }
            StmtKind::Delete(x) => {
                // `del x` of an unbound x raises where CPython raises; afterwards x holds a value
                // that raises UnboundLocalError, and loads are bound-checked again.
                self.load(st, x, line);
                let u = self.unbound(x, line);
                self.store(st, x, u, line);
                st.defined.remove(x);
            }
            StmtKind::Unbind(x) => {
                let u = self.unbound(x, line);
                self.store(st, x, u, line);
                st.defined.remove(x);
            }
            StmtKind::If { cond, then_body, else_body } => {
                let cond = self.reg(*cond)?;
                let mut vars: BTreeSet<bz::VarName> = assigned(then_body);
                vars.extend(assigned(else_body));
                let vars: Vec<bz::VarName> = vars.into_iter().filter(|v| self.promoted.contains(v)).collect();
                let args = self.carried(st, &vars, line);
                let then_b = self.lower_branch(st, "then", &vars, then_body, line)?;
                let else_b = self.lower_branch(st, "else", &vars, else_body, line)?;
                self.ite_branches(st, cond, &then_b, &else_b, &args, &vars, line);
                st.defined = then_b.defined.meet(&else_b.defined);
            }
            StmtKind::For { iter, item, body } => {
                // A variable the body deletes may be unbound in any iteration and after the loop.
                for x in deleted(body) {
                    st.defined.remove(&x);
                }
                let seq = self.reg(*iter)?;
                let vars: Vec<bz::VarName> =
                    assigned(body).into_iter().filter(|v| self.promoted.contains(v)).collect();
                let carried = self.carried(st, &vars, line);
                let acc0 = self.tuple("acc", &carried, line);
                // Body: fun body(e, acc) -> acc'
                let locs = self.push_builder("body".into(), &["e", "acc"]);
                let mut inner = st.clone();
                self.uncarry(&mut inner, &vars, locs[1], line);
                self.regs[*item as usize] = Some(locs[0]);
                if leaves_loop(body) {
                    // Skip the iteration if an earlier one broke or returned (status != 0).
                    let args = self.carried(&inner, &vars, line);
                    let skip = self.lower_branch(&inner, "skip", &vars, &[], line)?;
                    let run = self.lower_branch(&inner, "iter", &vars, body, line)?;
                    let status = inner.exit.expect("exit threaded").status;
                    self.ite_branches(&mut inner, status, &skip, &run, &args, &vars, line);
                    if contains_jump(body, true) {
                        self.map_status(&mut inner, "loop_next", line); // continue → 0
                    }
                } else {
                    self.lower_block(&mut inner, body)?;
                }
                let out_items = self.carried(&inner, &vars, line);
                let out = self.tuple("acc", &out_items, line);
                let (fid, captures) = self.pop_builder(out);
                let bf = self.emit("body", Op::Fun { func: fid, captures }, line);
                let seq = self.resolve(seq);
                let body_v = self.resolve(bf);
                let acc = self.resolve(acc0);
                let res = self.emit("fold", Op::Fold { seq, body: body_v, acc }, line);
                self.uncarry(st, &vars, res, line);
                if contains_jump(body, false) {
                    self.map_status(st, "loop_exit", line); // break → 0; return stays
                }
                // The loop may run zero times: nothing it assigns is definitely assigned after it.
            }
            StmtKind::Loop { body } => self.lower_loop(st, body, line)?,
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => {
                let Some(exit) = st.exit else {
                    return Err(format!("break/continue/return outside a lowered loop at line {line}"));
                };
                let (code, retval) = match &s.kind {
                    StmtKind::Break => (BREAK, exit.retval),
                    StmtKind::Continue => (CONTINUE, exit.retval),
                    StmtKind::Return(r) => (RETURN, self.reg(*r)?),
                    _ => unreachable!(),
                };
                let status = self.int(code, line);
                st.exit = Some(Exit { status, retval });
            }
        }
        Ok(())
    }

    /// `loop: body` as a recursive closure over the carried state:
    /// `fun loop[loop, ..](state) = body; ite(again(status), loop(state with status 0), stop(state))`.
    fn lower_loop(&mut self, st: &mut State, body: &[bz::Stmt], line: u32) -> Result<(), String> {
        for x in deleted(body) {
            st.defined.remove(&x);
        }
        let vars: Vec<bz::VarName> = assigned(body).into_iter().filter(|v| self.promoted.contains(v)).collect();
        let args = self.carried(st, &vars, line);
        let loop_var = self.reserve("loop");
        // The loop function: parameters in carried layout.
        let (loop_f_body, captures) = {
            let mut inner = st.clone();
            let mut params: Vec<&str> = vec!["S"];
            if st.m.is_some() {
                params.push("M");
            }
            params.extend(vars.iter().map(|v| v.as_str()));
            params.extend(["status", "retval"]);
            let locs = self.push_builder("loop".into(), &params);
            let t = self.tuple("state", &locs, line);
            self.uncarry(&mut inner, &vars, t, line);
            self.lower_block(&mut inner, body)?;
            let f = self.helper("loop_again", line);
            let status = inner.exit.expect("exit threaded").status;
            let again = self.xcall(&mut inner, f, &[status], &[], "again", line);
            let state = self.carried(&inner, &vars, line);
            // again(state): loop(state with status 0)
            let again_f = {
                let mut a = inner.clone();
                let locs = self.push_builder("again".into(), &params);
                let t = self.tuple("state", &locs, line);
                self.uncarry(&mut a, &vars, t, line);
                let zero = self.int(NORMAL, line);
                a.exit = Some(Exit { status: zero, ..a.exit.unwrap() });
                let call_args: Vec<Var> = self.carried(&a, &vars, line).iter().map(|l| self.resolve(*l)).collect();
                let func = self.resolve(loop_var);
                let r = self.emit("rec", Op::Call { func, args: call_args }, line);
                let (fid, caps) = self.pop_builder(r);
                self.emit("again", Op::Fun { func: fid, captures: caps }, line)
            };
            // stop(state): leave the loop (break → status 0; return stays)
            let stop_f = {
                let mut b = inner.clone();
                let locs = self.push_builder("stop".into(), &params);
                let t = self.tuple("state", &locs, line);
                self.uncarry(&mut b, &vars, t, line);
                self.map_status(&mut b, "loop_exit", line);
                let out = self.carried(&b, &vars, line);
                let out = self.tuple("out", &out, line);
                let (fid, caps) = self.pop_builder(out);
                self.emit("stop", Op::Fun { func: fid, captures: caps }, line)
            };
            let cond = self.resolve(again);
            let then_f = self.resolve(again_f);
            let else_f = self.resolve(stop_f);
            let state: Vec<Var> = state.iter().map(|l| self.resolve(*l)).collect();
            let res = self.emit("ite", Op::Ite { cond, then_f, else_f, args: state }, line);
            self.pop_builder(res)
        };
        self.define(loop_var, Op::Fun { func: loop_f_body, captures }, line);
        let func = self.resolve(loop_var);
        let args: Vec<Var> = args.iter().map(|l| self.resolve(*l)).collect();
        let res = self.emit("loop", Op::Call { func, args }, line);
        self.uncarry(st, &vars, res, line);
        Ok(())
    }

    /// A branch closure `fun then(S, [M,] vars..., [status, retval]) -> (same layout)`.
    fn lower_branch(
        &mut self,
        outer: &State,
        name: &str,
        vars: &[bz::VarName],
        block: &[bz::Stmt],
        line: u32,
    ) -> Result<Branch, String> {
        let mut params: Vec<&str> = vec!["S"];
        if outer.m.is_some() {
            params.push("M");
        }
        params.extend(vars.iter().map(|v| v.as_str()));
        if outer.exit.is_some() {
            params.extend(["status", "retval"]);
        }
        let locs = self.push_builder(name.to_string(), &params);
        let mut st = outer.clone();
        st.s = locs[0];
        let mut i = 1;
        if outer.m.is_some() {
            st.m = Some(locs[1]);
            i = 2;
        }
        for (v, l) in vars.iter().zip(&locs[i..]) {
            st.env.insert(v.clone(), *l);
        }
        if outer.exit.is_some() {
            let n = locs.len();
            st.exit = Some(Exit { status: locs[n - 2], retval: locs[n - 1] });
        }
        let entry = st.clone();
        self.lower_block(&mut st, block)?;
        let out_items = self.carried(&st, vars, line);
        let out = self.tuple("out", &out_items, line);
        let (fid, captures) = self.pop_builder(out);
        let f = self.emit(name, Op::Fun { func: fid, captures }, line);
        Ok(Branch {
            f,
            defined: st.defined,
            same_s: st.s == entry.s,
            same_m: st.m == entry.m,
            same_exit: st.exit.map(|e| (e.status, e.retval)) == entry.exit.map(|e| (e.status, e.retval)),
        })
    }

    /// `ite(cond, a, b; args)`, then keep S, M and the exit status of `outer` where neither branch
    /// changed them: those values do not depend on the branch taken, so nothing after the `if`
    /// has to wait for its condition to get them.
    #[allow(clippy::too_many_arguments)]
    fn ite_branches(&mut self, st: &mut State, cond: Loc, a: &Branch, b: &Branch, args: &[Loc], vars: &[bz::VarName], line: u32) {
        let outer = st.clone();
        self.ite(st, cond, a.f, b.f, args, vars, line);
        if a.same_s && b.same_s {
            st.s = outer.s;
        }
        if a.same_m && b.same_m {
            st.m = outer.m;
        }
        if a.same_exit && b.same_exit {
            st.exit = outer.exit;
        }
    }

    fn lower_expr(&mut self, st: &mut State, e: &Expr, name: &str, line: u32, fresh: u32) -> Result<Loc, String> {
        Ok(match e {
            Expr::Const(k) => {
                let c = self.src.consts.get(*k as usize).ok_or("constant index out of range")?;
                let p = self.factory.constant(c);
                self.prim(name, p, line)
            }
            Expr::Load(x) => self.load(st, x, line),
            Expr::Global(g) => {
                let loader = self.factory.global_loader();
                let f = self.prim("global", loader, line);
                let n = self.factory.string(g);
                let n = self.prim("name", n, line);
                self.xcall(st, f, &[n], &[], g, line)
            }
            Expr::Call { func, args, kwnames } => {
                let f = self.reg(*func)?;
                let args = args.iter().map(|a| self.reg(*a)).collect::<Result<Vec<_>, _>>()?;
                self.xcall(st, f, &args, kwnames, name, line)
            }
            Expr::Op(op, args) => {
                let mut argl = args.iter().map(|a| self.reg(*a)).collect::<Result<Vec<_>, _>>()?;
                for c in op.static_operands() {
                    let p = self.factory.constant(&c);
                    argl.push(self.prim("k", p, line));
                }
                let p = if fresh != 0 { self.factory.intrinsic_fresh(op, fresh) } else { self.factory.intrinsic(op) };
                let f = self.prim(&intrinsic_var_name(op), p, line);
                self.xcall(st, f, &argl, &[], name, line)
            }
        })
    }
}

/// Whether a function needs exit-status threading: any loop jump, `while`, or a return that is not
/// the function's last statement.
fn needs_exits(body: &[bz::Stmt]) -> bool {
    fn any(b: &[bz::Stmt], top: bool) -> bool {
        b.iter().enumerate().any(|(i, s)| match &s.kind {
            StmtKind::Break | StmtKind::Continue | StmtKind::Loop { .. } => true,
            StmtKind::Return(_) => !(top && i + 1 == b.len()),
            StmtKind::If { then_body, else_body, .. } => any(then_body, false) || any(else_body, false),
            StmtKind::For { body, .. } => any(body, false),
            _ => false,
        })
    }
    any(body, true)
}

/// A jump (break/continue) belonging to this loop level, or a return at any depth; with
/// `continue_only`, only `continue`s of this level.
fn contains_jump(b: &[bz::Stmt], continue_only: bool) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Continue => true,
        StmtKind::Break => !continue_only,
        StmtKind::If { then_body, else_body, .. } => {
            contains_jump(then_body, continue_only) || contains_jump(else_body, continue_only)
        }
        _ => false,
    })
}

fn contains_return(b: &[bz::Stmt]) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { then_body, else_body, .. } => contains_return(then_body) || contains_return(else_body),
        StmtKind::For { body, .. } | StmtKind::Loop { body } => contains_return(body),
        _ => false,
    })
}

/// Whether a loop body can end an iteration early or stop the loop.
fn leaves_loop(body: &[bz::Stmt]) -> bool {
    contains_jump(body, false) || contains_return(body)
}

/// Whether the status may be non-zero after `s` (so what follows it must be guarded).
fn may_exit(s: &bz::Stmt) -> bool {
    match &s.kind {
        StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => true,
        StmtKind::If { then_body, else_body, .. } => {
            then_body.iter().any(may_exit) || else_body.iter().any(may_exit)
        }
        StmtKind::For { body, .. } | StmtKind::Loop { body } => contains_return(body),
        _ => false,
    }
}

fn intrinsic_var_name(i: &Intrinsic) -> String {
    match i {
        Intrinsic::Binary { op, inplace } => format!("{}{:?}", if *inplace { "i" } else { "" }, op).to_lowercase(),
        Intrinsic::GetAttr(_) => "getattr".into(),
        other => format!("{other:?}").to_lowercase().chars().take_while(|c| c.is_alphanumeric()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bezoar::{BinOp, CmpOp, Const, Function, Stmt as BStmt};
    use crate::lambda_o::eval::run;
    use crate::lambda_o::testhost::{show, TPrim, TestHost};
    use crate::stats::RunStats;
    use std::rc::Rc;

    /// A tiny Bezoar builder: registers are allocated in order; constants are interned.
    #[derive(Default)]
    struct B {
        consts: Vec<Const>,
        nregs: u32,
    }

    impl B {
        fn reg(&mut self) -> u32 {
            self.nregs += 1;
            self.nregs - 1
        }
        fn let_(&mut self, e: Expr) -> (u32, BStmt) {
            let r = self.reg();
            (r, BStmt { kind: StmtKind::Let(r, e), line: 1 })
        }
        fn konst(&mut self, c: Const) -> (u32, BStmt) {
            self.consts.push(c);
            let k = self.consts.len() as u32 - 1;
            self.let_(Expr::Const(k))
        }
        fn op(&mut self, i: Intrinsic, args: Vec<u32>) -> (u32, BStmt) {
            self.let_(Expr::Op(i, args))
        }
        /// `name(args)` as statements appended to `out`; returns the result register.
        fn call(&mut self, out: &mut Vec<BStmt>, name: &str, args: Vec<u32>) -> u32 {
            let (f, s) = self.let_(Expr::Global(name.into()));
            out.push(s);
            let (r, s) = self.let_(Expr::Call { func: f, args, kwnames: vec![] });
            out.push(s);
            r
        }
        fn load(&mut self, out: &mut Vec<BStmt>, x: &str) -> u32 {
            let (r, s) = self.let_(Expr::Load(x.into()));
            out.push(s);
            r
        }
        fn int(&mut self, out: &mut Vec<BStmt>, v: i64) -> u32 {
            let (r, s) = self.konst(Const::Int(v));
            out.push(s);
            r
        }
        fn cmp(&mut self, out: &mut Vec<BStmt>, op: CmpOp, a: u32, b: u32) -> u32 {
            let (c, s) = self.op(Intrinsic::Compare(op), vec![a, b]);
            out.push(s);
            let (t, s) = self.op(Intrinsic::Truth, vec![c]);
            out.push(s);
            t
        }
        fn func(self, params: &[&str], body: Vec<BStmt>) -> Function {
            Function {
                name: "f".into(),
                qualname: "f".into(),
                filename: "t.py".into(),
                firstlineno: 1,
                params: params.iter().map(|&p| p.into()).collect(),
                consts: self.consts,
                body,
                nregs: self.nregs,
            }
        }
    }

    fn st(kind: StmtKind) -> BStmt {
        BStmt { kind, line: 1 }
    }

    fn run_both(f: &Function, args: Vec<TPrim>, latency: &[(&str, u64)]) -> Vec<(Result<String, String>, Vec<String>, u64)> {
        [false, true]
            .iter()
            .map(|&force_memory| {
                let mut host = TestHost::new();
                host.latency = latency.iter().map(|(k, v)| (k.to_string(), *v)).collect();
                let prog = lower(f, &mut host, &LowerOptions { force_memory }).unwrap();
                let text = crate::lambda_o::text::print(&prog);
                crate::lambda_o::text::parse::<TPrim>(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                let r = run(&mut host, Rc::new(prog), args.clone(), &mut RunStats::default()).map(|p| show(&p));
                (r, host.output.clone(), host.now)
            })
            .collect()
    }

    /// for x in xs: print(x); e = llm(x); print(e)  — excursions overlap.
    #[test]
    fn for_loop_prints_in_order_and_overlaps_unordered_calls() {
        let mut b = B::default();
        let mut body0 = vec![];
        let xs = b.load(&mut body0, "xs");
        let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
        body0.push(s);
        let item = b.reg();
        let mut lb = vec![st(StmtKind::Store("x".into(), item))];
        let x = b.load(&mut lb, "x");
        b.call(&mut lb, "print", vec![x]);
        let x = b.load(&mut lb, "x");
        let e = b.call(&mut lb, "llm", vec![x]);
        lb.push(st(StmtKind::Store("e".into(), e)));
        let e = b.load(&mut lb, "e");
        b.call(&mut lb, "print", vec![e]);
        body0.push(st(StmtKind::For { iter: it, item, body: lb }));
        let e = b.load(&mut body0, "e");
        body0.push(st(StmtKind::Return(e)));
        let f = b.func(&["xs"], body0);
        let xs = TPrim::Tuple(vec![TPrim::Str("Ho".into()), TPrim::Str("Ja".into()), TPrim::Str("Su".into())]);
        for (r, out, now) in run_both(&f, vec![xs], &[("llm", 10)]) {
            assert_eq!(r, Ok("<Su>".into()));
            assert_eq!(out, vec!["Ho", "<Ho>", "Ja", "<Ja>", "Su", "<Su>"]);
            assert_eq!(now, 10, "the three llm calls overlap");
        }
        // Zero iterations: `e` is unbound after the loop → UnboundLocalError at the return.
        for (r, out, _) in run_both(&f, vec![TPrim::Tuple(vec![])], &[]) {
            assert!(r.unwrap_err().starts_with("UnboundLocalError"));
            assert!(out.is_empty());
        }
    }

    /// i = 0; while i < n: print(i); i = i + 1   (as Loop { if not i < n: break; ... }); return i
    #[test]
    fn while_loop_runs_until_its_condition_fails() {
        let mut b = B::default();
        let mut body = vec![];
        let zero = b.int(&mut body, 0);
        body.push(st(StmtKind::Store("i".into(), zero)));
        let mut lb = vec![];
        let i = b.load(&mut lb, "i");
        let n = b.load(&mut lb, "n");
        let c = b.cmp(&mut lb, CmpOp::Lt, i, n);
        lb.push(st(StmtKind::If { cond: c, then_body: vec![], else_body: vec![st(StmtKind::Break)] }));
        let i = b.load(&mut lb, "i");
        b.call(&mut lb, "print", vec![i]);
        let i = b.load(&mut lb, "i");
        let one = b.int(&mut lb, 1);
        let (i2, s) = b.op(Intrinsic::Binary { op: BinOp::Add, inplace: false }, vec![i, one]);
        lb.push(s);
        lb.push(st(StmtKind::Store("i".into(), i2)));
        body.push(st(StmtKind::Loop { body: lb }));
        let i = b.load(&mut body, "i");
        body.push(st(StmtKind::Return(i)));
        let f = b.func(&["n"], body);
        for (r, out, _) in run_both(&f, vec![TPrim::Int(3)], &[]) {
            assert_eq!(r, Ok("3".into()));
            assert_eq!(out, vec!["0", "1", "2"]);
        }
        for (r, out, _) in run_both(&f, vec![TPrim::Int(0)], &[]) {
            assert_eq!(r, Ok("0".into()));
            assert!(out.is_empty());
        }
    }

    /// for x in xs: if x == 2: continue; if x == skip: break; print(llm(x)) ; if x == ret: return x
    /// then print("end"); return 0
    #[test]
    fn break_continue_and_return_inside_for() {
        let build = |stop: i64, ret: i64| {
            let mut b = B::default();
            let mut body = vec![];
            let xs = b.load(&mut body, "xs");
            let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
            body.push(s);
            let item = b.reg();
            let mut lb = vec![st(StmtKind::Store("x".into(), item))];
            let x = b.load(&mut lb, "x");
            let two = b.int(&mut lb, 2);
            let c = b.cmp(&mut lb, CmpOp::Eq, x, two);
            lb.push(st(StmtKind::If { cond: c, then_body: vec![st(StmtKind::Continue)], else_body: vec![] }));
            let x = b.load(&mut lb, "x");
            let k = b.int(&mut lb, stop);
            let c = b.cmp(&mut lb, CmpOp::Eq, x, k);
            lb.push(st(StmtKind::If { cond: c, then_body: vec![st(StmtKind::Break)], else_body: vec![] }));
            let x = b.load(&mut lb, "x");
            let y = b.call(&mut lb, "llm", vec![x]);
            b.call(&mut lb, "print", vec![y]);
            let x = b.load(&mut lb, "x");
            let k = b.int(&mut lb, ret);
            let c = b.cmp(&mut lb, CmpOp::Eq, x, k);
            let mut then = vec![];
            let x = b.load(&mut then, "x");
            then.push(st(StmtKind::Return(x)));
            lb.push(st(StmtKind::If { cond: c, then_body: then, else_body: vec![] }));
            body.push(st(StmtKind::For { iter: it, item, body: lb }));
            let (s_, s) = b.konst(Const::Str("end".into()));
            body.push(s);
            b.call(&mut body, "print", vec![s_]);
            let z = b.int(&mut body, 0);
            body.push(st(StmtKind::Return(z)));
            b.func(&["xs"], body)
        };
        let xs = TPrim::Tuple((1..=6).map(TPrim::Int).collect());
        // break at 4: prints <1>, <3>, end
        for (r, out, now) in run_both(&build(4, 99), vec![xs.clone()], &[("llm", 10)]) {
            assert_eq!(r, Ok("0".into()));
            assert_eq!(out, vec!["<1>", "<3>", "end"]);
            assert_eq!(now, 10, "llm(1) and llm(3) overlap: the exit conditions do not wait for them");
        }
        // return at 3: prints <1>, <3>; nothing after
        for (r, out, _) in run_both(&build(99, 3), vec![xs.clone()], &[("llm", 10)]) {
            assert_eq!(r, Ok("3".into()));
            assert_eq!(out, vec!["<1>", "<3>"]);
        }
        // neither: all but 2
        for (r, out, _) in run_both(&build(99, 99), vec![xs], &[]) {
            assert_eq!(r, Ok("0".into()));
            assert_eq!(out, vec!["<1>", "<3>", "<4>", "<5>", "<6>", "end"]);
        }
    }

    /// x = v; del x; [x = 2 if again]; return x — after `del` the local is unbound (the error is
    /// CPython's message), `del` of an unbound local raises, and a loop that deletes makes the
    /// variable possibly unbound in later iterations.
    #[test]
    fn del_unbinds_and_unbind_resets_without_checking() {
        let build = |again: bool, del_twice: bool| {
            let mut b = B::default();
            let mut body = vec![];
            let one = b.int(&mut body, 1);
            body.push(st(StmtKind::Store("x".into(), one)));
            body.push(st(StmtKind::Delete("x".into())));
            if del_twice {
                body.push(st(StmtKind::Delete("x".into())));
            }
            if again {
                body.push(st(StmtKind::Unbind("x".into())));
                let two = b.int(&mut body, 2);
                body.push(st(StmtKind::Store("x".into(), two)));
            }
            let x = b.load(&mut body, "x");
            body.push(st(StmtKind::Return(x)));
            b.func(&[], body)
        };
        for (r, _, _) in run_both(&build(false, false), vec![], &[]) {
            assert_eq!(
                r.unwrap_err(),
                "UnboundLocalError: cannot access local variable 'x' where it is not associated with a value"
            );
        }
        for (r, _, _) in run_both(&build(true, false), vec![], &[]) {
            assert_eq!(r, Ok("2".into()));
        }
        for (r, _, _) in run_both(&build(true, true), vec![], &[]) {
            assert!(r.unwrap_err().starts_with("UnboundLocalError"));
        }
        // for i in xs: print(y); del y  (y = 0 before): the second iteration's load raises.
        let mut b = B::default();
        let mut body = vec![];
        let zero = b.int(&mut body, 0);
        body.push(st(StmtKind::Store("y".into(), zero)));
        let xs = b.load(&mut body, "xs");
        let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
        body.push(s);
        let item = b.reg();
        let mut lb = vec![];
        let y = b.load(&mut lb, "y");
        b.call(&mut lb, "print", vec![y]);
        lb.push(st(StmtKind::Delete("y".into())));
        body.push(st(StmtKind::For { iter: it, item, body: lb }));
        let (none, s) = b.konst(Const::None);
        body.push(s);
        body.push(st(StmtKind::Return(none)));
        let f = b.func(&["xs"], body);
        for (r, out, _) in run_both(&f, vec![TPrim::Tuple(vec![TPrim::Int(1), TPrim::Int(2)])], &[]) {
            assert!(r.unwrap_err().starts_with("UnboundLocalError"));
            assert_eq!(out, vec!["0"]);
        }
    }

    /// The unbound locals of inlined code (`$c3.y`) are reported under their Python name (when
    /// promoted; with every variable forced into M the evaluator names the memory key).
    #[test]
    fn unbound_inlined_locals_use_their_python_name() {
        let mut b = B::default();
        let mut body = vec![];
        let y = b.load(&mut body, "$c3.y");
        body.push(st(StmtKind::Return(y)));
        let f = b.func(&[], body);
        let runs = run_both(&f, vec![], &[]);
        assert!(runs[0].0.clone().unwrap_err().contains("local variable 'y' where"), "{:?}", runs[0].0);
        assert!(runs[1].0.clone().unwrap_err().starts_with("UnboundLocalError"));
    }

    /// plan = 0; for x in xs: c = r_read(x); if llm(x) == "<2>": plan = c  — the branch makes no
    /// call, so S bypasses the `if` and the next iteration's read does not wait for this llm.
    #[test]
    fn call_free_branches_do_not_hold_back_the_order() {
        let mut b = B::default();
        let mut body = vec![];
        let zero = b.int(&mut body, 0);
        body.push(st(StmtKind::Store("plan".into(), zero)));
        let xs = b.load(&mut body, "xs");
        let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
        body.push(s);
        let item = b.reg();
        let mut lb = vec![st(StmtKind::Store("x".into(), item))];
        let x = b.load(&mut lb, "x");
        let c = b.call(&mut lb, "r_read", vec![x]);
        lb.push(st(StmtKind::Store("c".into(), c)));
        let x = b.load(&mut lb, "x");
        let y = b.call(&mut lb, "llm", vec![x]);
        let (k, s) = b.konst(Const::Str("<2>".into()));
        lb.push(s);
        let t = b.cmp(&mut lb, CmpOp::Eq, y, k);
        let mut then = vec![];
        let c = b.load(&mut then, "c");
        then.push(st(StmtKind::Store("plan".into(), c)));
        lb.push(st(StmtKind::If { cond: t, then_body: then, else_body: vec![] }));
        body.push(st(StmtKind::For { iter: it, item, body: lb }));
        let p = b.load(&mut body, "plan");
        body.push(st(StmtKind::Return(p)));
        let f = b.func(&["xs"], body);
        let xs = TPrim::Tuple((1..=4).map(TPrim::Int).collect());
        let runs = run_both(&f, vec![xs], &[("llm", 10), ("r_read", 1)]);
        for (r, _, _) in &runs {
            assert_eq!(r, &Ok("2".into()));
        }
        // Promoted variables: the reads and llm calls of all iterations overlap. (With every
        // variable in memory M, the store in the branch makes the next iteration wait for it.)
        assert_eq!(runs[0].2, 10);
    }
}
