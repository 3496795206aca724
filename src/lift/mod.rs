//! Lifting CPython 3.11 bytecode into Bezoar.
//!
//! Steps:
//! 1. `check_code_object` + opcode check: reject code objects outside the fragment (generators,
//!    coroutines, functions with free variables, try/with, unsupported opcodes), each with a
//!    reason and a line.
//! 2. `Cfg::build`: basic blocks from jump targets, a virtual exit node after every return.
//!    Three normalisations are applied to edges: identical trivial return blocks
//!    (`LOAD_CONST k`/`LOAD_FAST x` + `RETURN_VALUE`, which CPython duplicates) are merged; blocks
//!    holding only `NOP`s are jumped through; and CPython's *loop inversion* of `while` loops (the
//!    test is compiled twice, once before the loop and once at its bottom) is undone by sending
//!    every edge into the bottom copy of the test to the top copy, when the two are instruction for
//!    instruction the same (same opcodes, arguments and lines; jumps to corresponding places).
//!    (A test ending in a chained comparison is not recognised; its loop keeps the inverted shape
//!    `if c: loop: body; c; if not c: break`.)
//!    Running either copy does the same thing, so the redirect cannot change behaviour.
//! 3. `Cfg::find_loops`: every back edge (to a dominator) closes a loop; `FOR_ITER` blocks head
//!    `for` loops, any other header a `while` loop. A loop's exits are classified once: return
//!    paths taken from one place (or trivial returns) stay inline; the rest must be one follow
//!    node (`break` target) and, for `for/else`/`while/else`, one "else" node.
//! 4. `Translator`: structure recovery and stack-to-ANF translation in one recursive walk. A region
//!    is translated from an entry block up to a follow block. A conditional jump becomes an `If`
//!    whose branches run up to the join: the nearest block every path through the branch reaches
//!    unless it leaves (see `Translator::join`). Inside a loop, reaching the loop header is
//!    `Continue`, reaching its follow is `Break`; a return is `Return` wherever it occurs. Values
//!    flowing out of an `if` (`a or b`, `a if c else b`) go through synthetic locals `$tN`;
//!    short-circuit conditions whose branches share blocks are computed into a `$tN` first.
//! 5. Post-passes on the Bezoar (`tidy`): statements after an `if` one of whose branches always
//!    leaves (return/break/continue) move into the other branch; a `continue` at the tail of a loop
//!    body is dropped; and when no return is inside a loop, the returns of a tail `if` store
//!    `$ret`, which the function returns at its end (so loop-free functions need no exit status).
//!
//! Shapes emitted (for lowering):
//! - `for x in xs: B` → `r := op iter_snapshot(xs); for ri in r: store x ri; B`.
//! - `while c: B` → `loop: [c]; if rc: B else: break` (the test first, the body nested in the
//!   `then` branch by the post-pass); `while True: B` → `loop: B`.
//! - `break`/`continue` → `Break`/`Continue` of the innermost loop; `return v` → `Return(v)`.
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
//! - `lambda`/`def` inside: `op make_function(code, globals, defaults, kwdefaults, annotations,
//!   (cells...))`; captured locals live in real cells (`$cell.x`, `make_cell`/`cell_get`/`cell_set`).
//! - `f(*a, **k)`: `c := op star_call(f, a, k); r := c()`; `global x; x = v`: `setitem(globals,
//!   "x", v)` and `load_global.x(globals)` reads; `del x`: `del x`.
use crate::bezoar::ir::*;
use crate::py311::decode::{instructions, Instr};
use crate::py311::opcode::*;
use crate::py311::{
    CodeInfo, CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR, CO_ITERABLE_COROUTINE, CO_VARARGS, CO_VARKEYWORDS,
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
        let reason = describe_unsupported(ins.opcode).unwrap_or(UNSUPPORTED_OPCODE);
        Fallback { reason: reason.into(), opcode: Some(ins.name().into()), line: ins.line }
    }

    /// The bytecode does not have the shape CPython 3.11 gives the supported fragment.
    fn shape(what: &str, line: u32) -> Self {
        Fallback::new(format!("unexpected bytecode shape ({what})"), line)
    }
}

/// The Python construct behind an unsupported opcode, when it has one obvious source.
fn describe_unsupported(op: u8) -> Option<&'static str> {
    Some(match op {
        DELETE_GLOBAL => "del of a global",
        DELETE_DEREF | LOAD_CLASSDEREF => "closure (del of a captured variable, or a class body)",
        LOAD_NAME | STORE_NAME | DELETE_NAME => "module or class body",
        RAISE_VARARGS | RERAISE => "raise statement",
        LOAD_ASSERTION_ERROR => "assert statement",
        IMPORT_NAME | IMPORT_FROM | IMPORT_STAR => "import inside the function",
        BEFORE_WITH | BEFORE_ASYNC_WITH => "with statement",
        MATCH_CLASS | MATCH_MAPPING | MATCH_SEQUENCE | MATCH_KEYS | GET_LEN => "match statement",
        YIELD_VALUE | GET_AWAITABLE | SEND | GET_YIELD_FROM_ITER => "yield or await",
        _ => return None,
    })
}

type Result<T> = std::result::Result<T, Fallback>;

/// The local that collects the value of returns nested in a tail `if`.
pub const RETURN_LOCAL: &str = "$ret";

