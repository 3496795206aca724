//! Bezoar text form: `print` and `parse`, which round-trip exactly (`parse(&print(f)) == Ok(f)`,
//! source lines included).
//!
//! ```text
//! def city_excursions(region):  # qualname "city_excursions" file "t.py" line 3 nregs 8
//!   const 0 = None
//!   const 1 = "List cities in "
//!   r0 := global llm  @4
//!   r1 := const 1  @4
//!   r2 := load region  @4
//!   r3 := op binary.add(r1, r2)  @4
//!   r4 := r0(r3; temperature=r2)  @4
//!   store cities r4  @4
//!   for r5 in r4:  @5
//!     store city r5  @5
//!     if r5:  @6
//!       pass
//!     else:
//!       r6 := op getattr.split(r5)  @7
//!   r7 := load cities  @8
//!   return r7  @8
//! ```
//!
//! - The header line carries the function's metadata in its trailing comment; it is parsed.
//! - The constant pool comes first, one `const K = VALUE` line per entry in index order. Values:
//!   `None`, `True`, `False`, integers, floats (Rust's shortest round-tripping form, always with a
//!   `.`/`e`, or `inf`/`NaN`), double-quoted strings (escapes `\\ \" \n \r \t \u{hex}`), tuples
//!   `(a, b)` / `(a,)` / `()`, and `opaque CO_INDEX "repr"`.
//! - Statements are indented two spaces per level. A statement's source line is a trailing `@N`
//!   (omitted when the line is 0). An empty block is written `pass`; an empty `else` is omitted.
//! - Calls: `rF(a, b; k=c)`: positional registers, then `;` and keyword arguments.
//! - Operations: `op NAME(args)` with NAME one of `binary.OP`, `inplace.OP` (OP: add and floordiv
//!   lshift matmul mul mod or pow rshift sub truediv xor), `unary.neg|pos|invert|not`,
//!   `compare.lt|le|eq|ne|gt|ge`, `is`, `is_not`, `in`, `not_in`, `truth`, `getattr.ATTR`,
//!   `getitem`, `tuple`, `list`, `format[.str|.repr|.ascii][.spec]`, `build_string`,
//!   `iter_snapshot`, `setattr.ATTR`, `delattr.ATTR`, `setitem`, `delitem`, `build_map`,
//!   `build_set`, `build_slice`, `list_extend`, `dict_update`, `set_update`, `list_to_tuple`,
//!   `unpack_sequence.N`, `unpack_ex.BEFORE.AFTER`.
//! - Loops: `for rI in rS:` and `loop:` open an indented body; `break` and `continue` are
//!   statements of their own.
//! - Variables: Python names, or the lifter's `$` names (`$cK.x`, `$cK.$ret`, `$cell.x`,
//!   `$fnK.defaults`, `$fnK.kwdefaults`, `$tN`, `$brokeN`, `$ret`), read back into their
//!   `VarKind`; any other `$` name is an error.
use super::ir::*;
use std::fmt::Write;

const BINOPS: [(BinOp, &str); 13] = [
    (BinOp::Add, "add"),
    (BinOp::And, "and"),
    (BinOp::FloorDiv, "floordiv"),
    (BinOp::LShift, "lshift"),
    (BinOp::MatMul, "matmul"),
    (BinOp::Mul, "mul"),
    (BinOp::Mod, "mod"),
    (BinOp::Or, "or"),
    (BinOp::Pow, "pow"),
    (BinOp::RShift, "rshift"),
    (BinOp::Sub, "sub"),
    (BinOp::TrueDiv, "truediv"),
    (BinOp::Xor, "xor"),
];
const UNOPS: [(UnaryOp, &str); 4] =
    [(UnaryOp::Neg, "neg"), (UnaryOp::Pos, "pos"), (UnaryOp::Invert, "invert"), (UnaryOp::Not, "not")];
const CMPOPS: [(CmpOp, &str); 6] =
    [(CmpOp::Lt, "lt"), (CmpOp::Le, "le"), (CmpOp::Eq, "eq"), (CmpOp::Ne, "ne"), (CmpOp::Gt, "gt"), (CmpOp::Ge, "ge")];
const CONVERSIONS: [(Conversion, &str); 3] =
    [(Conversion::Str, ".str"), (Conversion::Repr, ".repr"), (Conversion::Ascii, ".ascii")];

