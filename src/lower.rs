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
//!   loading `print` or `llm` never serialises (the lifter rejects functions that store globals).
//!
//! Closure conversion: nested λO functions capture the outer variables they use, discovered on
//! demand while their body is lowered (`resolve`).
use crate::bezoar::passes::{assigned, promotable, DefinedSet};
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
    env: BTreeMap<String, Loc>,
    defined: DefinedSet,
}

struct Lowerer<'a, F: PrimFactory> {
    factory: &'a mut F,
    src: &'a bz::Function,
    promoted: BTreeSet<String>,
    use_memory: bool,
    funcs: Vec<Option<Func<F::Prim>>>,
    stack: Vec<Builder<F::Prim>>,
    regs: Vec<Option<Loc>>,
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
    };
    lw.lower_entry()?;
    let funcs = lw.funcs.into_iter().map(|f| f.expect("every function finished")).collect();
    Ok(Program { name: src.qualname.clone(), funcs, entry: 0 })
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
            .map(|s| Stmt { dst: renum(s.dst), op: map_vars(s.op, &renum), line: s.line })
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

    /// A value that raises UnboundLocalError for `name` wherever it is used.
    fn unbound(&mut self, name: &str, line: u32) -> Loc {
        let m = self.emit("M", Op::MemEmpty, line);
        let mem = self.resolve(m);
        self.emit(name, Op::MemLoad { mem, name: name.to_string() }, line)
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
        let mut st = State { s: locs[0], m: None, env: BTreeMap::new(), defined: DefinedSet::default() };
        if self.use_memory {
            st.m = Some(self.emit("M", Op::MemEmpty, src.firstlineno));
        }
        for (p, loc) in src.params.iter().zip(&locs[1..]) {
            st.defined.insert(p);
            self.store(&mut st, p, *loc, src.firstlineno);
        }
        let (body, ret) = match src.body.split_last() {
            Some((last, init)) if matches!(last.kind, StmtKind::Return(_)) => (init, Some(last)),
            _ => (&src.body[..], None),
        };
        self.lower_block(&mut st, body)?;
        let value = match ret {
            Some(bz::Stmt { kind: StmtKind::Return(r), .. }) => self.reg(*r)?,
            _ => {
                let none = self.factory.constant(&bz::Const::None);
                self.prim("None", none, 0)
            }
        };
        let out = self.tuple("out", &[st.s, value], 0);
        self.pop_builder(out);
        Ok(())
    }

    fn store(&mut self, st: &mut State, name: &str, value: Loc, line: u32) {
        if self.promoted.contains(name) {
            st.env.insert(name.to_string(), value);
        } else {
            let m = st.m.expect("memory threaded when a variable lives in it");
            let mem = self.resolve(m);
            let value = self.resolve(value);
            st.m = Some(self.emit("M", Op::MemStore { mem, name: name.to_string(), value }, line));
        }
    }

    fn load(&mut self, st: &mut State, name: &str, line: u32) -> Loc {
        let value = if self.promoted.contains(name) {
            match st.env.get(name) {
                Some(l) => *l,
                None => self.unbound(name, line),
            }
        } else {
            let mem = self.resolve(st.m.expect("memory threaded"));
            self.emit(name, Op::MemLoad { mem, name: name.to_string() }, line)
        };
        if st.defined.contains(name) {
            value
        } else {
            // May be unbound here: make the error (if any) happen at this point in program order.
            let check = self.factory.bound_check();
            let f = self.prim("bound", check, line);
            self.xcall(st, f, &[value], &[], name, line)
        }
    }

    /// The loop-carried / branch-carried tuple layout: S, [M,] then `vars`.
    fn carried(&mut self, st: &State, vars: &[String], line: u32) -> Vec<Loc> {
        let mut out = vec![st.s];
        out.extend(st.m);
        for v in vars {
            let l = match st.env.get(v) {
                Some(l) => *l,
                None => self.unbound(v, line),
            };
            out.push(l);
        }
        out
    }

    /// Rebind S, M and `vars` from the components of `t` (or from `locs` when given directly).
    fn uncarry(&mut self, st: &mut State, vars: &[String], t: Loc, line: u32) {
        let mut i = 0;
        st.s = self.proj("S", t, i, line);
        i += 1;
        if st.m.is_some() {
            st.m = Some(self.proj("M", t, i, line));
            i += 1;
        }
        for v in vars {
            let l = self.proj(v, t, i, line);
            st.env.insert(v.clone(), l);
            i += 1;
        }
    }

    fn lower_block(&mut self, st: &mut State, block: &[bz::Stmt]) -> Result<(), String> {
        for s in block {
            self.lower_stmt(st, s)?;
        }
        Ok(())
    }

    fn lower_stmt(&mut self, st: &mut State, s: &bz::Stmt) -> Result<(), String> {
        let line = s.line;
        match &s.kind {
            StmtKind::Let(r, e) => {
                let name = format!("r{r}");
                let loc = self.lower_expr(st, e, &name, line)?;
                self.regs[*r as usize] = Some(loc);
            }
            StmtKind::Store(x, r) => {
                let v = self.reg(*r)?;
                self.store(st, x, v, line);
                st.defined.insert(x);
            }
            StmtKind::If { cond, then_body, else_body } => {
                let cond = self.reg(*cond)?;
                let mut vars: BTreeSet<String> = assigned(then_body);
                vars.extend(assigned(else_body));
                let vars: Vec<String> = vars.into_iter().filter(|v| self.promoted.contains(v)).collect();
                let args = self.carried(st, &vars, line);
                let (tf, then_defined) = self.lower_branch(st, "then", &vars, then_body, line)?;
                let (ef, else_defined) = self.lower_branch(st, "else", &vars, else_body, line)?;
                let cond = self.resolve(cond);
                let args = args.iter().map(|l| self.resolve(*l)).collect();
                let then_f = self.resolve(tf);
                let else_f = self.resolve(ef);
                let res = self.emit("ite", Op::Ite { cond, then_f, else_f, args }, line);
                self.uncarry(st, &vars, res, line);
                st.defined = then_defined.meet(&else_defined);
            }
            StmtKind::For { iter, item, body } => {
                let seq = self.reg(*iter)?;
                let vars: Vec<String> =
                    assigned(body).into_iter().filter(|v| self.promoted.contains(v)).collect();
                let carried = self.carried(st, &vars, line);
                let acc0 = self.tuple("acc", &carried, line);
                // Body: fun body(e, acc) -> acc'
                let locs = self.push_builder("body".into(), &["e", "acc"]);
                let mut inner = st.clone();
                self.uncarry(&mut inner, &vars, locs[1], line);
                self.regs[*item as usize] = Some(locs[0]);
                self.lower_block(&mut inner, body)?;
                let out_items = self.carried(&inner, &vars, line);
                let out = self.tuple("acc", &out_items, line);
                let (fid, captures) = self.pop_builder(out);
                let bf = self.emit("body", Op::Fun { func: fid, captures }, line);
                let seq = self.resolve(seq);
                let body = self.resolve(bf);
                let acc = self.resolve(acc0);
                let res = self.emit("fold", Op::Fold { seq, body, acc }, line);
                self.uncarry(st, &vars, res, line);
                // The loop may run zero times: nothing it assigns is definitely assigned after it.
            }
            StmtKind::Return(_) => {
                return Err(format!("return before the end of the function at line {line}"));
            }
            StmtKind::Loop { .. } => return Err(format!("while loop at line {line} (not lowered yet)")),
            StmtKind::Break | StmtKind::Continue => {
                return Err(format!("break/continue at line {line} (not lowered yet)"));
            }
        }
        Ok(())
    }

    /// A branch closure `fun then(S, [M,] vars...) -> (S, [M,] vars...)`.
    fn lower_branch(
        &mut self,
        outer: &State,
        name: &str,
        vars: &[String],
        block: &[bz::Stmt],
        line: u32,
    ) -> Result<(Loc, DefinedSet), String> {
        let mut params: Vec<&str> = vec!["S"];
        if outer.m.is_some() {
            params.push("M");
        }
        params.extend(vars.iter().map(|v| v.as_str()));
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
        self.lower_block(&mut st, block)?;
        let out_items = self.carried(&st, vars, line);
        let out = self.tuple("out", &out_items, line);
        let (fid, captures) = self.pop_builder(out);
        let f = self.emit(name, Op::Fun { func: fid, captures }, line);
        Ok((f, st.defined))
    }

    fn lower_expr(&mut self, st: &mut State, e: &Expr, name: &str, line: u32) -> Result<Loc, String> {
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
                let p = self.factory.intrinsic(op);
                let f = self.prim(&intrinsic_var_name(op), p, line);
                self.xcall(st, f, &argl, &[], name, line)
            }
        })
    }
}

