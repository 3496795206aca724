//! Evaluator and controller tests on λO text: golden files (tests/golden/lambda_o/*.lo) and
//! generated programs under random latencies whose exact schedule is predicted independently.
use super::eval::{run, run_with, RunOptions};
use super::host::PrimText;
use super::testhost::{show, TPrim, TestHost};
use super::text;
use crate::control::Class;
use crate::stats::RunStats;
use std::collections::HashMap;
use std::rc::Rc;

struct Golden {
    latency: HashMap<String, u64>,
    args: Vec<TPrim>,
    expect: Result<String, String>,
    output: Vec<String>,
    end: Option<u64>,
    budget: u64,
    slot_budget: Option<u64>,
    peak_slots: Option<u64>,
    /// External name → function name: the external resolves to that function's λO expression.
    terms: Vec<(String, String)>,
}

fn headers(src: &str) -> Golden {
    let mut g = Golden {
        latency: HashMap::new(),
        args: vec![],
        expect: Ok("None".into()),
        output: vec![],
        end: None,
        budget: u64::MAX,
        slot_budget: None,
        peak_slots: None,
        terms: vec![],
    };
    for line in src.lines().filter_map(|l| l.strip_prefix("# ")) {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim();
        match k {
            "latency" => {
                for kv in v.split_whitespace() {
                    let (n, l) = kv.split_once('=').unwrap();
                    g.latency.insert(n.to_string(), l.parse().unwrap());
                }
            }
            "args" => g.args = v.split_whitespace().map(|a| TPrim::parse_prim(a).unwrap()).collect(),
            "expect" => g.expect = Ok(v.to_string()),
            "expect-error" => g.expect = Err(v.to_string()),
            "output" => g.output = v.split(" | ").filter(|s| !s.is_empty()).map(str::to_string).collect(),
            "end" => g.end = Some(v.parse().unwrap()),
            "budget" => g.budget = v.parse().unwrap(),
            "peak-slots-at-most" => g.peak_slots = Some(v.parse().unwrap()),
            "slot-budget" => g.slot_budget = Some(v.parse().unwrap()),
            "term" => {
                for kv in v.split_whitespace() {
                    let (n, f) = kv.split_once('=').unwrap();
                    g.terms.push((n.to_string(), f.to_string()));
                }
            }
            _ => {}
        }
    }
    g
}

/// A test host set up as a golden file's headers say, and the program as a shared reference.
fn golden_host(g: &Golden, prog: super::term::Program<TPrim>) -> (TestHost, Rc<super::term::Program<TPrim>>) {
    let mut host = TestHost::new();
    host.latency = g.latency.clone();
    let prog = Rc::new(prog);
    for (ext, fname) in &g.terms {
        let fid = prog.funcs.iter().position(|f| &f.name == fname).unwrap_or_else(|| panic!("no function {fname}"));
        host.terms.insert(ext.clone(), (prog.clone(), fid as _));
    }
    (host, prog)
}

#[test]
fn golden_lambda_o_programs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/lambda_o");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().map(|e| e != "lo").unwrap_or(true) {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let g = headers(&src);
        let prog = text::parse::<TPrim>(&src).unwrap_or_else(|e| panic!("{name}: {e}"));
        // The text form round-trips.
        let printed = text::print(&prog);
        let again = text::parse::<TPrim>(&printed).unwrap_or_else(|e| panic!("{name} reparse: {e}\n{printed}"));
        assert_eq!(printed, text::print(&again), "{name}: print∘parse is not a fixpoint");
        let (mut host, prog) = golden_host(&g, prog);
        let mut stats = RunStats::default();
        let mut opts = RunOptions { max_steps: g.budget, ..RunOptions::default() };
        if let Some(b) = g.slot_budget {
            opts.slot_budget = b;
        }
        let got = run_with(&mut host, prog, g.args.clone(), &mut stats, &opts).map(|p| show(&p));
        assert_eq!(got, g.expect, "{name}: result");
        assert_eq!(host.output, g.output, "{name}: printed output");
        if let Some(end) = g.end {
            assert_eq!(host.now, end, "{name}: virtual end time");
        }
        if let Some(max) = g.peak_slots {
            assert!(stats.peak_slots <= max, "{name}: {} λO variables alive at once, expected ≤ {max}", stats.peak_slots);
        }
        n += 1;
    }
    assert!(n >= 6, "golden files found: {n}");
}

/// A generated straight-line program: call i is `xcall S_i f_i(dep_i, tag_i)` where dep_i is a
/// constant or the result of an earlier call, tag_i = 1000 + i identifies the call in the trace.
struct Generated {
    names: Vec<&'static str>,
    deps: Vec<Option<usize>>,
    text: String,
}

