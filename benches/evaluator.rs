//! Micro-benchmarks of the λO evaluator on a host with no Python: reduction steps per second on
//! internal work, and the cost of an external call through a controller.
//! Run: `cargo bench --bench evaluator` (reports are printed by criterion; steps/s is printed too).
use criterion::{criterion_group, criterion_main, Criterion};
use poppy_jit::control::Class;
use poppy_jit::lambda_o::{eval, text, Dispatch, Host, PrimText, ProgramRef, TaskId};
use poppy_jit::stats::RunStats;
use std::rc::Rc;
use std::time::Instant;

#[derive(Clone, Debug, PartialEq)]
enum P {
    Int(i64),
    Seq(Vec<P>),
    Ext,
}

impl PrimText for P {
    fn fmt_prim(&self) -> String {
        format!("{self:?}")
    }
    fn parse_prim(s: &str) -> Result<Self, String> {
        match s {
            "@ext" => Ok(P::Ext),
            _ => s.parse().map(P::Int).map_err(|e| e.to_string()),
        }
    }
}

/// Every external is a synchronous identity of class `class`; fold sequences are given by the
/// caller.
struct Bench {
    seq: P,
    class: Class,
}

impl Host for Bench {
    type Prim = P;
    type Error = String;
    fn inline_target(&mut self, _: &P, _: usize, _: &[String]) -> Option<ProgramRef<P>> {
        None
    }
    fn classify(&mut self, _: &P, _: &[P], _: &[String]) -> Class {
        self.class
    }
    fn dispatch(&mut self, _: TaskId, _: &P, args: &[P], _: &[String]) -> Dispatch<P, String> {
        Dispatch::Done(Ok(args.first().cloned().unwrap_or(P::Int(0))))
    }
    fn wait(&mut self) -> Result<Vec<(TaskId, Result<P, String>)>, String> {
        Err("nothing pending".into())
    }
    fn truthy(&mut self, v: &P) -> Result<bool, String> {
        Ok(matches!(v, P::Int(i) if *i != 0))
    }
    fn make_tuple(&mut self, items: Vec<P>) -> P {
        P::Seq(items)
    }
    fn elements(&mut self, _: &P) -> Result<Vec<P>, String> {
        match &self.seq {
            P::Seq(v) => Ok(v.clone()),
            _ => Err("not a sequence".into()),
        }
    }
    fn internal_error(&mut self, kind: &str, msg: &str) -> String {
        format!("{kind}: {msg}")
    }
}

/// A fold whose body does only internal work (tuples, projections, an internal call, an alias).
const INTERNAL: &str = "
fun main/0(S, xs):
  body := fun body/1
  acc := (S, xs)
  r := fold(xs, body, acc)
  S.1 := prj 0 r
  v := prj 1 r
  out := (S.1, v)
  ret out
fun body/1(e, acc):
  S := prj 0 acc
  k := fun id/2
  a := k(e)
  b := (a, e)
  c := prj 0 b
  d := c
  out := (S, d)
  ret out
fun id/2(x):
  ret x
";

/// A fold whose body makes one external call (queued, classified, dispatched, resolved).
const EXTERNAL: &str = "
fun main/0(S, xs):
  body := fun body/1
  acc := (S, xs)
  r := fold(xs, body, acc)
  S.1 := prj 0 r
  v := prj 1 r
  out := (S.1, v)
  ret out
fun body/1(e, acc):
  S := prj 0 acc
  f := prim @ext
  t := xcall S f(e)
  S.1 := prj 0 t
  r := prj 1 t
  out := (S.1, r)
  ret out
";

fn run(prog: &ProgramRef<P>, n: i64) -> u64 {
    run_as(prog, n, Class::Unordered)
}

fn run_as(prog: &ProgramRef<P>, n: i64, class: Class) -> u64 {
    let seq = P::Seq((0..n).map(P::Int).collect());
    let mut host = Bench { seq: seq.clone(), class };
    let mut stats = RunStats::default();
    eval::run(&mut host, prog.clone(), vec![seq], &mut stats).unwrap();
    stats.reductions
}

fn benches(c: &mut Criterion) {
    let internal: ProgramRef<P> = Rc::new(text::parse(INTERNAL).unwrap());
    let external: ProgramRef<P> = Rc::new(text::parse(EXTERNAL).unwrap());
    // One timed run to print steps per second (criterion reports time per iteration).
    let t = Instant::now();
    let steps = run(&internal, 200_000);
    let dt = t.elapsed().as_secs_f64();
    println!("internal reductions: {steps} in {dt:.3} s = {:.2} M steps/s", steps as f64 / dt / 1e6);
    let t = Instant::now();
    run(&external, 200_000);
    let dt = t.elapsed().as_secs_f64();
    println!("external calls: 200000 in {dt:.3} s = {:.3} µs per call (controller + dispatch)", dt / 200_000.0 * 1e6);
    for _ in 0..3 {
        let t = Instant::now();
        run_as(&external, 100_000, Class::Sequential);
        let ev = t.elapsed().as_secs_f64();
        let t = Instant::now();
        tokio_chain(100_000);
        let tk = t.elapsed().as_secs_f64();
        println!(
            "100k sequential controllers: evaluator {:.3} µs per call, tokio tasks {:.3} µs per call",
            ev / 1e5 * 1e6,
            tk / 1e5 * 1e6
        );
    }
    c.bench_function("fold 10k internal iterations", |b| b.iter(|| run(&internal, 10_000)));
    c.bench_function("fold 10k external calls", |b| b.iter(|| run(&external, 10_000)));
    // The design question of issue 3 ("tokio drives controllers"): the same chain of 10k
    // sequential controllers (each waits for F_R and F_W of its predecessor, runs its call,
    // resolves F_R' and F_W'), stepped by the evaluator vs as tokio tasks on a current-thread
    // runtime with oneshot futures. The evaluator column also instantiates the program.
    c.bench_function("10k sequential controllers: evaluator", |b| {
        b.iter(|| run_as(&external, 10_000, Class::Sequential))
    });
    c.bench_function("10k sequential controllers: tokio tasks", |b| b.iter(|| tokio_chain(10_000)));
}

/// `n` sequential controllers as tokio tasks: task i awaits its predecessor's F_R and F_W, makes
/// its (synchronous identity) call and resolves its own.
fn tokio_chain(n: i64) -> i64 {
    use tokio::sync::oneshot;
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async move {
        let (r0, rr) = oneshot::channel::<()>();
        let (w0, mut rw) = oneshot::channel::<()>();
        let mut rr = rr;
        r0.send(()).unwrap();
        w0.send(()).unwrap();
        let mut handles = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (tr, nr) = oneshot::channel::<()>();
            let (tw, nw) = oneshot::channel::<()>();
            let (in_r, in_w) = (std::mem::replace(&mut rr, nr), std::mem::replace(&mut rw, nw));
            handles.push(tokio::spawn(async move {
                in_r.await.unwrap();
                in_w.await.unwrap();
                let out = std::hint::black_box(i);
                tr.send(()).unwrap();
                tw.send(()).unwrap();
                out
            }));
        }
        let mut sum = 0;
        for h in handles {
            sum += h.await.unwrap();
        }
        sum
    })
}

criterion_group!(benches_group, benches);
criterion_main!(benches_group);
