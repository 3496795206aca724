//! Lifting CPython 3.11 bytecode into Bezoar (PopPy §5): one code object in, a Bezoar
//! `Function` or the `Fallback` that says why not (the function then runs in plain CPython).
//!
//! Stages, in the order `lift` runs them:
//! 1. Here: `check_code_object` and the opcode check reject what is outside the fragment
//!    (generators, try/with, bare raise, unsupported opcodes), each with a reason and a line.
//!    An `async def` body has its `await` loops folded first (`awaits`).
//!    Closures are in the fragment: a @poppy function's free variables become parameters after
//!    its arguments (`params`), inner functions and lambdas are inlined or made real function
//!    objects (`inline`).
//! 2. `cfg`: basic blocks, normalised edges (duplicate returns merged, NOP blocks skipped,
//!    CPython's inverted `while` tests undone) and loops with their exits.
//! 3. `inline::capture`: which inner functions start "plain" (every call inlined) and which
//!    locals need real cells. An inner function that turns out to be used otherwise escapes, and
//!    the function is translated again.
//! 4. The `Translator` (`translator`) walks regions of blocks (`structure`, `conditions`,
//!    `control`) and translates each instruction by family (`loads`, `calls`, `containers`,
//!    `operators`, `inline`), turning the value stack into ANF registers.
//! 5. `bezoar::passes::tidy` normalises the result (see `bezoar::passes::normalize`);
//!    `bezoar::passes::private_iterables` marks loops over containers that nothing but the
//!    function's own reads can reach while they run (`iter_private`: read at once when the run
//!    owns the container; every other loop over a container is iterated lazily).
//!
//! Depends on `py311` (code objects, instructions, opcodes, argument meanings; everything
//! version-specific) and `bezoar` (the IR and its passes). Nothing here runs Python code or knows
//! about λO.
//!
//! Shapes emitted (for lowering):
//! - `for x in xs: B` → `r := op iter_snapshot(xs); for ri in r: store x ri; B`.
//! - `while c: B` → `loop: [c]; if rc: B else: break` (the test first, the body nested in the
//!   `then` branch by the post-pass); `while True: B` → `loop: B`.
//! - `break`/`continue` → `Break`/`Continue` of the innermost loop; `return v` → `Return(v)`.
//! - `raise e [from c]` → `r := op raise(e)` / `op raise_from(e, c)`; `raise r` (inside a `while`
//!   loop: `return r`); `assert c, m` → `if c: ... else: [r := op assertion_error(); r2 := r(m);
//!   r3 := op raise(r2); raise r3]`.
//! - `for ... else: E` / `while ... else: E` when a `break` skips E:
//!   `$brokeK := False; <loop, each such break: $brokeK := True; break>; if $brokeK: pass else: E`.
//!   (When the code after the loop is a trivial return, a `break` becomes that return instead.)
//! - `a or b` / `a and b` / `a if c else b` in value position: `if rc: ...; store $tN ra else: ...;
//!   store $tN rb`, then `r := load $tN`.
//! - `if a and b:` with an else: the condition is computed into `$tN` by nested ifs, then
//!   `r := load $tN; if r: ... else: ...`.
//! - `[e for x in xs if c]` (a nested code object called at once with `iter(xs)`): translated in
//!   place (`Translator::inline_child`) as `r := op list(); for ri in snapshot(xs): store $cK.x ri;
//!   if c: list_extend(r, (e,))`; set/dict comprehensions likewise (`set_update`, `setitem`).
//! - `sum(e for x in xs)` etc.: `if op is_consumer.sum(sum): [the collecting loop; sum(list)]
//!   else: [sum(make_genexpr(code, globals, snapshot))]`; `any`/`all`: a loop storing the answer
//!   in `$tN` and breaking at the first deciding item. Other callees get the real generator.
//! - A call `g(a)` of an inner function defined once (`def g` / `g = lambda`): its body in place,
//!   `store $cK.p ra; unbind $cK.y; ...; store $cK.$ret rv`, then `r := load $cK.$ret`; missing
//!   arguments read the defaults kept in `$fnK.defaults`/`$fnK.kwdefaults`.
//! - Other `lambda`/`def` inside: `op make_function(code, globals, defaults, kwdefaults,
//!   annotations, (cells...))`; captured locals live in real cells (`$cell.x`,
//!   `make_cell`/`cell_get`/`cell_set`).
//! - `f(*a, **k)`: `c := op star_call(f, a, k); r := c()`; `global x; x = v`: `setitem(globals,
//!   "x", v)` and `load_global.x(globals)` reads; `del x`: `del x`.
//!
//! The `$` names are `bezoar::VarName`s of the matching `VarKind`.
mod awaits;
mod calls;
mod cfg;
mod conditions;
mod containers;
mod control;
mod exceptions;
mod inline;
mod loads;
mod operators;
mod patterns;
mod state;
mod structure;
#[cfg(test)]
mod tests;
mod translator;
mod with_stmt;

