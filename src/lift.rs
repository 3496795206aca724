//! Lifting CPython 3.11 bytecode into Bezoar.
//!
//! Three steps:
//! 1. `check_code_object` + opcode check: reject code objects outside the fragment (generators,
//!    closures, `*args`, try/with, unsupported opcodes).
//! 2. `Cfg::build`: basic blocks from jump targets, a virtual exit node after every return, identical
//!    trivial return blocks (`LOAD_CONST k`/`LOAD_FAST x` + `RETURN_VALUE`, which CPython duplicates)
//!    merged, post-dominators, and checks that every loop is a `for` loop left only through its
//!    `FOR_ITER` exit.
//! 3. `Translator`: structure recovery and stack-to-ANF translation in one recursive walk. A region
//!    is translated from an entry block up to its "follow" block: a conditional jump becomes an `If`
//!    whose branches run up to the jump's immediate post-dominator (the join); a `FOR_ITER` becomes a
//!    `For` whose body runs up to the loop head. The value stack holds registers symbolically.
use crate::bezoar::ir::*;
use crate::py311::decode::{instructions, Instr};
use crate::py311::opcode::*;
use crate::py311::{
    CodeInfo, CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR, CO_ITERABLE_COROUTINE, CO_VARARGS, CO_VARKEYWORDS,
};
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

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.opcode {
            Some(op) => write!(f, "{} {} at line {}", self.reason, op, self.line),
            None => write!(f, "{} at line {}", self.reason, self.line),
        }
    }
}

impl Fallback {
    fn new(reason: impl Into<String>, line: u32) -> Self {
        Fallback { reason: reason.into(), opcode: None, line }
    }

    fn unsupported(ins: &Instr) -> Self {
        Fallback { reason: "unsupported opcode".into(), opcode: Some(ins.name().into()), line: ins.line }
    }