fn lookup<T: PartialEq + Copy>(table: &[(T, &'static str)], key: T) -> &'static str {
    table.iter().find(|e| e.0 == key).map(|e| e.1).expect("table covers every variant")
}

fn rlookup<T: Copy>(table: &[(T, &'static str)], name: &str) -> Option<T> {
    table.iter().find(|e| e.1 == name).map(|e| e.0)
}

// ---------------------------------------------------------------------------------------------
// Printing

pub fn print(f: &Function) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "def {}({}):  # qualname {} file {} line {} nregs {}",
        f.name,
        f.params.iter().map(VarName::as_str).collect::<Vec<_>>().join(", "),
        quote(&f.qualname),
        quote(&f.filename),
        f.firstlineno,
        f.nregs
    )
    .unwrap();
    for (i, c) in f.consts.iter().enumerate() {
        writeln!(out, "  const {i} = {}", print_const(c)).unwrap();
    }
    print_block(&mut out, &f.body, 1);
    out
}

fn print_block(out: &mut String, block: &Block, depth: usize) {
    let indent = "  ".repeat(depth);
    if block.is_empty() {
        writeln!(out, "{indent}pass").unwrap();
    }
    for stmt in block {
        let text = match &stmt.kind {
            StmtKind::Let(r, e) => format!("r{r} := {}", print_expr(e)),
            StmtKind::Store(x, r) => format!("store {x} r{r}"),
            StmtKind::Delete(x) => format!("del {x}"),
            StmtKind::Unbind(x) => format!("unbind {x}"),
            StmtKind::Return(r) => format!("return r{r}"),
            StmtKind::If { cond, .. } => format!("if r{cond}:"),
            StmtKind::For { iter, item, .. } => format!("for r{item} in r{iter}:"),
            StmtKind::Loop { .. } => "loop:".to_string(),
            StmtKind::Break => "break".to_string(),
            StmtKind::Continue => "continue".to_string(),
        };
        out.push_str(&indent);
        out.push_str(&text);
        if stmt.line != 0 {
            write!(out, "  @{}", stmt.line).unwrap();
        }
        out.push('\n');
        match &stmt.kind {
            StmtKind::If { then_body, else_body, .. } => {
                print_block(out, then_body, depth + 1);
                if !else_body.is_empty() {
                    writeln!(out, "{indent}else:").unwrap();
                    print_block(out, else_body, depth + 1);
                }
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => print_block(out, body, depth + 1),
            _ => {}
        }
    }
}

fn regs(rs: &[Reg]) -> String {
    rs.iter().map(|r| format!("r{r}")).collect::<Vec<_>>().join(", ")
}

fn print_expr(e: &Expr) -> String {
    match e {
        Expr::Const(k) => format!("const {k}"),
        Expr::Load(x) => format!("load {x}"),
        Expr::Global(x) => format!("global {x}"),
        Expr::Call { func, args, kwnames } => {
            let npos = args.len() - kwnames.len();
            let mut s = format!("r{func}({}", regs(&args[..npos]));
            if !kwnames.is_empty() {
                let kw: Vec<String> = kwnames.iter().zip(&args[npos..]).map(|(k, r)| format!("{k}=r{r}")).collect();
                write!(s, "; {}", kw.join(", ")).unwrap();
            }
            s.push(')');
            s
        }
        Expr::Op(op, args) => format!("op {}({})", intrinsic_name(op), regs(args)),
    }
}

fn intrinsic_name(op: &Intrinsic) -> String {
    match op {
        Intrinsic::Binary { op, inplace } => {
            format!("{}.{}", if *inplace { "inplace" } else { "binary" }, lookup(&BINOPS, *op))
        }
        Intrinsic::Unary(u) => format!("unary.{}", lookup(&UNOPS, *u)),
        Intrinsic::Compare(c) => format!("compare.{}", lookup(&CMPOPS, *c)),
        Intrinsic::Is { negate } => if *negate { "is_not" } else { "is" }.to_string(),
        Intrinsic::Contains { negate } => if *negate { "not_in" } else { "in" }.to_string(),
        Intrinsic::Truth => "truth".to_string(),
        Intrinsic::GetAttr(a) => format!("getattr.{a}"),
        Intrinsic::SplitGetItem(m) => format!("split_getitem.{m}"),
        Intrinsic::GetItem => "getitem".to_string(),
        Intrinsic::BuildTuple => "tuple".to_string(),
        Intrinsic::BuildList => "list".to_string(),
        Intrinsic::FormatValue { conv, has_spec } => {
            let conv = if *conv == Conversion::None { "" } else { lookup(&CONVERSIONS, *conv) };
            format!("format{conv}{}", if *has_spec { ".spec" } else { "" })
        }
        Intrinsic::BuildString => "build_string".to_string(),
        Intrinsic::IterSnapshot => "iter_snapshot".to_string(),
        Intrinsic::SetAttr(a) => format!("setattr.{a}"),
        Intrinsic::DelAttr(a) => format!("delattr.{a}"),
        Intrinsic::UnpackSequence(n) => format!("unpack_sequence.{n}"),
        Intrinsic::UnpackEx { before, after } => format!("unpack_ex.{before}.{after}"),
        Intrinsic::IsConsumer(n) => format!("is_consumer.{n}"),
        Intrinsic::LoadGlobal(n) => format!("load_global.{n}"),
        Intrinsic::CellGet { name, free } => format!("{}.{name}", if *free { "free_get" } else { "cell_get" }),
        other => other.key(),
    }
}

fn print_const(c: &Const) -> String {
    match c {
        Const::None => "None".to_string(),
        Const::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Const::Int(i) => i.to_string(),
        Const::Float(x) => format!("{x:?}"),
        Const::Str(s) => quote(s),
        Const::Tuple(items) => match items.as_slice() {
            [one] => format!("({},)", print_const(one)),
            _ => format!("({})", items.iter().map(print_const).collect::<Vec<_>>().join(", ")),
        },
        Const::Opaque { co_index, repr } => format!("opaque {co_index} {}", quote(repr)),
        Const::Globals => "globals".to_string(),
        Const::Nested { path, repr } => format!(
            "nested {} {}",
            path.iter().map(|i| i.to_string()).collect::<Vec<_>>().join("/"),
            quote(repr)
        ),
    }
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => write!(out, "\\u{{{:x}}}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------------
// Parsing

/// Parses the text form. Errors name the 1-based line of the text.
pub fn parse(src: &str) -> Result<Function, String> {
    let lines: Vec<Line> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let text = l.trim_start_matches(' ');
            let spaces = l.len() - text.len();
            if spaces % 2 != 0 {
                return Err(format!("line {}: indentation must be a multiple of two spaces", i + 1));
            }
            Ok(Line { no: i + 1, depth: spaces / 2, text })
        })
        .collect::<Result<_, _>>()?;
    let (header, rest) = lines.split_first().ok_or("empty input")?;
    let mut f = parse_header(header)?;
    let mut p = Parser { lines: rest, pos: 0, max_reg: None };
    while let Some(line) = p.peek().filter(|l| l.depth == 1 && l.text.starts_with("const ")) {
        let mut c = Cursor::new(line, line.text);
        c.keyword("const")?;
        let index = c.number::<usize>()?;
        if index != f.consts.len() {
            return Err(c.error(&format!("expected const {}", f.consts.len())));
        }
        c.punct("=")?;
        f.consts.push(c.constant()?);
        c.end()?;
        p.pos += 1;
    }
    f.body = p.block(1)?;
    if let Some(line) = p.peek() {
        return Err(format!("line {}: unexpected indentation", line.no));
    }
    if let Some(r) = p.max_reg.filter(|&r| r >= f.nregs) {
        return Err(format!("register r{r} is not below nregs {}", f.nregs));
    }
    Ok(f)
}

struct Line<'a> {
    no: usize,
    depth: usize,
    text: &'a str,
}

fn parse_header(line: &Line) -> Result<Function, String> {
    let mut c = Cursor::new(line, line.text);
    if line.depth != 0 {
        return Err(c.error("the header `def` must not be indented"));
    }
    c.keyword("def")?;
    let name = c.name()?;
    c.punct("(")?;
    let mut params = Vec::new();
    if !c.eat(")") {
        loop {
            params.push(c.var()?);
            if c.eat(")") {
                break;
            }
            c.punct(",")?;
        }
    }
    c.punct(":")?;
    c.punct("#")?;
    c.keyword("qualname")?;
    let qualname = c.string()?;
    c.keyword("file")?;
    let filename = c.string()?;
    c.keyword("line")?;
    let firstlineno = c.number()?;
    c.keyword("nregs")?;
    let nregs = c.number()?;
    c.end()?;
    Ok(Function { name, qualname, filename, firstlineno, params, consts: vec![], body: vec![], nregs })
}

struct Parser<'a> {
    lines: &'a [Line<'a>],
    pos: usize,
    /// Highest register mentioned, checked against `nregs` at the end.
    max_reg: Option<Reg>,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a Line<'a>> {
        self.lines.get(self.pos)
    }

    /// Parses the statements at indentation `depth` (at least one line: `pass` for none).
    fn block(&mut self, depth: usize) -> Result<Block, String> {
        let mut block = Vec::new();
        match self.peek() {
            Some(l) if l.depth == depth && l.text == "pass" => {
                self.pos += 1;
                return Ok(block);
            }
            Some(l) if l.depth == depth => {}
            Some(l) => return Err(format!("line {}: expected a block indented to level {depth}", l.no)),
            None => return Err(format!("expected a block indented to level {depth}, found the end")),
        }
        while let Some(line) = self.peek().filter(|l| l.depth == depth) {
            if line.text == "else:" {
                break;
            }
            self.pos += 1;
            let (text, src_line) = split_line_marker(line.text);
            let mut c = Cursor::new(line, text);
            let kind = if c.eat_keyword("store") {
                let x = c.var()?;
                StmtKind::Store(x, self.reg(&mut c)?)
            } else if c.eat_keyword("unbind") {
                StmtKind::Unbind(c.var()?)
            } else if c.eat_keyword("del") {
                StmtKind::Delete(c.var()?)
            } else if c.eat_keyword("return") {
                StmtKind::Return(self.reg(&mut c)?)
            } else if c.eat_keyword("if") {
                let cond = self.reg(&mut c)?;
                c.punct(":")?;
                c.end()?;
                let then_body = self.block(depth + 1)?;
                let else_body = match self.peek() {
                    Some(l) if l.depth == depth && l.text == "else:" => {
                        self.pos += 1;
                        self.block(depth + 1)?
                    }
                    _ => vec![],
                };
                block.push(Stmt { kind: StmtKind::If { cond, then_body, else_body }, line: src_line });
                continue;
            } else if c.eat_keyword("loop:") {
                c.end()?;
                let body = self.block(depth + 1)?;
                block.push(Stmt { kind: StmtKind::Loop { body }, line: src_line });
                continue;
            } else if c.eat_keyword("break") {
                StmtKind::Break
            } else if c.eat_keyword("continue") {
                StmtKind::Continue
            } else if c.eat_keyword("for") {
                let item = self.reg(&mut c)?;
                c.keyword("in")?;
                let iter = self.reg(&mut c)?;
                c.punct(":")?;
                c.end()?;
                let body = self.block(depth + 1)?;
                block.push(Stmt { kind: StmtKind::For { iter, item, body }, line: src_line });
                continue;
            } else {
                let r = self.reg(&mut c)?;
                c.punct(":=")?;
                StmtKind::Let(r, self.expr(&mut c)?)
            };
            c.end()?;
            block.push(Stmt { kind, line: src_line });
        }
        Ok(block)
    }

    fn reg(&mut self, c: &mut Cursor) -> Result<Reg, String> {
        let r = c.reg()?;
        self.max_reg = self.max_reg.max(Some(r));
        Ok(r)
    }

    /// A comma-separated register list, ending before `)` or `;`.
    fn reg_list(&mut self, c: &mut Cursor) -> Result<Vec<Reg>, String> {
        let mut rs = Vec::new();
        while !c.peek_is(")") && !c.peek_is(";") {
            if !rs.is_empty() {
                c.punct(",")?;
            }
            rs.push(self.reg(c)?);
        }
        Ok(rs)
    }

    fn expr(&mut self, c: &mut Cursor) -> Result<Expr, String> {
        if c.eat_keyword("const") {
            Ok(Expr::Const(c.number()?))
        } else if c.eat_keyword("load") {
            Ok(Expr::Load(c.var()?))
        } else if c.eat_keyword("global") {
            Ok(Expr::Global(c.name()?))
        } else if c.eat_keyword("op") {
            let name = c.take_while(|ch| ch != '(' && !ch.is_whitespace());
            let op = parse_intrinsic(name).ok_or_else(|| c.error(&format!("unknown operation `{name}`")))?;
            c.punct("(")?;
            let args = self.reg_list(c)?;
            c.punct(")")?;
            Ok(Expr::Op(op, args))
        } else {
            let func = self.reg(c)?;
            c.punct("(")?;
            let mut args = self.reg_list(c)?;
            let mut kwnames = Vec::new();
            if c.eat(";") {
                loop {
                    kwnames.push(c.name()?);
                    c.punct("=")?;
                    args.push(self.reg(c)?);
                    if c.peek_is(")") {
                        break;
                    }
                    c.punct(",")?;
                }
            }
            c.punct(")")?;
            Ok(Expr::Call { func, args, kwnames })
        }
    }
}