use cfg::Cfg;
use inline::{bound_before, captured_by_function, cell_local, free_needs_cell, known_functions};
use state::{CodeScope, Emitter, Shared, Translator};

use crate::bezoar::ir::*;
use crate::bezoar::passes::{free_unbound, private_iterables, tidy};
use crate::py311::decode::{instructions, Instr};
use crate::py311::opcode::*;
use crate::py311::{
    exception_table, opcode, CodeInfo, CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR, CO_ITERABLE_COROUTINE,
};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Why a function cannot be lifted (it then runs in plain CPython).
#[derive(Clone, Debug, PartialEq)]
pub struct Fallback {
    pub reason: String,
    /// The offending opcode, for unsupported instructions.
    pub opcode: Option<String>,
    /// Source line (0 when unknown).
    pub line: u32,
}

const UNSUPPORTED_OPCODE: &str = "unsupported opcode";

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.opcode {
            Some(op) if self.reason == UNSUPPORTED_OPCODE => {
                write!(f, "{} {} at line {}", self.reason, op, self.line)
            }
            Some(op) => write!(f, "{} ({}) at line {}", self.reason, op, self.line),
            None => write!(f, "{} at line {}", self.reason, self.line),
        }
    }
}

impl Fallback {
    fn new(reason: impl Into<String>, line: u32) -> Self {
        Fallback { reason: reason.into(), opcode: None, line }
    }

    fn unsupported(ins: &Instr) -> Self {
        let reason = opcode::construct(ins.opcode).unwrap_or(UNSUPPORTED_OPCODE);
        Fallback { reason: reason.into(), opcode: Some(ins.name().into()), line: ins.line }
    }

    /// The bytecode does not have the shape CPython 3.11 gives the supported fragment.
    fn shape(what: &str, line: u32) -> Self {
        Fallback::new(format!("unexpected bytecode shape ({what})"), line)
    }
}

type Result<T> = std::result::Result<T, Fallback>;

pub use crate::bezoar::ir::RETURN_LOCAL;

pub fn lift(ci: &CodeInfo) -> Result<Function> {
    lift_code(ci, &HashSet::new())
}

/// Whether a function with try/except is compiled (docs/design-exceptions.md, stage 1: its
/// lowering and the host's part must all be there). Until then `lift_with` (the compiler's
/// entry) falls back for it; `lift` (goldens, tests) lifts it.
const COMPILE_TRY: bool = true;

/// `lift`, with the free variables other code may rebind while the function runs
/// (`written_free`, e.g. by `nonlocal` in a sibling inner function): those are passed as their
/// cell and read at each use in program order instead of once at entry.
pub fn lift_with(ci: &CodeInfo, written_free: &HashSet<String>) -> Result<Function> {
    let f = lift_code(ci, written_free)?;
    if !COMPILE_TRY {
        if let Some(start) = exception_table::first_protected(&ci.exceptiontable) {
            if contains_try(&f.body) {
                return Err(Fallback::new("exception handling (try/except)", ci.line_at(start)));
            }
        }
    }
    Ok(f)
}

fn contains_try(b: &Block) -> bool {
    b.iter().any(|s| matches!(s.kind, StmtKind::Try { .. }) || s.kind.blocks().into_iter().any(contains_try))
}