    /// The bytecode does not have the shape CPython 3.11 gives the supported fragment.
    fn shape(what: &str, line: u32) -> Self {
        Fallback::new(format!("unexpected bytecode shape ({what})"), line)
    }
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
    cfg.check_loops(&instrs)?;
    let mut t = Translator {
        ci,
        instrs: &instrs,
        cfg: &cfg,
        consts: ci.consts.clone(),
        nregs: 0,
        emitted: vec![false; cfg.blocks.len()],
        kwnames: None,
        last_return_line: 0,
    };
    let (mut body, _) = t.region(0, cfg.exit(), Vec::new(), false)?;
    if !matches!(body.last(), Some(Stmt { kind: StmtKind::Return(_), .. })) {
        // The function ends in an `if` whose branches all returned into `$ret`.
        let line = t.last_return_line;
        let r = t.new_reg();
        body.push(Stmt { kind: StmtKind::Let(r, Expr::Load(RETURN_LOCAL.into())), line });
        body.push(Stmt { kind: StmtKind::Return(r), line });
    }
    Ok(Function {
        name: ci.name.clone(),
        qualname: ci.qualname.clone(),
        filename: ci.filename.clone(),
        firstlineno: ci.firstlineno,
        params: ci.varnames[..ci.argcount as usize].to_vec(),
        consts: t.consts,
        body,
        nregs: t.nregs,
    })
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
    if flag(CO_VARARGS) {
        return at_def("*args parameter");
    }
    if flag(CO_VARKEYWORDS) {
        return at_def("**kwargs parameter");
    }
    if ci.kwonlyargcount > 0 {
        return at_def("keyword-only parameters");
    }
    if !ci.cellvars.is_empty() {
        return at_def(&format!("closure: locals captured by an inner function ({})", ci.cellvars.join(", ")));
    }
    if !ci.freevars.is_empty() {
        return at_def(&format!("closure: free variables ({})", ci.freevars.join(", ")));
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
            | KW_NAMES
            | PRECALL
            | CALL
            | BINARY_SUBSCR
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
            | FORMAT_VALUE
            | BUILD_STRING
            | GET_ITER
            | FOR_ITER
            | JUMP_FORWARD
            | JUMP_BACKWARD
            | JUMP_BACKWARD_NO_INTERRUPT
            | POP_JUMP_FORWARD_IF_FALSE
            | POP_JUMP_FORWARD_IF_TRUE
            | POP_JUMP_FORWARD_IF_NONE
            | POP_JUMP_FORWARD_IF_NOT_NONE
            | POP_JUMP_BACKWARD_IF_FALSE
            | POP_JUMP_BACKWARD_IF_TRUE
            | POP_JUMP_BACKWARD_IF_NONE
            | POP_JUMP_BACKWARD_IF_NOT_NONE
            | RETURN_VALUE
    )
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
    /// `ipdom[b]`: immediate post-dominator of block `b` (`None` if it cannot reach the exit).
    ipdom: Vec<Option<Node>>,
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
        // Leaders: the entry, jump targets, instructions after jumps/returns, and the start of every
        // `LOAD_CONST/LOAD_FAST; RETURN_VALUE` tail (so duplicated return blocks can be merged).
        let mut leader = vec![false; instrs.len() + 1];
        leader[0] = true;
        for (i, ins) in instrs.iter().enumerate() {
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
        let starts: Vec<usize> = (0..instrs.len()).filter(|&i| leader[i]).collect();
        let block_of = |i: usize| starts.binary_search(&i).expect("jump targets are leaders");

        // Trivial return blocks with identical instructions are the same code: map each to the
        // last copy.
        let trivial_return = |b: usize| -> Option<(u8, u32)> {
            let (s, e) = (starts[b], starts.get(b + 1).copied().unwrap_or(instrs.len()));
            (e == s + 2 && instrs[s + 1].opcode == RETURN_VALUE).then(|| (instrs[s].opcode, instrs[s].arg))
        };
        let canon: Vec<Node> = (0..starts.len())
            .map(|b| match trivial_return(b) {
                Some(key) => (b..starts.len()).rev().find(|&c| trivial_return(c) == Some(key)).unwrap(),
                None => b,
            })
            .collect();

        let mut blocks = Vec::with_capacity(starts.len());
        for (b, &start) in starts.iter().enumerate() {
            let end = starts.get(b + 1).copied().unwrap_or(instrs.len());
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
                JUMP_FORWARD | JUMP_BACKWARD | JUMP_BACKWARD_NO_INTERRUPT => Term::Jump(target()?),
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
        let ipdom = immediate_post_dominators(&blocks);
        Ok(Cfg { blocks, ipdom })
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
        instrs[blk.term_instr.unwrap_or(blk.body.end - 1)].line
    }

    /// Every backward jump must close a `for` loop, and a loop body may only be left through its
    /// `FOR_ITER` (no `break`, no `return`).
    fn check_loops(&self, instrs: &[Instr]) -> Result<()> {
        let n = self.blocks.len();
        let mut preds = vec![Vec::new(); n];
        for b in 0..n {
            for s in self.successors(b) {
                if s < n {
                    preds[s].push(b);
                }
            }
        }
        for (b, blk) in self.blocks.iter().enumerate() {
            let backward_target = match (blk.term, blk.term_instr) {
                (Term::Jump(t) | Term::Branch { jump: t, .. }, Some(i)) if is_backward_jump(instrs[i].opcode) => t,
                _ => continue,
            };
            if !matches!(self.blocks[backward_target].term, Term::ForIter { .. }) {
                return Err(Fallback::new("while loop", self.term_line(b, instrs)));
            }
        }
        for (h, head) in self.blocks.iter().enumerate() {
            let Term::ForIter { body: entry, .. } = head.term else { continue };
            // The natural loop: blocks that reach a back edge into `h` without passing `h`.
            let mut in_loop = vec![false; n];
            in_loop[h] = true;
            let mut work: Vec<Node> = preds[h].iter().copied().filter(|&p| p > h).collect();
            while let Some(b) = work.pop() {
                if !in_loop[b] {
                    in_loop[b] = true;
                    work.extend(preds[b].iter().copied());
                }
            }
            let mut leaks: Vec<Node> = (0..n)
                .filter(|&b| in_loop[b] && b != h)
                .flat_map(|b| self.successors(b))
                .chain(std::iter::once(entry))
                .filter(|&s| s < n && !in_loop[s])
                .collect();
            leaks.sort_unstable();
            if let Some(&leak) = leaks.first() {
                return Err(Fallback::new("break or return inside a for loop", self.term_line(leak, instrs)));
            }
        }
        Ok(())
    }
}

/// Post-dominator sets by iterative data flow (node `blocks.len()` is the exit), reduced to the
/// immediate post-dominator of each block.
fn immediate_post_dominators(blocks: &[BasicBlock]) -> Vec<Option<Node>> {
    let n = blocks.len();
    let succ = |b: Node| -> Vec<Node> {
        match blocks[b].term {
            Term::Next(s) | Term::Jump(s) => vec![s],
            Term::Branch { jump, next } => vec![next, jump],
            Term::ForIter { body, exit } => vec![body, exit],
            Term::Return => vec![n],
        }
    };
    let mut pdom = vec![vec![true; n + 1]; n + 1];
    pdom[n] = (0..=n).map(|i| i == n).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for b in (0..n).rev() {
            let mut set = vec![true; n + 1];
            for s in succ(b) {
                for (x, &p) in set.iter_mut().zip(&pdom[s]) {
                    *x &= p;
                }
            }
            set[b] = true;
            if set != pdom[b] {
                pdom[b] = set;
                changed = true;
            }
        }
    }
    (0..n)
        .map(|b| {
            let strict: Vec<bool> = (0..=n).map(|i| pdom[b][i] && i != b).collect();
            (0..=n).find(|&c| strict[c] && pdom[c] == strict)
        })
        .collect()
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
}

