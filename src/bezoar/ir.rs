//! Bezoar: the sequential, mutable, A-normal-form IR between Python bytecode and λO.
//!
//! Invariants
//! - Every operation's operands are registers (`Reg`), i.e. immutable variables bound exactly once by
//!   a `Let` that dominates every use (ANF). Registers are numbered per function, `r0 .. r{nregs-1}`.
//! - Mutable variables are named (`store x r` / `load x`) and are the function's Python locals.
//!   Globals and builtins are read with `Expr::Global` (the single-assignment treatment of globals:
//!   a function that stores a global falls back before reaching Bezoar).
//! - Nothing here is CPython-version specific: the lifter maps 3.11 opcodes onto these constructs.
//! - Every `Expr::Op` and `Expr::Call` is an *external* call at run time unless the callee turns out
//!   to be an internal (@poppy) function; everything else is internal.

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
    /// `if r: ... else: ...` — `cond` must hold a Python bool (the lifter inserts `Op(Truth)`).
    If { cond: Reg, then_body: Block, else_body: Block },
    /// `for item in iter: body` — `iter` holds the object being iterated (the lifter inserts
    /// `Op(IterSnapshot)` so `iter` is a materialised sequence); `item` is bound on each iteration.
    For { iter: Reg, item: Reg, body: Block },
    /// `return r` (the skeleton's fragment only allows it as the last statement of the function).
    Return(Reg),
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
}