fn lift_code(ci: &CodeInfo, written_free: &HashSet<String>) -> Result<Function> {
    check_code_object(ci)?;
    let mut instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
    // (The await loops first: folded into their `GET_AWAITABLE`, their jumps are no branches of
    // the statements with handlers around them; 3.11 gives them no exception-table entry.)
    if ci.flags & CO_COROUTINE != 0 {
        awaits::rewrite(&mut instrs)?;
    }
    let tries = exceptions::recognise(ci, &instrs)?;
    // The handler opcodes only in recognised handlers (`exceptions`).
    let handler_op =
        |op: u8| tries.handlers && matches!(op, PUSH_EXC_INFO | CHECK_EXC_MATCH | POP_EXCEPT | RERAISE | BEFORE_WITH | BEFORE_ASYNC_WITH | WITH_EXCEPT_START);
    if let Some(bad) = instrs.iter().find(|i| !is_supported(i.opcode) && !handler_op(i.opcode)) {
        return Err(Fallback::unsupported(bad));
    }
    let cfg = Cfg::build_with(&instrs, &tries)?;
    let loops = cfg.find_loops(&instrs)?;
    // Inner functions whose every use is a call that is inlined need no function object and no
    // cells (their variables are the function's locals). Start by assuming that of every known
    // inner function; translate; an inner function used otherwise ("escaping") is then made a
    // real function with real cells and the function is translated again.
    let candidates = known_functions(ci, &instrs);
    // A plain function's free variables are plain locals: if one could be unbound when it is
    // called, the error would be UnboundLocalError instead of CPython's NameError for a free
    // variable. So only functions whose free variables are surely bound by then start plain.
    let mut escaping: HashSet<u32> = candidates
        .values()
        .filter(|k| !ci.children[&k.2].freevars.iter().all(|v| bound_before(ci, &instrs, v, k.2)))
        .map(|k| k.2)
        .collect();
    // Locals a generator expression run by an arbitrary callee captures (real cells).
    let mut genexpr_cells: HashSet<String> = HashSet::new();
    loop {
        // A function held in a real cell (an escaping function refers to it) escapes too.
        let (plain, real_cells) = loop {
            let plain: HashSet<u32> = candidates.values().map(|k| k.2).filter(|c| !escaping.contains(c)).collect();
            // The function's own free variables (a @poppy closure) are the enclosing function's
            // cells, passed in as parameters after the arguments (see `params` below): the cell
            // itself when this code or other code writes it (`written_free`) or a real inner
            // function captures it, else its value (read once, at entry, like a global).
            let real_cells: HashSet<String> = ci
                .cellvars
                .iter()
                .filter(|c| captured_by_function(ci, c, &plain) || genexpr_cells.contains(*c))
                .chain(ci.freevars.iter().filter(|v| {
                    written_free.contains(*v) || free_needs_cell(ci, v, &plain) || genexpr_cells.contains(*v)
                }))
                .cloned()
                .collect();
            let held: Vec<u32> =
                candidates.iter().filter(|(n, k)| plain.contains(&k.2) && real_cells.contains(*n)).map(|(_, k)| k.2).collect();
            if held.is_empty() {
                break (plain, real_cells);
            }
            escaping.extend(held);
        };
        let code = CodeScope {
            ci,
            instrs: &instrs,
            cfg: &cfg,
            loops: &loops,
            locals: ci.localsplus().into_iter().map(VarName::local).collect(),
            first_free: ci.localsplus().len() - ci.freevars.len(),
            dot0: None,
            const_map: None,
            path: Vec::new(),
            plain_funcs: plain.clone(),
            yield_mode: None,
            tries: Some(&tries),
        };
        let shared = Shared {
            budget: patterns::budget_per_instr(&instrs) * instrs.len() + 64,
            nesting: 0,
            ncomp: 0,
            comp_free: HashMap::new(),
            want_cells: HashSet::new(),
            stored_globals: instrs
                .iter()
                .filter(|i| i.opcode == STORE_GLOBAL)
                .filter_map(|i| ci.names.get(i.arg as usize).cloned())
                .collect(),
            known_funcs: candidates
                .iter()
                .filter(|(name, _)| !real_cells.contains(*name))
                .map(|(name, k)| (VarName::local(name), (k.clone(), plain.contains(&k.2))))
                .collect(),
            inlining: HashSet::new(),
            fn_defaults: HashMap::new(),
            real_cells: real_cells.into_iter().map(VarName::local).collect(),
        };
        let mut t = Translator::new(Emitter::new(ci.consts.clone()), code, shared, ci.firstlineno);
        let res = t.region(0, cfg.exit(), Vec::new(), false);
        let escaped: HashSet<u32> = t.em.facts.funcs.values().filter(|(_, p)| *p).map(|(k, _)| k.2).collect();
        let wanted: Vec<String> = t.shared.want_cells.difference(&genexpr_cells).cloned().collect();
        if !wanted.is_empty() {
            // A generator expression passed to an arbitrary callee captures these: again, with
            // real cells for them (`Translator::consume_genexpr`).
            genexpr_cells.extend(wanted);
            continue;
        }
        match res {
            Err(_) if !plain.is_empty() => {
                // Not because of the assumption, surely; but make sure.
                escaping.extend(plain);
                continue;
            }
            Err(e) => return Err(e),
            Ok(_) if !escaped.is_empty() => {
                escaping.extend(escaped);
                continue;
            }
            Ok((mut body, _)) => {
                if let Some(lost) = tries.tries.iter().find(|s| !t.tries_done.contains(&s.push)) {
                    // Its body was translated as plain code (a branch into it taken for part of
                    // a condition around it, say): its handlers would never run.
                    let line = instrs.get(lost.body.start).map_or(ci.firstlineno, |i| i.line);
                    return Err(Fallback::new(
                        "exception handling (a try statement the structure recovery did not keep)",
                        line,
                    ));
                }
                let mut nregs = t.em.nregs;
                tidy(&mut body, &mut nregs);
                private_iterables(&mut body);
                let mut func = Function {
                    name: ci.name.clone(),
                    qualname: ci.qualname.clone(),
                    filename: ci.filename.clone(),
                    firstlineno: ci.firstlineno,
                    // CPython binds positional and keyword-only parameters, then the `*args` tuple and
                    // the `**kwargs` dict, into the frame's first locals.
                    // A closure's free variables follow, as `$cell.x` locals holding the cells.
                    params: ci.varnames[..ci.nparams()]
                        .iter()
                        .map(VarName::local)
                        .chain(ci.freevars.iter().map(VarName::local).map(|v| {
                            if t.shared.real_cells.contains(&v) {
                                cell_local(&v)
                            } else {
                                v
                            }
                        }))
                        .collect(),
                    consts: t.em.consts,
                    body,
                    nregs,
                    free_unbound: vec![],
                };
                let comp_free = &t.shared.comp_free;
                match free_unbound(&func, &|k| comp_free.get(&k).copied()) {
                    Ok(vars) => func.free_unbound = vars,
                    Err((name, line)) => {
                        return Err(Fallback::new(
                            format!(
                                "a comprehension reads `{name}` as a free variable where it may be unbound, \
                                 and other code reads it as a local there (CPython raises NameError for \
                                 the one, UnboundLocalError for the other)"
                            ),
                            line,
                        ))
                    }
                }
                return Ok(func);
            }
        }
    }
}