fn parse_intrinsic(name: &str) -> Option<Intrinsic> {
    let (head, tail) = name.split_once('.').unwrap_or((name, ""));
    Some(match (head, tail) {
        ("binary" | "inplace", op) => Intrinsic::Binary { op: rlookup(&BINOPS, op)?, inplace: head == "inplace" },
        ("unary", op) => Intrinsic::Unary(rlookup(&UNOPS, op)?),
        ("compare", op) => Intrinsic::Compare(rlookup(&CMPOPS, op)?),
        ("getattr", attr) if !attr.is_empty() => Intrinsic::GetAttr(attr.to_string()),
        ("split_getitem", m) if !m.is_empty() => Intrinsic::SplitGetItem(m.to_string()),
        ("setattr", attr) if !attr.is_empty() => Intrinsic::SetAttr(attr.to_string()),
        ("delattr", attr) if !attr.is_empty() => Intrinsic::DelAttr(attr.to_string()),
        ("is_consumer", n) if !n.is_empty() => Intrinsic::IsConsumer(n.to_string()),
        ("load_global", n) if !n.is_empty() => Intrinsic::LoadGlobal(n.to_string()),
        ("cell_get" | "free_get", n) if !n.is_empty() => {
            Intrinsic::CellGet { name: n.to_string(), free: head == "free_get" }
        }
        ("unpack_sequence", n) => Intrinsic::UnpackSequence(n.parse().ok()?),
        ("unpack_ex", counts) => {
            let (before, after) = counts.split_once('.')?;
            Intrinsic::UnpackEx { before: before.parse().ok()?, after: after.parse().ok()? }
        }
        ("format", rest) => {
            let rest = format!(".{rest}");
            let (conv_part, has_spec) = match rest.strip_suffix(".spec") {
                Some(c) => (c, true),
                None => (rest.as_str(), false),
            };
            let conv = match conv_part {
                "." | "" => Conversion::None,
                c => rlookup(&CONVERSIONS, c)?,
            };
            Intrinsic::FormatValue { conv, has_spec }
        }
        (_, "") => match name {
            "is" => Intrinsic::Is { negate: false },
            "is_not" => Intrinsic::Is { negate: true },
            "in" => Intrinsic::Contains { negate: false },
            "not_in" => Intrinsic::Contains { negate: true },
            "truth" => Intrinsic::Truth,
            "getitem" => Intrinsic::GetItem,
            "tuple" => Intrinsic::BuildTuple,
            "list" => Intrinsic::BuildList,
            "build_string" => Intrinsic::BuildString,
            "iter_snapshot" => Intrinsic::IterSnapshot,
            "setitem" => Intrinsic::SetItem,
            "delitem" => Intrinsic::DelItem,
            "build_map" => Intrinsic::BuildMap,
            "build_set" => Intrinsic::BuildSet,
            "build_slice" => Intrinsic::BuildSlice,
            "list_extend" => Intrinsic::ListExtend,
            "dict_update" => Intrinsic::DictUpdate,
            "set_update" => Intrinsic::SetUpdate,
            "list_to_tuple" => Intrinsic::ListToTuple,
            "make_cell" => Intrinsic::MakeCell,
            "cell_set" => Intrinsic::CellSet,
            "make_function" => Intrinsic::MakeFunction,
            "make_genexpr" => Intrinsic::MakeGenexpr,
            "consumer_mismatch" => Intrinsic::ConsumerMismatch,
            "star_call" => Intrinsic::StarCall,
            "dict_merge" => Intrinsic::DictMerge,
            _ => return None,
        },
        _ => return None,
    })
}