pub fn lift(ci: &CodeInfo) -> Result<Function> {
    check_code_object(ci)?;
    let instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
    if let Some(bad) = instrs.iter().find(|i| !is_supported(i.opcode)) {
        return Err(Fallback::unsupported(bad));
    }
    let cfg = Cfg::build(&instrs)?;
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
    loop {
        // A function held in a real cell (an escaping function refers to it) escapes too.
        let (plain, real_cells) = loop {
            let plain: HashSet<u32> = candidates.values().map(|k| k.2).filter(|c| !escaping.contains(c)).collect();
            // The function's own free variables (a @poppy closure) are the enclosing function's
            // cells, passed in as parameters after the arguments (see `params` below): the cell
            // itself when this code writes it or a real inner function captures it, else its value
            // (read once, at entry, like a global).
            let real_cells: HashSet<String> = ci
                .cellvars
                .iter()
                .filter(|c| captured_by_function(ci, c, &plain))
                .chain(ci.freevars.iter().filter(|v| free_needs_cell(ci, v, &plain)))
                .cloned()
                .collect();
            let held: Vec<u32> =
                candidates.iter().filter(|(n, k)| plain.contains(&k.2) && real_cells.contains(*n)).map(|(_, k)| k.2).collect();
            if held.is_empty() {
                break (plain, real_cells);
            }
            escaping.extend(held);
        };
        let mut t = Translator {
            ci,
            instrs: &instrs,
            cfg: &cfg,
            loops: &loops,
            ctx: Vec::new(),
            pdoms: HashMap::new(),
            consts: ci.consts.clone(),
            const_regs: HashMap::new(),
            nregs: 0,
            ntemps: 0,
            nflags: 0,
            budget: 4 * instrs.len() + 64,
            kwnames: None,
            line: ci.firstlineno,
            locals: ci.localsplus(),
            dot0: None,
            const_map: None,
            path: Vec::new(),
            global_regs: HashMap::new(),
            attr_regs: HashMap::new(),
            yield_mode: None,
            ncomp: 0,
            first_free: ci.localsplus().len() - ci.freevars.len(),
            stored_globals: instrs
                .iter()
                .filter(|i| i.opcode == STORE_GLOBAL)
                .filter_map(|i| ci.names.get(i.arg as usize).cloned())
                .collect(),
            known_funcs: candidates
                .iter()
                .filter(|(name, _)| !real_cells.contains(*name))
                .map(|(name, k)| (name.clone(), (k.clone(), plain.contains(&k.2))))
                .collect(),
            func_regs: HashMap::new(),
            inlining: HashSet::new(),
            plain_funcs: plain.clone(),
            tuple_lens: HashMap::new(),
            map_keys: HashMap::new(),
            fn_defaults: HashMap::new(),
            real_cells,
        };
        let res = t.region(0, cfg.exit(), Vec::new(), false);
        let escaped: HashSet<u32> = t.func_regs.values().filter(|(_, p)| *p).map(|(k, _)| k.2).collect();
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
                let mut nregs = t.nregs;
                tidy(&mut body, &mut nregs);
                return Ok(Function {
                    name: ci.name.clone(),
                    qualname: ci.qualname.clone(),
                    filename: ci.filename.clone(),
                    firstlineno: ci.firstlineno,
                    // CPython binds positional and keyword-only parameters, then the `*args` tuple and
                    // the `**kwargs` dict, into the frame's first locals.
                    // A closure's free variables follow, as `$cell.x` locals holding the cells.
                    params: ci.varnames[..nparams(ci)]
                        .iter()
                        .cloned()
                        .chain(ci.freevars.iter().map(|v| {
                            if t.real_cells.contains(v) {
                                cell_local(v)
                            } else {
                                v.clone()
                            }
                        }))
                        .collect(),
                    consts: t.consts,
                    body,
                    nregs,
                });
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
    if flag(CO_COROUTINE) || flag(CO_ITERABLE_COROUTINE) {
        return at_def("coroutine (async def)");
    }
    if flag(CO_GENERATOR) {
        return at_def("generator function");
    }
    if !ci.exceptiontable.is_empty() {
        // Report the line of the first protected instruction (the start of the first entry,
        // a 6-bit-chunk varint counting code units).
        let mut bytes = ci.exceptiontable.iter();
        let mut b = *bytes.next().unwrap_or(&0);
        let mut start = (b & 63) as u32;
        while b & 64 != 0 {
            b = *bytes.next().unwrap_or(&0);
            start = (start << 6) | (b & 63) as u32;
        }
        let line = ci.lines.iter().find(|l| l.0 <= 2 * start && 2 * start < l.1).map_or(0, |l| l.2);
        return Err(Fallback::new("exception handling (try/with)", line));
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
            // Handled where they come from an inlined comprehension or generator expression;
            // anything else falls back with the construct's reason (see `Translator::instr`).
            | MAKE_FUNCTION
            | MAKE_CELL
            | LOAD_CLOSURE
            | LOAD_DEREF
            | STORE_DEREF
            | COPY_FREE_VARS
            | MAP_ADD
            | RETURN_GENERATOR
            | YIELD_VALUE
            | STORE_GLOBAL
            | CALL_FUNCTION_EX
            | DICT_MERGE
            | DELETE_FAST
    )
}

/// `POP_JUMP_*` conditional jumps: `(tests for None, jumps when the test holds)`. The truth tests
/// "hold" when the value is true; the None tests when the value is None.
fn pop_jump_sense(op: u8) -> Option<(bool, bool)> {
    match op {
        POP_JUMP_FORWARD_IF_TRUE | POP_JUMP_BACKWARD_IF_TRUE => Some((false, true)),
        POP_JUMP_FORWARD_IF_FALSE | POP_JUMP_BACKWARD_IF_FALSE => Some((false, false)),
        POP_JUMP_FORWARD_IF_NONE | POP_JUMP_BACKWARD_IF_NONE => Some((true, true)),
        POP_JUMP_FORWARD_IF_NOT_NONE | POP_JUMP_BACKWARD_IF_NOT_NONE => Some((true, false)),
        _ => None,
    }
}

fn is_unconditional_jump(op: u8) -> bool {
    matches!(op, JUMP_FORWARD | JUMP_BACKWARD | JUMP_BACKWARD_NO_INTERRUPT)
}

// ---------------------------------------------------------------------------------------------
// Undoing while-loop inversion

/// CPython 3.11 compiles `while c: B` as `[c] if false goto X; L: B; [c] if true goto L; X:`.
/// Finds each bottom copy of a test that matches the top copy instruction for instruction and
/// returns `(top start, bottom start, bottom jump)` instruction indices: entering the bottom copy
/// can be replaced by entering the top one. (`continue` already jumps to the top copy.)
fn loop_inversions(instrs: &[Instr]) -> Vec<(usize, usize, usize)> {
    let index_of = |offset: u32| instrs.binary_search_by_key(&offset, |i| i.offset).ok();
    // Where control really goes from instruction index `t`: past NOPs and unconditional forward jumps.
    let resolve = |mut t: usize| {
        for _ in 0..8 {
            match instrs.get(t) {
                Some(i) if i.opcode == NOP => t += 1,
                Some(i) if i.opcode == JUMP_FORWARD => match i.jump_target().and_then(index_of) {
                    Some(n) => t = n,
                    None => break,
                },
                _ => break,
            }
        }
        t
    };
    // Two places continue the same way: the same instruction, or identical trivial returns.
    let same_exit = |a: usize, b: usize| {
        let (a, b) = (resolve(a), resolve(b));
        let trivial_return = |t: usize| {
            matches!(instrs.get(t).map(|i| i.opcode), Some(LOAD_CONST | LOAD_FAST))
                && instrs.get(t + 1).is_some_and(|i| i.opcode == RETURN_VALUE)
        };
        a == b
            || (trivial_return(a)
                && trivial_return(b)
                && (instrs[a].opcode, instrs[a].arg) == (instrs[b].opcode, instrs[b].arg))
    };
    #[derive(PartialEq)]
    enum Place {
        Loop,
        Exit,
        /// Distance from the end of the test copy.
        Rel(usize),
    }
    let mut out = Vec::new();
    for (i, bottom) in instrs.iter().enumerate() {
        if !is_backward_jump(bottom.opcode) || pop_jump_sense(bottom.opcode).is_none() {
            continue;
        }
        let Some(l) = bottom.jump_target().and_then(index_of) else {
            continue;
        };
        if l == 0 || l >= i {
            continue;
        }
        let gj = l - 1;
        let top = &instrs[gj];
        if is_backward_jump(top.opcode) || pop_jump_sense(top.opcode).is_none() || top.line != bottom.line {
            continue;
        }
        let Some(xg) = top.jump_target().and_then(index_of) else {
            continue;
        };
        if !same_exit(xg, i + 1) {
            continue;
        }
        // Places of jump targets, seen from the top copy (ending before `l`) and the bottom copy
        // (ending before `i + 1`).
        let place_top = |from: usize, t: usize| {
            if t == l {
                Some(Place::Loop)
            } else if same_exit(t, xg) {
                Some(Place::Exit)
            } else {
                (from < t && t < l).then(|| Place::Rel(l - t))
            }
        };
        let place_bottom = |from: usize, t: usize| {
            if t == l {
                Some(Place::Loop)
            } else if same_exit(t, i + 1) {
                Some(Place::Exit)
            } else {
                (from < t && t <= i).then(|| Place::Rel(i + 1 - t))
            }
        };
        // (when the test holds, when it does not) places of a conditional jump.
        let cond_places = |ins: &Instr, at: usize, place: &dyn Fn(usize, usize) -> Option<Place>| {
            let (none, jump_if) = pop_jump_sense(ins.opcode)?;
            let target = place(at, ins.jump_target().and_then(index_of)?)?;
            let next = place(at, at + 1)?;
            Some(if jump_if { (none, target, next) } else { (none, next, target) })
        };
        let same = |g: usize, b: usize| -> bool {
            let (gi, bi) = (&instrs[g], &instrs[b]);
            if gi.line != bi.line {
                return false;
            }
            if pop_jump_sense(gi.opcode).is_some() || pop_jump_sense(bi.opcode).is_some() {
                return match (cond_places(gi, g, &place_top), cond_places(bi, b, &place_bottom)) {
                    (Some(a), Some(c)) => a == c,
                    _ => false,
                };
            }
            let (gj, bj) = (gi.jump_target(), bi.jump_target());
            if gj.is_some() || bj.is_some() {
                let same_kind =
                    gi.opcode == bi.opcode || (is_unconditional_jump(gi.opcode) && is_unconditional_jump(bi.opcode));
                return same_kind
                    && matches!(
                        (gj.and_then(index_of).and_then(|t| place_top(g, t)), bj.and_then(index_of).and_then(|t| place_bottom(b, t))),
                        (Some(a), Some(c)) if a == c
                    );
            }
            gi.opcode == bi.opcode && gi.arg == bi.arg
        };
        let mut m = 0;
        while m <= gj && i - m >= l && same(gj - m, i - m) {
            m += 1;
        }
        if m >= 2 {
            out.push((gj + 1 - m, i + 1 - m, i));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Control-flow graph

/// A CFG node: a block index, or `Cfg::exit()` (the virtual node after every return).
type Node = usize;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Term {
    /// Falls through into the next block.
    Next(Node),
    Jump(Node),
    /// Conditional jump (the block's last instruction): `next` when not taken.
    Branch {
        jump: Node,
        next: Node,
    },
    /// `FOR_ITER`: `body` while items remain, `exit` when exhausted.
    ForIter {
        body: Node,
        exit: Node,
    },
    Return,
}

struct BasicBlock {
    /// Instruction indices of the straight-line part (the terminator instruction excluded).
    body: std::ops::Range<usize>,
    /// Index of the terminating jump/return instruction, if any.
    term_instr: Option<usize>,
    term: Term,
    /// A trivial return block (`LOAD_CONST k`/`LOAD_FAST x`; `RETURN_VALUE`): pure, so it may be
    /// translated once per path that reaches it.
    trivial_return: bool,
}

struct Cfg {
    blocks: Vec<BasicBlock>,
    /// Blocks reachable from the entry (the others are left over from the edge normalisations).
    reachable: Vec<bool>,
    /// Reachable predecessors of each block.
    preds: Vec<Vec<Node>>,
    /// Undone while-loop inversions (see `loop_inversions`).
    inversions: Vec<(usize, usize, usize)>,
}

impl Cfg {
    fn exit(&self) -> Node {
        self.blocks.len()
    }

    fn build(instrs: &[Instr]) -> Result<Cfg> {
        let index_of = |offset: u32, from: &Instr| {
            instrs
                .binary_search_by_key(&offset, |i| i.offset)
                .map_err(|_| Fallback::shape("jump into an instruction", from.line))
        };
        let inversions = loop_inversions(instrs);
        // Leaders: the entry, `FOR_ITER`s, jump targets, instructions after jumps/returns, the start of every
        // `LOAD_CONST/LOAD_FAST; RETURN_VALUE` tail (so duplicated return blocks can be merged),
        // and both copies of inverted loop tests.
        let mut leader = vec![false; instrs.len() + 1];
        leader[0] = true;
        for (i, ins) in instrs.iter().enumerate() {
            if ins.opcode == FOR_ITER {
                // A loop head even when no `continue` or end of body jumps back to it.
                leader[i] = true;
            }
            if let Some(target) = ins.jump_target() {
                leader[index_of(target, ins)?] = true;
                leader[i + 1] = true;
            }
            if ins.opcode == RETURN_VALUE {
                leader[i + 1] = true;
                if i > 0 && matches!(instrs[i - 1].opcode, LOAD_CONST | LOAD_FAST) {
                    leader[i - 1] = true;
                }
            }
        }
        for &(top, bottom, _) in &inversions {
            leader[top] = true;
            leader[bottom] = true;
        }
        let starts: Vec<usize> = (0..instrs.len()).filter(|&i| leader[i]).collect();
        let block_of = |i: usize| starts.binary_search(&i).expect("jump targets are leaders");
        let end_of = |b: usize| starts.get(b + 1).copied().unwrap_or(instrs.len());

        // Trivial return blocks with identical instructions are the same code: map each to the
        // last copy. The bottom copy of an inverted loop test maps to the top copy.
        let trivial_return = |b: usize| -> Option<(u8, u32)> {
            let (s, e) = (starts[b], end_of(b));
            (e == s + 2 && instrs[s + 1].opcode == RETURN_VALUE).then(|| (instrs[s].opcode, instrs[s].arg))
        };
        let mut canon: Vec<Node> = (0..starts.len())
            .map(|b| match trivial_return(b) {
                Some(key) => (b..starts.len()).rev().find(|&c| trivial_return(c) == Some(key)).unwrap(),
                None => b,
            })
            .collect();
        for &(top, bottom, _) in &inversions {
            canon[block_of(bottom)] = block_of(top);
        }

        let mut blocks = Vec::with_capacity(starts.len());
        for (b, &start) in starts.iter().enumerate() {
            let end = end_of(b);
            let last = &instrs[end - 1];
            let next = || -> Result<Node> {
                if end < instrs.len() {
                    Ok(canon[block_of(end)])
                } else {
                    Err(Fallback::shape("code runs off the end", last.line))
                }
            };
            let target = || -> Result<Node> { Ok(canon[block_of(index_of(last.jump_target().unwrap(), last)?)]) };
            let term = match last.opcode {
                RETURN_VALUE => Term::Return,
                op if is_unconditional_jump(op) => Term::Jump(target()?),
                FOR_ITER => Term::ForIter { body: next()?, exit: target()? },
                op if is_jump(op) => Term::Branch { jump: target()?, next: next()? },
                _ => Term::Next(next()?),
            };
            let straight = !matches!(term, Term::Next(_));
            blocks.push(BasicBlock {
                body: start..if straight { end - 1 } else { end },
                term_instr: straight.then_some(end - 1),
                term,
                trivial_return: trivial_return(b).is_some(),
            });
        }

        // Jump through blocks that hold only NOPs (line markers) and an unconditional transfer.
        let n = blocks.len();
        let empty_target = |b: Node| -> Option<Node> {
            let blk = &blocks[b];
            match blk.term {
                Term::Next(t) | Term::Jump(t) if instrs[blk.body.clone()].iter().all(|i| i.opcode == NOP) => Some(t),
                _ => None,
            }
        };
        let thread: Vec<Node> = (0..n)
            .map(|b| {
                let mut cur = b;
                for _ in 0..n {
                    match empty_target(cur) {
                        Some(t) if t != cur => cur = t,
                        _ => break,
                    }
                }
                cur
            })
            .collect();
        for blk in &mut blocks {
            let t = |x: Node| thread[x];
            blk.term = match blk.term {
                Term::Next(x) => Term::Next(t(x)),
                Term::Jump(x) => Term::Jump(t(x)),
                Term::Branch { jump, next } => Term::Branch { jump: t(jump), next: t(next) },
                Term::ForIter { body, exit } => Term::ForIter { body: t(body), exit: t(exit) },
                Term::Return => Term::Return,
            };
        }

        let mut cfg = Cfg { blocks, reachable: vec![false; n], preds: vec![Vec::new(); n], inversions };
        let mut work = vec![0];
        while let Some(b) = work.pop() {
            if b < n && !cfg.reachable[b] {
                cfg.reachable[b] = true;
                work.extend(cfg.successors(b));
            }
        }
        for b in (0..n).filter(|&b| cfg.reachable[b]) {
            for s in cfg.successors(b) {
                if s < n {
                    cfg.preds[s].push(b);
                }
            }
        }
        Ok(cfg)
    }

    fn successors(&self, b: Node) -> Vec<Node> {
        match self.blocks[b].term {
            Term::Next(n) | Term::Jump(n) => vec![n],
            Term::Branch { jump, next } => vec![next, jump],
            Term::ForIter { body, exit } => vec![body, exit],
            Term::Return => vec![self.exit()],
        }
    }

    fn term_line(&self, b: Node, instrs: &[Instr]) -> u32 {
        let blk = &self.blocks[b];
        instrs[blk.term_instr.unwrap_or(blk.body.end.max(blk.body.start + 1) - 1)].line
    }

    /// Whether block `b` only pops the stack (`POP_TOP`/`NOP`) on its way to one successor: how a
    /// `break` out of a `for` loop drops the iterator.
    fn pop_only(&self, b: Node, instrs: &[Instr]) -> Option<Node> {
        let blk = &self.blocks[b];
        match blk.term {
            Term::Next(t) | Term::Jump(t)
                if instrs[blk.body.clone()].iter().all(|i| matches!(i.opcode, POP_TOP | NOP)) =>
            {
                Some(t)
            }
            _ => None,
        }
    }

    /// Finds every loop and classifies its exits.
    fn find_loops(&self, instrs: &[Instr]) -> Result<HashMap<Node, LoopInfo>> {
        let n = self.blocks.len();
        let live: Vec<Node> = (0..n).filter(|&b| self.reachable[b]).collect();
        // Dominator sets by iterative data flow.
        let mut dom = vec![vec![true; n]; n];
        dom[0] = (0..n).map(|i| i == 0).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for &b in live.iter().filter(|&&b| b != 0) {
                let mut set = vec![true; n];
                for &p in &self.preds[b] {
                    for (x, &d) in set.iter_mut().zip(&dom[p]) {
                        *x &= d;
                    }
                }
                set[b] = true;
                if set != dom[b] {
                    dom[b] = set;
                    changed = true;
                }
            }
        }
        // Back edges (to a dominator); any other edge to an earlier block makes the flow irreducible.
        let mut back: HashMap<Node, Vec<Node>> = HashMap::new();
        for &u in &live {
            for s in self.successors(u) {
                if s < n && dom[u][s] {
                    back.entry(s).or_default().push(u);
                } else if s <= u {
                    return Err(Fallback::new("irreducible control flow", self.term_line(u, instrs)));
                }
            }
        }
        let mut headers: Vec<Node> = back.keys().copied().collect();
        headers.extend(live.iter().copied().filter(|&b| matches!(self.blocks[b].term, Term::ForIter { .. })));
        headers.sort_unstable();
        headers.dedup();

        let mut loops = HashMap::new();
        for h in headers {
            let sources = back.get(&h).cloned().unwrap_or_default();
            let is_for = matches!(self.blocks[h].term, Term::ForIter { .. });
            let line = self.term_line(h, instrs);
            // The loop statement's code: CPython lays out a `for` body (breaks and returns
            // included) between `FOR_ITER` and its exit target, and a `while` body up to its last
            // jump back (or the bottom copy of its test).
            let first = self.blocks[h].body.start;
            let end = match self.blocks[h].term_instr {
                Some(i) if is_for => instrs[i].jump_target().and_then(|t| instrs.iter().position(|x| x.offset == t)),
                _ => instrs
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| is_backward_jump(x.opcode) && x.jump_target() == Some(instrs[first].offset))
                    .map(|(i, _)| i + 1)
                    .chain(self.inversions.iter().filter(|inv| inv.0 == first).map(|inv| inv.2 + 1))
                    .max(),
            }
            .unwrap_or(instrs.len());
            let mut body: Vec<bool> =
                (0..n).map(|b| self.reachable[b] && (first..end).contains(&self.blocks[b].body.start)).collect();
            // The cleanup of a chained comparison in the bottom copy of a `while` test may be laid
            // out after it: it still runs with the loop's stack.
            // (Only reached by conditional jumps from the loop: the loop's natural exit falls
            // through, so a block that pops an enclosing `for`'s iterator is not taken for one.)
            while let Some(b) = (0..n).find(|&b| {
                !is_for
                    && !body[b]
                    && self.reachable[b]
                    && self.pop_only(b, instrs).is_some()
                    && self.preds[b].iter().all(|&p| {
                        body[p] && matches!(self.blocks[p].term, Term::Branch { jump, next } if jump == b && next != b)
                    })
            }) {
                body[b] = true;
            }
            // Every block that jumps back to the head must be inside.
            if sources.iter().any(|&u| !body[u]) {
                return Err(Fallback::shape("loop layout", line));
            }
            let mut exits: Vec<Node> =
                (0..n).filter(|&u| body[u]).flat_map(|u| self.successors(u)).filter(|&s| s < n && !body[s]).collect();
            exits.sort_unstable();
            exits.dedup();
            // Exits to a trivial return become that return where they occur (`break; return x`
            // is `return x`); the others need the loop's follow (and else) node.
            let mut normal: Vec<Node> = exits.iter().copied().filter(|&t| !self.blocks[t].trivial_return).collect();
            let too_many = || Err(Fallback::new("loop with more than two exits (besides returns)", line));
            let (follow, alt) = match self.blocks[h].term {
                Term::ForIter { exit, .. } => {
                    normal.retain(|&t| t != exit);
                    match normal.as_slice() {
                        [] => (Some(exit), None),
                        [x] => (Some(*x), Some(exit)),
                        _ => return too_many(),
                    }
                }
                _ => match normal.as_slice() {
                    [] => (if exits.len() == 1 { Some(exits[0]) } else { None }, None),
                    [x] => (Some(*x), None),
                    // `while ... else`: the else clause comes first in the code.
                    [a, x] => (Some(*x), Some(*a)),
                    _ => return too_many(),
                },
            };
            let latch = sources.iter().copied().max();
            loops.insert(h, LoopInfo { latch, follow, alt });
        }
        Ok(loops)
    }
}

/// A loop found in the CFG.
struct LoopInfo {
    /// The last block (in code order) that jumps back to the head: its jump is the normal end of
    /// an iteration, the others are `continue`s.
    latch: Option<Node>,
    /// Where a `break` goes (`None`: the loop is only left by returns).
    follow: Option<Node>,
    /// The `else` clause of `for/while ... else` whose `break`s go to `follow`.
    alt: Option<Node>,
}

// ---------------------------------------------------------------------------------------------
// Translation

/// A symbolic value-stack entry.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Reg(Reg),
    /// The NULL pushed below a callable (`PUSH_NULL`, `LOAD_GLOBAL` with the low bit, `LOAD_METHOD`).
    Null,
    /// The iterator of an enclosing `for` loop (the register holds the `IterSnapshot`).
    Iter(Reg),
    /// A code object among the constants (`co_consts` index), about to become a function.
    Code(u32),
    /// `LOAD_CLOSURE`: the cell of a local (its Bezoar name).
    Cell(String),
    /// A tuple of cells (a closure, for `MAKE_FUNCTION`).
    Cells(Vec<String>),
    /// A comprehension or generator expression function, not yet called.
    Func { code: u32, closure: Vec<String> },
    /// A generator expression called with its iterator, waiting for its consumer.
    Genexpr { code: u32, closure: Vec<String>, iter: Reg },
}

type Stack = Vec<Val>;

/// The loop being translated (innermost last).
struct LoopCtx {
    head: Node,
    latch: Option<Node>,
    follow: Option<Node>,
    alt: Option<Node>,
    /// `$brokeK`, set before each `break` when the loop has an else clause.
    flag: Option<String>,
    /// Stack at the head (a `continue` must leave it so).
    body_stack: Stack,
    /// Stack after the loop (a `break` must leave it so).
    outer_stack: Stack,
}

struct Translator<'a> {
    ci: &'a CodeInfo,
    instrs: &'a [Instr],
    cfg: &'a Cfg,
    loops: &'a HashMap<Node, LoopInfo>,
    ctx: Vec<LoopCtx>,
    /// Post-dominator sets per loop scope (`None`: outside loops); see `Translator::join`.
    pdoms: HashMap<Option<Node>, std::rc::Rc<Vec<Vec<bool>>>>,
    consts: Vec<Const>,
    /// Registers bound to `Expr::Const` (BUILD_CONST_KEY_MAP reads its keys from one).
    const_regs: HashMap<Reg, u32>,
    nregs: u32,
    ntemps: u32,
    nflags: u32,
    /// Instructions that may still be translated: blocks reached along several paths (shared
    /// short-circuit operands) are translated once per path, within this limit.
    budget: usize,
    /// Keyword names set by `KW_NAMES` for the next `CALL`.
    kwnames: Option<Vec<String>>,
    /// Line of the instruction being translated.
    line: u32,
    /// The Bezoar names of the code object's "fast locals" slots (`CodeInfo::localsplus`): the
    /// names themselves in the @poppy function; renamed locals (`$cK.x`) and the enclosing
    /// names of free variables in an inlined comprehension.
    locals: Vec<String>,
    /// In an inlined comprehension: the register of its iterator (the local `.0`).
    dot0: Option<Reg>,
    /// In an inlined comprehension: its `co_consts` indices mapped into the shared pool.
    const_map: Option<Vec<u32>>,
    /// `co_consts` indices leading from the @poppy function's code to this code object.
    path: Vec<u32>,
    /// Registers bound to `Expr::Global` / `getattr` (to recognise generator consumers).
    global_regs: HashMap<Reg, String>,
    attr_regs: HashMap<Reg, String>,
    /// In an inlined generator expression: what a `yield` does.
    yield_mode: Option<YieldMode>,
    /// Inlined code objects so far (numbering their renamed locals).
    ncomp: u32,
    /// Locals (Bezoar names) that live in real cells because an inner function or lambda
    /// captures them: their cell object is held in the local `$cell.NAME`.
    real_cells: HashSet<String>,
    /// Index of the first free variable in `locals`.
    first_free: usize,
    /// Globals the function assigns (`global x; x = ...`): read in program order.
    stored_globals: HashSet<String>,
    /// Locals that hold one known inner function for the whole run (see `known_functions`), and
    /// the registers loaded from them: calls of these may be inlined (`inline_call`).
    /// (With whether the function is "plain": it has no function object and its captured
    /// variables are ordinary locals, so every use must be an inlined call.)
    known_funcs: HashMap<String, (KnownFunc, bool)>,
    func_regs: HashMap<Reg, (KnownFunc, bool)>,
    /// Inner functions being inlined (no recursive inlining).
    inlining: HashSet<u32>,
    /// Codes (among this function's constants) of the plain inner functions.
    plain_funcs: HashSet<u32>,
    /// Lengths of the tuples built by `BuildTuple`, keys of the dicts built by `BuildMap` (to
    /// know a plain function's defaults), and those defaults by code: the number of positional
    /// defaults (held in the local `$fnK.defaults`) and the names of the keyword-only ones
    /// (`$fnK.kwdefaults`).
    tuple_lens: HashMap<Reg, usize>,
    map_keys: HashMap<Reg, Vec<String>>,
    fn_defaults: HashMap<u32, (usize, Vec<String>)>,
}

