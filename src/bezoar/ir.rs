//! Bezoar: the sequential, mutable, A-normal-form IR between Python bytecode and λO.
//!
//! Invariants
//! - Every operation's operands are registers (`Reg`), i.e. immutable variables bound exactly once by
//!   a `Let` that dominates every use (ANF). Registers are numbered per function, `r0 .. r{nregs-1}`.
//! - Mutable variables are named (`store x r` / `load x` / `del x`) and are the function's Python
//!   locals (plus the renamed locals of inlined comprehensions `$cK.x`, the cell holders
//!   `$cell.x` of captured variables, and synthetic `$tN`/`$brokeN`/`$ret`). Globals and builtins
//!   are read with `Expr::Global` (the single-assignment treatment of globals), except globals the
//!   function assigns, which are `load_global`/`setitem` operations on its globals dict.
//! - Nothing here is CPython-version specific: the lifter maps 3.11 opcodes onto these constructs.
//! - Every `Expr::Op` and `Expr::Call` is an *external* call at run time unless the callee turns out
//!   to be an internal (@poppy) function; everything else is internal.

/// The local that collects the value of returns nested in a tail `if` (`passes::tidy`).
pub const RETURN_LOCAL: &str = "$ret";

/// An immutable variable (`r{n}`), bound once.
pub type Reg = u32;

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub qualname: String,
    pub filename: String,
    pub firstlineno: u32,
    /// Positional parameter names in order (the locals bound from the frame's arguments).
    pub params: Vec<String>,
    /// Constant pool: `Expr::Const(i)` refers to `consts[i]`.
    pub consts: Vec<Const>,
    pub body: Block,
    /// Number of registers used (all `Reg`s are `< nregs`).
    pub nregs: u32,
}

pub type Block = Vec<Stmt>;

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    /// Source line (0 when unknown).
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `r := e`
    Let(Reg, Expr),
    /// `store x r` — assign a mutable (local) variable.
    Store(String, Reg),
    /// `del x` — unbind a local (UnboundLocalError if it is unbound; later loads raise it too).
    Delete(String),
    /// `unbind x` — make `x` unbound without checking it was bound (the locals of an inlined
    /// inner function at the start of each call).
    Unbind(String),
    /// `if r: ... else: ...` — `cond` must hold a Python bool (the lifter inserts `Op(Truth)`).
    If { cond: Reg, then_body: Block, else_body: Block },
    /// `for item in iter: body` — `iter` holds the object being iterated (the lifter inserts
    /// `Op(IterSnapshot)` so `iter` is a materialised sequence); `item` is bound on each iteration.
    For { iter: Reg, item: Reg, body: Block },
    /// `return r` — anywhere (lowering threads an exit status when it is not the last statement).
    Return(Reg),
    /// `loop: body` — repeats `body` until a `Break` (or `Return`) leaves it. `while c: b` is
    /// `loop: [compute c]; if not c: break; b`.
    Loop { body: Block },
    /// Leave the innermost `For`/`Loop`.
    Break,
    /// Start the next iteration of the innermost `For`/`Loop`.
    Continue,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `const k` — a constant from `Function::consts`.
    Const(u32),
    /// `load x` — read a mutable (local) variable.
    Load(String),
    /// `global name` — look up a module global, then builtins.
    Global(String),
    /// `f(a, b, k=c)`: positional args followed by keyword args; `kwnames` names the last
    /// `kwnames.len()` entries of `args`.
    Call { func: Reg, args: Vec<Reg>, kwnames: Vec<String> },
    /// A desugared Python operation (operators, attribute access, subscripts, formatting...).
    Op(Intrinsic, Vec<Reg>),
}