/// Splits a trailing `  @N` source-line marker off a statement line.
fn split_line_marker(text: &str) -> (&str, u32) {
    if let Some((before, after)) = text.rsplit_once(" @") {
        if let Ok(n) = after.parse::<u32>() {
            return (before.trim_end(), n);
        }
    }
    (text, 0)
}

/// A cursor over one line's text.
struct Cursor<'a> {
    line_no: usize,
    rest: &'a str,
}

/// Characters of names: Python identifiers plus the `$`, `.` and `<>` of synthetic names
/// (`$ret`, a comprehension's `.0` parameter, `<lambda>`).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || "_$.<>".contains(c)
}

impl<'a> Cursor<'a> {
    fn new(line: &Line, text: &'a str) -> Self {
        Cursor { line_no: line.no, rest: text }
    }

    fn error(&self, msg: &str) -> String {
        format!("line {}: {msg} (at `{}`)", self.line_no, self.rest)
    }

    fn skip_ws(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn take_while(&mut self, pred: impl Fn(char) -> bool) -> &'a str {
        self.skip_ws();
        let end = self.rest.find(|c| !pred(c)).unwrap_or(self.rest.len());
        let (tok, rest) = self.rest.split_at(end);
        self.rest = rest;
        tok
    }

    fn peek_is(&mut self, s: &str) -> bool {
        self.skip_ws();
        self.rest.starts_with(s)
    }