/// An inner function known by its code object: (the code object defining it, that code object's
/// `co_consts` path from the @poppy function, the index of the function's code among its
/// constants).
type KnownFunc = (std::rc::Rc<CodeInfo>, Vec<u32>, u32);

/// Locals of the @poppy function assigned exactly once, straight from `MAKE_FUNCTION` of an
/// inner function or lambda (`def g` / `g = lambda ...`, no decorator), never deleted and not
/// captured by an inner function (comprehensions may read them): their code object by local.
fn known_functions(ci: &CodeInfo, instrs: &[Instr]) -> HashMap<String, KnownFunc> {
    let owner = std::rc::Rc::new(ci.clone());
    let stores = |n: u32| {
        instrs
            .iter()
            .filter(|i| matches!(i.opcode, STORE_FAST | DELETE_FAST | STORE_DEREF | DELETE_DEREF) && i.arg == n)
            .count()
    };
    let lp = ci.localsplus();
    // Names nested code assigns through a cell (`nonlocal g` / a walrus in a comprehension).
    fn written_by_children(ci: &CodeInfo, out: &mut HashSet<String>) {
        for ch in ci.children.values() {
            let lp = ch.localsplus();
            let first_free = lp.len() - ch.freevars.len();
            for i in instructions(&ch.code, &ch.lines) {
                if matches!(i.opcode, STORE_DEREF | DELETE_DEREF) && i.arg as usize >= first_free {
                    out.extend(lp.get(i.arg as usize).cloned());
                }
            }
            written_by_children(ch, out);
        }
    }
    let mut rebound = HashSet::new();
    written_by_children(ci, &mut rebound);
    let mut out = HashMap::new();
    for w in instrs.windows(3) {
        let (k, mf, st) = (&w[0], &w[1], &w[2]);
        if k.opcode == LOAD_CONST
            && mf.opcode == MAKE_FUNCTION
            && matches!(st.opcode, STORE_FAST | STORE_DEREF)
            && stores(st.arg) == 1
            && ci.children.get(&k.arg).is_some_and(|c| !is_comprehension(c))
        {
            if let Some(name) = lp.get(st.arg as usize).filter(|n| !rebound.contains(*n)) {
                out.insert(name.clone(), (owner.clone(), Vec::new(), k.arg));
            }
        }
    }
    out
}

/// The number of locals CPython binds from a call's arguments.
fn nparams(ci: &CodeInfo) -> usize {
    (ci.argcount + ci.kwonlyargcount) as usize
        + (ci.flags & CO_VARARGS != 0) as usize
        + (ci.flags & CO_VARKEYWORDS != 0) as usize
}

/// Whether the local `v` is surely bound wherever the function made from `co_consts[code]` can be
/// called: `v` is a parameter or is stored before any jump and before that `MAKE_FUNCTION`, and
/// is never deleted.
fn bound_before(ci: &CodeInfo, instrs: &[Instr], v: &str, code: u32) -> bool {
    let lp = ci.localsplus();
    let is_v = |i: &Instr| lp.get(i.arg as usize).is_some_and(|n| n == v);
    if instrs.iter().any(|i| matches!(i.opcode, DELETE_FAST | DELETE_DEREF) && is_v(i)) {
        return false;
    }
    if ci.varnames[..nparams(ci)].iter().any(|p| p == v) {
        return true;
    }
    for (n, i) in instrs.iter().enumerate() {
        if matches!(i.opcode, STORE_FAST | STORE_DEREF) && is_v(i) {
            return true;
        }
        let defines = i.opcode == MAKE_FUNCTION && n > 0 && instrs[n - 1].opcode == LOAD_CONST && instrs[n - 1].arg == code;
        if defines || i.jump_target().is_some() || matches!(i.opcode, RETURN_VALUE | FOR_ITER) {
            return false;
        }
    }
    false
}

fn is_comprehension(ci: &CodeInfo) -> bool {
    matches!(ci.name.as_str(), "<listcomp>" | "<setcomp>" | "<dictcomp>" | "<genexpr>")
}

/// Whether the local `name` of `ci` is captured by an inner function or lambda (directly, or
/// through inlined comprehensions or the `plain` inner functions among `ci`'s constants, which
/// are always inlined): it then needs a real cell.
fn captured_by_function(ci: &CodeInfo, name: &str, plain: &HashSet<u32>) -> bool {
    ci.children.iter().any(|(k, ch)| {
        ch.freevars.iter().any(|f| f == name)
            && (!(is_comprehension(ch) || plain.contains(k)) || captured_by_function(ch, name, &HashSet::new()))
    })
}

/// Whether a free variable of the function must stay a cell: written here or by inner code
/// (`nonlocal`), or captured by an inner function that is a real function object.
fn free_needs_cell(ci: &CodeInfo, name: &str, plain: &HashSet<u32>) -> bool {
    fn writes(ci: &CodeInfo, name: &str) -> bool {
        let lp = ci.localsplus();
        instructions(&ci.code, &ci.lines).any(|i| {
            matches!(i.opcode, STORE_DEREF | DELETE_DEREF) && lp.get(i.arg as usize).is_some_and(|n| n == name)
        }) || ci.children.values().any(|ch| ch.freevars.iter().any(|f| f == name) && writes(ch, name))
    }
    writes(ci, name) || captured_by_function(ci, name, plain)
}

fn cell_local(name: &str) -> String {
    format!("$cell.{name}")
}

/// What an inlined generator expression does with each value it yields.
#[derive(Clone, Debug)]
enum YieldMode {
    /// Append it to the list in the register.
    Collect(Reg),
    /// `any()` (`all: false`) / `all()`: on a true (false) value, store True (False) in the local
    /// and break out of the (single) loop.
    AnyAll { flag: String, all: bool },
}

/// Builtins that consume a generator expression completely before doing anything observable
/// with its items, so materialising the items first (a loop) is equivalent; and `any`/`all`,
/// which are lowered as a loop with a `break`. `join` is `str.join` (a bound method).
const GENEXPR_CONSUMERS: [&str; 12] =
    ["list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max", "any", "all", "join"];

fn stmt(kind: StmtKind, line: u32) -> Stmt {
    Stmt { kind, line }
}

