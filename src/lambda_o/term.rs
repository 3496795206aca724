//! λO terms (OPAL §3.2), as immutable function templates.
//!
//! A `Program` is a set of function templates; the evaluator instantiates a template's body each
//! time the function is called (reduce-call with freshening). Variables are numbered per function:
//! `0 .. ncaptures` are the captured variables of the defining frame, the next `nparams` are the
//! parameters, the rest are bound by the body's statements, each exactly once.
//!
//! Beyond the calculus' functions/calls/tuples/projections/primitives, a few built-in operations are
//! reduced by the evaluator itself (they are "external functions that return λO expressions" in
//! PopPy Fig. 4, implemented natively): `ite`, `fold`, memory `mem`/`load`/`store`, and `xcall`, the
//! sequenced call through which every external call goes.
use std::rc::Rc;

pub type Var = u32;
pub type FuncId = u32;

#[derive(Clone, Debug)]
pub struct Program<P> {
    pub name: String,
    pub funcs: Vec<Func<P>>,
    /// The entry function. Calling convention for a compiled Python function:
    /// params = [S, arg0, arg1, ...], result = tuple (S', return value).
    pub entry: FuncId,
}

#[derive(Clone, Debug)]
pub struct Func<P> {
    pub name: String,
    pub ncaptures: u32,
    pub nparams: u32,
    pub nvars: u32,
    /// Printable names, one per variable (`var_names.len() == nvars`). Need not be unique.
    pub var_names: Vec<String>,
    pub body: Vec<Stmt<P>>,
    pub ret: Var,
}

#[derive(Clone, Debug)]
pub struct Stmt<P> {
    pub dst: Var,
    pub op: Op<P>,
    /// Source line for diagnostics (0 when unknown).
    pub line: u32,
}

#[derive(Clone, Debug)]
pub enum Op<P> {
    /// `x := y`
    Alias(Var),
    /// `x := fun f[c0, c1]` — a closure over the listed variables of the current frame.
    Fun { func: FuncId, captures: Vec<Var> },
    /// `x := f(a, b)` — internal call; `f` must resolve to a closure.
    Call { func: Var, args: Vec<Var> },
    /// `x := (a, b)`
    Tuple(Vec<Var>),
    /// `x := prj i t`
    Proj { index: u32, tuple: Var },
    /// `x := prim <c>`
    Prim(P),
    /// `x := ite(c, then_f, else_f, args...)` — once `c` resolves to a primitive, calls
    /// `then_f(args...)` if it is truthy, else `else_f(args...)`; `x` is the call's result.
    Ite { cond: Var, then_f: Var, else_f: Var, args: Vec<Var> },
    /// `x := fold(seq, body, acc)` — once `seq` resolves to a primitive sequence [e0, e1, ...],
    /// `x = body(e_n, ... body(e1, body(e0, acc)))`. All iterations are instantiated at once.
    Fold { seq: Var, body: Var, acc: Var },
    /// `x := xcall S f(a, b; k=c)` — a call in program order. `x` is the tuple (S', result).
    /// If `f` resolves to an internal function the call is inlined (its template is instantiated
    /// with [S, args...]); otherwise a concurrency controller queues the external call.
    /// `catch` (text `xcall?`): a *catching* call — its failure is its value instead of the
    /// run's: the result is the host's `caught` value for the error, and the order passes on as
    /// after a success. A catching call is never inlined (failures inside an inlined body would
    /// be its calls' own) and always goes through a controller.
    /// `handling` (text `handling h`): a call made while an `except` handler runs; `h` is the
    /// caught value (`Host::caught`) whose exception is the thread's handled exception during the
    /// call (`Host::dispatch_handling`). The statement waits for `h` before it queues the call.
    XCall { seq: Var, func: Var, args: Vec<Var>, kwnames: Vec<String>, catch: bool, handling: Option<Var> },
    /// `x := mem` — the empty memory (mutable variable store).
    MemEmpty,
    /// `x := load M name` — read a mutable variable (unbound → host error: UnboundLocalError, or
    /// with `free` (`loadfree M name`) NameError for a free variable, as CPython raises when a
    /// comprehension reads an unbound local of its enclosing function).
    MemLoad { mem: Var, name: String, free: bool },
    /// `x := store M name v` — the memory M with `name` bound to `v`.
    MemStore { mem: Var, name: String, value: Var },
}

impl<P> Op<P> {
    /// Call `f` on every variable the operation reads, in order.
    pub fn for_each_var(&self, f: &mut dyn FnMut(Var)) {
        match self {
            Op::Alias(v) | Op::Proj { tuple: v, .. } | Op::MemLoad { mem: v, .. } => f(*v),
            Op::Fun { captures: vs, .. } | Op::Tuple(vs) => vs.iter().for_each(|&v| f(v)),
            Op::Call { func, args } => {
                f(*func);
                args.iter().for_each(|&v| f(v));
            }
            Op::Prim(_) | Op::MemEmpty => {}
            Op::Ite { cond, then_f, else_f, args } => {
                f(*cond);
                f(*then_f);
                f(*else_f);
                args.iter().for_each(|&v| f(v));
            }
            Op::Fold { seq, body, acc } => {
                f(*seq);
                f(*body);
                f(*acc);
            }
            Op::XCall { seq, func, args, handling, .. } => {
                f(*seq);
                f(*func);
                args.iter().for_each(|&v| f(v));
                if let Some(h) = handling {
                    f(*h);
                }
            }
            Op::MemStore { mem, value, .. } => {
                f(*mem);
                f(*value);
            }
        }
    }

    /// The operation with every variable it reads replaced by `f(v)`.
    pub fn map_vars(self, f: &dyn Fn(Var) -> Var) -> Op<P> {
        let m = |v: Vec<Var>| v.into_iter().map(f).collect::<Vec<_>>();
        match self {
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
            Op::XCall { seq, func, args, kwnames, catch, handling } => {
                Op::XCall { seq: f(seq), func: f(func), args: m(args), kwnames, catch, handling: handling.map(f) }
            }
            Op::MemEmpty => Op::MemEmpty,
            Op::MemLoad { mem, name, free } => Op::MemLoad { mem: f(mem), name, free },
            Op::MemStore { mem, name, value } => Op::MemStore { mem: f(mem), name, value: f(value) },
        }
    }
}

impl<P> Func<P> {
    pub fn param(&self, i: u32) -> Var {
        self.ncaptures + i
    }
}

pub type ProgramRef<P> = Rc<Program<P>>;
