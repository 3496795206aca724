//! The translator's state and the symbolic stack: what every part of the lifter shares.
//! The bottom of `lift`: the opcode families, structure recovery and inlining use it; it uses
//! none of them (only `cfg` for block ids, `bezoar::ir`, `py311`).
//!
//! A `Translator` walks one code object: the @poppy function's, or a nested one translated in
//! place (`inline`). Its state is grouped so that each part of the translation touches only what
//! it needs:
//! - `Emitter` — the ANF builder: registers, the constant pool, fresh `$tN`/`$brokeN` names, and
//!   `RegFacts`, what is known about registers already bound. Operators and containers see
//!   nothing else.
//! - `CodeScope` — the code object being translated: its instructions, CFG and loops, and the
//!   Bezoar names of its local slots.
//! - `Shared` — what the whole lifted function shares: inner functions, cells, the translation
//!   budget. Handed to the translator of inlined code and back.
//! - the loops being translated and post-dominators (`structure`, `control`), the pending
//!   `KW_NAMES` (`calls`) and the current line.
use super::cfg::{Cfg, LoopInfo, Node};
use super::{Fallback, Result};
use crate::bezoar::ir::*;
use crate::py311::decode::Instr;
use crate::py311::CodeInfo;
use std::collections::{HashMap, HashSet};


/// A symbolic value-stack entry.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Val {
    Reg(Reg),
    /// The NULL pushed below a callable (`PUSH_NULL`, `LOAD_GLOBAL` with the low bit, `LOAD_METHOD`).
    Null,
    /// The iterator of an enclosing `for` loop (the register holds the `IterSnapshot`).
    Iter(Reg),
    /// A code object among the constants (`co_consts` index), about to become a function.
    Code(u32),
    /// `LOAD_CLOSURE`: the cell of a local (its Bezoar name).
    Cell(VarName),
    /// A tuple of cells (a closure, for `MAKE_FUNCTION`).
    Cells(Vec<VarName>),
    /// A comprehension or generator expression function, not yet called.
    Func { code: u32, closure: Vec<VarName> },
    /// A generator expression called with its iterator, waiting for its consumer.
    Genexpr { code: u32, closure: Vec<VarName>, iter: Reg },
}

pub(super) type Stack = Vec<Val>;

pub(super) fn stmt(kind: StmtKind, line: u32) -> Stmt {
    Stmt { kind, line }
}

pub(super) fn pop(stack: &mut Stack, line: u32) -> Result<Val> {
    stack.pop().ok_or_else(|| Fallback::shape("stack underflow", line))
}

pub(super) fn pop_reg(stack: &mut Stack, line: u32) -> Result<Reg> {
    match pop(stack, line)? {
        Val::Reg(r) => Ok(r),
        Val::Genexpr { .. } => Err(Fallback::new(
            "generator expression used other than as an argument of a call (stored, returned or operated on)",
            line,
        )),
        v => Err(Fallback::shape(&format!("{v:?} used as a value"), line)),
    }
}

/// The top `n` entries, which must be registers, bottom first.
pub(super) fn pop_regs(stack: &mut Stack, n: usize, line: u32) -> Result<Vec<Reg>> {
    let mut rs = (0..n).map(|_| pop_reg(stack, line)).collect::<Result<Vec<_>>>()?;
    rs.reverse();
    Ok(rs)
}

/// The register `depth` entries below the top (1: the top), which stays on the stack (the
/// container operand of `LIST_APPEND`, `MAP_ADD`, ...).
pub(super) fn reg_below(stack: &Stack, depth: usize, what: &str, line: u32) -> Result<Reg> {
    match stack.len().checked_sub(depth).map(|i| &stack[i]) {
        Some(&Val::Reg(r)) => Ok(r),
        _ => Err(Fallback::shape(what, line)),
    }
}

// ---------------------------------------------------------------------------------------------
// The emitter