fn generate(seed: u64, n: usize) -> Generated {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) | 1;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    const NAMES: [&str; 6] = ["u1", "u2", "r1", "r2", "w1", "w2"];
    let mut names = vec![];
    let mut deps = vec![];
    let mut t = String::from("fun main/0(S):\n");
    for i in 0..n {
        let name = NAMES[rnd(6) as usize];
        let dep = if i > 0 && rnd(2) == 0 { Some(rnd(i as u64) as usize) } else { None };
        t += &format!("  f{i} := prim @{name}\n  tag{i} := prim {}\n", 1000 + i);
        let a = match dep {
            Some(j) => format!("r{j}"),
            None => {
                t += &format!("  c{i} := prim {i}\n");
                format!("c{i}")
            }
        };
        let s = if i == 0 { "S".to_string() } else { format!("S{i}") };
        t += &format!("  t{i} := xcall {s} f{i}({a}, tag{i})\n  S{} := prj 0 t{i}\n  r{i} := prj 1 t{i}\n", i + 1);
        names.push(name);
        deps.push(dep);
    }
    t += &format!("  out := (S{n}, r{})\n  ret out\n", n - 1);
    Generated { names, deps, text: t }
}

/// Under the controller policy (see crate::control), every call's start time is determined:
/// unordered calls start when their argument is known; readonly calls also wait for every
/// earlier sequential call to finish; sequential calls wait for every earlier call to finish
/// (any earlier call may raise, and CPython then never reaches the sequential one).
#[test]
fn generated_programs_follow_the_controller_schedule_exactly() {
    for seed in 0..1200u64 {
        let n = 2 + (seed % 11) as usize;
        let g = generate(seed, n);
        let prog = text::parse::<TPrim>(&g.text).unwrap();
        let mut host = TestHost::with_random_latencies(seed);
        let mut stats = RunStats::default();
        let result = run(&mut host, Rc::new(prog), vec![], &mut stats).unwrap();
        assert_eq!(host.trace.len(), n, "seed {seed}: every call made exactly once");
        let mut by_tag: HashMap<i64, usize> = HashMap::new();
        for (k, c) in host.trace.iter().enumerate() {
            let TPrim::Int(tag) = c.args[1] else { panic!() };
            assert!(by_tag.insert(tag - 1000, k).is_none(), "seed {seed}: call {tag} made twice");
        }
        // Reference values (sequential call-by-value): every external returns its first argument.
        let mut value = vec![TPrim::None; n];
        for i in 0..n {
            value[i] = match g.deps[i] {
                Some(j) => value[j].clone(),
                None => TPrim::Int(i as i64),
            };
        }
        assert_eq!(result, value[n - 1], "seed {seed}: result");
        let mut predicted_end = vec![0u64; n];
        for i in 0..n {
            let c = &host.trace[by_tag[&(i as i64)]];
            assert_eq!(c.args[0], value[i], "seed {seed}: argument of call {i}");
            let ready = g.deps[i].map(|j| predicted_end[j]).unwrap_or(0);
            let class = TestHost::class_of(g.names[i]);
            let order = (0..i)
                .filter(|&j| match (class, TestHost::class_of(g.names[j])) {
                    (Class::Unordered, _) => false,
                    // unordered calls forward F_R at once, F_W once they succeeded
                    (Class::Readonly, earlier) => earlier == Class::Sequential,
                    (Class::Sequential, _) => true,
                })
                .map(|j| predicted_end[j])
                .max()
                .unwrap_or(0);
            assert_eq!(c.start, ready.max(order), "seed {seed}: start of call {i} ({})\n{}", g.names[i], g.text);
            predicted_end[i] = c.end;
        }
        assert_eq!(stats.dispatched.iter().sum::<u64>(), n as u64);
    }
}

#[test]
fn sequential_calls_never_overlap_and_unordered_ones_do() {
    let mut overlapped = 0;
    for seed in 0..300u64 {
        let g = generate(seed, 10);
        let prog = text::parse::<TPrim>(&g.text).unwrap();
        let mut host = TestHost::with_random_latencies(seed);
        run(&mut host, Rc::new(prog), vec![], &mut RunStats::default()).unwrap();
        let t = &host.trace;
        for a in t {
            for b in t {
                if std::ptr::eq(a, b) {
                    continue;
                }
                let overlap = a.start < b.end && b.start < a.end;
                if a.class == Class::Sequential && b.class != Class::Unordered {
                    assert!(!overlap, "seed {seed}: {a:?} overlaps {b:?}");
                }
                if a.class == Class::Unordered && b.class == Class::Unordered && overlap {
                    overlapped += 1;
                }
            }
        }
    }
    assert!(overlapped > 100, "unordered calls should overlap often, saw {overlapped}");
}

/// Confluence (OPAL §3.3): stepping ready work in any order gives the same result, the same
/// external calls and — since every internal step takes no virtual time — the same schedule.
#[test]
fn random_stepping_orders_give_the_same_calls_and_result() {
    for seed in 0..400u64 {
        let g = generate(seed, 2 + (seed % 9) as usize);
        let reference = {
            let mut host = TestHost::with_random_latencies(seed);
            let prog = text::parse::<TPrim>(&g.text).unwrap();
            let r = run(&mut host, Rc::new(prog), vec![], &mut RunStats::default());
            (r, host.trace)
        };
        for order in 1..4u64 {
            let mut host = TestHost::with_random_latencies(seed);
            let prog = text::parse::<TPrim>(&g.text).unwrap();
            let opts = RunOptions { shuffle_seed: Some(seed * 31 + order), ..RunOptions::default() };
            let r = run_with(&mut host, Rc::new(prog), vec![], &mut RunStats::default(), &opts);
            assert_eq!(r, reference.0, "seed {seed} order {order}");
            let mut a = host.trace.clone();
            let mut b = reference.1.clone();
            let key = |c: &super::testhost::Call| (c.start, c.end, format!("{:?}", c.args));
            a.sort_by_key(key);
            b.sort_by_key(key);
            assert_eq!(a, b, "seed {seed} order {order}");
        }
    }
}