/// Rejects code objects whose kind or signature is outside the fragment.
fn check_code_object(ci: &CodeInfo) -> Result<()> {
    let at_def = |reason: &str| Err(Fallback::new(reason, ci.firstlineno));
    let flag = |bit: u32| ci.flags & bit != 0;
    if flag(CO_ASYNC_GENERATOR) {
        return at_def("async generator function");
    }
    if flag(CO_ITERABLE_COROUTINE) {
        return at_def("coroutine (types.coroutine)");
    }
    if flag(CO_GENERATOR) {
        return at_def("generator function");
    }
    if exception_table::first_protected(&ci.exceptiontable).is_some() {
        // try/except/else statements are recognised (`exceptions`) and lifted to `Try`; every
        // other statement with a handler falls back with a reason naming it.
        let mut instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
        if flag(CO_COROUTINE) {
            awaits::rewrite(&mut instrs)?;
        }
        exceptions::recognise(ci, &instrs)?;
    }
    Ok(())
}

fn is_supported(op: u8) -> bool {
    matches!(
        op,
        NOP | RESUME
            | CACHE
            | POP_TOP
            | PUSH_NULL
            | SWAP
            | COPY
            | LOAD_FAST
            | STORE_FAST
            | LOAD_CONST
            | LOAD_GLOBAL
            | LOAD_ATTR
            | LOAD_METHOD
            | STORE_ATTR
            | DELETE_ATTR
            | KW_NAMES
            | PRECALL
            | CALL
            | BINARY_SUBSCR
            | STORE_SUBSCR
            | DELETE_SUBSCR
            | BINARY_OP
            | COMPARE_OP
            | IS_OP
            | CONTAINS_OP
            | UNARY_NEGATIVE
            | UNARY_POSITIVE
            | UNARY_INVERT
            | UNARY_NOT
            | BUILD_TUPLE
            | BUILD_LIST
            | BUILD_MAP
            | BUILD_CONST_KEY_MAP
            | BUILD_SET
            | BUILD_SLICE
            | LIST_EXTEND
            | LIST_APPEND
            | SET_UPDATE
            | SET_ADD
            | DICT_UPDATE
            | LIST_TO_TUPLE
            | UNPACK_SEQUENCE
            | UNPACK_EX
            | FORMAT_VALUE
            | BUILD_STRING
            | GET_ITER
            | FOR_ITER
            | IMPORT_NAME
            | IMPORT_FROM
            | JUMP_FORWARD
            | JUMP_BACKWARD
            | JUMP_BACKWARD_NO_INTERRUPT
            | JUMP_IF_FALSE_OR_POP
            | JUMP_IF_TRUE_OR_POP
            | POP_JUMP_FORWARD_IF_FALSE
            | POP_JUMP_FORWARD_IF_TRUE
            | POP_JUMP_FORWARD_IF_NONE
            | POP_JUMP_FORWARD_IF_NOT_NONE
            | POP_JUMP_BACKWARD_IF_FALSE
            | POP_JUMP_BACKWARD_IF_TRUE
            | POP_JUMP_BACKWARD_IF_NONE
            | POP_JUMP_BACKWARD_IF_NOT_NONE
            | RETURN_VALUE
            | RAISE_VARARGS
            | LOAD_ASSERTION_ERROR
            | MAP_ADD
            | STORE_GLOBAL
            | CALL_FUNCTION_EX
            | DICT_MERGE
            | DELETE_FAST
            // Closures, comprehensions and generator expressions (`inline`). The generator
            // opcodes only inside an inlined generator expression: anywhere else they fall back
            // (see `Translator::yield_op`).
            | MAKE_FUNCTION
            | MAKE_CELL
            | LOAD_CLOSURE
            | LOAD_DEREF
            | STORE_DEREF
            | DELETE_DEREF
            | COPY_FREE_VARS
            | RETURN_GENERATOR
            | YIELD_VALUE
            // `await` in an `async def` body (folded by `awaits::rewrite`).
            | GET_AWAITABLE
            // `match` statements (`patterns`).
            | MATCH_SEQUENCE
            | MATCH_MAPPING
            | MATCH_KEYS
            | MATCH_CLASS
            | GET_LEN
    )
}

#[cfg(test)]
mod fallback_tests {
    use super::Fallback;

    #[test]
    fn fallback_display() {
        let op = Fallback { reason: "unsupported opcode".into(), opcode: Some("SETUP_WITH".into()), line: 12 };
        assert_eq!(op.to_string(), "unsupported opcode SETUP_WITH at line 12");
        assert_eq!(Fallback::new("while loop", 3).to_string(), "while loop at line 3");
        let described =
            Fallback { reason: "del of a local variable".into(), opcode: Some("DELETE_FAST".into()), line: 4 };
        assert_eq!(described.to_string(), "del of a local variable (DELETE_FAST) at line 4");
    }
}
