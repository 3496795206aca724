//! Lowering run end to end on the test host: promoted and `force_memory` lowerings of the same
//! Bezoar must behave alike.
use super::*;
use crate::bezoar::{BinOp, CmpOp, Const, Function, Stmt as BStmt};
use crate::lambda_o::eval::run;
use crate::lambda_o::testhost::{show, TPrim, TestHost};
use crate::stats::RunStats;
use std::rc::Rc;

/// A tiny Bezoar builder: registers are allocated in order; constants are interned.
#[derive(Default)]
struct B {
    consts: Vec<Const>,
    nregs: u32,
}

impl B {
    fn reg(&mut self) -> u32 {
        self.nregs += 1;
        self.nregs - 1
    }
    fn let_(&mut self, e: Expr) -> (u32, BStmt) {
        let r = self.reg();
        (r, BStmt { kind: StmtKind::Let(r, e), line: 1 })
    }
    fn konst(&mut self, c: Const) -> (u32, BStmt) {
        self.consts.push(c);
        let k = self.consts.len() as u32 - 1;
        self.let_(Expr::Const(k))
    }
    fn op(&mut self, i: Intrinsic, args: Vec<u32>) -> (u32, BStmt) {
        self.let_(Expr::Op(i, args))
    }
    /// `name(args)` as statements appended to `out`; returns the result register.
    fn call(&mut self, out: &mut Vec<BStmt>, name: &str, args: Vec<u32>) -> u32 {
        let (f, s) = self.let_(Expr::Global(name.into()));
        out.push(s);
        let (r, s) = self.let_(Expr::Call { func: f, args, kwnames: vec![] });
        out.push(s);
        r
    }
    fn load(&mut self, out: &mut Vec<BStmt>, x: &str) -> u32 {
        let (r, s) = self.let_(Expr::Load(x.into()));
        out.push(s);
        r
    }
    fn int(&mut self, out: &mut Vec<BStmt>, v: i64) -> u32 {
        let (r, s) = self.konst(Const::Int(v));
        out.push(s);
        r
    }
    fn cmp(&mut self, out: &mut Vec<BStmt>, op: CmpOp, a: u32, b: u32) -> u32 {
        let (c, s) = self.op(Intrinsic::Compare(op), vec![a, b]);
        out.push(s);
        let (t, s) = self.op(Intrinsic::Truth, vec![c]);
        out.push(s);
        t
    }
    fn func(self, params: &[&str], body: Vec<BStmt>) -> Function {
        Function {
            name: "f".into(),
            qualname: "f".into(),
            filename: "t.py".into(),
            firstlineno: 1,
            params: params.iter().map(|&p| p.into()).collect(),
            consts: self.consts,
            body,
            nregs: self.nregs,
            free_unbound: vec![],
        }
    }
}

fn st(kind: StmtKind) -> BStmt {
    BStmt { kind, line: 1 }
}

