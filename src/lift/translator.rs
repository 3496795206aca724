//! The `Translator`: symbolic stack, ANF emission and the per-instruction translation (moved from lift.rs).
use super::*;
use crate::py311::decode::Instr;
use crate::py311::CodeInfo;
use std::collections::{HashMap, HashSet};

// ---------------------------------------------------------------------------------------------
// Translation

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
    Cell(String),
    /// A tuple of cells (a closure, for `MAKE_FUNCTION`).
    Cells(Vec<String>),
    /// A comprehension or generator expression function, not yet called.
    Func { code: u32, closure: Vec<String> },
    /// A generator expression called with its iterator, waiting for its consumer.
    Genexpr { code: u32, closure: Vec<String>, iter: Reg },
}

pub(super) type Stack = Vec<Val>;


pub(super) struct Translator<'a> {
    pub(super) ci: &'a CodeInfo,
    pub(super) instrs: &'a [Instr],
    pub(super) cfg: &'a Cfg,
    pub(super) loops: &'a HashMap<Node, LoopInfo>,
    pub(super) ctx: Vec<LoopCtx>,
    /// Post-dominator sets per loop scope (`None`: outside loops); see `Translator::join`.
    pub(super) pdoms: HashMap<Option<Node>, std::rc::Rc<Vec<Vec<bool>>>>,
    pub(super) consts: Vec<Const>,
    /// Registers bound to `Expr::Const` (BUILD_CONST_KEY_MAP reads its keys from one).
    pub(super) const_regs: HashMap<Reg, u32>,
    pub(super) nregs: u32,
    pub(super) ntemps: u32,
    pub(super) nflags: u32,
    /// Instructions that may still be translated: blocks reached along several paths (shared
    /// short-circuit operands) are translated once per path, within this limit.
    pub(super) budget: usize,
    /// Keyword names set by `KW_NAMES` for the next `CALL`.
    pub(super) kwnames: Option<Vec<String>>,
    /// Line of the instruction being translated.
    pub(super) line: u32,
    /// The Bezoar names of the code object's "fast locals" slots (`CodeInfo::localsplus`): the
    /// names themselves in the @poppy function; renamed locals (`$cK.x`) and the enclosing
    /// names of free variables in an inlined comprehension.
    pub(super) locals: Vec<String>,
    /// In an inlined comprehension: the register of its iterator (the local `.0`).
    pub(super) dot0: Option<Reg>,
    /// In an inlined comprehension: its `co_consts` indices mapped into the shared pool.
    pub(super) const_map: Option<Vec<u32>>,
    /// `co_consts` indices leading from the @poppy function's code to this code object.
    pub(super) path: Vec<u32>,
    /// Registers bound to `Expr::Global` / `getattr` (to recognise generator consumers).
    pub(super) global_regs: HashMap<Reg, String>,
    pub(super) attr_regs: HashMap<Reg, String>,
    /// In an inlined generator expression: what a `yield` does.
    pub(super) yield_mode: Option<YieldMode>,
    /// Inlined code objects so far (numbering their renamed locals).
    pub(super) ncomp: u32,
    /// Locals (Bezoar names) that live in real cells because an inner function or lambda
    /// captures them: their cell object is held in the local `$cell.NAME`.
    pub(super) real_cells: HashSet<String>,
    /// Index of the first free variable in `locals`.
    pub(super) first_free: usize,
    /// Globals the function assigns (`global x; x = ...`): read in program order.
    pub(super) stored_globals: HashSet<String>,
    /// Locals that hold one known inner function for the whole run (see `known_functions`), and
    /// the registers loaded from them: calls of these may be inlined (`inline_call`).
    /// (With whether the function is "plain": it has no function object and its captured
    /// variables are ordinary locals, so every use must be an inlined call.)
    pub(super) known_funcs: HashMap<String, (KnownFunc, bool)>,
    pub(super) func_regs: HashMap<Reg, (KnownFunc, bool)>,
    /// Inner functions being inlined (no recursive inlining).
    pub(super) inlining: HashSet<u32>,
    /// Codes (among this function's constants) of the plain inner functions.
    pub(super) plain_funcs: HashSet<u32>,
    /// Lengths of the tuples built by `BuildTuple`, keys of the dicts built by `BuildMap` (to
    /// know a plain function's defaults), and those defaults by code: the number of positional
    /// defaults (held in the local `$fnK.defaults`) and the names of the keyword-only ones
    /// (`$fnK.kwdefaults`).
    pub(super) tuple_lens: HashMap<Reg, usize>,
    pub(super) map_keys: HashMap<Reg, Vec<String>>,
    pub(super) fn_defaults: HashMap<u32, (usize, Vec<String>)>,
}

pub(super) fn stmt(kind: StmtKind, line: u32) -> Stmt {
    Stmt { kind, line }
}

impl Translator<'_> {
    pub(super) fn new_reg(&mut self) -> Reg {
        self.nregs += 1;
        self.nregs - 1
    }

    pub(super) fn bind(&mut self, e: Expr, line: u32, out: &mut Block) -> Reg {
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

    pub(super) fn bind_const(&mut self, c: Const, line: u32, out: &mut Block) -> Reg {
        let k = self.const_index(c);
        self.bind(Expr::Const(k), line, out)
    }

    pub(super) fn push_op(&mut self, op: Intrinsic, args: Vec<Reg>, ins: &Instr, stack: &mut Stack, out: &mut Block) {
        let r = self.bind(Expr::Op(op, args), ins.line, out);
        stack.push(Val::Reg(r));
    }

    pub(super) fn const_index(&mut self, c: Const) -> u32 {
        match self.consts.iter().position(|k| *k == c) {
            Some(i) => i as u32,
            None => {
                self.consts.push(c);
                self.consts.len() as u32 - 1
            }
        }
    }

    pub(super) fn temp(&mut self) -> String {
        self.ntemps += 1;
        format!("$t{}", self.ntemps - 1)
    }

    pub(super) fn spend(&mut self, n: usize) -> Result<()> {
        self.budget = self
            .budget
            .checked_sub(n)
            .ok_or_else(|| Fallback::new("control flow too irregular (blocks shared by too many paths)", self.line))?;
        Ok(())
    }

    pub(super) fn pop(stack: &mut Stack, line: u32) -> Result<Val> {
        stack.pop().ok_or_else(|| Fallback::shape("stack underflow", line))
    }

    pub(super) fn pop_reg(stack: &mut Stack, line: u32) -> Result<Reg> {
        match Self::pop(stack, line)? {
            Val::Reg(r) => Ok(r),
            Val::Genexpr { .. } => Err(Fallback::new(
                "generator expression used other than as an argument of a call (stored, returned or operated on)",
                line,
            )),
            v => Err(Fallback::shape(&format!("{v:?} used as a value"), line)),
        }
    }

    pub(super) fn pop_regs(stack: &mut Stack, n: usize, line: u32) -> Result<Vec<Reg>> {
        let mut rs = (0..n).map(|_| Self::pop_reg(stack, line)).collect::<Result<Vec<_>>>()?;
        rs.reverse();
        Ok(rs)
    }

    pub(super) fn name(names: &[String], i: u32, line: u32) -> Result<String> {
        names.get(i as usize).cloned().ok_or_else(|| Fallback::shape("name index out of range", line))
    }

    /// Translates one straight-line instruction.
    pub(super) fn instr(&mut self, ins: &Instr, stack: &mut Stack, out: &mut Block) -> Result<()> {
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