/// What the translator learned about registers it bound; later instructions consult it (nothing
/// here is emitted). Registers are numbered function-wide, so one table serves the function and
/// the code inlined into it — except the display shapes, which each code object keeps for itself.
#[derive(Clone, Default)]
pub(super) struct RegFacts {
    /// Bound to `Expr::Const(k)` (`BUILD_CONST_KEY_MAP` reads its keys from one).
    pub(super) consts: HashMap<Reg, u32>,
    /// Bound to the global of that name (to recognise generator consumers).
    pub(super) globals: HashMap<Reg, String>,
    /// Bound to `getattr` of that attribute (`str.join` as a consumer).
    pub(super) attrs: HashMap<Reg, String>,
    /// Loaded from a local holding a known inner function (see `inline::known_functions`): calls
    /// of it may be inlined. With whether the function is plain (it has no function object).
    pub(super) funcs: HashMap<Reg, (KnownFunc, bool)>,
    /// Lengths of the tuples built by `BuildTuple` and keys of the dicts built by `BuildMap`, to
    /// know a plain inner function's defaults.
    pub(super) tuple_lens: HashMap<Reg, usize>,
    pub(super) map_keys: HashMap<Reg, Vec<String>>,
}

/// The ANF builder of one lifted function (shared by the code inlined into it): registers, the
/// constant pool, fresh synthetic names, and facts about the registers bound.
#[derive(Clone, Default)]
pub(super) struct Emitter {
    pub(super) consts: Vec<Const>,
    pub(super) nregs: u32,
    ntemps: u32,
    nflags: u32,
    pub(super) facts: RegFacts,
}

impl Emitter {
    /// An emitter whose constant pool starts with the function's `co_consts` (same indices).
    pub(super) fn new(consts: Vec<Const>) -> Self {
        Emitter { consts, ..Default::default() }
    }

    pub(super) fn new_reg(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }

    /// `r := e` appended to `out`; records what is known about `r`.
    pub(super) fn bind(&mut self, e: Expr, line: u32, out: &mut Block) -> Reg {
        let r = self.new_reg();
        let facts = &mut self.facts;
        match &e {
            Expr::Const(k) => {
                facts.consts.insert(r, *k);
            }
            Expr::Op(Intrinsic::BuildTuple, items) => {
                facts.tuple_lens.insert(r, items.len());
            }
            Expr::Op(Intrinsic::BuildMap, kv) => {
                let keys = kv.chunks(2).map(|p| match facts.consts.get(&p[0]).and_then(|k| self.consts.get(*k as usize)) {
                    Some(Const::Str(name)) => Some(name.clone()),
                    _ => None,
                });
                if let Some(keys) = keys.collect::<Option<Vec<_>>>() {
                    facts.map_keys.insert(r, keys);
                }
            }
            _ => {}
        }
        out.push(stmt(StmtKind::Let(r, e), line));
        r
    }

    pub(super) fn bind_const(&mut self, c: Const, line: u32, out: &mut Block) -> Reg {
        let k = self.const_index(c);
        self.bind(Expr::Const(k), line, out)
    }

    /// `r := op OP(args)`, pushing `r`.
    pub(super) fn push_op(&mut self, op: Intrinsic, args: Vec<Reg>, line: u32, stack: &mut Stack, out: &mut Block) {
        let r = self.bind(Expr::Op(op, args), line, out);
        stack.push(Val::Reg(r));
    }

    /// The index of `c` in the constant pool (added when new).
    pub(super) fn const_index(&mut self, c: Const) -> u32 {
        match self.consts.iter().position(|k| *k == c) {
            Some(i) => i as u32,
            None => {
                self.consts.push(c);
                self.consts.len() as u32 - 1
            }
        }
    }

    /// A fresh `$tN` (a value flowing out of an `if`, a condition, a consumer's result).
    pub(super) fn temp(&mut self) -> VarName {
        self.ntemps += 1;
        VarKind::Temp(self.ntemps - 1).into()
    }

    /// Gives back the last `temp()`, which nothing used.
    pub(super) fn release_temp(&mut self) {
        self.ntemps -= 1;
    }

    /// A fresh `$brokeN` (set by the `break`s of a loop with an else clause).
    pub(super) fn broke_flag(&mut self) -> VarName {
        self.nflags += 1;
        VarKind::Broke(self.nflags - 1).into()
    }