    fn eat(&mut self, s: &str) -> bool {
        let found = self.peek_is(s);
        if found {
            self.rest = &self.rest[s.len()..];
        }
        found
    }

    fn punct(&mut self, s: &str) -> Result<(), String> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{s}`")))
        }
    }

    /// Consumes `word` if it is the next whole word.
    fn eat_keyword(&mut self, word: &str) -> bool {
        self.skip_ws();
        let matches =
            self.rest.starts_with(word) && self.rest[word.len()..].chars().next().is_none_or(|c| c.is_whitespace());
        if matches {
            self.rest = &self.rest[word.len()..];
        }
        matches
    }

    fn keyword(&mut self, word: &str) -> Result<(), String> {
        if self.eat_keyword(word) {
            Ok(())
        } else {
            Err(self.error(&format!("expected `{word}`")))
        }
    }

    fn name(&mut self) -> Result<String, String> {
        match self.take_while(is_name_char) {
            "" => Err(self.error("expected a name")),
            n => Ok(n.to_string()),
        }
    }

    /// A variable name (`VarName::parse` of a name token).
    fn var(&mut self) -> Result<VarName, String> {
        let name = self.name()?;
        VarName::parse(&name).map_err(|e| self.error(&e))
    }

    fn number<T: std::str::FromStr>(&mut self) -> Result<T, String> {
        let tok = self.take_while(|c| c.is_ascii_digit());
        tok.parse().map_err(|_| self.error("expected a number"))
    }

    fn reg(&mut self) -> Result<Reg, String> {
        self.skip_ws();
        if !self.eat("r") {
            return Err(self.error("expected a register"));
        }
        let tok = self.take_while(|c| c.is_ascii_digit());
        tok.parse().map_err(|_| self.error("expected a register number"))
    }

    fn end(&mut self) -> Result<(), String> {
        self.skip_ws();
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.error("unexpected text"))
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.punct("\"")?;
        let mut out = String::new();
        let mut chars = self.rest.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = &self.rest[i + 1..];
                    return Ok(out);
                }
                '\\' => match chars.next().map(|(_, e)| e) {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some('u') => {
                        let hex: String = chars.by_ref().map(|(_, c)| c).take_while(|&c| c != '}').collect();
                        let ch = hex
                            .strip_prefix('{')
                            .and_then(|h| u32::from_str_radix(h, 16).ok())
                            .and_then(char::from_u32)
                            .ok_or_else(|| self.error("bad \\u{...} escape"))?;
                        out.push(ch);
                    }
                    _ => return Err(self.error("bad escape in string")),
                },
                c => out.push(c),
            }
        }
        Err(self.error("unterminated string"))
    }

    fn constant(&mut self) -> Result<Const, String> {
        self.skip_ws();
        if self.peek_is("\"") {
            return Ok(Const::Str(self.string()?));
        }
        if self.eat("(") {
            let mut items = Vec::new();
            while !self.eat(")") {
                items.push(self.constant()?);
                if !self.eat(",") && !self.peek_is(")") {
                    return Err(self.error("expected `,` or `)` in tuple"));
                }
            }
            return Ok(Const::Tuple(items));
        }
        if self.eat_keyword("opaque") {
            let co_index = self.number()?;
            return Ok(Const::Opaque { co_index, repr: self.string()? });
        }
        if self.eat_keyword("globals") {
            return Ok(Const::Globals);
        }
        if self.eat_keyword("nested") {
            let mut path = vec![self.number()?];
            while self.eat("/") {
                path.push(self.number()?);
            }
            return Ok(Const::Nested { path, repr: self.string()? });
        }
        let tok = self.take_while(|c| c.is_alphanumeric() || "+-._".contains(c));
        Ok(match tok {
            "None" => Const::None,
            "True" => Const::Bool(true),
            "False" => Const::Bool(false),
            t if t.chars().all(|c| c.is_ascii_digit() || c == '-') => {
                Const::Int(t.parse().map_err(|_| self.error(&format!("bad integer `{t}`")))?)
            }
            t => Const::Float(t.parse().map_err(|_| self.error(&format!("bad constant `{t}`")))?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(kind: StmtKind, line: u32) -> Stmt {
        Stmt { kind, line }
    }

    fn op(r: Reg, op: Intrinsic, args: Vec<Reg>) -> Stmt {
        stmt(StmtKind::Let(r, Expr::Op(op, args)), 7)
    }

    /// A function using every statement, expression, intrinsic and constant form.
    fn everything() -> Function {
        let mut body = vec![
            stmt(StmtKind::Let(0, Expr::Const(1)), 3),
            stmt(StmtKind::Let(1, Expr::Load("a".into())), 0),
            stmt(StmtKind::Let(2, Expr::Global("llm".into())), 4),
            stmt(StmtKind::Let(3, Expr::Call { func: 2, args: vec![], kwnames: vec![] }), 4),
            stmt(StmtKind::Let(3, Expr::Call { func: 2, args: vec![0, 1], kwnames: vec![] }), 4),
            stmt(StmtKind::Let(3, Expr::Call { func: 2, args: vec![0, 1], kwnames: vec!["k".into()] }), 4),
            stmt(StmtKind::Let(3, Expr::Call { func: 2, args: vec![1], kwnames: vec!["k".into()] }), 4),
        ];
        let mut intrinsics = vec![
            Intrinsic::Truth,
            Intrinsic::GetAttr("split".into()),
            Intrinsic::GetItem,
            Intrinsic::BuildTuple,
            Intrinsic::BuildList,
            Intrinsic::BuildString,
            Intrinsic::IterSnapshot,
            Intrinsic::SetAttr("name".into()),
            Intrinsic::DelAttr("name".into()),
            Intrinsic::SetItem,
            Intrinsic::DelItem,
            Intrinsic::BuildMap,
            Intrinsic::BuildSet,
            Intrinsic::BuildSlice,
            Intrinsic::ListExtend,
            Intrinsic::DictUpdate,
            Intrinsic::SetUpdate,
            Intrinsic::ListToTuple,
            Intrinsic::UnpackSequence(3),
            Intrinsic::UnpackEx { before: 1, after: 12 },
        ];
        for negate in [false, true] {
            intrinsics.push(Intrinsic::Is { negate });
            intrinsics.push(Intrinsic::Contains { negate });
        }
        for (b, _) in BINOPS {
            intrinsics.push(Intrinsic::Binary { op: b, inplace: false });
            intrinsics.push(Intrinsic::Binary { op: b, inplace: true });
        }
        intrinsics.extend(UNOPS.iter().map(|u| Intrinsic::Unary(u.0)));
        intrinsics.extend(CMPOPS.iter().map(|c| Intrinsic::Compare(c.0)));
        for conv in [Conversion::None, Conversion::Str, Conversion::Repr, Conversion::Ascii] {
            for has_spec in [false, true] {
                intrinsics.push(Intrinsic::FormatValue { conv, has_spec });
            }
        }
        body.extend(intrinsics.into_iter().map(|i| op(4, i, vec![0, 1])));
        body.push(op(4, Intrinsic::BuildList, vec![]));
        body.push(stmt(StmtKind::Store("$ret".into(), 4), 8));
        for name in ["$c0.x", "$c1.$ret", "$cell.y", "$cell.$c0.x", "$fn2.defaults", "$fn2.kwdefaults", "$t0", "$broke1"] {
            body.push(stmt(StmtKind::Store(name.into(), 4), 8));
            body.push(stmt(StmtKind::Let(4, Expr::Load(name.into())), 8));
        }
        body.push(stmt(StmtKind::Unbind("$c0.x".into()), 8));
        body.push(stmt(StmtKind::Delete("$t0".into()), 8));
        body.push(stmt(
            StmtKind::For {
                iter: 4,
                item: 5,
                body: vec![
                    stmt(StmtKind::Store("x".into(), 5), 9),
                    stmt(StmtKind::If { cond: 5, then_body: vec![], else_body: vec![] }, 10),
                    stmt(
                        StmtKind::If {
                            cond: 5,
                            then_body: vec![stmt(StmtKind::Store("y".into(), 5), 11)],
                            else_body: vec![stmt(StmtKind::Store("y".into(), 0), 12)],
                        },
                        10,
                    ),
                    stmt(
                        StmtKind::If {
                            cond: 5,
                            then_body: vec![],
                            else_body: vec![stmt(StmtKind::Store("z".into(), 0), 13)],
                        },
                        0,
                    ),
                ],
            },
            9,
        ));
        body.push(stmt(
            StmtKind::Loop {
                body: vec![
                    stmt(StmtKind::If { cond: 5, then_body: vec![stmt(StmtKind::Break, 15)], else_body: vec![] }, 15),
                    stmt(StmtKind::If { cond: 4, then_body: vec![stmt(StmtKind::Continue, 0)], else_body: vec![] }, 16),
                    stmt(StmtKind::Loop { body: vec![] }, 17),
                    stmt(StmtKind::Return(4), 18),
                ],
            },
            15,
        ));
        body.push(stmt(StmtKind::Return(4), 14));
        Function {
            name: "<lambda>".into(),
            qualname: "C.<locals>.<lambda>".into(),
            filename: "dir with space/\"q\".py".into(),
            firstlineno: 2,
            params: vec![".0".into(), "a".into(), "b".into()],
            consts: vec![
                Const::None,
                Const::Bool(true),
                Const::Bool(false),
                Const::Int(-42),
                Const::Int(i64::MAX),
                Const::Float(2.0),
                Const::Float(-1.5e300),
                Const::Float(f64::INFINITY),
                Const::Str("tab\t \"quoted\" \\ \n é \u{1} @3".into()),
                Const::Str(String::new()),
                Const::Tuple(vec![]),
                Const::Tuple(vec![Const::Int(1)]),
                Const::Tuple(vec![Const::Str("a,b)".into()), Const::Tuple(vec![Const::None, Const::Float(0.1)])]),
                Const::Opaque { co_index: 13, repr: "frozenset({1, 2})".into() },
            ],
            body,
            nregs: 6,
        }
    }

    #[test]
    fn round_trips_every_construct() {
        let f = everything();
        let text = print(&f);
        let parsed = parse(&text);
        assert_eq!(parsed, Ok(f.clone()), "text was:\n{text}");
        // Variables compare by their text; their kinds come back too.
        let kinds = |f: &Function| -> Vec<VarKind> {
            crate::bezoar::passes::variables(f).iter().map(|v| v.kind().clone()).collect()
        };
        assert_eq!(kinds(&parsed.unwrap()), kinds(&f));
        assert!(kinds(&f).contains(&VarKind::InlinedRet(1)));
    }

    #[test]
    fn prints_the_documented_syntax() {
        let text = print(&everything());
        for expected in [
            "def <lambda>(.0, a, b):  # qualname \"C.<locals>.<lambda>\" file \"dir with space/\\\"q\\\".py\" line 2 nregs 6\n",
            "  const 8 = \"tab\\t \\\"quoted\\\" \\\\ \\n é \\u{1} @3\"\n",
            "  const 11 = (1,)\n",
            "  const 13 = opaque 13 \"frozenset({1, 2})\"\n",
            "  r1 := load a\n",
            "  r3 := r2()  @4\n",
            "  r3 := r2(r0; k=r1)  @4\n",
            "  r3 := r2(; k=r1)  @4\n",
            "  r4 := op format.repr.spec(r0, r1)  @7\n",
            "  r4 := op inplace.floordiv(r0, r1)  @7\n",
            "  for r5 in r4:  @9\n    store x r5  @9\n    if r5:  @10\n      pass\n    if r5:  @10\n",
            "    else:\n      store y r0  @12\n    if r5:\n      pass\n    else:\n      store z r0  @13\n",
            "  loop:  @15\n    if r5:  @15\n      break  @15\n    if r4:  @16\n      continue\n    loop:  @17\n      pass\n",
            "  r4 := op setattr.name(r0, r1)  @7\n",
            "  r4 := op unpack_ex.1.12(r0, r1)  @7\n",
            "  r4 := op unpack_sequence.3(r0, r1)  @7\n",
            "  r4 := op list_to_tuple(r0, r1)  @7\n",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }

    #[test]
    fn rejects_malformed_text() {
        let header = "def f():  # qualname \"f\" file \"t.py\" line 1 nregs 2\n";
        for (body, msg) in [
            ("  r0 := op frobnicate(r1)\n", "unknown operation"),
            ("  r0 := op unpack_ex.1(r1)\n", "unknown operation"),
            ("  r0 := op setattr(r1)\n", "unknown operation"),
            ("  break r0\n", "unexpected text"),
            ("  loop:\n  break\n", "expected a block indented to level 2"),
            ("  r0 := load\n", "expected a name"),
            ("  if r0:\n  store x r0\n", "expected a block indented to level 2"),
            ("  const 1 = None\n", "expected const 0"),
            ("  r5 := const 0\n", "not below nregs"),
            ("  return r0 extra\n", "unexpected text"),
            ("   return r0\n", "multiple of two"),
            ("  const 0 = \"abc\n", "unterminated string"),
            ("  store $x r0\n", "not a variable name"),
            ("  r0 := load $c01.x\n", "not a variable name"),
        ] {
            let err = parse(&format!("{header}{body}")).unwrap_err();
            assert!(err.contains(msg), "{body:?}: {err}");
        }
        assert!(parse("").is_err());
    }
}
