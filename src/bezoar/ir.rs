//! Bezoar: the sequential, mutable, A-normal-form IR between Python bytecode and λO.
//!
//! Invariants
//! - Every operation's operands are registers (`Reg`), i.e. immutable variables bound exactly once by
//!   a `Let` that dominates every use (ANF). Registers are numbered per function, `r0 .. r{nregs-1}`.
//! - Mutable variables are named (`store x r` / `load x` / `del x`) by a `VarName`: the function's
//!   Python locals, or variables the lifter makes (`VarKind`: the renamed locals `$cK.x` of
//!   inlined code, the cell holders `$cell.x` of captured variables, the defaults `$fnK.defaults`
//!   of plain inner functions, and `$tN`/`$brokeN`/`$ret`). Globals and builtins are read with
//!   `Expr::Global` (the single-assignment treatment of globals), except globals the function
//!   assigns, which are `load_global`/`setitem` operations on its globals dict.
//! - Nothing here is CPython-version specific: the lifter maps 3.11 opcodes onto these constructs.
//! - Every `Expr::Op` and `Expr::Call` is an *external* call at run time unless the callee turns out
//!   to be an internal (@poppy) function; everything else is internal.

/// The text of `VarKind::Ret`, the local that collects the value of returns nested in a tail
/// `if` (`passes::tidy`).
pub const RETURN_LOCAL: &str = "$ret";

/// An immutable variable (`r{n}`), bound once.
pub type Reg = u32;

/// The name of a mutable variable: its kind, and its text form (`x`, `$c0.x`, `$cell.x`, `$t3`,
/// ...), which the Bezoar text prints and parses back and after which lowering names its λO
/// variables and memory slots. Equality, order and hashing follow the text (the two determine
/// each other), so sets of variables iterate in text order.
#[derive(Clone)]
pub struct VarName {
    kind: VarKind,
    text: String,
}

/// What a mutable variable is. Python names never start with `$`, so the text forms of the made-up
/// kinds cannot clash with a Python local.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VarKind {
    /// A local of the lifted function, by its Python name (also `.0`, the iterator parameter of a
    /// comprehension's code object).
    Local(String),
    /// `$cK.x`: the local `x` of the K-th code object inlined into the function (a comprehension,
    /// a generator expression or an inner function), renamed apart.
    Inlined { ctx: u32, name: String },
    /// `$cK.$ret`: the value returned by the K-th inlined code object (an inner function's call).
    InlinedRet(u32),
    /// `$cell.x`: the cell object of the captured variable `x` (a `Local` or `Inlined`).
    Cell(Box<VarName>),
    /// `$fnK.defaults`: the positional defaults of the plain inner function whose code is the
    /// constant K (of the code object defining it).
    Defaults(u32),
    /// `$fnK.kwdefaults`: its keyword-only defaults.
    KwDefaults(u32),
    /// `$tN`: a value flowing out of an `if` (`a or b`), a short-circuit condition, or a
    /// generator consumer's result.
    Temp(u32),
    /// `$brokeN`: set by the `break`s of a loop with an else clause.
    Broke(u32),
    /// `$ret`: see `RETURN_LOCAL`.
    Ret,
}

impl VarName {
    pub fn local(name: impl Into<String>) -> Self {
        VarKind::Local(name.into()).into()
    }

    pub fn kind(&self) -> &VarKind {
        &self.kind
    }

    /// The text form.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Reads the text form back (the inverse of `as_str`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || format!("`{text}` is not a variable name");
        let Some(rest) = text.strip_prefix('$') else {
            return if text.is_empty() { Err(bad()) } else { Ok(VarName::local(text)) };
        };
        // A number in canonical form (so that printing it back gives the same text).
        let number = |s: &str| s.parse::<u32>().ok().filter(|n| n.to_string() == s);
        let kind = if rest == "ret" {
            VarKind::Ret
        } else if let Some(inner) = rest.strip_prefix("cell.") {
            let inner = VarName::parse(inner)?;
            if !matches!(inner.kind, VarKind::Local(_) | VarKind::Inlined { .. }) {
                return Err(bad());
            }
            VarKind::Cell(Box::new(inner))
        } else if let Some(n) = rest.strip_prefix("broke").and_then(number) {
            VarKind::Broke(n)
        } else if let Some(n) = rest.strip_prefix('t').and_then(number) {
            VarKind::Temp(n)
        } else if let Some((k, what)) = rest.strip_prefix("fn").and_then(|r| r.split_once('.')) {
            match (number(k), what) {
                (Some(k), "defaults") => VarKind::Defaults(k),
                (Some(k), "kwdefaults") => VarKind::KwDefaults(k),
                _ => return Err(bad()),
            }
        } else if let Some((k, name)) = rest.strip_prefix('c').and_then(|r| r.split_once('.')) {
            match (number(k), name) {
                (Some(k), "$ret") => VarKind::InlinedRet(k),
                (Some(ctx), name) if !name.is_empty() && !name.starts_with('$') => {
                    VarKind::Inlined { ctx, name: name.to_string() }
                }
                _ => return Err(bad()),
            }
        } else {
            return Err(bad());
        };
        Ok(kind.into())
    }
}

