//! Printing Bezoar as text (the form is described in `text`).
use super::{lookup, BINOPS, CMPOPS, CONVERSIONS, UNOPS};
use crate::bezoar::ir::*;
use std::fmt::Write;

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
    if !f.free_unbound.is_empty() {
        out.pop();
        let names: Vec<&str> = f.free_unbound.iter().map(VarName::as_str).collect();
        writeln!(out, " free_unbound {}", names.join(", ")).unwrap();
    }
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
            StmtKind::Raise(r) => format!("raise r{r}"),
            StmtKind::If { cond, .. } => format!("if r{cond}:"),
            StmtKind::For { iter, item, .. } => format!("for r{item} in r{iter}:"),
            StmtKind::Loop { .. } => "loop:".to_string(),
            StmtKind::Break => "break".to_string(),
            StmtKind::Continue => "continue".to_string(),
            StmtKind::Try { .. } => "try:".to_string(),
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
            StmtKind::Try { body, handlers, orelse, finally } => {
                print_block(out, body, depth + 1);
                for h in handlers {
                    let name = h.name.as_ref().map(|x| format!(" as {x}")).unwrap_or_default();
                    match &h.test {
                        Some((test, r)) => {
                            writeln!(out, "{indent}except r{r}{name}:").unwrap();
                            print_block(out, test, depth + 1);
                            writeln!(out, "{indent}then:").unwrap();
                        }
                        None => writeln!(out, "{indent}except{name}:").unwrap(),
                    }
                    print_block(out, &h.body, depth + 1);
                }
                if *finally {
                    writeln!(out, "{indent}finally:").unwrap();
                    print_block(out, orelse, depth + 1);
                } else if !orelse.is_empty() {
                    writeln!(out, "{indent}else:").unwrap();
                    print_block(out, orelse, depth + 1);
                }
            }
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
        Intrinsic::Convert(conv) => format!("convert{}", lookup(&CONVERSIONS, *conv)),
        Intrinsic::BuildString => "build_string".to_string(),
        Intrinsic::IterSnapshot => "iter_snapshot".to_string(),
        Intrinsic::IterPrivate => "iter_private".to_string(),
        Intrinsic::NextOrStop => "next_or_stop".to_string(),
        Intrinsic::SetAttr(a) => format!("setattr.{a}"),
        Intrinsic::DelAttr(a) => format!("delattr.{a}"),
        Intrinsic::UnpackSequence(n) => format!("unpack_sequence.{n}"),
        Intrinsic::MatchClass(n) => format!("match_class.{n}"),
        Intrinsic::UnpackEx { before, after } => format!("unpack_ex.{before}.{after}"),
        Intrinsic::IsConsumer(n) => format!("is_consumer.{n}"),
        Intrinsic::LoadGlobal(n) => format!("load_global.{n}"),
        Intrinsic::Region(k) => format!("region.{k}"),
        Intrinsic::ImportName(n) => format!("import_name.{n}"),
        Intrinsic::ImportFrom(n) => format!("import_from.{n}"),
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