type Stack = Vec<Val>;

struct Translator<'a> {
    ci: &'a CodeInfo,
    instrs: &'a [Instr],
    cfg: &'a Cfg,
    consts: Vec<Const>,
    nregs: u32,
    /// Blocks already translated: reaching one again means the flow is not a nesting of
    /// if/else and for.
    emitted: Vec<bool>,
    /// Keyword names set by `KW_NAMES` for the next `CALL`.
    kwnames: Option<Vec<String>>,
    last_return_line: u32,
}

impl Translator<'_> {
    fn new_reg(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }

    fn bind(&mut self, e: Expr, line: u32, out: &mut Block) -> Reg {
        let r = self.new_reg();
        out.push(Stmt { kind: StmtKind::Let(r, e), line });
        r
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

    fn pop(stack: &mut Stack, line: u32) -> Result<Val> {
        stack.pop().ok_or_else(|| Fallback::shape("stack underflow", line))
    }

    fn pop_reg(stack: &mut Stack, line: u32) -> Result<Reg> {
        match Self::pop(stack, line)? {
            Val::Reg(r) => Ok(r),
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

    /// Translates blocks from `entry` until control reaches `follow`. Returns the statements and
    /// the stack on reaching `follow`, or `None` for the stack when every path returned.
    /// `nested` is false only for the function's top level, where a return is emitted directly;
    /// nested returns (only possible in a tail `if`) assign `$ret`.
    fn region(&mut self, entry: Node, follow: Node, mut stack: Stack, nested: bool) -> Result<(Block, Option<Stack>)> {
        let mut out = Vec::new();
        let mut cur = entry;
        while cur != follow {
            let cfg = self.cfg;
            let instrs = self.instrs;
            let blk = &cfg.blocks[cur];
            if self.emitted[cur] && !blk.trivial_return {
                return Err(Fallback::new(
                    "control flow that is not nested if/else and for (continue, or and/or in a condition)",
                    instrs[blk.body.start].line,
                ));
            }
            self.emitted[cur] = true;
            for ins in &instrs[blk.body.clone()] {
                self.instr(ins, &mut stack, &mut out)?;
            }
            let term = blk.term_instr.map(|i| &instrs[i]);
            match (blk.term, term) {
                (Term::Next(n), _) | (Term::Jump(n), _) => cur = n,
                (Term::Return, Some(ins)) => {
                    let v = Self::pop_reg(&mut stack, ins.line)?;
                    if follow != cfg.exit() {
                        return Err(Fallback::new("return before the end of the function", ins.line));
                    }
                    if !stack.is_empty() {
                        return Err(Fallback::shape("values left on the stack at return", ins.line));
                    }
                    self.last_return_line = ins.line;
                    let kind = if nested { StmtKind::Store(RETURN_LOCAL.into(), v) } else { StmtKind::Return(v) };
                    out.push(Stmt { kind, line: ins.line });
                    return Ok((out, None));
                }
                (Term::Branch { jump, next }, Some(ins)) => {
                    cur = self.branch(cur, ins, jump, next, follow, &mut stack, &mut out)?;
                    if cur == cfg.exit() && follow == cfg.exit() {
                        // Every path through the `if` returned.
                        return Ok((out, None));
                    }
                }
                (Term::ForIter { body, exit }, Some(ins)) => {
                    let Some(&Val::Iter(iter)) = stack.last() else {
                        return Err(Fallback::shape("FOR_ITER without an iterator", ins.line));
                    };
                    let item = self.new_reg();
                    let mut body_stack = stack.clone();
                    body_stack.push(Val::Reg(item));
                    let (body, end_stack) = self.region(body, cur, body_stack, true)?;
                    if end_stack.as_ref() != Some(&stack) {
                        return Err(Fallback::shape("stack changed by a loop body", ins.line));
                    }
                    out.push(Stmt { kind: StmtKind::For { iter, item, body }, line: ins.line });
                    stack.pop();
                    cur = exit;
                }
                _ => unreachable!("jump terminators always have their instruction"),
            }
        }
        Ok((out, Some(stack)))
    }

    /// Translates the `if` of a conditional jump at the end of block `b`; returns the join node.
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
    ) -> Result<Node> {
        let x = Self::pop_reg(stack, ins.line)?;
        // `cond` holds a bool; `cond_jumps` says whether the jump is taken when it is true.
        let (cond, cond_jumps) = match ins.opcode {
            POP_JUMP_FORWARD_IF_FALSE | POP_JUMP_BACKWARD_IF_FALSE => {
                (self.bind(Expr::Op(Intrinsic::Truth, vec![x]), ins.line, out), false)
            }
            POP_JUMP_FORWARD_IF_TRUE | POP_JUMP_BACKWARD_IF_TRUE => {
                (self.bind(Expr::Op(Intrinsic::Truth, vec![x]), ins.line, out), true)
            }
            // For the None tests, phrase the condition so the fall-through path is `then`.
            op => {
                let jumps_if_none = matches!(op, POP_JUMP_FORWARD_IF_NONE | POP_JUMP_BACKWARD_IF_NONE);
                let none = self.const_index(Const::None);
                let none = self.bind(Expr::Const(none), ins.line, out);
                (self.bind(Expr::Op(Intrinsic::Is { negate: jumps_if_none }, vec![x, none]), ins.line, out), false)
            }
        };
        let join = self.cfg.ipdom[b].ok_or_else(|| Fallback::shape("branch without a join", ins.line))?;
        if join == self.cfg.exit() && follow != self.cfg.exit() {
            return Err(Fallback::new("return before the end of the function", ins.line));
        }
        // Fall-through side first, so blocks are visited in source order.
        let (next_body, next_stack) = self.region(next, join, stack.clone(), true)?;
        let (jump_body, jump_stack) = self.region(jump, join, stack.clone(), true)?;
        *stack = match (next_stack, jump_stack) {
            (Some(a), Some(b)) if a != b => {
                return Err(Fallback::new("conditional expression (a value flows out of an if/else)", ins.line))
            }
            (Some(s), _) | (None, Some(s)) => s,
            (None, None) => Vec::new(),
        };
        let (then_body, else_body) = if cond_jumps { (jump_body, next_body) } else { (next_body, jump_body) };
        out.push(Stmt { kind: StmtKind::If { cond, then_body, else_body }, line: ins.line });
        Ok(join)
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
            LOAD_FAST => {
                let r = self.bind(Expr::Load(Self::name(&ci.varnames, arg, line)?), line, out);
                stack.push(Val::Reg(r));
            }
            STORE_FAST => {
                let v = Self::pop_reg(stack, line)?;
                out.push(Stmt { kind: StmtKind::Store(Self::name(&ci.varnames, arg, line)?, v), line });
            }
            LOAD_CONST => {
                let r = self.bind(Expr::Const(arg), line, out);
                stack.push(Val::Reg(r));
            }
            LOAD_GLOBAL => {
                if arg & 1 == 1 {
                    stack.push(Val::Null);
                }
                let r = self.bind(Expr::Global(Self::name(&ci.names, arg >> 1, line)?), line, out);
                stack.push(Val::Reg(r));
            }
            LOAD_ATTR | LOAD_METHOD => {
                let obj = Self::pop_reg(stack, line)?;
                if ins.opcode == LOAD_METHOD {
                    // Pushed as NULL + bound method: the call is then a plain call of it.
                    stack.push(Val::Null);
                }
                self.push_op(Intrinsic::GetAttr(Self::name(&ci.names, arg, line)?), vec![obj], ins, stack, out);
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
                let mut args = Self::pop_regs(stack, arg as usize, line)?;
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
            _ => return Err(Fallback::unsupported(ins)),
        }
        Ok(())
    }
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
                    StmtKind::For { body, .. } => count_stmts(body),
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

    #[test]
    fn fallback_display() {
        let op = Fallback { reason: "unsupported opcode".into(), opcode: Some("SETUP_WITH".into()), line: 12 };
        assert_eq!(op.to_string(), "unsupported opcode SETUP_WITH at line 12");
        assert_eq!(Fallback::new("while loop", 3).to_string(), "while loop at line 3");
    }
}