fn intrinsic_var_name(i: &Intrinsic) -> String {
    match i {
        Intrinsic::Binary { op, inplace } => format!("{}{:?}", if *inplace { "i" } else { "" }, op).to_lowercase(),
        Intrinsic::GetAttr(_) => "getattr".into(),
        other => format!("{other:?}").to_lowercase().chars().take_while(|c| c.is_alphanumeric()).collect(),
    }
}

/// Apply `f` to every variable an operation mentions.
fn map_vars<P>(op: Op<P>, f: &dyn Fn(Var) -> Var) -> Op<P> {
    let m = |v: Vec<Var>| v.into_iter().map(f).collect::<Vec<_>>();
    match op {
        Op::Alias(v) => Op::Alias(f(v)),
        Op::Fun { func, captures } => Op::Fun { func, captures: m(captures) },
        Op::Call { func, args } => Op::Call { func: f(func), args: m(args) },
        Op::Tuple(v) => Op::Tuple(m(v)),
        Op::Proj { index, tuple } => Op::Proj { index, tuple: f(tuple) },
        Op::Prim(p) => Op::Prim(p),
        Op::Ite { cond, then_f, else_f, args } => {
            Op::Ite { cond: f(cond), then_f: f(then_f), else_f: f(else_f), args: m(args) }
        }
        Op::Fold { seq, body, acc } => Op::Fold { seq: f(seq), body: f(body), acc: f(acc) },
        Op::XCall { seq, func, args, kwnames } => Op::XCall { seq: f(seq), func: f(func), args: m(args), kwnames },
        Op::MemEmpty => Op::MemEmpty,
        Op::MemLoad { mem, name } => Op::MemLoad { mem: f(mem), name },
        Op::MemStore { mem, name, value } => Op::MemStore { mem: f(mem), name, value: f(value) },
    }
}