/// Python operations that Bezoar desugars into calls (PopPy §5.1: `x.y` → `getattr(x, "y")`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `a <op> b`; `inplace` for augmented assignment (`a += b`).
    Binary { op: BinOp, inplace: bool },
    /// `-a`, `+a`, `~a`, `not a`.
    Unary(UnaryOp),
    /// `a < b` etc.
    Compare(CmpOp),
    /// `a is b` / `a is not b` (negate = true).
    Is { negate: bool },
    /// `a in b` / `a not in b` (negate = true). Operands: [a, b].
    Contains { negate: bool },
    /// `bool(a)`, used for branching.
    Truth,
    /// `getattr(obj, name)`. Operands: [obj].
    GetAttr(String),
    /// `obj.<method>(args...)[index]` with the list the method returns used for nothing else
    /// (`line.split(": ", 1)[1]`): the same getattr, call and subscript, as one operation, so that
    /// on a str the intermediate list (which nothing else can see) does not order it as a read
    /// of a mutable object. Operands: [obj, args..., index]. Methods: split, rsplit, splitlines.
    SplitGetItem(String),
    /// `obj[key]`. Operands: [obj, key].
    GetItem,
    /// `(a, b, ...)`.
    BuildTuple,
    /// `[a, b, ...]`.
    BuildList,
    /// f-string piece: `format(conv(x), spec)`. Operands: [x] or [x, spec] when `has_spec`.
    FormatValue { conv: Conversion, has_spec: bool },
    /// f-string concatenation of n strings.
    BuildString,
    /// Materialise an iterable for a `for` loop into a tuple of its elements.
    IterSnapshot,
    /// `obj.name = v`. Operands: [obj, v].
    SetAttr(String),
    /// `del obj.name`. Operands: [obj].
    DelAttr(String),
    /// `obj[key] = v`. Operands: [obj, key, v].
    SetItem,
    /// `del obj[key]`. Operands: [obj, key].
    DelItem,
    /// `{k0: v0, k1: v1, ...}`. Operands: [k0, v0, k1, v1, ...].
    BuildMap,
    /// `{a, b, ...}`.
    BuildSet,
    /// `slice(a, b)` / `slice(a, b, c)`.
    BuildSlice,
    /// `list.extend(l, iterable)` (list displays with starred items / constant tails); returns None.
    ListExtend,
    /// `dict.update(d, m)` (`{**m}` displays); returns None.
    DictUpdate,
    /// `set.update(s, iterable)`; returns None.
    SetUpdate,
    /// `tuple(list)` (after a list display was built for a tuple with starred items).
    ListToTuple,
    /// `a, b = x`: a tuple of exactly n items (ValueError like CPython otherwise).
    UnpackSequence(u32),
    /// `a, *b, c = x`: a tuple of `before` items, a list, then `after` items.
    UnpackEx { before: u32, after: u32 },
    /// Whether the callee receiving a generator expression is the builtin the lifter assumed
    /// (`builtins.<name>`, or the `join` of a str/bytes/bytearray for `"join"`), so that the
    /// generator may be inlined as a loop. Operands: [callee].
    IsConsumer(String),
    /// Raises the TypeError of a shadowed consumer that the lifter cannot handle. Operands:
    /// [callee, name].
    ConsumerMismatch,
    /// A real generator from a generator expression's code object, over an iterator of the
    /// items. Operands: [code, globals, items].
    MakeGenexpr,
    /// `types.CellType(v)` / an empty cell: a local captured by an inner function lives in a
    /// real cell (late binding, `nonlocal` writes). Operands: [] or [v].
    MakeCell,
    /// The contents of a cell; raises like CPython when it is empty (UnboundLocalError for the
    /// function's own cell `name`, NameError for a free variable when `free`). Operands: [cell].
    CellGet { name: String, free: bool },
    /// Set a cell's contents. Operands: [cell, v]. Returns None.
    CellSet,
    /// A Python function object from a nested code object (`MAKE_FUNCTION`). Operands:
    /// [code, globals, defaults, kwdefaults, annotations, closure] (None when absent).
    MakeFunction,
    /// `f(*args, **kwargs)` (`CALL_FUNCTION_EX`): a callable that, called with no arguments, calls
    /// `f` with exactly those arguments (args converted to a tuple like CPython, with its error).
    /// Operands: [f, args] or [f, args, kwargs].
    StarCall,
    /// `DICT_MERGE`: merge mapping `m` into the keyword dict `d` of a call of `f`, raising
    /// CPython's TypeError on a repeated keyword or a non-mapping. Operands: [d, m, f].
    DictMerge,
    /// A global the function itself assigns (`global x; x = ...`): read in program order
    /// (module globals, then builtins). Operands: [globals].
    LoadGlobal(String),
}

