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
//! - The header line carries the function's metadata in its trailing comment; it is parsed. It
//!   ends with `free_unbound x, y` when the function has such locals (`Function::free_unbound`).
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
//!   `iter_snapshot`, `iter_private`, `next_or_stop`, `setattr.ATTR`, `delattr.ATTR`, `setitem`, `delitem`, `build_map`,
//!   `build_set`, `build_slice`, `list_extend`, `dict_update`, `set_update`, `list_to_tuple`,
//!   `unpack_sequence.N`, `unpack_ex.BEFORE.AFTER`, `import_name.MODULE` (MODULE may be dotted
//!   or empty), `import_from.NAME`.
//! - Loops: `for rI in rS:` and `loop:` open an indented body; `break` and `continue` are
//!   statements of their own.
//! - `try:` opens the body; each handler follows at the same indentation: `except:` (bare) or
//!   `except rE:` whose indented block computes `rE` (the class tested), then `then:` and the
//!   handler body; `as NAME` before the colon binds the exception. An `else:` block follows the
//!   handlers when not empty.
//! - Variables: Python names, or the lifter's `$` names (`$cK.x`, `$cK.$ret`, `$cell.x`,
//!   `$fnK.defaults`, `$fnK.kwdefaults`, `$tN`, `$brokeN`, `$ret`), read back into their
//!   `VarKind`; any other `$` name is an error.
use super::ir::*;

mod parse;
mod print;

pub use parse::parse;
pub use print::print;

// Names of operators in `op NAME` (shared by both directions).
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
            Intrinsic::IterPrivate,
            Intrinsic::Await,
            Intrinsic::AwaitCall,
            Intrinsic::AsyncWithEnter,
            Intrinsic::AsyncWithExit,
            Intrinsic::MatchSequence,
            Intrinsic::MatchMapping,
            Intrinsic::GetLen,
            Intrinsic::MatchKeys,
            Intrinsic::MatchClass(2),
            Intrinsic::ImportName("os.path".into()),
            Intrinsic::ImportName("".into()),
            Intrinsic::ImportFrom("path".into()),
            Intrinsic::NextOrStop,
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
            if conv != Conversion::None {
                intrinsics.push(Intrinsic::Convert(conv));
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
        body.push(stmt(
            StmtKind::Try {
                body: vec![stmt(StmtKind::Let(3, Expr::Call { func: 2, args: vec![0], kwnames: vec![] }), 20)],
                handlers: vec![
                    Handler {
                        test: Some((vec![stmt(StmtKind::Let(4, Expr::Global("KeyError".into())), 21)], 4)),
                        name: Some("e".into()),
                        body: vec![stmt(StmtKind::Let(5, Expr::Load("e".into())), 22)],
                    },
                    Handler { test: Some((vec![], 2)), name: None, body: vec![] },
                    Handler { test: None, name: Some("$c0.x".into()), body: vec![stmt(StmtKind::Break, 23)] },
                ],
                orelse: vec![stmt(StmtKind::Store("y".into(), 3), 25)],
                finally: false,
            },
            19,
        ));
        body.push(stmt(
            StmtKind::Try {
                body: vec![],
                handlers: vec![Handler { test: None, name: None, body: vec![] }],
                orelse: vec![stmt(StmtKind::Store("y".into(), 3), 26)],
                finally: true,
            },
            0,
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
            free_unbound: vec![],
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
            concat!(
                "  try:  @19\n    r3 := r2(r0)  @20\n  except r4 as e:\n    r4 := global KeyError  @21\n  then:\n",
                "    r5 := load e  @22\n  except r2:\n    pass\n  then:\n    pass\n  except as $c0.x:\n    break  @23\n",
                "  else:\n    store y r3  @25\n  try:\n    pass\n  except:\n    pass\n  finally:\n    store y r3  @26\n  return r4  @14\n",
            ),
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
            ("  try:\n    pass\n  except r0:\n    pass\n", "expected `then:`"),
            ("  try:\n    pass\n  except r0 as :\n    pass\n", "expected a name"),
            ("  try:\n    pass\n  exceptional:\n    pass\n", "expected `except`"),
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
