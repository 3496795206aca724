//! Tests of the lifter as a whole, on functions compiled by the running CPython (the golden
//! files under tests/golden/lift/ cover the shapes emitted).
use super::lift;
use crate::bezoar::ir::*;
use crate::py311::opcode::EXTENDED_ARG;
use crate::py311::{code_info, CodeInfo};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Runs `src` and returns `CodeInfo` of the code objects it binds to the given names.
pub(super) fn code_infos(src: &str, names: &[&str]) -> Vec<CodeInfo> {
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

pub(super) fn loops_in(block: &Block) -> usize {
    block
        .iter()
        .map(|s| match &s.kind {
            StmtKind::If { then_body, else_body, .. } => loops_in(then_body) + loops_in(else_body),
            StmtKind::For { body, .. } | StmtKind::Loop { body } => 1 + loops_in(body),
            _ => 0,
        })
        .sum()
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