impl Intrinsic {
    /// The stable name of an intrinsic: the key of its implementation in
    /// `poppy_jit/_intrinsics.py` (static operands such as attribute names are not part of it).
    pub fn key(&self) -> String {
        fn bin(op: BinOp) -> &'static str {
            match op {
                BinOp::Add => "add",
                BinOp::And => "and",
                BinOp::FloorDiv => "floordiv",
                BinOp::LShift => "lshift",
                BinOp::MatMul => "matmul",
                BinOp::Mul => "mul",
                BinOp::Mod => "mod",
                BinOp::Or => "or",
                BinOp::Pow => "pow",
                BinOp::RShift => "rshift",
                BinOp::Sub => "sub",
                BinOp::TrueDiv => "truediv",
                BinOp::Xor => "xor",
            }
        }
        match self {
            Intrinsic::Binary { op, inplace } => {
                format!("{}_{}", if *inplace { "inplace" } else { "binary" }, bin(*op))
            }
            Intrinsic::Unary(u) => match u {
                UnaryOp::Neg => "neg",
                UnaryOp::Pos => "pos",
                UnaryOp::Invert => "invert",
                UnaryOp::Not => "not",
            }
            .into(),
            Intrinsic::Compare(c) => match c {
                CmpOp::Lt => "lt",
                CmpOp::Le => "le",
                CmpOp::Eq => "eq",
                CmpOp::Ne => "ne",
                CmpOp::Gt => "gt",
                CmpOp::Ge => "ge",
            }
            .into(),
            Intrinsic::Is { negate } => if *negate { "is_not" } else { "is" }.into(),
            Intrinsic::Contains { negate } => if *negate { "not_in" } else { "in" }.into(),
            Intrinsic::Truth => "truth".into(),
            Intrinsic::GetAttr(_) => "getattr".into(),
            Intrinsic::SplitGetItem(_) => "split_getitem".into(),
            Intrinsic::GetItem => "getitem".into(),
            Intrinsic::BuildTuple => "tuple".into(),
            Intrinsic::BuildList => "list".into(),
            Intrinsic::FormatValue { conv, .. } => match conv {
                Conversion::None => "format_none",
                Conversion::Str => "format_str",
                Conversion::Repr => "format_repr",
                Conversion::Ascii => "format_ascii",
            }
            .into(),
            Intrinsic::BuildString => "build_string".into(),
            Intrinsic::IterSnapshot => "iter".into(),
            Intrinsic::SetAttr(_) => "setattr".into(),
            Intrinsic::DelAttr(_) => "delattr".into(),
            Intrinsic::SetItem => "setitem".into(),
            Intrinsic::DelItem => "delitem".into(),
            Intrinsic::BuildMap => "build_map".into(),
            Intrinsic::BuildSet => "build_set".into(),
            Intrinsic::BuildSlice => "build_slice".into(),
            Intrinsic::ListExtend => "list_extend".into(),
            Intrinsic::DictUpdate => "dict_update".into(),
            Intrinsic::SetUpdate => "set_update".into(),
            Intrinsic::ListToTuple => "list_to_tuple".into(),
            Intrinsic::UnpackSequence(_) => "unpack_sequence".into(),
            Intrinsic::UnpackEx { .. } => "unpack_ex".into(),
            Intrinsic::IsConsumer(_) => "is_consumer".into(),
            Intrinsic::ConsumerMismatch => "consumer_mismatch".into(),
            Intrinsic::MakeGenexpr => "make_genexpr".into(),
            Intrinsic::MakeCell => "make_cell".into(),
            Intrinsic::CellGet { .. } => "cell_get".into(),
            Intrinsic::CellSet => "cell_set".into(),
            Intrinsic::MakeFunction => "make_function".into(),
            Intrinsic::StarCall => "star_call".into(),
            Intrinsic::DictMerge => "dict_merge".into(),
            Intrinsic::LoadGlobal(_) => "load_global".into(),
        }
    }

    /// Static operands passed after the register operands (attribute names, unpack counts).
    pub fn static_operands(&self) -> Vec<Const> {
        match self {
            Intrinsic::GetAttr(n) | Intrinsic::SetAttr(n) | Intrinsic::DelAttr(n) | Intrinsic::IsConsumer(n)
            | Intrinsic::LoadGlobal(n) | Intrinsic::SplitGetItem(n) => {
                vec![Const::Str(n.clone())]
            }
            Intrinsic::UnpackSequence(n) => vec![Const::Int(*n as i64)],
            Intrinsic::CellGet { name, free } => vec![Const::Str(name.clone()), Const::Bool(*free)],
            Intrinsic::UnpackEx { before, after } => {
                vec![Const::Int(*before as i64), Const::Int(*after as i64)]
            }
            _ => vec![],
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    And,
    FloorDiv,
    LShift,
    MatMul,
    Mul,
    Mod,
    Or,
    Pow,
    RShift,
    Sub,
    TrueDiv,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    Invert,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Eq,
    Ne,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conversion {
    None,
    Str,
    Repr,
    Ascii,
}

/// A constant. Values that do not fit the structured forms are `Opaque`: the host resolves them
/// by their index in the code object's `co_consts`.
#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Tuple(Vec<Const>),
    Opaque { co_index: u32, repr: String },
    /// An opaque constant of a code object nested in this one (an inlined comprehension):
    /// `co_consts[path[0]].co_consts[path[1]]...`.
    Nested { path: Vec<u32>, repr: String },
    /// The function's module globals (the `__globals__` of functions it creates).
    Globals,
}