impl From<VarKind> for VarName {
    fn from(kind: VarKind) -> Self {
        let text = match &kind {
            VarKind::Local(name) => name.clone(),
            VarKind::Inlined { ctx, name } => format!("$c{ctx}.{name}"),
            VarKind::InlinedRet(ctx) => format!("$c{ctx}.{RETURN_LOCAL}"),
            VarKind::Cell(var) => format!("$cell.{}", var.text),
            VarKind::Defaults(k) => format!("$fn{k}.defaults"),
            VarKind::KwDefaults(k) => format!("$fn{k}.kwdefaults"),
            VarKind::Temp(n) => format!("$t{n}"),
            VarKind::Broke(n) => format!("$broke{n}"),
            VarKind::Ret => RETURN_LOCAL.to_string(),
        };
        VarName { kind, text }
    }
}

/// The text form, for literals in tests and hand-built Bezoar: `"x".into()`, `"$c0.x".into()`.
/// Panics on a malformed `$` name (use `VarName::parse` on untrusted text).
impl From<&str> for VarName {
    fn from(text: &str) -> Self {
        VarName::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }
}

impl PartialEq for VarName {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for VarName {}

impl PartialOrd for VarName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for VarName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.text.cmp(&other.text)
    }
}

impl std::hash::Hash for VarName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.text.hash(state)
    }
}

impl PartialEq<str> for VarName {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for VarName {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl std::fmt::Display for VarName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Like the text (a quoted string).
impl std::fmt::Debug for VarName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.text, f)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub qualname: String,
    pub filename: String,
    pub firstlineno: u32,
    /// Parameter names in order: the locals bound from the frame's arguments, then a closure's
    /// free variables (`$cell.x` when the cell itself is passed, `x` when its value is).
    pub params: Vec<VarName>,
    /// Constant pool: `Expr::Const(i)` refers to `consts[i]`.
    pub consts: Vec<Const>,
    pub body: Block,
    /// Number of registers used (all `Reg`s are `< nregs`).
    pub nregs: u32,
    /// Locals that a comprehension reads as a free variable where they may be unbound, and
    /// that nothing else reads there: unbound, their error is CPython's NameError for a free
    /// variable ("cannot access free variable ... in enclosing scope"), not UnboundLocalError.
    pub free_unbound: Vec<VarName>,
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
    Store(VarName, Reg),
    /// `del x` — unbind a local (UnboundLocalError if it is unbound; later loads raise it too).
    Delete(VarName),
    /// `unbind x` — make `x` unbound without checking it was bound (the locals of an inlined
    /// inner function at the start of each call).
    Unbind(VarName),
    /// `if r: ... else: ...` — `cond` must hold a Python bool (the lifter inserts `Op(Truth)`).
    If { cond: Reg, then_body: Block, else_body: Block },
    /// `for item in iter: body` — `iter` holds what the loop runs over (the lifter inserts
    /// `Op(IterSnapshot)`: a materialised sequence, or the iterator when materialising is not
    /// safe, chosen at run time); `item` is bound on each iteration.
    For { iter: Reg, item: Reg, body: Block },
    /// `return r` — anywhere (lowering threads an exit status when it is not the last statement).
    Return(Reg),
    /// `raise r` — `r` is the result of a `raise`/`raise_from` operation, which never succeeds:
    /// the path ends here. Not an exit: no exit status records it, so what follows the enclosing
    /// statements is lowered as if the path went on; all of it comes after the raise in program
    /// order, so its ordered calls wait for the raise (and never run) and its unordered ones are
    /// speculative (cancelled when the raise fails). A loop with a `raise` in a rarely taken
    /// branch keeps its iterations overlapping.
    Raise(Reg),
    /// `loop: body` — repeats `body` until a `Break` (or `Return`) leaves it. `while c: b` is
    /// `loop: [compute c]; if not c: break; b`.
    Loop { body: Block },
    /// Leave the innermost `For`/`Loop`.
    Break,
    /// Start the next iteration of the innermost `For`/`Loop`.
    Continue,
    /// `try: body except ...: ... else: orelse` — a failure of an operation of `body` (not of its
    /// handlers or `orelse`) is caught: nothing after the raising operation runs, the handlers
    /// are tried in order with the locals as they were at the raising point, and an exception no
    /// handler matches propagates unchanged. `orelse` runs only when `body` completed normally
    /// (not after break/continue/return) — unless `finally`: then `orelse` is a finally clause's
    /// normal copy, run also after `body` left by break/continue/return (which then goes on,
    /// unless `orelse` raised); it holds no break/continue/return itself (printed `finally:`).
    Try { body: Block, handlers: Vec<Handler>, orelse: Block, finally: bool },
}

