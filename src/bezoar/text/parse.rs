//! Parsing the Bezoar text form back (the inverse of `print`).
use super::{rlookup, BINOPS, CMPOPS, CONVERSIONS, UNOPS};
use crate::bezoar::ir::*;

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
    let mut free_unbound = Vec::new();
    if c.eat_keyword("free_unbound") {
        loop {
            free_unbound.push(c.var()?);
            if !c.eat(",") {
                break;
            }
        }
    }
    c.end()?;
    Ok(Function { name, qualname, filename, firstlineno, params, consts: vec![], body: vec![], nregs, free_unbound })
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
            if line.text == "else:" || line.text == "then:" || line.text.starts_with("except") {
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
            } else if c.eat_keyword("raise") {
                StmtKind::Raise(self.reg(&mut c)?)
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
            } else if c.eat_keyword("try:") {
                c.end()?;
                let body = self.block(depth + 1)?;
                let mut handlers = Vec::new();
                while let Some(l) = self.peek().filter(|l| l.depth == depth && l.text.starts_with("except")) {
                    self.pos += 1;
                    let mut h = Cursor::new(l, l.text);
                    h.keyword_prefix("except")?;
                    let test_reg = if h.peek_is("r") { Some(self.reg(&mut h)?) } else { None };
                    let name = if h.eat_keyword("as") { Some(h.var()?) } else { None };
                    h.punct(":")?;
                    h.end()?;
                    let test = match test_reg {
                        Some(r) => {
                            let test = self.block(depth + 1)?;
                            match self.peek() {
                                Some(t) if t.depth == depth && t.text == "then:" => self.pos += 1,
                                _ => return Err(format!("line {}: expected `then:` after the test of `except r{r}`", l.no)),
                            }
                            Some((test, r))
                        }
                        None => None,
                    };
                    handlers.push(Handler { test, name, body: self.block(depth + 1)? });
                }
                let (orelse, finally) = match self.peek() {
                    Some(l) if l.depth == depth && (l.text == "else:" || l.text == "finally:") => {
                        self.pos += 1;
                        let finally = l.text == "finally:";
                        (self.block(depth + 1)?, finally)
                    }
                    _ => (vec![], false),
                };
                block.push(Stmt { kind: StmtKind::Try { body, handlers, orelse, finally }, line: src_line });
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
        ("import_name", n) => Intrinsic::ImportName(n.to_string()),
        ("import_from", n) if !n.is_empty() => Intrinsic::ImportFrom(n.to_string()),
        ("cell_get" | "free_get", n) if !n.is_empty() => {
            Intrinsic::CellGet { name: n.to_string(), free: head == "free_get" }
        }
        ("unpack_sequence", n) => Intrinsic::UnpackSequence(n.parse().ok()?),
        ("match_class", n) => Intrinsic::MatchClass(n.parse().ok()?),
        ("region", k) => Intrinsic::Region(k.parse().ok()?),
        ("unpack_ex", counts) => {
            let (before, after) = counts.split_once('.')?;
            Intrinsic::UnpackEx { before: before.parse().ok()?, after: after.parse().ok()? }
        }
        ("convert", rest) => Intrinsic::Convert(rlookup(&CONVERSIONS, &format!(".{rest}"))?),
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
            "iter_private" => Intrinsic::IterPrivate,
            "await" => Intrinsic::Await,
            "await_call" => Intrinsic::AwaitCall,
            "match_sequence" => Intrinsic::MatchSequence,
            "match_mapping" => Intrinsic::MatchMapping,
            "get_len" => Intrinsic::GetLen,
            "match_keys" => Intrinsic::MatchKeys,
            "next_or_stop" => Intrinsic::NextOrStop,
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
            "raise" => Intrinsic::Raise { from_cause: false },
            "raise_from" => Intrinsic::Raise { from_cause: true },
            "assertion_error" => Intrinsic::AssertionError,
            "reraise_handled" => Intrinsic::Reraise,
            "with_enter" => Intrinsic::WithEnter,
            "with_exit" => Intrinsic::WithExit,
            "async_with_enter" => Intrinsic::AsyncWithEnter,
            "async_with_exit" => Intrinsic::AsyncWithExit,
            "exc_type" => Intrinsic::ExcType,
            "exc_traceback" => Intrinsic::ExcTraceback,
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

    /// Consumes `word` if the text starts with it and the next character is not part of a name
    /// (`except:`, `except r3:`).
    fn keyword_prefix(&mut self, word: &str) -> Result<(), String> {
        self.skip_ws();
        if self.rest.starts_with(word) && !self.rest[word.len()..].chars().next().is_some_and(is_name_char) {
            self.rest = &self.rest[word.len()..];
            Ok(())
        } else {
            Err(self.error(&format!("expected `{word}`")))
        }
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