    /// The emitter for a nested code object translated in place: the same registers, constants
    /// and names; display shapes of its own. Hand it back with `end_child`.
    pub(super) fn begin_child(&mut self) -> Emitter {
        let own = (std::mem::take(&mut self.facts.tuple_lens), std::mem::take(&mut self.facts.map_keys));
        let child = std::mem::take(self);
        (self.facts.tuple_lens, self.facts.map_keys) = own;
        child
    }

    pub(super) fn end_child(&mut self, child: Emitter) {
        let own = (std::mem::take(&mut self.facts.tuple_lens), std::mem::take(&mut self.facts.map_keys));
        *self = child;
        (self.facts.tuple_lens, self.facts.map_keys) = own;
    }
}

// ---------------------------------------------------------------------------------------------
// The translator

/// The code object being translated and how its slots are named in Bezoar.
pub(super) struct CodeScope<'a> {
    pub(super) ci: &'a CodeInfo,
    pub(super) instrs: &'a [Instr],
    pub(super) cfg: &'a Cfg,
    pub(super) loops: &'a HashMap<Node, LoopInfo>,
    /// The Bezoar names of the code object's "fast locals" slots (`CodeInfo::localsplus`): the
    /// names themselves in the @poppy function; renamed locals (`$cK.x`) and the enclosing
    /// names of free variables in an inlined comprehension.
    pub(super) locals: Vec<VarName>,
    /// Index of the first free variable in `locals`.
    pub(super) first_free: usize,
    /// In an inlined comprehension: the register of its iterator (the local `.0`).
    pub(super) dot0: Option<Reg>,
    /// In an inlined comprehension: its `co_consts` indices mapped into the shared pool.
    pub(super) const_map: Option<Vec<u32>>,
    /// `co_consts` indices leading from the @poppy function's code to this code object.
    pub(super) path: Vec<u32>,
    /// Codes (among this code object's constants) of the plain inner functions.
    pub(super) plain_funcs: HashSet<u32>,
    /// In an inlined generator expression: what a `yield` does.
    pub(super) yield_mode: Option<YieldMode>,
    /// The code's try statements (`exceptions::recognise`; None in inlined code, which has none).
    pub(super) tries: Option<&'a super::exceptions::Tries>,
}

impl CodeScope<'_> {
    /// The Bezoar name of local slot `i`.
    pub(super) fn local(&self, i: u32, line: u32) -> Result<VarName> {
        name_at(&self.locals, i, line)
    }

    /// `co_names[i]` (globals, attributes).
    pub(super) fn name(&self, i: u32, line: u32) -> Result<String> {
        name_at(&self.ci.names, i, line)
    }

    /// The pool index of constant `co_consts[i]`.
    pub(super) fn constant(&self, i: u32, line: u32) -> Result<u32> {
        match &self.const_map {
            Some(m) => m.get(i as usize).copied().ok_or_else(|| Fallback::shape("constant index", line)),
            None => Ok(i),
        }
    }
}

pub(super) fn name_at<T: Clone>(names: &[T], i: u32, line: u32) -> Result<T> {
    names.get(i as usize).cloned().ok_or_else(|| Fallback::shape("name index out of range", line))
}