/// One `except` clause of a `Try`.
#[derive(Clone, Debug, PartialEq)]
pub struct Handler {
    /// The code computing the class (or tuple of classes) `E` of `except E`, run only when the
    /// handlers before it did not match, and the register holding it; `None` for a bare `except:`.
    pub test: Option<(Block, Reg)>,
    /// `except E as name`: the caught exception is stored in `name` for the handler body, which
    /// is then set to None and deleted (CPython's `name = None; del name`), also when the body
    /// leaves by break/continue/return.
    pub name: Option<VarName>,
    pub body: Block,
}

impl StmtKind {
    /// The blocks nested in this statement, in program order (a `Try`: the body, each handler's
    /// test and body, the else).
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            StmtKind::If { then_body, else_body, .. } => vec![then_body, else_body],
            StmtKind::For { body, .. } | StmtKind::Loop { body } => vec![body],
            StmtKind::Try { body, handlers, orelse, .. } => {
                let mut out = vec![body];
                for h in handlers {
                    if let Some((test, _)) = &h.test {
                        out.push(test);
                    }
                    out.push(&h.body);
                }
                out.push(orelse);
                out
            }
            _ => vec![],
        }
    }

    /// `blocks`, mutably.
    pub fn blocks_mut(&mut self) -> Vec<&mut Block> {
        match self {
            StmtKind::If { then_body, else_body, .. } => vec![then_body, else_body],
            StmtKind::For { body, .. } | StmtKind::Loop { body } => vec![body],
            StmtKind::Try { body, handlers, orelse, .. } => {
                let mut out = vec![body];
                for h in handlers {
                    if let Some((test, _)) = &mut h.test {
                        out.push(test);
                    }
                    out.push(&mut h.body);
                }
                out.push(orelse);
                out
            }
            _ => vec![],
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `const k` — a constant from `Function::consts`.
    Const(u32),
    /// `load x` — read a mutable (local) variable.
    Load(VarName),
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
    /// f-string conversion alone: `str(x)`, `repr(x)` or `ascii(x)` (never `Conversion::None`).
    /// 3.13 converts (`CONVERT_VALUE`) before it evaluates a computed format spec, then formats
    /// the converted value (`FormatValue { conv: None, has_spec: true }`). Operands: [x].
    Convert(Conversion),
    /// f-string concatenation of n strings.
    BuildString,
    /// `GET_ITER` of a `for` loop: a tuple of the iterable's items when nothing can change them
    /// (range, tuple, str, bytes, frozenset, enumerate/zip/reversed over those), else the
    /// iterator, wrapped so that it is falsy (iterated lazily, one `next` in program order;
    /// lowering chooses with `ite` on this value).
    IterSnapshot,
    /// `GET_ITER` of a `for` loop whose body cannot hand the container on
    /// (`bezoar::passes::private_iterables`): like `IterSnapshot`, but a list, dict or set the
    /// run owns and has handed to nobody (its read is ordered against that object alone) is
    /// read at once.
    IterPrivate,
    /// One step of a lazily iterated `for` loop: `(item,)`, or `()` once the iterator is
    /// exhausted. Operands: [the `IterSnapshot` value]. Emitted by lowering only.
    NextOrStop,
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
    /// items, with the cells of the variables it captures as its closure. Operands: [code,
    /// globals, items, cells...].
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
    /// Internal region K of the function (`passes::regions`): a stretch of internal code run as
    /// one generated Python function. Operands: its live-in values. Returns the tuple of its
    /// live-out values, or None when it declined (then the stretch runs operation by operation).
    Region(u32),
    /// `import name` / `from name import ...` (`IMPORT_NAME`): the builtins' `__import__(name,
    /// globals, None, fromlist, level)`, as CPython calls it. Operands: [globals, fromlist, level].
    ImportName(String),
    /// `from m import name` (`IMPORT_FROM`): CPython's own attribute-or-submodule lookup, with its
    /// ImportError. Operands: [module].
    ImportFrom(String),
    /// `await x` of a coroutine (`GET_AWAITABLE` … `SEND` loop): the awaited value, awaited on
    /// the caller's event loop as one sequential external. Operands: [x].
    Await,
    /// `await f(...)`: the callable that makes the call and awaits it (an annotated external
    /// keeps its class; a @poppy `async def` is inlined; anything else is one sequential
    /// external). Operands: [f].
    AwaitCall,
    /// `match` (3.11 `MATCH_SEQUENCE`): whether the subject's type is a sequence for pattern
    /// matching (`Py_TPFLAGS_SEQUENCE`). Operands: [subject].
    MatchSequence,
    /// `MATCH_MAPPING`: whether the subject's type is a mapping (`Py_TPFLAGS_MAPPING`).
    /// Operands: [subject].
    MatchMapping,
    /// `GET_LEN`: `len(x)` of a sequence or mapping pattern's subject. Operands: [x].
    GetLen,
    /// `MATCH_KEYS`: the tuple of the subject's values for the keys (looked up with its `get`),
    /// or None when one is missing; CPython's ValueError on a duplicate key. Operands:
    /// [subject, keys].
    MatchKeys,
    /// `MATCH_CLASS n`: the tuple of the n positional (`__match_args__`) and the keyword
    /// attributes of the subject if it is an instance of the class, else None; CPython's
    /// TypeErrors. Operands: [subject, cls, keyword names].
    MatchClass(u32),
    /// `raise exc` / `raise exc from cause` (`from_cause`): raises as CPython does (a class is
    /// instantiated, `__cause__`/`__suppress_context__` set, CPython's TypeError for a
    /// non-exception). Never returns: the lifter follows it with `raise r` (`StmtKind::Raise`;
    /// inside a `while` loop `return r`), so the raise ends its block and the run fails at its
    /// place in program order. Operands: [exc] or [exc, cause].
    Raise { from_cause: bool },
    /// The builtin `AssertionError` (`LOAD_ASSERTION_ERROR`: whatever the globals say).
    /// Operands: none.
    AssertionError,
    /// A bare `raise` in an `except` handler: re-raises the exception the innermost handler
    /// around it is handling, as it is (its traceback and `__context__` unchanged: CPython adds
    /// no traceback entry for it). Never returns; followed by `raise r` like `Raise`. Lowered to
    /// the `reraise` helper on the handler's caught value. Operands: none.
    Reraise,
    /// `with m` (`BEFORE_WITH`), first half: the manager's `__enter__` looked up on its type and
    /// bound to it (CPython's special-method lookup), or CPython's TypeError "'X' object does not
    /// support the context manager protocol". Operands: [m]. (`src/lift/with_stmt.rs`.)
    WithEnter,
    /// `BEFORE_WITH`, second half: the manager's `__exit__`, bound, or CPython's TypeError
    /// "(missed __exit__ method)". Operands: [m].
    WithExit,
    /// `async with m` (`BEFORE_ASYNC_WITH`), first half: a callable that calls the manager's
    /// `__aenter__` (looked up on its type and bound, or CPython's TypeError "'X' object does not
    /// support the asynchronous context manager protocol") and awaits the result (`GET_AWAITABLE
    /// 1`'s TypeError when it is not awaitable): one sequential external. Operands: [m].
    AsyncWithEnter,
    /// `BEFORE_ASYNC_WITH`, second half: the same for `__aexit__` ("(missed __aexit__ method)";
    /// `GET_AWAITABLE 2`). Operands: [m].
    AsyncWithExit,
    /// `type(e)` of a caught exception, as `WITH_EXCEPT_START` passes it to `__exit__`.
    /// Operands: [e].
    ExcType,
    /// The traceback of a caught exception (`PyException_GetTraceback`), as `WITH_EXCEPT_START`
    /// passes it to `__exit__`. Operands: [e].
    ExcTraceback,
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
            Intrinsic::Convert(conv) => match conv {
                Conversion::Str => "convert_str",
                Conversion::Repr => "convert_repr",
                Conversion::Ascii => "convert_ascii",
                Conversion::None => unreachable!("a conversion alone converts"),
            }
            .into(),
            Intrinsic::BuildString => "build_string".into(),
            Intrinsic::IterSnapshot => "iter".into(),
            Intrinsic::IterPrivate => "iter_private".into(),
            Intrinsic::NextOrStop => "next_or_stop".into(),
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
            Intrinsic::Region(_) => "region".into(),
            Intrinsic::ImportName(_) => "import_name".into(),
            Intrinsic::ImportFrom(_) => "import_from".into(),
            Intrinsic::Await => "await".into(),
            Intrinsic::AwaitCall => "await_call".into(),
            Intrinsic::MatchSequence => "match_sequence".into(),
            Intrinsic::MatchMapping => "match_mapping".into(),
            Intrinsic::GetLen => "get_len".into(),
            Intrinsic::MatchKeys => "match_keys".into(),
            Intrinsic::MatchClass(_) => "match_class".into(),
            Intrinsic::Raise { from_cause } => if *from_cause { "raise_from" } else { "raise" }.into(),
            Intrinsic::AssertionError => "assertion_error".into(),
            Intrinsic::Reraise => "reraise_handled".into(),
            Intrinsic::WithEnter => "with_enter".into(),
            Intrinsic::WithExit => "with_exit".into(),
            Intrinsic::AsyncWithEnter => "async_with_enter".into(),
            Intrinsic::AsyncWithExit => "async_with_exit".into(),
            Intrinsic::ExcType => "exc_type".into(),
            Intrinsic::ExcTraceback => "exc_traceback".into(),
        }
    }

    /// Static operands passed after the register operands (attribute names, unpack counts).
    pub fn static_operands(&self) -> Vec<Const> {
        match self {
            Intrinsic::GetAttr(n) | Intrinsic::SetAttr(n) | Intrinsic::DelAttr(n) | Intrinsic::IsConsumer(n)
            | Intrinsic::LoadGlobal(n) | Intrinsic::SplitGetItem(n) | Intrinsic::ImportName(n)
            | Intrinsic::ImportFrom(n) => {
                vec![Const::Str(n.clone())]
            }
            Intrinsic::UnpackSequence(n) | Intrinsic::MatchClass(n) => vec![Const::Int(*n as i64)],
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind prints to its documented text and parses back to the same kind.
    #[test]
    fn var_names_round_trip_through_their_text() {
        let inlined = VarName::from(VarKind::Inlined { ctx: 3, name: "y".into() });
        let cases: Vec<(VarKind, &str)> = vec![
            (VarKind::Local("x".into()), "x"),
            (VarKind::Local(".0".into()), ".0"),
            (VarKind::Inlined { ctx: 3, name: "y".into() }, "$c3.y"),
            (VarKind::InlinedRet(12), "$c12.$ret"),
            (VarKind::Cell(Box::new(VarName::local("x"))), "$cell.x"),
            (VarKind::Cell(Box::new(inlined)), "$cell.$c3.y"),
            (VarKind::Defaults(4), "$fn4.defaults"),
            (VarKind::KwDefaults(4), "$fn4.kwdefaults"),
            (VarKind::Temp(0), "$t0"),
            (VarKind::Broke(10), "$broke10"),
            (VarKind::Ret, "$ret"),
        ];
        for (kind, text) in cases {
            let v = VarName::from(kind.clone());
            assert_eq!(v.as_str(), text);
            assert_eq!(VarName::parse(text).unwrap().kind(), &kind, "{text}");
        }
        assert_eq!(VarName::from("$c0.x"), VarName::from(VarKind::Inlined { ctx: 0, name: "x".into() }));
    }

    #[test]
    fn malformed_synthetic_names_are_rejected() {
        for text in ["", "$", "$x", "$t", "$t01", "$c.x", "$c1.", "$c1.$t0", "$cell.$t0", "$cell.$cell.x", "$fn1.other", "$rett"] {
            assert!(VarName::parse(text).is_err(), "{text:?} parsed");
        }
    }

    /// Sets of variables iterate in text order (lowering threads them in that order).
    #[test]
    fn order_is_the_order_of_the_text() {
        let mut names: Vec<VarName> =
            ["b", "$t10", "$c0.x", "$t9", "a", "$cell.a", "$ret"].into_iter().map(VarName::from).collect();
        names.sort();
        let texts: Vec<&str> = names.iter().map(VarName::as_str).collect();
        let mut expected = texts.clone();
        expected.sort();
        assert_eq!(texts, expected);
    }
}