impl Translator<'_> {
    fn new_reg(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }

    fn bind(&mut self, e: Expr, line: u32, out: &mut Block) -> Reg {
        let r = self.new_reg();
        match &e {
            Expr::Const(k) => {
                self.const_regs.insert(r, *k);
            }
            Expr::Op(Intrinsic::BuildTuple, items) => {
                self.tuple_lens.insert(r, items.len());
            }
            Expr::Op(Intrinsic::BuildMap, kv) => {
                let keys = kv.chunks(2).map(|p| match self.const_regs.get(&p[0]).and_then(|k| self.consts.get(*k as usize)) {
                    Some(Const::Str(name)) => Some(name.clone()),
                    _ => None,
                });
                if let Some(keys) = keys.collect::<Option<Vec<_>>>() {
                    self.map_keys.insert(r, keys);
                }
            }
            _ => {}
        }
        out.push(stmt(StmtKind::Let(r, e), line));
        r
    }

    fn bind_const(&mut self, c: Const, line: u32, out: &mut Block) -> Reg {
        let k = self.const_index(c);
        self.bind(Expr::Const(k), line, out)
    }

    fn push_op(&mut self, op: Intrinsic, args: Vec<Reg>, ins: &Instr, stack: &mut Stack, out: &mut Block) {
        let r = self.bind(Expr::Op(op, args), ins.line, out);
        stack.push(Val::Reg(r));
    }

    fn const_index(&mut self, c: Const) -> u32 {
        match self.consts.iter().position(|k| *k == c) {
            Some(i) => i as u32,
            None => {
                self.consts.push(c);
                self.consts.len() as u32 - 1
            }
        }
    }

    fn temp(&mut self) -> String {
        self.ntemps += 1;
        format!("$t{}", self.ntemps - 1)
    }

    fn spend(&mut self, n: usize) -> Result<()> {
        self.budget = self
            .budget
            .checked_sub(n)
            .ok_or_else(|| Fallback::new("control flow too irregular (blocks shared by too many paths)", self.line))?;
        Ok(())
    }

    fn pop(stack: &mut Stack, line: u32) -> Result<Val> {
        stack.pop().ok_or_else(|| Fallback::shape("stack underflow", line))
    }

    fn pop_reg(stack: &mut Stack, line: u32) -> Result<Reg> {
        match Self::pop(stack, line)? {
            Val::Reg(r) => Ok(r),
            Val::Genexpr { .. } => Err(Fallback::new(
                "generator expression used other than as an argument of a call (stored, returned or operated on)",
                line,
            )),
            v => Err(Fallback::shape(&format!("{v:?} used as a value"), line)),
        }
    }

    fn pop_regs(stack: &mut Stack, n: usize, line: u32) -> Result<Vec<Reg>> {
        let mut rs = (0..n).map(|_| Self::pop_reg(stack, line)).collect::<Result<Vec<_>>>()?;
        rs.reverse();
        Ok(rs)
    }

    fn name(names: &[String], i: u32, line: u32) -> Result<String> {
        names.get(i as usize).cloned().ok_or_else(|| Fallback::shape("name index out of range", line))
    }

    // -- Joins -----------------------------------------------------------------------------

    /// Successors of `b` in the current loop scope, with `exit()` standing for END: a return, or
    /// the latch's jump back to the head (the normal end of an iteration). Edges that leave the
    /// iteration otherwise (`continue`, `break`, to the else clause) are dropped: they become
    /// `Continue`/`Break` statements wherever they occur.
    fn scope_succ(&self, b: Node) -> Vec<Node> {
        let end = self.cfg.exit();
        let ctx = self.ctx.last();
        self.cfg
            .successors(b)
            .into_iter()
            .filter_map(|s| match ctx {
                Some(c) if s == c.head => (Some(b) == c.latch).then_some(end),
                Some(c) if Some(s) == c.follow || Some(s) == c.alt => None,
                _ => Some(s),
            })
            .collect()
    }

    /// Post-dominator sets in the current scope, ignoring paths that leave the iteration: `x` is in
    /// `pd[b]` when every path from `b` to END passes `x`. A block all of whose paths leave has
    /// every block in its set (vacuous).
    fn pdom_sets(&mut self) -> std::rc::Rc<Vec<Vec<bool>>> {
        let key = self.ctx.last().map(|c| c.head);
        if let Some(pd) = self.pdoms.get(&key) {
            return pd.clone();
        }
        let n = self.cfg.exit();
        let mut pd = vec![vec![true; n + 1]; n + 1];
        pd[n] = (0..=n).map(|i| i == n).collect();
        let succ: Vec<Vec<Node>> = (0..n).map(|b| self.scope_succ(b)).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for b in (0..n).rev().filter(|&b| self.cfg.reachable[b]) {
                let mut set = vec![true; n + 1];
                for &s in &succ[b] {
                    for (x, &p) in set.iter_mut().zip(&pd[s]) {
                        *x &= p;
                    }
                }
                set[b] = true;
                if set != pd[b] {
                    pd[b] = set;
                    changed = true;
                }
            }
        }
        let pd = std::rc::Rc::new(pd);
        self.pdoms.insert(key, pd.clone());
        pd
    }

    /// Blocks reachable from `starts` in the current scope, not expanding `stop` (nor END).
    fn live_reach(&self, starts: Vec<Node>, stop: Node) -> Vec<bool> {
        let n = self.cfg.exit();
        let mut seen = vec![false; n + 1];
        let mut work = starts;
        while let Some(b) = work.pop() {
            if seen[b] {
                continue;
            }
            seen[b] = true;
            if b != stop && b != n {
                work.extend(self.scope_succ(b));
            }
        }
        seen
    }

    /// The join of the branch ending block `b`: the nearest block (in code order) that every path
    /// from `b` reaches unless it leaves the iteration or returns, not beyond `follow`. `None` when
    /// every path leaves (both branches then run up to `follow`).
    fn join(&mut self, b: Node, follow: Node) -> Option<Node> {
        let pd = self.pdom_sets();
        let set = &pd[b];
        if set.iter().all(|&x| x) {
            return None;
        }
        let reach = self.live_reach(self.scope_succ(b), follow);
        (0..self.cfg.exit()).filter(|&c| c != b && set[c] && reach[c]).min()
    }

    // -- Regions ---------------------------------------------------------------------------

    /// Translates blocks from `entry` until control reaches `follow`. Returns the statements and
    /// the stack on reaching `follow`, or `None` for the stack when every path left (returned,
    /// broke out of or continued the innermost loop). `first`: `entry` is the head of the loop
    /// whose body this is (translate it even though it is also the follow).
    fn region(&mut self, entry: Node, follow: Node, mut stack: Stack, first: bool) -> Result<(Block, Option<Stack>)> {
        let cfg = self.cfg;
        let instrs = self.instrs;
        let mut out = Vec::new();
        let mut cur = entry;
        let mut at_head = first;
        loop {
            if !std::mem::take(&mut at_head) {
                if cur == follow {
                    return Ok((out, Some(stack)));
                }
                if let Some(exit) = self.loop_exit(cur, &stack)? {
                    out.extend(exit);
                    return Ok((out, None));
                }
                if self.loops.contains_key(&cur) {
                    match self.translate_loop(cur, &mut stack, &mut out)? {
                        Some(next) => {
                            cur = next;
                            continue;
                        }
                        None => return Ok((out, None)),
                    }
                }
            }
            if cur == cfg.exit() {
                return Err(Fallback::shape("control reaches the end without a return", self.line));
            }
            let blk = &cfg.blocks[cur];
            self.spend(blk.body.len() + 1)?;
            for ins in &instrs[blk.body.clone()] {
                self.line = ins.line;
                self.instr(ins, &mut stack, &mut out)?;
            }
            let term = blk.term_instr.map(|i| &instrs[i]);
            if let Some(t) = term {
                self.line = t.line;
            }
            match (blk.term, term) {
                (Term::Next(n), _) | (Term::Jump(n), _) => cur = n,
                (Term::Return, Some(ins)) => {
                    let v = Self::pop_reg(&mut stack, ins.line)?;
                    if !stack.is_empty() {
                        return Err(Fallback::shape("values left on the stack at return", ins.line));
                    }
                    out.push(stmt(StmtKind::Return(v), ins.line));
                    return Ok((out, None));
                }
                (Term::Branch { jump, next }, Some(ins)) => {
                    match self.branch(cur, ins, jump, next, follow, &mut stack, &mut out)? {
                        Some(join) => cur = join,
                        None => return Ok((out, None)),
                    }
                }
                (Term::ForIter { .. }, Some(ins)) => return Err(Fallback::shape("FOR_ITER outside a loop", ins.line)),
                _ => unreachable!("jump terminators always have their instruction"),
            }
        }
    }

    /// `continue`/`break` when `cur` is the innermost loop's head, follow or else clause.
    fn loop_exit(&mut self, cur: Node, stack: &Stack) -> Result<Option<Block>> {
        let line = self.line;
        let Some(c) = self.ctx.last() else {
            return Ok(None);
        };
        let (expected, kind, flag) = if cur == c.head {
            (&c.body_stack, StmtKind::Continue, None)
        } else if Some(cur) == c.follow {
            (&c.outer_stack, StmtKind::Break, c.flag.clone())
        } else if Some(cur) == c.alt {
            (&c.outer_stack, StmtKind::Break, None)
        } else {
            return Ok(None);
        };
        if expected != stack {
            return Err(Fallback::shape("stack at a break or continue", line));
        }
        let mut out = Vec::new();
        if let Some(flag) = flag {
            let t = self.bind_const(Const::Bool(true), line, &mut out);
            out.push(stmt(StmtKind::Store(flag, t), line));
        }
        out.push(stmt(kind, line));
        Ok(Some(out))
    }

    /// Translates the loop headed by `h` (and its else clause); returns where control continues.
    fn translate_loop(&mut self, h: Node, stack: &mut Stack, out: &mut Block) -> Result<Option<Node>> {
        let loops = self.loops;
        let info = &loops[&h];
        let blk = &self.cfg.blocks[h];
        let line = self.instrs
            [if blk.body.is_empty() { blk.term_instr.unwrap_or(blk.body.start) } else { blk.body.start }]
        .line;
        self.line = line;
        let flag = info.alt.map(|_| {
            self.nflags += 1;
            format!("$broke{}", self.nflags - 1)
        });
        if let Some(flag) = &flag {
            let f = self.bind_const(Const::Bool(false), line, out);
            out.push(stmt(StmtKind::Store(flag.clone(), f), line));
        }
        let mut ctx = LoopCtx {
            head: h,
            latch: info.latch,
            follow: info.follow,
            alt: info.alt,
            flag: flag.clone(),
            body_stack: stack.clone(),
            outer_stack: stack.clone(),
        };
        if let Term::ForIter { body: entry, .. } = blk.term {
            let Some(&Val::Iter(iter)) = stack.last() else {
                return Err(Fallback::shape("FOR_ITER without an iterator", line));
            };
            ctx.outer_stack.pop();
            let item = self.new_reg();
            let mut body_stack = stack.clone();
            body_stack.push(Val::Reg(item));
            self.ctx.push(ctx);
            let body = self.region(entry, h, body_stack, false);
            let ctx = self.ctx.pop().expect("pushed above");
            let (body, end) = body?;
            if end.is_some_and(|e| e != *stack) {
                return Err(Fallback::shape("stack changed by a loop body", line));
            }
            out.push(stmt(StmtKind::For { iter, item, body }, line));
            *stack = ctx.outer_stack;
        } else {
            self.ctx.push(ctx);
            let body = self.region(h, h, stack.clone(), true);
            self.ctx.pop();
            let (body, end) = body?;
            if end.is_some_and(|e| e != *stack) {
                return Err(Fallback::shape("stack changed by a loop body", line));
            }
            out.push(stmt(StmtKind::Loop { body }, line));
        }
        if let (Some(alt), Some(flag)) = (info.alt, flag) {
            // The else clause runs unless a break set the flag.
            let broke = self.bind(Expr::Load(flag), line, out);
            let follow = info.follow.expect("an else clause comes with a follow");
            let (mut else_body, else_end) = self.region(alt, follow, stack.clone(), false)?;
            let mut then_body = Vec::new();
            let (merged, after) = self.merge(&mut then_body, Some(stack.clone()), &mut else_body, else_end, line)?;
            out.push(stmt(StmtKind::If { cond: broke, then_body, else_body }, line));
            out.extend(after);
            *stack = merged.expect("the break side reaches the follow");
        }
        Ok(info.follow)
    }

    /// The `bool` register of a `POP_JUMP_*` test of `x`, and whether the jump is taken when it
    /// is true.
    fn test(&mut self, ins: &Instr, x: Reg, out: &mut Block) -> (Reg, bool) {
        let (none_test, jump_if) = pop_jump_sense(ins.opcode).expect("a POP_JUMP instruction");
        if !none_test {
            (self.bind(Expr::Op(Intrinsic::Truth, vec![x]), ins.line, out), jump_if)
        } else {
            // Phrase the condition so the fall-through path is `then`.
            let none = self.bind_const(Const::None, ins.line, out);
            (self.bind(Expr::Op(Intrinsic::Is { negate: jump_if }, vec![x, none]), ins.line, out), false)
        }
    }

    /// Translates the `if` of a conditional jump at the end of block `b`; returns where control
    /// continues (`None` when every path left).
    #[allow(clippy::too_many_arguments)]
    fn branch(
        &mut self,
        b: Node,
        ins: &Instr,
        jump: Node,
        next: Node,
        follow: Node,
        stack: &mut Stack,
        out: &mut Block,
    ) -> Result<Option<Node>> {
        let line = ins.line;
        let x = Self::pop_reg(stack, line)?;
        // `JUMP_IF_*_OR_POP` (`a or b`, `a and b` as values) keeps the operand when it jumps.
        let keeps = matches!(ins.opcode, JUMP_IF_FALSE_OR_POP | JUMP_IF_TRUE_OR_POP);
        let (cond, cond_jumps) = if keeps {
            (self.bind(Expr::Op(Intrinsic::Truth, vec![x]), line, out), ins.opcode == JUMP_IF_TRUE_OR_POP)
        } else {
            self.test(ins, x, out)
        };
        let end = self.join(b, follow).unwrap_or(follow);
        if !keeps {
            if let Some((members, t1, t2)) = self.condition(b, next, jump, end) {
                let taken = (cond, cond_jumps, next, jump);
                if let Some(cont) = self.short_circuit(taken, &members, (t1, t2), end, stack, out, line)? {
                    return Ok(cont);
                }
            }
        }
        let mut jump_stack = stack.clone();
        if keeps {
            jump_stack.push(Val::Reg(x));
        }
        let next_side = self.region(next, end, stack.clone(), false)?;
        let jump_side = self.region(jump, end, jump_stack, false)?;
        let ((mut then_body, then_end), (mut else_body, else_end)) =
            if cond_jumps { (jump_side, next_side) } else { (next_side, jump_side) };
        let (merged, after) = self.merge(&mut then_body, then_end, &mut else_body, else_end, line)?;
        out.push(stmt(StmtKind::If { cond, then_body, else_body }, line));
        out.extend(after);
        Ok(merged.map(|s| {
            *stack = s;
            end
        }))
    }

    /// Joins the stacks of two branches. Entries that differ (a value computed differently on
    /// each side) go through a fresh `$tN`: each branch stores its value, and the statements
    /// returned (to follow the `if`) load it.
    fn merge(
        &mut self,
        then_body: &mut Block,
        then_end: Option<Stack>,
        else_body: &mut Block,
        else_end: Option<Stack>,
        line: u32,
    ) -> Result<(Option<Stack>, Block)> {
        let (a, b) = match (then_end, else_end) {
            (Some(a), Some(b)) => (a, b),
            (Some(s), None) | (None, Some(s)) => return Ok((Some(s), Vec::new())),
            (None, None) => return Ok((None, Vec::new())),
        };
        if a.len() != b.len() {
            return Err(Fallback::shape("stack depths differ at a join", line));
        }
        let mut after = Vec::new();
        let mut merged = a.clone();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            match (x, y) {
                _ if x == y => {}
                (Val::Reg(x), Val::Reg(y)) => {
                    let t = self.temp();
                    then_body.push(stmt(StmtKind::Store(t.clone(), *x), line));
                    else_body.push(stmt(StmtKind::Store(t.clone(), *y), line));
                    merged[i] = Val::Reg(self.bind(Expr::Load(t), line, &mut after));
                }
                _ => return Err(Fallback::shape("stacks differ at a join", line)),
            }
        }
        Ok((Some(merged), after))
    }

    // -- Short-circuit conditions ----------------------------------------------------------

    /// When both sides of the branch at `b` share blocks before `end` (`if a and b: X else: Y`
    /// reaches Y from both tests), the condition's blocks: the tests reached only from the
    /// condition (and iterator-free `POP_TOP` cleanups of chained comparisons), with exactly two
    /// blocks reached from them (then, else in code order).
    fn condition(&self, b: Node, next: Node, jump: Node, end: Node) -> Option<(Vec<bool>, Node, Node)> {
        let n = self.cfg.exit();
        let live = self.scope_succ(b);
        let side = |s: Node| self.live_reach(live.iter().copied().filter(|&l| l == s).collect(), end);
        let (r1, r2) = (side(next), side(jump));
        let shared = (0..n).any(|c| r1[c] && r2[c] && c != end && !self.cfg.blocks[c].trivial_return);
        if !shared {
            return None;
        }
        let mut members = vec![false; n];
        members[b] = true;
        let mut changed = true;
        while changed {
            changed = false;
            for x in b + 1..n {
                if !members[x]
                    && (r1[x] || r2[x])
                    && x != end
                    && !self.loops.contains_key(&x)
                    && self.absorbable(x, &members)
                    && self.cfg.preds[x].iter().all(|&p| members[p])
                {
                    members[x] = true;
                    changed = true;
                }
            }
        }
        let mut targets: Vec<Node> = (0..n)
            .filter(|&x| members[x])
            .flat_map(|x| self.cfg.successors(x))
            .filter(|&s| s >= n || !members[s])
            .collect();
        targets.sort_unstable();
        targets.dedup();
        let forward = (0..n)
            .filter(|&x| members[x])
            .all(|x| self.cfg.successors(x).iter().all(|&s| s >= n || !members[s] || s > x));
        match targets.as_slice() {
            _ if !forward => None,
            // (A lone test gains nothing: its branches share blocks anyway.)
            &[t1, t2] if t2 < n && members.iter().filter(|&&m| m).count() > 1 => Some((members, t1, t2)),
            _ => None,
        }
    }

    /// A block that can be part of a condition: an operand test (no stores, no statement-level
    /// pops) that a test of the condition falls through into, or a block that only pops on its
    /// way on (the cleanup of a chained comparison). A test reached only by jumps is where
    /// another statement starts (`elif`, a loop's next test).
    fn absorbable(&self, x: Node, members: &[bool]) -> bool {
        let blk = &self.cfg.blocks[x];
        if self.cfg.pop_only(x, self.instrs).is_some() {
            return true;
        }
        let Some(t) = blk.term_instr else {
            return false;
        };
        let fallen_into = self.cfg.preds[x]
            .iter()
            .any(|&p| members[p] && matches!(self.cfg.blocks[p].term, Term::Branch { next, .. } if next == x));
        fallen_into
            && matches!(blk.term, Term::Branch { .. })
            && pop_jump_sense(self.instrs[t].opcode).is_some()
            && self.instrs[blk.body.clone()].iter().all(|i| {
                !matches!(
                    i.opcode,
                    STORE_FAST
                        | STORE_ATTR
                        | STORE_SUBSCR
                        | DELETE_ATTR
                        | DELETE_SUBSCR
                        | POP_TOP
                        | UNPACK_SEQUENCE
                        | UNPACK_EX
                )
            })
    }

    /// Computes a short-circuit condition into a `$tN` (true on reaching `targets.0`), then
    /// branches on it. `taken`: the first test's condition register, whether its jump is taken
    /// when it holds, and its two successors. `None` (nothing emitted) when the paths reach the
    /// targets with different stacks (the blocks were not a condition after all, e.g. a `break`).
    #[allow(clippy::too_many_arguments)]
    fn short_circuit(
        &mut self,
        (cond, cond_jumps, next, jump): (Reg, bool, Node, Node),
        members: &[bool],
        targets: (Node, Node),
        end: Node,
        stack: &mut Stack,
        out: &mut Block,
        line: u32,
    ) -> Result<Option<Option<Node>>> {
        let t = self.temp();
        let mut leaf = Leaf::None;
        let next_side = self.cond_side(next, stack.clone(), members, targets, &t, &mut leaf)?;
        let jump_side = self.cond_side(jump, stack.clone(), members, targets, &t, &mut leaf)?;
        let Leaf::Stack(leaf) = leaf else {
            self.ntemps -= 1;
            return Ok(None);
        };
        let (then_body, else_body) = if cond_jumps { (jump_side, next_side) } else { (next_side, jump_side) };
        out.push(stmt(StmtKind::If { cond, then_body, else_body }, line));
        let holds = self.bind(Expr::Load(t), line, out);
        let (mut then_body, then_end) = self.region(targets.0, end, leaf.clone(), false)?;
        let (mut else_body, else_end) = self.region(targets.1, end, leaf, false)?;
        let (merged, after) = self.merge(&mut then_body, then_end, &mut else_body, else_end, line)?;
        out.push(stmt(StmtKind::If { cond: holds, then_body, else_body }, line));
        out.extend(after);
        Ok(Some(merged.map(|s| {
            *stack = s;
            end
        })))
    }

    /// One path through a condition's blocks from `s`, ending in `store $tN True/False`.
    fn cond_side(
        &mut self,
        s: Node,
        mut stack: Stack,
        members: &[bool],
        targets: (Node, Node),
        t: &str,
        leaf: &mut Leaf,
    ) -> Result<Block> {
        let mut out = Vec::new();
        if s == targets.0 || s == targets.1 {
            *leaf = match std::mem::replace(leaf, Leaf::Mismatch) {
                Leaf::None => Leaf::Stack(stack),
                Leaf::Stack(l) if l == stack => Leaf::Stack(l),
                _ => Leaf::Mismatch,
            };
            let v = self.bind_const(Const::Bool(s == targets.0), self.line, &mut out);
            out.push(stmt(StmtKind::Store(t.to_string(), v), self.line));
            return Ok(out);
        }
        debug_assert!(members[s]);
        let blk = &self.cfg.blocks[s];
        self.spend(blk.body.len() + 1)?;
        for ins in &self.instrs[blk.body.clone()] {
            self.line = ins.line;
            self.instr(ins, &mut stack, &mut out)?;
        }
        match (blk.term, blk.term_instr.map(|i| &self.instrs[i])) {
            (Term::Next(n) | Term::Jump(n), _) => out.extend(self.cond_side(n, stack, members, targets, t, leaf)?),
            (Term::Branch { jump, next }, Some(ins)) => {
                self.line = ins.line;
                let x = Self::pop_reg(&mut stack, ins.line)?;
                let (cond, cond_jumps) = self.test(ins, x, &mut out);
                let next_side = self.cond_side(next, stack.clone(), members, targets, t, leaf)?;
                let jump_side = self.cond_side(jump, stack, members, targets, t, leaf)?;
                let (then_body, else_body) = if cond_jumps { (jump_side, next_side) } else { (next_side, jump_side) };
                out.push(stmt(StmtKind::If { cond, then_body, else_body }, ins.line));
            }
            _ => return Err(Fallback::shape("condition block", self.line)),
        }
        Ok(out)
    }
    // -- Comprehensions and generator expressions ---------------------------------------------

    /// Translates the comprehension or generator expression `co_consts[code]`, called with the
    /// iterator `iter`, in place (3.11 compiles it as a nested function called at once): its
    /// statements go to `out`, its locals renamed apart (`$cK.x`: they do not leak), its free
    /// variables mapped to the enclosing names of `closure`. Returns the register of its return
    /// value (the container built; for a generator expression, None).
    fn inline_child(
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
    fn translate_child(
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

    /// A call `g(a, b)` of an inner function that the @poppy function defines once (`def g` or
    /// `g = lambda ...`, stored straight into a local assigned nowhere else) with exactly its
    /// positional parameters: its body is translated in place (parameters stored into its renamed
    /// locals, returns into `$cK.$ret`), so its calls run inside λO like the function's own. Its
    /// free variables are the real cells of the enclosing function, so late binding and
    /// `nonlocal` hold. `None` when the function is not of that kind (then it is called).
    fn inline_call(
        &mut self,
        (owner, owner_path, code): KnownFunc,
        args: &[Reg],
        kwnames: &[String],
        out: &mut Block,
    ) -> Option<Reg> {
        let child = &owner.children[&code];
        // Bind every parameter from the call (no defaults): positional ones in order, the rest
        // by keyword (not positional-only ones), each once.
        let nparams = (child.argcount + child.kwonlyargcount) as usize;
        let npos = args.len() - kwnames.len();
        let mut bound: Vec<Option<Reg>> = vec![None; nparams];
        if npos > child.argcount as usize || args.len() > nparams {
            return None;
        }
        for (i, a) in args[..npos].iter().enumerate() {
            bound[i] = Some(*a);
        }
        for (name, a) in kwnames.iter().zip(&args[npos..]) {
            let i = child.varnames[..nparams].iter().position(|p| p == name)?;
            if i < child.posonlyargcount as usize || bound[i].is_some() {
                return None;
            }
            bound[i] = Some(*a);
        }
        // Parameters not given take their defaults (when the def's defaults are known).
        let (ndefaults, kwdefaults) = self.fn_defaults.get(&code).cloned().unwrap_or_default();
        let argcount = child.argcount as usize;
        let mut fills = Vec::new();
        for (i, b) in bound.iter().enumerate() {
            if b.is_some() {
                continue;
            }
            let name = &child.varnames[i];
            if i < argcount && i >= argcount - ndefaults.min(argcount) {
                fills.push((i, format!("$fn{code}.defaults"), Const::Int((i + ndefaults - argcount) as i64)));
            } else if i >= argcount && kwdefaults.contains(name) {
                fills.push((i, format!("$fn{code}.kwdefaults"), Const::Str(name.clone())));
            } else {
                return None; // CPython's TypeError comes from calling the real function
            }
        }
        let mut default_stmts = Vec::new();
        for (i, holder, key) in fills {
            let h = self.bind(Expr::Load(holder), self.line, &mut default_stmts);
            let k = self.bind_const(key, self.line, &mut default_stmts);
            bound[i] = Some(self.bind(Expr::Op(Intrinsic::GetItem, vec![h, k]), self.line, &mut default_stmts));
        }
        let args: Vec<Reg> = bound.into_iter().collect::<Option<_>>()?;
        let plain = child.flags & (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE) == 0
            && child.exceptiontable.is_empty()
            && !instructions(&child.code, &child.lines).any(|i| matches!(i.opcode, STORE_GLOBAL | DELETE_GLOBAL));
        if !plain || self.inlining.contains(&code) {
            return None;
        }
        let line = self.line;
        // Translate into a scratch state: on failure nothing is kept (the call stays a call).
        let saved = (self.consts.clone(), self.const_regs.clone(), self.nregs, self.ntemps, self.nflags, self.budget, self.ncomp);
        let saved_maps =
            (self.global_regs.clone(), self.attr_regs.clone(), self.real_cells.clone(), self.func_regs.clone());
        let k = self.ncomp; // the number translate_child gives the inlined locals
        self.inlining.insert(code);
        let translated = self.translate_child((&owner, &owner_path), code, &child.freevars.clone(), None, None);
        self.inlining.remove(&code);
        let args = &args[..];
        let result = translated.ok().and_then(|(mut body, locals)| {
            nest_after_exits(&mut body);
            drop_tail_continues(&mut body, false);
            if returns_in_loops(&body, false) {
                return None;
            }
            let ret = format!("$c{k}.$ret");
            let mut l = line;
            if !tail_returns_to(&mut body, &mut l, &ret) {
                return None;
            }
            let mut stmts: Block = args
                .iter()
                .zip(&locals)
                .map(|(a, p)| stmt(StmtKind::Store(p.clone(), *a), line))
                .collect();
            // Each call starts with the function's other locals unbound (as in a new frame).
            let own = &locals[args.len()..locals.len() - child.freevars.len()];
            let stored = crate::bezoar::passes::assigned(&body);
            stmts.extend(own.iter().filter(|x| stored.contains(*x)).map(|x| stmt(StmtKind::Unbind(x.clone()), line)));
            stmts.extend(body);
            let r = self.bind(Expr::Load(ret), line, &mut stmts);
            Some((stmts, r))
        });
        match result {
            Some((stmts, r)) => {
                out.extend(default_stmts);
                out.extend(stmts);
                Some(r)
            }
            None => {
                (self.consts, self.const_regs, self.nregs, self.ntemps, self.nflags, self.budget, self.ncomp) = saved;
                (self.global_regs, self.attr_regs, self.real_cells, self.func_regs) = saved_maps;
                None
            }
        }
    }

    /// `CALL` with `n` arguments one of which is a generator expression. When the callee is a
    /// consumer for which it is equivalent (`GENEXPR_CONSUMERS`), the generator is inlined as a
    /// loop that materialises its items (`any`/`all`: a loop that breaks), guarded by a run-time
    /// check that the callee is that builtin. Otherwise — or when the check fails — a real
    /// generator is built from the nested code object and passed (it then runs in CPython, inside
    /// the call), which is exact when the generator captures no local variable (a captured
    /// variable would be a snapshot; such calls fall back, or raise when the check fails).
    fn consume_genexpr(&mut self, n: usize, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = self.line;
        let escapes = || Fallback::new("generator expression used other than as an argument of a call", line);
        let mut vals = stack.split_off(stack.len() - n);
        let callable = Self::pop(stack, line)?;
        let below = Self::pop(stack, line)?;
        let kwnames = self.kwnames.take().unwrap_or_default();
        let (func, self_arg) = match (below, callable) {
            (Val::Null, Val::Reg(f)) => (f, None),
            (Val::Reg(f), Val::Reg(s)) => (f, Some(s)),
            _ => return Err(escapes()),
        };
        let gpos: Vec<usize> = (0..n).filter(|&i| matches!(vals[i], Val::Genexpr { .. })).collect();
        let g = gpos[0];
        let Val::Genexpr { code, closure, iter } = vals[g].clone() else { unreachable!() };
        let name = match (self_arg, self.global_regs.get(&func), self.attr_regs.get(&func)) {
            (None, Some(g), _) if g != "join" && GENEXPR_CONSUMERS.contains(&g.as_str()) => Some(g.clone()),
            (None, _, Some(a)) if a == "join" => Some(a.clone()),
            _ => None,
        };
        let npos = n - kwnames.len();
        let only = |allowed: &[&str]| kwnames.iter().all(|k| allowed.contains(&k.as_str()));
        let child = &self.ci.children[&code];
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
        let captures: Vec<String> = gpos
            .iter()
            .flat_map(|&i| match &vals[i] {
                Val::Genexpr { closure, .. } => closure.clone(),
                _ => vec![],
            })
            .collect();
        if !inlinable && !captures.is_empty() {
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
            return Err(Fallback::new(format!("{why}, capturing local variables ({})", captures.join(", ")), line));
        }
        // The call with real generator objects in place of the generator expressions.
        let real_call = |this: &mut Self, vals: &mut Vec<Val>, out: &mut Block| -> Result<Reg> {
            for &i in &gpos {
                let Val::Genexpr { code, iter, .. } = vals[i].clone() else { unreachable!() };
                let code_reg = match &this.const_map {
                    Some(m) => this.bind(Expr::Const(m[code as usize]), line, out),
                    None => this.bind(Expr::Const(code), line, out),
                };
                let globals = this.bind_const(Const::Globals, line, out);
                let gen = this.bind(Expr::Op(Intrinsic::MakeGenexpr, vec![code_reg, globals, iter]), line, out);
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
            Ok(this.bind(Expr::Call { func, args, kwnames: kwnames.clone() }, line, out))
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
        let result = self.temp();
        let is_builtin = self.bind(Expr::Op(Intrinsic::IsConsumer(name.clone()), vec![func]), line, out);
        let mut then_body = Vec::new();
        let r = if name == "any" || name == "all" {
            let flag = self.temp();
            let init = self.bind_const(Const::Bool(name == "all"), line, &mut then_body);
            then_body.push(stmt(StmtKind::Store(flag.clone(), init), line));
            let mode = YieldMode::AnyAll { flag: flag.clone(), all: name == "all" };
            self.inline_child(code, &closure, iter, Some(mode), &mut then_body)?;
            self.bind(Expr::Load(flag), line, &mut then_body)
        } else {
            let lst = self.bind(Expr::Op(Intrinsic::BuildList, vec![]), line, &mut then_body);
            self.inline_child(code, &closure, iter, Some(YieldMode::Collect(lst)), &mut then_body)?;
            let mut args = vec![lst];
            args.extend(rest);
            self.bind(Expr::Call { func, args, kwnames: kwnames.clone() }, line, &mut then_body)
        };
        then_body.push(stmt(StmtKind::Store(result.clone(), r), line));
        let mut else_body = Vec::new();
        let r = if closure.is_empty() {
            real_call(self, &mut vals, &mut else_body)?
        } else {
            // A shadowed builtin and a generator over local variables: refuse loudly.
            let k = self.bind_const(Const::Str(name.clone()), line, &mut else_body);
            self.bind(Expr::Op(Intrinsic::ConsumerMismatch, vec![func, k]), line, &mut else_body)
        };
        else_body.push(stmt(StmtKind::Store(result.clone(), r), line));
        out.push(stmt(StmtKind::If { cond: is_builtin, then_body, else_body }, line));
        let r = self.bind(Expr::Load(result), line, out);
        stack.push(Val::Reg(r));
        Ok(())
    }

    /// `MAKE_FUNCTION` of an inner function or lambda: a real function object, built at run time
    /// from its code object, defaults and the real cells of the variables it captures. Calling
    /// it is an ordinary external call (it runs in CPython).
    fn make_function(&mut self, code: u32, flags: u32, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let line = self.line;
        if self.plain_funcs.contains(&code) {
            // Every call of it is inlined: no function object (its local holds None, unused).
            // Defaults and annotations were evaluated, as in CPython; the defaults are kept in
            // locals for the inlined calls that use them.
            let mut operands: [Option<Val>; 4] = Default::default();
            for (i, bit) in [8, 4, 2, 1].into_iter().enumerate() {
                if flags & bit != 0 {
                    operands[i] = Some(Self::pop(stack, line)?);
                }
            }
            let mut info = (0, Vec::new());
            if let Some(Val::Reg(d)) = operands[3].clone() {
                let n = match self.const_regs.get(&d).and_then(|k| self.consts.get(*k as usize)) {
                    Some(Const::Tuple(items)) => Some(items.len()),
                    _ => self.tuple_lens.get(&d).copied(),
                };
                if let Some(n) = n {
                    out.push(stmt(StmtKind::Store(format!("$fn{code}.defaults"), d), line));
                    info.0 = n;
                }
            }
            if let Some(Val::Reg(d)) = operands[2].clone() {
                if let Some(keys) = self.map_keys.get(&d).cloned() {
                    out.push(stmt(StmtKind::Store(format!("$fn{code}.kwdefaults"), d), line));
                    info.1 = keys;
                }
            }
            self.fn_defaults.insert(code, info);
            let none = self.bind_const(Const::None, line, out);
            stack.push(Val::Reg(none));
            return Ok(());
        }
        let closure = if flags & 8 != 0 {
            let Val::Cells(names) = Self::pop(stack, line)? else {
                return Err(Fallback::shape("closure tuple", line));
            };
            let mut cells = Vec::new();
            for n in names {
                if !self.real_cells.contains(&n) {
                    return Err(Fallback::shape("captured variable without a cell", line));
                }
                cells.push(self.bind(Expr::Load(cell_local(&n)), line, out));
            }
            Some(self.bind(Expr::Op(Intrinsic::BuildTuple, cells), line, out))
        } else {
            None
        };
        let operand = |bit: u32, stack: &mut Stack| -> Result<Option<Reg>> {
            Ok(if flags & bit != 0 { Some(Self::pop_reg(stack, line)?) } else { None })
        };
        let annotations = operand(4, stack)?;
        let kwdefaults = operand(2, stack)?;
        let defaults = operand(1, stack)?;
        let k = match &self.const_map {
            Some(m) => m[code as usize],
            None => code,
        };
        let code_reg = self.bind(Expr::Const(k), line, out);
        let globals = self.bind_const(Const::Globals, line, out);
        let mut args = vec![code_reg, globals];
        for r in [defaults, kwdefaults, annotations, closure] {
            args.push(match r {
                Some(r) => r,
                None => self.bind_const(Const::None, line, out),
            });
        }
        let f = self.bind(Expr::Op(Intrinsic::MakeFunction, args), line, out);
        stack.push(Val::Reg(f));
        Ok(())
    }

    /// Translates one straight-line instruction.
    fn instr(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
        let ci = self.ci;
        let line = ins.line;
        let arg = ins.arg;
        match ins.opcode {
            NOP | RESUME | CACHE | PRECALL => {}
            POP_TOP => {
                Self::pop(stack, line)?;
            }
            PUSH_NULL => stack.push(Val::Null),
            SWAP | COPY => {
                let depth = arg as usize;
                if depth == 0 || depth > stack.len() {
                    return Err(Fallback::shape("stack underflow", line));
                }
                let (top, other) = (stack.len() - 1, stack.len() - depth);
                if ins.opcode == SWAP {
                    stack.swap(top, other);
                } else {
                    stack.push(stack[other].clone());
                }
            }
            LOAD_DEREF if self.real_cells.contains(&Self::name(&self.locals, arg, line)?) => {
                let name = Self::name(&self.locals, arg, line)?;
                let cell = self.bind(Expr::Load(cell_local(&name)), line, out);
                let code_name = Self::name(&ci.localsplus(), arg, line)?;
                let op = Intrinsic::CellGet { name: code_name, free: arg as usize >= self.first_free };
                self.push_op(op, vec![cell], ins, stack, out);
            }
            STORE_DEREF if self.real_cells.contains(&Self::name(&self.locals, arg, line)?) => {
                let name = Self::name(&self.locals, arg, line)?;
                let v = Self::pop_reg(stack, line)?;
                let cell = self.bind(Expr::Load(cell_local(&name)), line, out);
                self.bind(Expr::Op(Intrinsic::CellSet, vec![cell, v]), line, out);
            }
            MAKE_CELL if self.real_cells.contains(&Self::name(&self.locals, arg, line)?) => {
                let name = Self::name(&self.locals, arg, line)?;
                // A parameter's cell starts with the argument; any other starts empty.
                let init = if (arg as usize) < nparams(ci) && self.dot0.is_none() {
                    vec![self.bind(Expr::Load(name.clone()), line, out)]
                } else {
                    vec![]
                };
                let cell = self.bind(Expr::Op(Intrinsic::MakeCell, init), line, out);
                out.push(stmt(StmtKind::Store(cell_local(&name), cell), line));
            }
            LOAD_FAST | LOAD_DEREF => {
                let name = Self::name(&self.locals, arg, line)?;
                match self.dot0 {
                    Some(it) if name == ".0" => stack.push(Val::Iter(it)),
                    _ => {
                        // A cell read by inlined comprehensions only is an ordinary local.
                        let known = self.known_funcs.get(&name).cloned();
                        let r = self.bind(Expr::Load(name), line, out);
                        if let Some(k) = known {
                            self.func_regs.insert(r, k);
                        }
                        stack.push(Val::Reg(r));
                    }
                }
            }
            STORE_FAST | STORE_DEREF => {
                let v = Self::pop_reg(stack, line)?;
                out.push(Stmt { kind: StmtKind::Store(Self::name(&self.locals, arg, line)?, v), line });
            }
            MAKE_CELL | COPY_FREE_VARS => {}
            DELETE_FAST => out.push(stmt(StmtKind::Delete(Self::name(&self.locals, arg, line)?), line)),
            LOAD_CLOSURE => stack.push(Val::Cell(Self::name(&self.locals, arg, line)?)),
            LOAD_CONST if ci.children.contains_key(&arg) => stack.push(Val::Code(arg)),
            LOAD_CONST => {
                let k = match &self.const_map {
                    Some(m) => *m.get(arg as usize).ok_or_else(|| Fallback::shape("constant index", line))?,
                    None => arg,
                };
                let r = self.bind(Expr::Const(k), line, out);
                stack.push(Val::Reg(r));
            }
            LOAD_GLOBAL => {
                if arg & 1 == 1 {
                    stack.push(Val::Null);
                }
                let name = Self::name(&ci.names, arg >> 1, line)?;
                let r = if self.stored_globals.contains(&name) {
                    let g = self.bind_const(Const::Globals, line, out);
                    self.bind(Expr::Op(Intrinsic::LoadGlobal(name.clone()), vec![g]), line, out)
                } else {
                    self.bind(Expr::Global(name.clone()), line, out)
                };
                self.global_regs.insert(r, name);
                stack.push(Val::Reg(r));
            }
            LOAD_ATTR | LOAD_METHOD => {
                let obj = Self::pop_reg(stack, line)?;
                if ins.opcode == LOAD_METHOD {
                    // Pushed as NULL + bound method: the call is then a plain call of it.
                    stack.push(Val::Null);
                }
                let name = Self::name(&ci.names, arg, line)?;
                let r = self.bind(Expr::Op(Intrinsic::GetAttr(name.clone()), vec![obj]), line, out);
                self.attr_regs.insert(r, name);
                stack.push(Val::Reg(r));
            }
            MAKE_FUNCTION => {
                let Val::Code(code) = Self::pop(stack, line)? else {
                    return Err(Fallback::shape("MAKE_FUNCTION without a code object", line));
                };
                let child = &ci.children[&code];
                if !is_comprehension(child) {
                    return self.make_function(code, arg, stack, out);
                }
                if arg & !8 != 0 {
                    return Err(Fallback::shape("comprehension with defaults", line));
                }
                let closure = if arg & 8 != 0 {
                    match Self::pop(stack, line)? {
                        Val::Cells(names) => names,
                        _ => return Err(Fallback::shape("closure of a comprehension", line)),
                    }
                } else {
                    Vec::new()
                };
                stack.push(Val::Func { code, closure });
            }
            STORE_GLOBAL => {
                // A sequential store into the module's globals (later reads of the name in this
                // function are `load_global`, ordered after it).
                let v = Self::pop_reg(stack, line)?;
                let g = self.bind_const(Const::Globals, line, out);
                let k = self.bind_const(Const::Str(Self::name(&ci.names, arg, line)?), line, out);
                self.bind(Expr::Op(Intrinsic::SetItem, vec![g, k, v]), line, out);
            }
            CALL_FUNCTION_EX => {
                // Stack: NULL, f, args, [kwargs]. The call is made by calling a `star_call`
                // object with no arguments (the external gets exactly these arguments).
                let kwargs = if arg & 1 != 0 { Some(Self::pop_reg(stack, line)?) } else { None };
                let args = Self::pop_reg(stack, line)?;
                let f = Self::pop_reg(stack, line)?;
                if Self::pop(stack, line)? != Val::Null {
                    return Err(Fallback::shape("CALL_FUNCTION_EX operands", line));
                }
                let mut operands = vec![f, args];
                operands.extend(kwargs);
                let call = self.bind(Expr::Op(Intrinsic::StarCall, operands), line, out);
                let r = self.bind(Expr::Call { func: call, args: vec![], kwnames: vec![] }, line, out);
                stack.push(Val::Reg(r));
            }
            DICT_MERGE => {
                // `f(**m)`: merge m into the keyword dict `arg` entries below (it stays); the
                // callee (for error messages) is two entries below that.
                let m = Self::pop_reg(stack, line)?;
                let at = |k: usize| match stack.len().checked_sub(k).map(|i| &stack[i]) {
                    Some(&Val::Reg(r)) => Ok(r),
                    _ => Err(Fallback::shape("DICT_MERGE operands", line)),
                };
                let (d, f) = (at(arg as usize)?, at(arg as usize + 2)?);
                self.bind(Expr::Op(Intrinsic::DictMerge, vec![d, m, f]), line, out);
            }
            MAP_ADD => {
                // `{k: v for ...}`: `d[k] = v` on the dict `arg` entries below (it stays).
                let [key, value]: [Reg; 2] = Self::pop_regs(stack, 2, line)?.try_into().expect("two registers");
                let target = match stack.len().checked_sub(arg as usize).map(|i| &stack[i]) {
                    Some(&Val::Reg(r)) => r,
                    _ => return Err(Fallback::shape("container operand", line)),
                };
                self.bind(Expr::Op(Intrinsic::SetItem, vec![target, key, value]), line, out);
            }
            RETURN_GENERATOR if self.yield_mode.is_some() => stack.push(Val::Null),
            YIELD_VALUE if self.yield_mode.is_some() => {
                let v = Self::pop_reg(stack, line)?;
                match self.yield_mode.clone().expect("checked") {
                    YieldMode::Collect(lst) => {
                        let one = self.bind(Expr::Op(Intrinsic::BuildTuple, vec![v]), line, out);
                        self.bind(Expr::Op(Intrinsic::ListExtend, vec![lst, one]), line, out);
                    }
                    YieldMode::AnyAll { flag, all } => {
                        let t = self.bind(Expr::Op(Intrinsic::Truth, vec![v]), line, out);
                        let mut leave = Vec::new();
                        let r = self.bind_const(Const::Bool(!all), line, &mut leave);
                        leave.push(stmt(StmtKind::Store(flag, r), line));
                        leave.push(stmt(StmtKind::Break, line));
                        let (then_body, else_body) = if all { (Vec::new(), leave) } else { (leave, Vec::new()) };
                        out.push(stmt(StmtKind::If { cond: t, then_body, else_body }, line));
                    }
                }
                // What `yield` evaluates to (the consumer sends nothing): None.
                let none = self.bind_const(Const::None, line, out);
                stack.push(Val::Reg(none));
            }
            KW_NAMES => {
                let names = match ci.consts.get(arg as usize) {
                    Some(Const::Tuple(items)) => items
                        .iter()
                        .map(|k| match k {
                            Const::Str(s) => Some(s.clone()),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>(),
                    _ => None,
                };
                self.kwnames = Some(names.ok_or_else(|| Fallback::shape("KW_NAMES constant", line))?);
            }
            CALL => {
                let n = arg as usize;
                if n == 0 && stack.len() >= 2 {
                    if let (Val::Func { code, closure }, Val::Iter(it)) = (&stack[stack.len() - 2], &stack[stack.len() - 1]) {
                        // A comprehension or generator expression called with its iterator.
                        let (code, closure, it) = (*code, closure.clone(), *it);
                        stack.truncate(stack.len() - 2);
                        if ci.children[&code].name == "<genexpr>" {
                            stack.push(Val::Genexpr { code, closure, iter: it });
                        } else {
                            let r = self.inline_child(code, &closure, it, None, out)?;
                            stack.push(Val::Reg(r));
                        }
                        return Ok(());
                    }
                }
                if stack.len() >= n && stack[stack.len() - n..].iter().any(|v| matches!(v, Val::Genexpr { .. })) {
                    return self.consume_genexpr(n, stack, out);
                }
                let mut args = Self::pop_regs(stack, n, line)?;
                let callable = Self::pop(stack, line)?;
                let below = Self::pop(stack, line)?;
                // 3.11: `[NULL, f, args]` calls f; `[f, self, args]` calls f with self prepended.
                let func = match (below, callable) {
                    (Val::Null, Val::Reg(f)) => f,
                    (Val::Reg(f), Val::Reg(selfv)) => {
                        args.insert(0, selfv);
                        f
                    }
                    _ => return Err(Fallback::shape("CALL operands", line)),
                };
                let kwnames = self.kwnames.take().unwrap_or_default();
                if kwnames.len() > args.len() {
                    return Err(Fallback::shape("more keyword names than arguments", line));
                }
                if let Some((k, _)) = self.func_regs.get(&func).cloned() {
                    if let Some(r) = self.inline_call(k, &args, &kwnames, out) {
                        self.func_regs.remove(&func);
                        stack.push(Val::Reg(r));
                        return Ok(());
                    }
                }
                let r = self.bind(Expr::Call { func, args, kwnames }, line, out);
                stack.push(Val::Reg(r));
            }
            BINARY_SUBSCR => {
                let args = Self::pop_regs(stack, 2, line)?;
                self.push_op(Intrinsic::GetItem, args, ins, stack, out);
            }
            BINARY_OP => {
                const OPS: [BinOp; 13] = [
                    BinOp::Add,
                    BinOp::And,
                    BinOp::FloorDiv,
                    BinOp::LShift,
                    BinOp::MatMul,
                    BinOp::Mul,
                    BinOp::Mod,
                    BinOp::Or,
                    BinOp::Pow,
                    BinOp::RShift,
                    BinOp::Sub,
                    BinOp::TrueDiv,
                    BinOp::Xor,
                ];
                let op = *OPS.get(arg as usize % 13).filter(|_| arg < 26).ok_or_else(|| Fallback::unsupported(ins))?;
                let args = Self::pop_regs(stack, 2, line)?;
                self.push_op(Intrinsic::Binary { op, inplace: arg >= 13 }, args, ins, stack, out);
            }
            COMPARE_OP => {
                const CMPS: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne, CmpOp::Gt, CmpOp::Ge];
                let op = *CMPS.get(arg as usize).ok_or_else(|| Fallback::unsupported(ins))?;
                let args = Self::pop_regs(stack, 2, line)?;
                self.push_op(Intrinsic::Compare(op), args, ins, stack, out);
            }
            IS_OP | CONTAINS_OP => {
                let negate = arg == 1;
                let op = if ins.opcode == IS_OP { Intrinsic::Is { negate } } else { Intrinsic::Contains { negate } };
                let args = Self::pop_regs(stack, 2, line)?;
                self.push_op(op, args, ins, stack, out);
            }
            UNARY_NEGATIVE | UNARY_POSITIVE | UNARY_INVERT | UNARY_NOT => {
                let op = match ins.opcode {
                    UNARY_NEGATIVE => UnaryOp::Neg,
                    UNARY_POSITIVE => UnaryOp::Pos,
                    UNARY_INVERT => UnaryOp::Invert,
                    _ => UnaryOp::Not,
                };
                let args = Self::pop_regs(stack, 1, line)?;
                self.push_op(Intrinsic::Unary(op), args, ins, stack, out);
            }
            BUILD_TUPLE if arg > 0 && stack.len() >= arg as usize && stack[stack.len() - arg as usize..].iter().all(|v| matches!(v, Val::Cell(_))) => {
                let cells = stack.split_off(stack.len() - arg as usize);
                stack.push(Val::Cells(cells.into_iter().map(|v| match v { Val::Cell(n) => n, _ => unreachable!() }).collect()));
            }
            BUILD_TUPLE | BUILD_LIST | BUILD_STRING => {
                let op = match ins.opcode {
                    BUILD_TUPLE => Intrinsic::BuildTuple,
                    BUILD_LIST => Intrinsic::BuildList,
                    _ => Intrinsic::BuildString,
                };
                let args = Self::pop_regs(stack, arg as usize, line)?;
                self.push_op(op, args, ins, stack, out);
            }
            FORMAT_VALUE => {
                let conv = [Conversion::None, Conversion::Str, Conversion::Repr, Conversion::Ascii][(arg & 3) as usize];
                let has_spec = arg & 4 != 0;
                let args = Self::pop_regs(stack, 1 + has_spec as usize, line)?;
                self.push_op(Intrinsic::FormatValue { conv, has_spec }, args, ins, stack, out);
            }
            GET_ITER => {
                let x = Self::pop_reg(stack, line)?;
                let r = self.bind(Expr::Op(Intrinsic::IterSnapshot, vec![x]), line, out);
                stack.push(Val::Iter(r));
            }
            STORE_ATTR | DELETE_ATTR => {
                let name = Self::name(&ci.names, arg, line)?;
                let obj = Self::pop_reg(stack, line)?;
                let (op, args) = if ins.opcode == STORE_ATTR {
                    (Intrinsic::SetAttr(name), vec![obj, Self::pop_reg(stack, line)?])
                } else {
                    (Intrinsic::DelAttr(name), vec![obj])
                };
                self.bind(Expr::Op(op, args), line, out);
            }
            STORE_SUBSCR => {
                // Stack: value, obj, key.
                let [v, obj, key]: [Reg; 3] = Self::pop_regs(stack, 3, line)?.try_into().expect("three registers");
                self.bind(Expr::Op(Intrinsic::SetItem, vec![obj, key, v]), line, out);
            }
            DELETE_SUBSCR => {
                let args = Self::pop_regs(stack, 2, line)?;
                self.bind(Expr::Op(Intrinsic::DelItem, args), line, out);
            }
            BUILD_MAP | BUILD_SET | BUILD_SLICE => {
                let (op, n) = match ins.opcode {
                    BUILD_MAP => (Intrinsic::BuildMap, 2 * arg as usize),
                    BUILD_SET => (Intrinsic::BuildSet, arg as usize),
                    _ => (Intrinsic::BuildSlice, arg as usize),
                };
                let args = Self::pop_regs(stack, n, line)?;
                self.push_op(op, args, ins, stack, out);
            }
            BUILD_CONST_KEY_MAP => {
                // Stack: the values, then a constant tuple of the keys.
                let keys = Self::pop_reg(stack, line)?;
                let values = Self::pop_regs(stack, arg as usize, line)?;
                let known = match self.const_regs.get(&keys).and_then(|&k| self.consts.get(k as usize)) {
                    Some(Const::Tuple(items)) if items.len() == values.len() => Some(items.clone()),
                    _ => None,
                };
                let mut args = Vec::with_capacity(2 * values.len());
                for (i, v) in values.into_iter().enumerate() {
                    let key = match &known {
                        Some(items) => self.bind_const(items[i].clone(), line, out),
                        None => {
                            let i = self.bind_const(Const::Int(i as i64), line, out);
                            self.bind(Expr::Op(Intrinsic::GetItem, vec![keys, i]), line, out)
                        }
                    };
                    args.extend([key, v]);
                }
                self.push_op(Intrinsic::BuildMap, args, ins, stack, out);
            }
            LIST_EXTEND | SET_UPDATE | DICT_UPDATE => {
                // `seq` is added to the container `arg` entries below it (which stays on the stack).
                let seq = Self::pop_reg(stack, line)?;
                let target = match stack.len().checked_sub(arg as usize).map(|i| &stack[i]) {
                    Some(&Val::Reg(r)) => r,
                    _ => return Err(Fallback::shape("container operand", line)),
                };
                let op = match ins.opcode {
                    LIST_EXTEND => Intrinsic::ListExtend,
                    SET_UPDATE => Intrinsic::SetUpdate,
                    _ => Intrinsic::DictUpdate,
                };
                self.bind(Expr::Op(op, vec![target, seq]), line, out);
            }
            LIST_APPEND | SET_ADD => {
                // `[a, *r, b]` / `{a, *r, b}`: adding one item is extending by a 1-tuple.
                let item = Self::pop_reg(stack, line)?;
                let target = match stack.len().checked_sub(arg as usize).map(|i| &stack[i]) {
                    Some(&Val::Reg(r)) => r,
                    _ => return Err(Fallback::shape("container operand", line)),
                };
                let one = self.bind(Expr::Op(Intrinsic::BuildTuple, vec![item]), line, out);
                let op = if ins.opcode == LIST_APPEND { Intrinsic::ListExtend } else { Intrinsic::SetUpdate };
                self.bind(Expr::Op(op, vec![target, one]), line, out);
            }
            LIST_TO_TUPLE => {
                let args = Self::pop_regs(stack, 1, line)?;
                self.push_op(Intrinsic::ListToTuple, args, ins, stack, out);
            }
            UNPACK_SEQUENCE | UNPACK_EX => {
                let x = Self::pop_reg(stack, line)?;
                let (op, n) = if ins.opcode == UNPACK_SEQUENCE {
                    (Intrinsic::UnpackSequence(arg), arg)
                } else {
                    let (before, after) = (arg & 0xff, arg >> 8);
                    (Intrinsic::UnpackEx { before, after }, before + 1 + after)
                };
                let t = self.bind(Expr::Op(op, vec![x]), line, out);
                let items: Vec<Reg> = (0..n)
                    .map(|i| {
                        let i = self.bind_const(Const::Int(i as i64), line, out);
                        self.bind(Expr::Op(Intrinsic::GetItem, vec![t, i]), line, out)
                    })
                    .collect();
                // The first item ends on top (it is stored first).
                stack.extend(items.into_iter().rev().map(Val::Reg));
            }
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }
}

/// The stack with which the paths through a condition reach its targets.
enum Leaf {
    None,
    Stack(Stack),
    Mismatch,
}

// ---------------------------------------------------------------------------------------------
// Post-passes

/// Simplifies the translated body (see the module documentation, step 5).
fn tidy(body: &mut Block, nregs: &mut u32) {
    nest_after_exits(body);
    drop_tail_continues(body, false);
    if !returns_in_loops(body, false) && matches!(body.last(), Some(Stmt { kind: StmtKind::If { .. }, .. })) {
        // Every return is at the tail of the trailing `if` (the nesting above put the rest of a
        // block after an `if` that returns into its other branch): store `$ret` there instead.
        let mut line = 0;
        if tail_returns_to_local(body, &mut line) {
            let r = *nregs;
            *nregs += 1;
            body.push(stmt(StmtKind::Let(r, Expr::Load(RETURN_LOCAL.into())), line));
            body.push(stmt(StmtKind::Return(r), line));
        }
    }
}

fn has_return(block: &Block) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { then_body, else_body, .. } => has_return(then_body) || has_return(else_body),
        StmtKind::For { body, .. } | StmtKind::Loop { body } => has_return(body),
        _ => false,
    })
}

/// Whether every path through `block` ends in a return, break or continue.
fn always_leaves(block: &Block) -> bool {
    match block.last().map(|s| &s.kind) {
        Some(StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue) => true,
        Some(StmtKind::If { then_body, else_body, .. }) => always_leaves(then_body) && always_leaves(else_body),
        _ => false,
    }
}

/// `if c: A else: B; R` where A always leaves becomes `if c: A else: B; R` with R inside the
/// else branch (and symmetrically), everywhere.
fn nest_after_exits(block: &mut Block) {
    let mut i = 0;
    while i < block.len() {
        if i + 1 < block.len() {
            if let StmtKind::If { then_body, else_body, .. } = &block[i].kind {
                let target = match (always_leaves(then_body), always_leaves(else_body)) {
                    (true, false) => Some(false),
                    (false, true) => Some(true),
                    _ => None,
                };
                if let Some(into_then) = target {
                    let rest = block.split_off(i + 1);
                    if let StmtKind::If { then_body, else_body, .. } = &mut block[i].kind {
                        if into_then { then_body } else { else_body }.extend(rest);
                    }
                }
            }
        }
        match &mut block[i].kind {
            StmtKind::If { then_body, else_body, .. } => {
                nest_after_exits(then_body);
                nest_after_exits(else_body);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => nest_after_exits(body),
            _ => {}
        }
        i += 1;
    }
}

/// Drops `continue`s at the tail of loop bodies (`tail`: `block` ends an iteration).
fn drop_tail_continues(block: &mut Block, tail: bool) {
    if tail && matches!(block.last(), Some(Stmt { kind: StmtKind::Continue, .. })) {
        block.pop();
    }
    let n = block.len();
    for (i, s) in block.iter_mut().enumerate() {
        match &mut s.kind {
            StmtKind::If { then_body, else_body, .. } => {
                drop_tail_continues(then_body, tail && i + 1 == n);
                drop_tail_continues(else_body, tail && i + 1 == n);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => drop_tail_continues(body, true),
            _ => {}
        }
    }
}

fn returns_in_loops(block: &Block, in_loop: bool) -> bool {
    block.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => in_loop,
        StmtKind::If { then_body, else_body, .. } => {
            returns_in_loops(then_body, in_loop) || returns_in_loops(else_body, in_loop)
        }
        StmtKind::For { body, .. } | StmtKind::Loop { body } => returns_in_loops(body, true),
        _ => false,
    })
}

/// Whether every return in `block` is at its tail (through `if`s); if so, turns them into
/// `store $ret` (`line`: the line of the last one).
fn tail_returns_to_local(block: &mut Block, line: &mut u32) -> bool {
    tail_returns_to(block, line, RETURN_LOCAL)
}

/// `tail_returns_to_local` storing into the local `ret`.
fn tail_returns_to(block: &mut Block, line: &mut u32, ret: &str) -> bool {
    fn all_at_tail(block: &Block) -> bool {
        block.iter().enumerate().all(|(i, s)| match &s.kind {
            StmtKind::Return(_) => i + 1 == block.len(),
            StmtKind::If { then_body, else_body, .. } => {
                if i + 1 == block.len() {
                    all_at_tail(then_body) && all_at_tail(else_body)
                } else {
                    !returns_in_loops(then_body, true) && !returns_in_loops(else_body, true)
                }
            }
            _ => true,
        })
    }
    fn convert(block: &mut Block, line: &mut u32, ret: &str) {
        if let Some(s) = block.last_mut() {
            match &mut s.kind {
                StmtKind::Return(r) => {
                    *line = s.line;
                    s.kind = StmtKind::Store(ret.into(), *r);
                }
                StmtKind::If { then_body, else_body, .. } => {
                    convert(then_body, line, ret);
                    convert(else_body, line, ret);
                }
                _ => {}
            }
        }
    }
    if !all_at_tail(block) {
        return false;
    }
    convert(block, line, ret);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::py311::code_info;
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    /// Runs `src` and returns `CodeInfo` of the code objects it binds to the given names.
    fn code_infos(src: &str, names: &[&str]) -> Vec<CodeInfo> {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            py.run_bound(src, Some(&ns), None).unwrap();
            names.iter().map(|n| code_info(&ns.get_item(n).unwrap().unwrap()).unwrap()).collect()
        })
    }

    fn count_stmts(block: &Block) -> usize {
        block
            .iter()
            .map(|s| {
                1 + match &s.kind {
                    StmtKind::If { then_body, else_body, .. } => count_stmts(then_body) + count_stmts(else_body),
                    StmtKind::For { body, .. } | StmtKind::Loop { body } => count_stmts(body),
                    _ => 0,
                }
            })
            .sum()
    }

    /// CPython 3.11 may turn "jump forward to the loop's JUMP_BACKWARD" into a backward
    /// conditional jump straight to the loop head. Rewrite a function that way (checking in Python
    /// that it still behaves the same) and check both versions lift to the same Bezoar.
    #[test]
    fn backward_conditional_jump_to_loop_head() {
        let src = r#"
import dis
def f(xs):
    out = []
    for x in xs:
        out.append(x)
        if x:
            out.append(-x)
    return out
code = f.__code__
by_offset = {i.offset: i for i in dis.get_instructions(code)}
raw = bytearray(code.co_code)
for i in by_offset.values():
    target = by_offset.get(i.argval)
    if i.opname == "POP_JUMP_FORWARD_IF_FALSE" and target.opname == "JUMP_BACKWARD":
        raw[i.offset] = dis.opmap["POP_JUMP_BACKWARD_IF_FALSE"]
        raw[i.offset + 1] = (i.offset + 2 - target.argval) // 2
patched = code.replace(co_code=bytes(raw))
g = type(f)(patched, globals())
assert g([0, 1, 2]) == f([0, 1, 2]) == [0, 1, -1, 2, -2]
assert "POP_JUMP_BACKWARD_IF_FALSE" in [i.opname for i in dis.get_instructions(patched)]
"#;
        let cis = code_infos(src, &["code", "patched"]);
        assert_ne!(cis[0].code, cis[1].code);
        let (plain, patched) = (lift(&cis[0]).unwrap(), lift(&cis[1]).unwrap());
        assert_eq!(plain, patched);
        let StmtKind::For { body, .. } = &plain.body[4].kind else { panic!("{:?}", plain.body) };
        assert!(matches!(body.last().unwrap().kind, StmtKind::If { ref else_body, .. } if else_body.is_empty()));
    }

    /// Jumps over more than 255 code units need EXTENDED_ARG; the jump then targets the prefix.
    #[test]
    fn long_branches_use_extended_args() {
        let mut src = String::from("def f(x):\n    if x:\n");
        for i in 0..120 {
            src.push_str(&format!("        x = g(x, {i})\n"));
        }
        src.push_str("    else:\n        x = 0\n    return x\nc = f.__code__\n");
        let ci = &code_infos(&src, &["c"])[0];
        assert!(ci.code.contains(&EXTENDED_ARG));
        let f = lift(ci).unwrap();
        let StmtKind::If { then_body, else_body, .. } = &f.body[2].kind else { panic!("{:?}", f.body) };
        assert_eq!(then_body.len(), 120 * 5);
        assert_eq!(else_body.len(), 2);
        assert_eq!(count_stmts(&f.body), 3 + 120 * 5 + 2 + 2);
        assert_eq!(f.body.last().unwrap().kind, StmtKind::Return(f.nregs - 1));
    }

    #[test]
    fn params_and_registers() {
        let ci = &code_infos("def f(a, /, b, c=1):\n    d = a\n    return d\nc = f.__code__\n", &["c"])[0];
        let f = lift(ci).unwrap();
        assert_eq!(f.params, ["a", "b", "c"]);
        assert_eq!(f.nregs, 2);
        assert_eq!(f.body[0], Stmt { kind: StmtKind::Let(0, Expr::Load("a".into())), line: 2 });
        assert_eq!(f.body[1], Stmt { kind: StmtKind::Store("d".into(), 0), line: 2 });
    }

    fn loops_in(block: &Block) -> usize {
        block
            .iter()
            .map(|s| match &s.kind {
                StmtKind::If { then_body, else_body, .. } => loops_in(then_body) + loops_in(else_body),
                StmtKind::For { body, .. } | StmtKind::Loop { body } => 1 + loops_in(body),
                _ => 0,
            })
            .sum()
    }

    /// CPython compiles a `while` test twice; the bottom copy is redirected to the top one when
    /// they match, so `continue` (which jumps to the top copy) stays inside one `Loop`.
    #[test]
    fn while_loop_inversion_is_undone() {
        let src =
            "def a(x):\n    while x > 0:\n        if g(x):\n            continue\n        x = h(x)\n    return x\n\
                   def b(x):\n    while p(x) and (q(x) or\n            r(x)):\n        x = h(x)\n    return x\n\
                   def c(m):\n    while 0 < m < 9:\n        m = h(m)\n    return m\n\
                   ca, cb, cc = a.__code__, b.__code__, c.__code__\n";
        let cis = code_infos(src, &["ca", "cb", "cc"]);
        for ci in &cis[..2] {
            let instrs: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
            let inv = loop_inversions(&instrs);
            assert_eq!(inv.len(), 1, "{}", ci.name);
            let (top, bottom, jump) = inv[0];
            // The copies are the same instructions (jumps aside) on the same lines.
            let n = jump + 1 - bottom;
            for k in 0..n {
                let (t, b) = (&instrs[top + k], &instrs[bottom + k]);
                assert_eq!(t.line, b.line);
                if t.jump_target().is_none() {
                    assert_eq!((t.opcode, t.arg), (b.opcode, b.arg));
                }
            }
            let f = lift(ci).unwrap();
            assert_eq!(loops_in(&f.body), 1, "{}", ci.name);
            assert!(matches!(f.body[0].kind, StmtKind::Loop { .. }), "{:?}", f.body[0]);
        }
        // A test ending in a chained comparison is not matched: the loop keeps its guard `if`.
        let instrs: Vec<Instr> = instructions(&cis[2].code, &cis[2].lines).collect();
        assert!(loop_inversions(&instrs).is_empty());
        let f = lift(&cis[2]).unwrap();
        assert_eq!(loops_in(&f.body), 1);
        assert!(matches!(
            f.body.iter().find(|s| !matches!(s.kind, StmtKind::Let(..))).unwrap().kind,
            StmtKind::If { .. }
        ));
    }

    /// The right operand of `and`/`or` and the branches of `a if c else b` are only evaluated on
    /// the path where CPython evaluates them: every call sits in its own branch.
    #[test]
    fn short_circuit_calls_stay_in_their_branch() {
        let src = "def f(a):\n    x = a or g(a)\n    y = h(a) if x else k(a)\n    return x, y\nc = f.__code__\n";
        let f = lift(&code_infos(src, &["c"])[0]).unwrap();
        let calls_at_top = f.body.iter().filter(|s| matches!(s.kind, StmtKind::Let(_, Expr::Call { .. }))).count();
        assert_eq!(calls_at_top, 0, "{}", crate::bezoar::text::print(&f));
        let ifs: Vec<&Stmt> = f.body.iter().filter(|s| matches!(s.kind, StmtKind::If { .. })).collect();
        assert_eq!(ifs.len(), 2);
        let calls = |b: &Block| b.iter().filter(|s| matches!(s.kind, StmtKind::Let(_, Expr::Call { .. }))).count();
        let StmtKind::If { then_body, else_body, .. } = &ifs[0].kind else { unreachable!() };
        assert_eq!((calls(then_body), calls(else_body)), (0, 1)); // g(a) only when a is falsy
        let StmtKind::If { then_body, else_body, .. } = &ifs[1].kind else { unreachable!() };
        assert_eq!((calls(then_body), calls(else_body)), (1, 1));
    }

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