/// What the whole lifted function shares: the translator of inlined code takes it over and hands
/// it back.
#[derive(Default)]
pub(super) struct Shared {
    /// Instructions that may still be translated: blocks reached along several paths (shared
    /// short-circuit operands) are translated once per path, within this limit.
    pub(super) budget: usize,
    /// Regions being translated inside one another (`Translator::region`), inlined code's
    /// included: bounded by `MAX_NESTING`.
    pub(super) nesting: u32,
    /// Inlined code objects so far (numbering their renamed locals).
    pub(super) ncomp: u32,
    /// The comprehensions among them, by number: true where CPython reads an enclosing local
    /// there as a free variable (NameError when it is unbound), false where as its own frame's
    /// local (a list, set or dict comprehension from 3.12 on: UnboundLocalError). See
    /// `passes::free_reads`.
    pub(super) comp_free: HashMap<u32, bool>,
    /// Locals of the function that a generator expression passed to a callee other than a
    /// known consumer captures: they must live in real cells (the generator runs in CPython,
    /// late-binding them), so the lifter translates the function again with real cells for them.
    pub(super) want_cells: HashSet<String>,
    /// Locals (Bezoar names) that live in real cells because an inner function or lambda
    /// captures them: their cell object is held in the local `$cell.NAME`.
    pub(super) real_cells: HashSet<VarName>,
    /// Globals the function assigns (`global x; x = ...`): read in program order.
    pub(super) stored_globals: HashSet<String>,
    /// Locals that hold one known inner function for the whole run (see
    /// `inline::known_functions`): calls of these may be inlined (`inline_call`). With whether
    /// the function is "plain": it has no function object and its captured variables are
    /// ordinary locals, so every use must be an inlined call.
    pub(super) known_funcs: HashMap<VarName, (KnownFunc, bool)>,
    /// Inner functions being inlined (no recursive inlining).
    pub(super) inlining: HashSet<u32>,
    /// The defaults of plain inner functions by code: the number of positional defaults (held in
    /// the local `$fnK.defaults`) and the names of the keyword-only ones (`$fnK.kwdefaults`).
    pub(super) fn_defaults: HashMap<u32, (usize, Vec<String>)>,
}

pub(super) struct Translator<'a> {
    pub(super) em: Emitter,
    pub(super) code: CodeScope<'a>,
    pub(super) shared: Shared,
    /// The loops being translated (innermost last).
    pub(super) ctx: Vec<LoopCtx>,
    /// Post-dominator sets per loop scope (`None`: outside loops); see `Translator::join`.
    pub(super) pdoms: HashMap<Option<Node>, std::rc::Rc<Vec<Vec<bool>>>>,
    /// Keyword names set by `KW_NAMES` for the next `CALL`.
    pub(super) kwnames: Option<Vec<String>>,
    /// Line of the instruction being translated.
    pub(super) line: u32,
    /// The try statements being translated (their `PUSH_EXC_INFO` index), innermost last.
    pub(super) open_tries: Vec<usize>,
    /// How many `except` handler bodies are being translated around the current instruction (a
    /// bare `raise` compiles only inside one).
    pub(super) in_handler: usize,
    /// How many exceptional copies of finally clauses are being translated (their `RERAISE 0`
    /// is a bare raise).
    pub(super) in_finally: usize,
    /// Where the parts of the try statements being translated end (a body's end, the join of
    /// its handlers and else): a region inside one that reaches it without stopping there would
    /// carry code after the part into it (`structure::region` declines).
    pub(super) try_follows: Vec<super::cfg::Node>,
    /// The try and with statements translated (their `PUSH_EXC_INFO` index): every recognised
    /// one must be, or the structure recovery lost its handlers (`lift_code` falls back).
    pub(super) tries_done: std::collections::HashSet<usize>,
    /// The bound `__exit__` of each `with` statement being translated whose body has exits (by
    /// its `PUSH_EXC_INFO` index): what a copy of its exit call pops (`exit_pop`).
    pub(super) with_exits: HashMap<usize, Reg>,
}

/// An inner function known by its code object: (the code object defining it, that code object's
/// `co_consts` path from the @poppy function, the index of the function's code among its
/// constants).
pub(in crate::lift) type KnownFunc = (std::rc::Rc<CodeInfo>, Vec<u32>, u32);

/// What an inlined generator expression does with each value it yields.
#[derive(Clone, Debug)]
pub(super) enum YieldMode {
    /// Append it to the list in the register.
    Collect(Reg),
    /// `any()` (`all: false`) / `all()`: on a true (false) value, store True (False) in the local
    /// and break out of the (single) loop.
    AnyAll { flag: VarName, all: bool },
}

/// The loop being translated (innermost last).
pub(super) struct LoopCtx {
    pub(super) head: Node,
    pub(super) latch: Option<Node>,
    pub(super) follow: Option<Node>,
    pub(super) alt: Option<Node>,
    /// `$brokeK`, set before each `break` when the loop has an else clause.
    pub(super) flag: Option<VarName>,
    /// Stack at the head (a `continue` must leave it so).
    pub(super) body_stack: Stack,
    /// Stack after the loop (a `break` must leave it so).
    pub(super) outer_stack: Stack,
}
