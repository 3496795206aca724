//! The overlap analysis on Bezoar text, with a table of callees standing in for the Python
//! host's classification.
use super::oracle::*;
use super::overlap::{analyse, Analysis, Where};
use crate::bezoar::{text::parse, Intrinsic};
use crate::control::Class;
use std::collections::BTreeSet;

/// A callee of the table.
#[derive(Clone, Copy)]
enum Def {
    /// A decorated external: its class and whether it is async.
    Ext(Class, bool),
    /// print and friends: sequential, inline.
    Print,
    /// sum: reads its argument without being a scoped operation (an escape).
    Sum,
}

struct Table {
    names: Vec<(&'static str, Def)>,
}

impl Table {
    fn new(names: &[(&'static str, Def)]) -> Table {
        Table { names: names.to_vec() }
    }
}

fn atoms(args: &[AVal]) -> bool {
    args.iter().all(|a| matches!(a, AVal::Atom))
}

fn objs(args: &[AVal]) -> Vec<ObjId> {
    let mut s = BTreeSet::new();
    for a in args {
        a.objects(&mut s);
    }
    s.into_iter().collect()
}

impl Oracle for Table {
    fn global(&mut self, name: &str) -> AVal {
        match self.names.iter().position(|(n, _)| *n == name) {
            Some(i) => AVal::Known(i as u32),
            None => AVal::any(),
        }
    }

    fn call(&mut self, callee: &Callee<'_>, args: &[AVal], _kw: &[String]) -> CallInfo {
        let mut info = CallInfo::unknown();
        let keys = objs(args);
        match callee {
            Callee::Helper(_) | Callee::BoundCheck => info.class = Some(Class::Unordered),
            Callee::Intrinsic(op, _) => {
                info.class = Some(if atoms(args) { Class::Unordered } else { Class::Readonly });
                match op {
                    Intrinsic::BuildList => {
                        info.makes = Some(Ctype::List);
                        info.class = Some(Class::Unordered);
                    }
                    Intrinsic::BuildMap => {
                        info.makes = Some(Ctype::Dict);
                        info.class = Some(Class::Unordered);
                    }
                    Intrinsic::GetAttr(_) => {
                        if let Some(AVal::Obj(o, _)) = args.first() {
                            info.objects = ObjFacts { keys: vec![*o], scope: Some((*o, None, vec![])), keyed: false };
                            info.class = Some(Class::Unordered);
                        }
                    }
                    Intrinsic::IterSnapshot | Intrinsic::IterPrivate | Intrinsic::GetItem => {
                        if let Some(AVal::Obj(o, _)) = args.first() {
                            info.objects = ObjFacts { keys: keys.clone(), scope: Some((*o, Some(false), vec![])), keyed: false };
                        }
                    }
                    Intrinsic::SetItem => {
                        if let Some(AVal::Obj(o, _)) = args.first() {
                            info.objects = ObjFacts { keys: keys.clone(), scope: Some((*o, Some(true), objs(&args[2..]))), keyed: false };
                            info.class = Some(Class::Sequential);
                        }
                    }
                    _ => {
                        info.objects = ObjFacts { keys: keys.clone(), scope: None, keyed: false };
                    }
                }
            }
            Callee::Value(AVal::Known(i)) => match self.names[*i as usize].1 {
                Def::Ext(c, is_async) => {
                    info.concurrent = is_async;
                    info.external = true;
                    if c == Class::Unordered {
                        info.class = Some(if atoms(args) { Class::Unordered } else { Class::Readonly });
                    } else {
                        info.early = Some(c);
                        info.class = Some(c);
                    }
                    info.objects = ObjFacts { keys: keys.clone(), scope: None, keyed: false };
                }
                Def::Print => {
                    info.class = Some(Class::Sequential);
                    info.objects = ObjFacts { keys: keys.clone(), scope: None, keyed: false };
                }
                Def::Sum => {
                    info.class = Some(if atoms(args) { Class::Unordered } else { Class::Readonly });
                    info.objects = ObjFacts { keys: keys.clone(), scope: None, keyed: false };
                }
            },
            Callee::Value(AVal::Method(recv, name)) => match &**recv {
                AVal::Obj(o, _) => {
                    let mut k = keys.clone();
                    k.push(*o);
                    info.objects = ObjFacts { keys: k, scope: (name == "append").then(|| (*o, Some(true), keys.clone())), keyed: false };
                    info.class = Some(Class::Sequential);
                }
                AVal::Foreign(_) => info.class = Some(Class::Sequential),
                AVal::Atom => info.class = Some(Class::Unordered),
                _ => {}
            },
            _ => {}
        }
        info
    }
}

fn run(text: &str, names: &[(&'static str, Def)]) -> Analysis {
    let f = parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut t = Table::new(names);
    analyse(&f, &mut t, true)
}

fn pair(a: &Analysis, x: u32, y: u32) -> Option<Where> {
    a.pairs.iter().find(|p| p.0 == x && p.1 == y).map(|p| p.2)
}

fn why(a: &Analysis, x: u32, y: u32) -> String {
    a.never.iter().find(|p| p.0 == x && p.1 == y).map(|p| p.2.clone()).unwrap_or_default()
}

const ASYNC_U: Def = Def::Ext(Class::Unordered, true);

/// The program of the issue: `out.append(fetch(x))` in a loop, then `print("total", sum(out))`.
const APPEND_SUM_PRINT: &str = r#"def main(xs):  # qualname "main" file "t.py" line 1 nregs 16
  const 0 = "total"
  r0 := op list()  @2
  store out r0  @2
  r1 := load xs  @3
  r2 := op iter_snapshot(r1)  @3
  for r3 in r2:  @3
    store x r3  @3
    r4 := load out  @4
    r5 := op getattr.append(r4)  @4
    r6 := global fetch  @4
    r7 := load x  @4
    r8 := r6(r7)  @4
    r9 := r5(r8)  @4
  r10 := global print  @5
  r11 := const 0  @5
  r12 := global sum  @5
  r13 := load out  @5
  r14 := r12(r13)  @5
  r15 := r10(r11, r14)  @5
  return r15  @5
"#;

#[test]
fn print_after_the_loop_waits_for_every_fetch() {
    let a = run(APPEND_SUM_PRINT, &[("fetch", ASYNC_U), ("print", Def::Print), ("sum", Def::Sum)]);
    assert_eq!(a.sites.iter().map(|s| s.callee.as_str()).collect::<Vec<_>>(), ["fetch", "out.append", "sum", "print"]);
    // fetch and print never overlap: print needs sum(out), which waits for every append.
    assert_eq!(pair(&a, 1, 4), None, "{}", a.report());
    assert!(why(&a, 1, 4).contains("#4"), "{}", a.report());
    // fetches of different iterations overlap; an append overlaps the fetches of other iterations.
    assert_eq!(pair(&a, 1, 1), Some(Where::Itself));
    assert_eq!(pair(&a, 1, 2), Some(Where::Across), "{}", a.report());
    // appends run on the evaluator thread: never with each other.
    assert_eq!(pair(&a, 2, 2), None);
    assert_eq!(a.site(2).class, "unordered", "an owned list's append is ordered on the list only");
}

/// The program of tests/test_observability.py::test_overlap_analysis.
const OBSERVABILITY: &str = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 30
  const 0 = "k"
  r0 := global ask  @2
  r1 := load q  @2
  r2 := r0(r1)  @2
  store a r2  @2
  r3 := global look  @3
  r4 := r3(r1)  @3
  if r4:  @4
    r5 := global ask  @5
    r6 := load a  @5
    r7 := r5(r6)  @5
  else:
    r8 := global ask  @7
    r9 := r8(r1)  @7
  r10 := global show  @8
  r11 := r10(r1)  @8
  r12 := load items  @9
  for r13 in r12:  @9
    r14 := global ask  @10
    r15 := r14(r13)  @10
    store acc r15  @10
    r16 := global ask  @11
    r17 := load acc  @11
    r18 := r16(r17)  @11
  r19 := load acc  @12
  r20 := r10(r19)  @12
  return r20  @12
"#;

#[test]
fn observability_example() {
    let names = [
        ("ask", ASYNC_U),
        ("look", Def::Ext(Class::Readonly, true)),
        ("show", Def::Ext(Class::Sequential, true)),
    ];
    let a = run(OBSERVABILITY, &names);
    let info: Vec<(u32, &str, &str, Vec<u32>)> =
        a.sites.iter().map(|s| (s.line, s.callee.as_str(), s.class.as_str(), s.waits_for.clone())).collect();
    assert_eq!(
        info,
        vec![
            (2, "ask", "unordered", vec![]),
            (3, "look", "readonly", vec![]),
            (5, "ask", "unordered", vec![1, 2]),
            (7, "ask", "unordered", vec![2]),
            (8, "show", "sequential", vec![]),
            (10, "ask", "unordered", vec![]),
            (11, "ask", "unordered", vec![6]),
            (12, "show", "sequential", vec![6]),
        ],
        "{}",
        a.report()
    );
    assert_eq!(pair(&a, 3, 4), None);
    assert!(why(&a, 3, 4).contains("different branches"), "{}", a.report());
    assert_eq!(pair(&a, 5, 8), None);
    assert_eq!(pair(&a, 2, 5), None);
    assert_eq!(pair(&a, 1, 2), Some(Where::Same));
    // A sequential call waits for every earlier call to succeed (one that raises stops CPython
    // before it), unordered ones included.
    assert_eq!(pair(&a, 1, 5), None, "{}", a.report());
    assert!(why(&a, 1, 5).contains("ordered after #1 finishes"), "{}", a.report());
    assert_eq!(pair(&a, 4, 5), None, "{}", a.report());
    assert_eq!(pair(&a, 4, 6), Some(Where::Same), "{}", a.report());
    assert_eq!(pair(&a, 6, 6), Some(Where::Itself));
    assert_eq!(pair(&a, 7, 7), Some(Where::Itself));
    assert_eq!(pair(&a, 1, 3), None);
    // Within an iteration #7 uses #6's result; #6 of a later iteration may still be running.
    assert_eq!(pair(&a, 6, 7), Some(Where::Across), "{}", a.report());
    assert_eq!(pair(&a, 5, 5), None);
}

#[test]
fn two_inline_calls_never_overlap() {
    let text = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 5
  r0 := global ask  @2
  r1 := load q  @2
  r2 := r0(r1)  @2
  r3 := r0(r1)  @3
  return r3  @3
"#;
    let a = run(text, &[("ask", Def::Ext(Class::Unordered, false))]);
    assert_eq!(pair(&a, 1, 2), None);
    assert!(why(&a, 1, 2).contains("evaluator thread"), "{}", a.report());
    let a = run(text, &[("ask", ASYNC_U)]);
    assert_eq!(pair(&a, 1, 2), Some(Where::Same));
}

#[test]
fn print_overlaps_a_fetch_neither_before_nor_after_it() {
    let before = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 6
  const 0 = "hi"
  r0 := global print  @2
  r1 := const 0  @2
  r2 := r0(r1)  @2
  r3 := global fetch  @3
  r4 := load q  @3
  r5 := r3(r4)  @3
  return r5  @3
"#;
    let names = [("fetch", ASYNC_U), ("print", Def::Print)];
    let a = run(before, &names);
    assert_eq!(pair(&a, 1, 2), None, "{}", a.report());
    let after = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 6
  const 0 = "hi"
  r3 := global fetch  @2
  r4 := load q  @2
  r5 := r3(r4)  @2
  r0 := global print  @3
  r1 := const 0  @3
  r2 := r0(r1)  @3
  return r5  @3
"#;
    // After the fetch, print waits for it to succeed: if it raises, CPython never prints.
    let a = run(after, &names);
    assert_eq!(pair(&a, 1, 2), None, "{}", a.report());
    assert!(why(&a, 1, 2).contains("ordered after #1 finishes"), "{}", a.report());
}

#[test]
fn a_readonly_call_waits_for_an_earlier_sequential_one() {
    let text = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 8
  r0 := global log  @2
  r1 := load q  @2
  r2 := r0(r1)  @2
  r3 := global look  @3
  r4 := r3(r1)  @3
  r5 := r3(r1)  @4
  return r5  @4
"#;
    let names = [("log", Def::Ext(Class::Sequential, true)), ("look", Def::Ext(Class::Readonly, true))];
    let a = run(text, &names);
    assert_eq!(pair(&a, 1, 2), None);
    assert!(why(&a, 1, 2).contains("ordered after"), "{}", a.report());
    assert_eq!(pair(&a, 2, 3), Some(Where::Same));
}

#[test]
fn while_loop_iterations_follow_the_condition() {
    // n = 0; while fetch(n): n = n + 1; then print(n)
    let text = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 12
  const 0 = 0
  const 1 = 1
  r0 := const 0  @2
  store n r0  @2
  loop:  @3
    r1 := global fetch  @3
    r2 := load n  @3
    r3 := r1(r2)  @3
    r4 := op truth(r3)  @3
    if r4:  @3
      r5 := load n  @4
      r6 := const 1  @4
      r7 := op binary.add(r5, r6)  @4
      store n r7  @4
    else:
      break  @3
  r8 := global print  @5
  r9 := load n  @5
  r10 := r8(r9)  @5
  return r10  @5
"#;
    let a = run(text, &[("fetch", ASYNC_U), ("print", Def::Print)]);
    // The next iteration exists only once this one's condition is known.
    assert_eq!(pair(&a, 1, 1), None, "{}", a.report());
    assert_eq!(pair(&a, 1, 2), None, "{}", a.report());
}

#[test]
fn for_loop_with_break() {
    // for x in xs: r = fetch(x); if r: break; log(r)   then print("done")
    let text = r#"def f(xs):  # qualname "f" file "x.py" line 1 nregs 14
  const 0 = "done"
  r0 := load xs  @2
  r1 := op iter_snapshot(r0)  @2
  for r2 in r1:  @2
    r3 := global fetch  @3
    r4 := r3(r2)  @3
    r5 := op truth(r4)  @4
    if r5:  @4
      break  @4
    r6 := global log  @5
    r7 := r6(r4)  @5
  r8 := global print  @6
  r9 := const 0  @6
  r10 := r8(r9)  @6
  return r10  @6
"#;
    let a = run(text, &[("fetch", ASYNC_U), ("log", Def::Ext(Class::Sequential, true)), ("print", Def::Print)]);
    // The next iteration runs only once this one's break condition is known.
    assert_eq!(pair(&a, 1, 1), None, "{}", a.report());
    assert!(a.site(1).waits_for.contains(&1));
    assert_eq!(pair(&a, 1, 2), Some(Where::Across), "{}", a.report());
}

#[test]
fn conditions_on_one_value_are_not_taken_as_independent() {
    // if c: a(q)   then   if not c: b(q)   — never both; the analysis must not claim them.
    let text = r#"def f(c, q):  # qualname "f" file "x.py" line 1 nregs 10
  r0 := load c  @2
  r1 := op truth(r0)  @2
  if r1:  @2
    r2 := global a  @3
    r3 := load q  @3
    r4 := r2(r3)  @3
  r5 := load c  @4
  r6 := op unary.not(r5)  @4
  r7 := op truth(r6)  @4
  if r7:  @4
    r8 := global b  @5
    r9 := r8(r3)  @5
  return r0  @5
"#;
    let a = run(text, &[("a", ASYNC_U), ("b", ASYNC_U)]);
    assert_eq!(pair(&a, 1, 2), None, "{}", a.report());
    // Conditions on different values are independent: both branches may run.
    let text = text.replace("r5 := load c  @4", "r5 := load q  @4");
    let a = run(&text, &[("a", ASYNC_U), ("b", ASYNC_U)]);
    assert_eq!(pair(&a, 1, 2), Some(Where::Same), "{}", a.report());
}

#[test]
fn while_loop_calls_of_different_iterations_overlap() {
    // n = 0; while poll(n): side(n); n = n + 1 — side of one iteration runs while the next
    // iteration's poll (and side) do. The counter carries the condition of the previous `if`,
    // which must not make the iterations' conditions look related.
    let text = r#"def f():  # qualname "f" file "x.py" line 1 nregs 11
  const 0 = 0
  const 1 = 1
  r0 := const 0  @2
  store n r0  @2
  loop:  @3
    r1 := global poll  @3
    r2 := load n  @3
    r3 := r1(r2)  @3
    r4 := op truth(r3)  @3
    if r4:  @3
      r5 := global side  @4
      r6 := load n  @4
      r7 := r5(r6)  @4
      r8 := load n  @5
      r9 := const 1  @5
      r10 := op binary.add(r8, r9)  @5
      store n r10  @5
    else:
      break  @3
  return r0  @6
"#;
    let a = run(text, &[("poll", ASYNC_U), ("side", ASYNC_U)]);
    assert_eq!(pair(&a, 1, 1), None, "{}", a.report());
    assert_eq!(pair(&a, 1, 2), Some(Where::Across), "{}", a.report());
    assert_eq!(pair(&a, 2, 2), Some(Where::Itself), "{}", a.report());
}

/// In a try body each operation is gated (what follows it exists once it finished without
/// raising): two async unordered calls there never overlap, while the same calls in a loop
/// around the try overlap across iterations. Handlers and nested tries are walked without harm.
#[test]
fn try_bodies_are_gated_but_a_loop_around_them_overlaps() {
    let in_try = r#"def f(q):  # qualname "f" file "x.py" line 1 nregs 8
  try:  @2
    r0 := global ask  @3
    r1 := load q  @3
    r2 := r0(r1)  @3
    r3 := r0(r1)  @4
  except:
    try:  @6
      r4 := global ask  @7
      r5 := r4(r4)  @7
    except r6:
      r6 := global KeyError  @8
    then:
      pass
  return r1  @9
"#;
    let a = run(in_try, &[("ask", ASYNC_U)]);
    assert_eq!(pair(&a, 1, 2), None, "{}", a.report());
    let in_loop = r#"def f(xs):  # qualname "f" file "x.py" line 1 nregs 8
  const 0 = None
  r0 := load xs  @2
  r1 := op iter_snapshot(r0)  @2
  for r2 in r1:  @2
    try:  @3
      r3 := global ask  @4
      r4 := r3(r2)  @4
    except:
      r5 := global print  @6
      r6 := r5(r2)  @6
  r7 := const 0  @7
  return r7  @7
"#;
    let a = run(in_loop, &[("ask", ASYNC_U)]);
    assert!(pair(&a, 1, 1).is_some(), "{}", a.report());
}