fn run_both(f: &Function, args: Vec<TPrim>, latency: &[(&str, u64)]) -> Vec<(Result<String, String>, Vec<String>, u64)> {
    [false, true]
        .iter()
        .map(|&force_memory| {
            let mut host = TestHost::new();
            host.latency = latency.iter().map(|(k, v)| (k.to_string(), *v)).collect();
            let prog = lower(f, &mut host, &LowerOptions { force_memory }).unwrap();
            let text = crate::lambda_o::text::print(&prog);
            crate::lambda_o::text::parse::<TPrim>(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let r = run(&mut host, Rc::new(prog), args.clone(), &mut RunStats::default()).map(|p| show(&p));
            (r, host.output.clone(), host.now)
        })
        .collect()
}

/// for x in xs: print(x); e = llm(x); print(e)  — excursions overlap.
#[test]
fn for_loop_prints_in_order_and_overlaps_unordered_calls() {
    let mut b = B::default();
    let mut body0 = vec![];
    let xs = b.load(&mut body0, "xs");
    let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
    body0.push(s);
    let item = b.reg();
    let mut lb = vec![st(StmtKind::Store("x".into(), item))];
    let x = b.load(&mut lb, "x");
    b.call(&mut lb, "print", vec![x]);
    let x = b.load(&mut lb, "x");
    let e = b.call(&mut lb, "llm", vec![x]);
    lb.push(st(StmtKind::Store("e".into(), e)));
    let e = b.load(&mut lb, "e");
    b.call(&mut lb, "print", vec![e]);
    body0.push(st(StmtKind::For { iter: it, item, body: lb }));
    let e = b.load(&mut body0, "e");
    body0.push(st(StmtKind::Return(e)));
    let f = b.func(&["xs"], body0);
    let xs = TPrim::Tuple(vec![TPrim::Str("Ho".into()), TPrim::Str("Ja".into()), TPrim::Str("Su".into())]);
    for (r, out, now) in run_both(&f, vec![xs], &[("llm", 10)]) {
        assert_eq!(r, Ok("<Su>".into()));
        assert_eq!(out, vec!["Ho", "<Ho>", "Ja", "<Ja>", "Su", "<Su>"]);
        assert_eq!(now, 10, "the three llm calls overlap");
    }
    // Zero iterations: `e` is unbound after the loop → UnboundLocalError at the return.
    for (r, out, _) in run_both(&f, vec![TPrim::Tuple(vec![])], &[]) {
        assert!(r.unwrap_err().starts_with("UnboundLocalError"));
        assert!(out.is_empty());
    }
}

/// i = 0; while i < n: print(i); i = i + 1   (as Loop { if not i < n: break; ... }); return i
#[test]
fn while_loop_runs_until_its_condition_fails() {
    let mut b = B::default();
    let mut body = vec![];
    let zero = b.int(&mut body, 0);
    body.push(st(StmtKind::Store("i".into(), zero)));
    let mut lb = vec![];
    let i = b.load(&mut lb, "i");
    let n = b.load(&mut lb, "n");
    let c = b.cmp(&mut lb, CmpOp::Lt, i, n);
    lb.push(st(StmtKind::If { cond: c, then_body: vec![], else_body: vec![st(StmtKind::Break)] }));
    let i = b.load(&mut lb, "i");
    b.call(&mut lb, "print", vec![i]);
    let i = b.load(&mut lb, "i");
    let one = b.int(&mut lb, 1);
    let (i2, s) = b.op(Intrinsic::Binary { op: BinOp::Add, inplace: false }, vec![i, one]);
    lb.push(s);
    lb.push(st(StmtKind::Store("i".into(), i2)));
    body.push(st(StmtKind::Loop { body: lb }));
    let i = b.load(&mut body, "i");
    body.push(st(StmtKind::Return(i)));
    let f = b.func(&["n"], body);
    for (r, out, _) in run_both(&f, vec![TPrim::Int(3)], &[]) {
        assert_eq!(r, Ok("3".into()));
        assert_eq!(out, vec!["0", "1", "2"]);
    }
    for (r, out, _) in run_both(&f, vec![TPrim::Int(0)], &[]) {
        assert_eq!(r, Ok("0".into()));
        assert!(out.is_empty());
    }
}

/// for x in xs: if x == 2: continue; if x == skip: break; print(llm(x)) ; if x == ret: return x
/// then print("end"); return 0
#[test]
fn break_continue_and_return_inside_for() {
    let build = |stop: i64, ret: i64| {
        let mut b = B::default();
        let mut body = vec![];
        let xs = b.load(&mut body, "xs");
        let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
        body.push(s);
        let item = b.reg();
        let mut lb = vec![st(StmtKind::Store("x".into(), item))];
        let x = b.load(&mut lb, "x");
        let two = b.int(&mut lb, 2);
        let c = b.cmp(&mut lb, CmpOp::Eq, x, two);
        lb.push(st(StmtKind::If { cond: c, then_body: vec![st(StmtKind::Continue)], else_body: vec![] }));
        let x = b.load(&mut lb, "x");
        let k = b.int(&mut lb, stop);
        let c = b.cmp(&mut lb, CmpOp::Eq, x, k);
        lb.push(st(StmtKind::If { cond: c, then_body: vec![st(StmtKind::Break)], else_body: vec![] }));
        let x = b.load(&mut lb, "x");
        let y = b.call(&mut lb, "llm", vec![x]);
        b.call(&mut lb, "print", vec![y]);
        let x = b.load(&mut lb, "x");
        let k = b.int(&mut lb, ret);
        let c = b.cmp(&mut lb, CmpOp::Eq, x, k);
        let mut then = vec![];
        let x = b.load(&mut then, "x");
        then.push(st(StmtKind::Return(x)));
        lb.push(st(StmtKind::If { cond: c, then_body: then, else_body: vec![] }));
        body.push(st(StmtKind::For { iter: it, item, body: lb }));
        let (s_, s) = b.konst(Const::Str("end".into()));
        body.push(s);
        b.call(&mut body, "print", vec![s_]);
        let z = b.int(&mut body, 0);
        body.push(st(StmtKind::Return(z)));
        b.func(&["xs"], body)
    };
    let xs = TPrim::Tuple((1..=6).map(TPrim::Int).collect());
    // break at 4: prints <1>, <3>, end
    for (r, out, now) in run_both(&build(4, 99), vec![xs.clone()], &[("llm", 10)]) {
        assert_eq!(r, Ok("0".into()));
        assert_eq!(out, vec!["<1>", "<3>", "end"]);
        assert_eq!(now, 10, "llm(1) and llm(3) overlap: the exit conditions do not wait for them");
    }
    // return at 3: prints <1>, <3>; nothing after
    for (r, out, _) in run_both(&build(99, 3), vec![xs.clone()], &[("llm", 10)]) {
        assert_eq!(r, Ok("3".into()));
        assert_eq!(out, vec!["<1>", "<3>"]);
    }
    // neither: all but 2
    for (r, out, _) in run_both(&build(99, 99), vec![xs], &[]) {
        assert_eq!(r, Ok("0".into()));
        assert_eq!(out, vec!["<1>", "<3>", "<4>", "<5>", "<6>", "end"]);
    }
}

/// x = v; del x; [x = 2 if again]; return x — after `del` the local is unbound (the error is
/// CPython's message), `del` of an unbound local raises, and a loop that deletes makes the
/// variable possibly unbound in later iterations.
#[test]
fn del_unbinds_and_unbind_resets_without_checking() {
    let build = |again: bool, del_twice: bool| {
        let mut b = B::default();
        let mut body = vec![];
        let one = b.int(&mut body, 1);
        body.push(st(StmtKind::Store("x".into(), one)));
        body.push(st(StmtKind::Delete("x".into())));
        if del_twice {
            body.push(st(StmtKind::Delete("x".into())));
        }
        if again {
            body.push(st(StmtKind::Unbind("x".into())));
            let two = b.int(&mut body, 2);
            body.push(st(StmtKind::Store("x".into(), two)));
        }
        let x = b.load(&mut body, "x");
        body.push(st(StmtKind::Return(x)));
        b.func(&[], body)
    };
    for (r, _, _) in run_both(&build(false, false), vec![], &[]) {
        assert_eq!(
            r.unwrap_err(),
            "UnboundLocalError: cannot access local variable 'x' where it is not associated with a value"
        );
    }
    for (r, _, _) in run_both(&build(true, false), vec![], &[]) {
        assert_eq!(r, Ok("2".into()));
    }
    for (r, _, _) in run_both(&build(true, true), vec![], &[]) {
        assert!(r.unwrap_err().starts_with("UnboundLocalError"));
    }
    // for i in xs: print(y); del y  (y = 0 before): the second iteration's load raises.
    let mut b = B::default();
    let mut body = vec![];
    let zero = b.int(&mut body, 0);
    body.push(st(StmtKind::Store("y".into(), zero)));
    let xs = b.load(&mut body, "xs");
    let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
    body.push(s);
    let item = b.reg();
    let mut lb = vec![];
    let y = b.load(&mut lb, "y");
    b.call(&mut lb, "print", vec![y]);
    lb.push(st(StmtKind::Delete("y".into())));
    body.push(st(StmtKind::For { iter: it, item, body: lb }));
    let (none, s) = b.konst(Const::None);
    body.push(s);
    body.push(st(StmtKind::Return(none)));
    let f = b.func(&["xs"], body);
    for (r, out, _) in run_both(&f, vec![TPrim::Tuple(vec![TPrim::Int(1), TPrim::Int(2)])], &[]) {
        assert!(r.unwrap_err().starts_with("UnboundLocalError"));
        assert_eq!(out, vec!["0"]);
    }
}

/// The unbound locals of inlined code (`$c3.y`) are reported under their Python name (when
/// promoted; with every variable forced into M the evaluator names the memory key).
#[test]
fn unbound_inlined_locals_use_their_python_name() {
    let mut b = B::default();
    let mut body = vec![];
    let y = b.load(&mut body, "$c3.y");
    body.push(st(StmtKind::Return(y)));
    let f = b.func(&[], body);
    let runs = run_both(&f, vec![], &[]);
    assert!(runs[0].0.clone().unwrap_err().contains("local variable 'y' where"), "{:?}", runs[0].0);
    assert!(runs[1].0.clone().unwrap_err().starts_with("UnboundLocalError"));
}

/// plan = 0; for x in xs: c = r_read(x); if llm(x) == "<2>": plan = c  — the branch makes no
/// call, so S bypasses the `if` and the next iteration's read does not wait for this llm.
#[test]
fn call_free_branches_do_not_hold_back_the_order() {
    let mut b = B::default();
    let mut body = vec![];
    let zero = b.int(&mut body, 0);
    body.push(st(StmtKind::Store("plan".into(), zero)));
    let xs = b.load(&mut body, "xs");
    let (it, s) = b.op(Intrinsic::IterSnapshot, vec![xs]);
    body.push(s);
    let item = b.reg();
    let mut lb = vec![st(StmtKind::Store("x".into(), item))];
    let x = b.load(&mut lb, "x");
    let c = b.call(&mut lb, "r_read", vec![x]);
    lb.push(st(StmtKind::Store("c".into(), c)));
    let x = b.load(&mut lb, "x");
    let y = b.call(&mut lb, "llm", vec![x]);
    let (k, s) = b.konst(Const::Str("<2>".into()));
    lb.push(s);
    let t = b.cmp(&mut lb, CmpOp::Eq, y, k);
    let mut then = vec![];
    let c = b.load(&mut then, "c");
    then.push(st(StmtKind::Store("plan".into(), c)));
    lb.push(st(StmtKind::If { cond: t, then_body: then, else_body: vec![] }));
    body.push(st(StmtKind::For { iter: it, item, body: lb }));
    let p = b.load(&mut body, "plan");
    body.push(st(StmtKind::Return(p)));
    let f = b.func(&["xs"], body);
    let xs = TPrim::Tuple((1..=4).map(TPrim::Int).collect());
    let runs = run_both(&f, vec![xs], &[("llm", 10), ("r_read", 1)]);
    for (r, _, _) in &runs {
        assert_eq!(r, &Ok("2".into()));
    }
    // Promoted variables: the reads and llm calls of all iterations overlap. (With every
    // variable in memory M, the store in the branch makes the next iteration wait for it.)
    assert_eq!(runs[0].2, 10);
}

/// A golden input of `tests/golden/lower/`, parsed (its `#` header dropped).
fn golden_bezoar(name: &str) -> Function {
    let path = format!("{}/tests/golden/lower/{name}.bezoar", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let body: String = src.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect();
    crate::bezoar::text::parse(&body).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// I2: no operation of a try body after the raising point runs — not the sequential print,
/// nor the unordered llm, which the evaluator would otherwise start at once — in either
/// lowering, though the run goes on (the exception is caught).
#[test]
fn nothing_after_the_raising_point_of_a_try_body_runs() {
    let f = golden_bezoar("try_locals_at_raise");
    for force_memory in [false, true] {
        let mut host = TestHost::new();
        host.latency.insert("llm".into(), 10);
        let prog = lower(&f, &mut host, &LowerOptions { force_memory }).unwrap();
        let r = run(&mut host, Rc::new(prog), vec![], &mut RunStats::default());
        assert!(matches!(&r, Err(e) if e.starts_with("UnboundLocalError")), "{r:?}");
        let never: Vec<_> = host.trace.iter().filter(|c| c.args.contains(&TPrim::Str("never".into()))).collect();
        assert!(never.is_empty(), "calls after the raising point: {never:?}");
        assert!(host.trace.iter().any(|c| c.name == "u_parse"));
        assert_eq!(host.output, ["2 KeyError bad", "2"]);
    }
}

/// The classify loop (p500's shape): the twelve first llm calls are all in flight before any
/// finishes, and the three retries start together once the failures are known.
#[test]
fn a_loop_around_a_try_keeps_its_iterations_overlapping() {
    use crate::lambda_o::host::PrimText;
    let f = golden_bezoar("try_classify_loop");
    let mut host = TestHost::new();
    host.latency.insert("llm".into(), 10);
    let prog = lower(&f, &mut host, &LowerOptions::default()).unwrap();
    let items = TPrim::parse_prim("<\"a\" \"b\" \"bad1\" \"c\" \"d\" \"e\" \"bad2\" \"f\" \"g\" \"h\" \"i\" \"bad3\">").unwrap();
    run(&mut host, Rc::new(prog), vec![items], &mut RunStats::default()).unwrap();
    let llm: Vec<_> = host.trace.iter().filter(|c| c.name == "llm").collect();
    assert_eq!(llm.len(), 15);
    let (first, retries): (Vec<&&crate::lambda_o::testhost::Call>, Vec<_>) = llm.iter().partition(|c| !show(&c.args[0]).starts_with("strict"));
    assert_eq!(first.len(), 12);
    assert!(first.iter().all(|c| c.start == 0 && c.end == 10), "{first:?}");
    assert!(retries.iter().all(|c| c.start == 10), "{retries:?}");
    assert_eq!(host.now, 20);
}