/// The golden programs give their expected results under random stepping orders too.
#[test]
fn golden_programs_are_confluent() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/lambda_o");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let src = std::fs::read_to_string(&path).unwrap();
        let g = headers(&src);
        if g.budget != u64::MAX {
            continue; // divergent programs stop wherever the budget ends
        }
        for order in 0..20u64 {
            let prog = text::parse::<TPrim>(&src).unwrap();
            let (mut host, prog) = golden_host(&g, prog);
            let opts = RunOptions { shuffle_seed: Some(order * 7919 + 1), ..RunOptions::default() };
            let got = run_with(&mut host, prog, g.args.clone(), &mut RunStats::default(), &opts)
                .map(|p| show(&p));
            assert_eq!(got, g.expect, "{} order {order}", path.display());
            assert_eq!(host.output, g.output, "{} order {order}", path.display());
        }
    }
}

/// A catching call (`xcall?`) of a function the host would inline is made as an external call
/// instead: failures inside an inlined body would be its calls' own, not the catching call's.
/// The same call without `?` is inlined, so the body's failure is the run's.
#[test]
fn catching_calls_are_never_inlined() {
    let inner = text::parse::<TPrim>(
        "fun inner/0(S, x):\n  fail := prim @fail\n  t := xcall S fail(x)\n  ret t\n",
    )
    .unwrap();
    let outer = |q: &str| {
        format!(
            "fun main/0(S):\n  f := prim @inner\n  one := prim 1\n  t := xcall{q} S f(one)\n  S.1 := prj 0 t\n  \
             r := prj 1 t\n  out := (S.1, r)\n  ret out\n"
        )
    };
    let run_outer = |q: &str| {
        let mut host = TestHost::new();
        host.programs.insert("inner".into(), Rc::new(inner.clone()));
        let mut stats = RunStats::default();
        let prog = text::parse::<TPrim>(&outer(q)).unwrap();
        let r = run(&mut host, Rc::new(prog), vec![], &mut stats);
        (r.map(|p| show(&p)), stats.inlined_calls, host.trace.iter().map(|c| c.name.clone()).collect::<Vec<_>>())
    };
    // Inlined: the body's `fail` is the run's failure.
    assert_eq!(run_outer(""), (Err("boom 1".to_string()), 1, vec!["fail".to_string()]));
    // Catching: one external call of `inner` (the test host's identity external), no inlining.
    assert_eq!(run_outer("?"), (Ok("1".to_string()), 0, vec!["inner".to_string()]));
}

/// A call made while a handler runs (`handling`) is never inlined either — with its callee
/// known when the statement is reached, or only later (`u1`, an identity external with a
/// latency) — since the inlined body's calls would run without the handled exception.
#[test]
fn handling_calls_are_never_inlined() {
    let inner = text::parse::<TPrim>(
        "fun inner/0(S, x):\n  info := prim @exc_info\n  t := xcall S info()\n  ret t\n",
    )
    .unwrap();
    let outer = |pending: bool, handling: &str| {
        let callee = if pending { "  u1 := prim @u1\n  g := xcall S.1 u1(f)\n  S.2 := prj 0 g\n  h := prj 1 g\n" } else { "  S.2 := S.1\n  h := f\n" };
        format!(
            "fun main/0(S):\n  f := prim @inner\n  fail := prim @fail\n  one := prim 1\n  c0 := xcall? S fail(one)\n  \
             S.1 := prj 0 c0\n  c := prj 1 c0\n{callee}  t := xcall S.2 h(one){handling}\n  S.3 := prj 0 t\n  \
             r := prj 1 t\n  out := (S.3, r)\n  ret out\n"
        )
    };
    for pending in [false, true] {
        let run_outer = |handling: &str| {
            let mut host = TestHost::new();
            host.latency.insert("u1".into(), 5);
            host.programs.insert("inner".into(), Rc::new(inner.clone()));
            let mut stats = RunStats::default();
            let prog = text::parse::<TPrim>(&outer(pending, handling)).unwrap_or_else(|e| panic!("{e}"));
            let r = run(&mut host, Rc::new(prog), vec![], &mut stats);
            (r.map(|p| show(&p)), stats.inlined_calls)
        };
        // Without the slot the callee is inlined: its exc_info() sees no handled exception.
        assert_eq!(run_outer(""), (Ok("None".to_string()), 1), "pending callee: {pending}");
        // With it: one external call of `inner` (the test host's identity external).
        assert_eq!(run_outer(" handling c"), (Ok("1".to_string()), 0), "pending callee: {pending}");
    }
}
