//! Bezoar → λO (PopPy §5.2 and §7).
//!
//! - Every call (and every desugared operation, global lookup, ...) becomes `xcall` threaded on the
//!   sequence variable S, so controllers can rebuild program order at run time.
//! - Mutable variables are promoted to SSA values (local variable promotion, §7) unless they must
//!   live in the memory M; then `load`/`store` on M thread them. M is threaded only when some
//!   variable lives in it, so promoted code carries no M traffic at all.
//! - `if` becomes `ite` over two closures, `for` becomes `ite(iterable, fold, lazy loop)` over one
//!   body closure (the iterable decides at run time); all take and return the tuple (S, [M,]
//!   promoted variables assigned inside).
//! - Global lookups are single-assignment reads: an unordered call of the host's global loader, so
//!   loading `print` or `llm` never serialises. (Globals the function itself assigns are not
//!   `global` reads: the lifter makes them `load_global`/`setitem` operations on the globals
//!   dict, ordered like any other call.)
//!
//! Closure conversion: nested λO functions capture the outer variables they use, discovered on
//! demand while their body is lowered (`resolve`).
//!
//! Rooms: this file (options, the lowerer's state, the builders of λO functions), `stmt`
//! (statements, expressions, loads and stores), `control` (branches, loops, exit status),
//! `try_stmt` (try/except: catching calls, the gates after them, the handler chain), `tests`.
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
    /// In functions with break/continue/early return or try: the exit status (a Python int: 0
    /// normal, 1 break, 2 continue, 3 return, 4 raised) and the return value so far — or, while
    /// the status is RAISED, the caught value (`Host::caught`) of the exception.
    exit: Option<Exit>,
    /// Inside a try body (not its handlers or else): the operations are catching calls, and
    /// what follows each runs only if it did not raise.
    catching: bool,
    /// Inside an `except` handler (its test and body): the caught value whose exception is the
    /// thread's handled exception during every call made (`xcall ... handling h`).
    handling: Option<Loc>,
    /// Set by the statement just lowered when it made a catching call: its value (`lower_block`
    /// gates the rest of the block on it).
    caught: Option<Loc>,
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
const RAISED: i64 = 4;

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

    /// `t := xcall S f(args)`, advancing S; returns the call's result. For the runtime's own
    /// helpers (exit status, caught values): never catching, never handling.
    fn xcall(&mut self, st: &mut State, f: Loc, args: &[Loc], kwnames: &[String], name: &str, line: u32) -> Loc {
        self.xcall_with(st, f, args, kwnames, name, line, false, None)
    }

    /// The xcall of an operation of the program (a call, an intrinsic, a global look-up, a bound
    /// check, a `next`): catching inside a try body (its value is then recorded in `st.caught`
    /// for `lower_block` to gate what follows), and made with the handled exception inside a
    /// handler.
    fn op_xcall(&mut self, st: &mut State, f: Loc, args: &[Loc], kwnames: &[String], name: &str, line: u32) -> Loc {
        let (catch, handling) = (st.catching, st.handling);
        let v = self.xcall_with(st, f, args, kwnames, name, line, catch, handling);
        if catch {
            assert!(st.caught.is_none(), "one catching operation per statement");
            st.caught = Some(v);
        }
        v
    }

    #[allow(clippy::too_many_arguments)]
    fn xcall_with(
        &mut self,
        st: &mut State,
        f: Loc,
        args: &[Loc],
        kwnames: &[String],
        name: &str,
        line: u32,
        catch: bool,
        handling: Option<Loc>,
    ) -> Loc {
        let seq = self.resolve(st.s);
        let func = self.resolve(f);
        let args = args.iter().map(|a| self.resolve(*a)).collect();
        let handling = handling.map(|h| self.resolve(h));
        let t = self.emit("t", Op::XCall { seq, func, args, kwnames: kwnames.to_vec(), catch, handling }, line);
        st.s = self.proj("S", t, 0, line);
        self.proj(name, t, 1, line)
    }

    /// A value that raises UnboundLocalError for `name` wherever it is used (NameError for a
    /// free variable when a comprehension reads it so: `Function::free_unbound`). (The locals
    /// of inlined comprehensions and inner functions, `$cK.x`, are named `x` in the message.)
    fn unbound(&mut self, name: &bz::VarName, line: u32) -> Loc {
        let m = self.emit("M", Op::MemEmpty, line);
        let mem = self.resolve(m);
        let shown = match name.kind() {
            bz::VarKind::Inlined { name, .. } => name.as_str(),
            bz::VarKind::InlinedRet(_) => bz::RETURN_LOCAL,
            _ => name.as_str(),
        };
        let free = self.src.free_unbound.contains(name);
        self.emit(name.as_str(), Op::MemLoad { mem, name: shown.to_string(), free }, line)
    }

    fn reg(&self, r: bz::Reg) -> Result<Loc, String> {
        self.regs[r as usize].ok_or_else(|| format!("register r{r} used before it is bound"))
    }
}

mod control;
mod stmt;
mod try_stmt;
#[cfg(test)]
mod tests;
