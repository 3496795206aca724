//! A simulated world for testing the evaluator, controllers and lowering without Python:
//! primitives are small values, externals are named (`@llm`, `@print`, ...) with a class and a
//! latency in virtual ticks, and every call is recorded with its start and end time.
use super::host::{Dispatch, Host, PrimFactory, PrimText, TaskId};
use super::term::{FuncId, ProgramRef};
use crate::bezoar::{Const, Intrinsic};
use crate::control::Class;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq)]
pub enum TPrim {
    Int(i64),
    Str(String),
    Bool(bool),
    None,
    Tuple(Vec<TPrim>),
    /// A named external function (or a named internal program, see `TestHost::programs`).
    Ext(String),
}

impl PrimText for TPrim {
    fn fmt_prim(&self) -> String {
        match self {
            TPrim::Int(i) => i.to_string(),
            TPrim::Str(s) => format!("{s:?}"),
            TPrim::Bool(b) => if *b { "True" } else { "False" }.into(),
            TPrim::None => "None".into(),
            TPrim::Tuple(v) => format!("<{}>", v.iter().map(|p| p.fmt_prim()).collect::<Vec<_>>().join(" ")),
            TPrim::Ext(n) => format!("@{n}"),
        }
    }

    fn parse_prim(s: &str) -> Result<Self, String> {
        let s = s.trim();
        Ok(match s {
            "True" => TPrim::Bool(true),
            "False" => TPrim::Bool(false),
            "None" => TPrim::None,
            _ if s.starts_with('@') => TPrim::Ext(s[1..].to_string()),
            _ if s.starts_with('"') => TPrim::Str(s.trim_matches('"').to_string()),
            _ if s.starts_with('<') => TPrim::Tuple(
                s.trim_start_matches('<')
                    .trim_end_matches('>')
                    .split_whitespace()
                    .map(TPrim::parse_prim)
                    .collect::<Result<_, _>>()?,
            ),
            _ => TPrim::Int(s.parse().map_err(|_| format!("bad primitive {s:?}"))?),
        })
    }
}

/// One external call as it happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Vec<TPrim>,
    pub class: Class,
    pub start: u64,
    pub end: u64,
}

pub struct TestHost {
    pub now: u64,
    pub trace: Vec<Call>,
    /// What `@print` printed, in order.
    pub output: Vec<String>,
    /// Internal programs, called through `xcall` like @poppy functions.
    pub programs: HashMap<String, ProgramRef<TPrim>>,
    /// Latency of each external by name (default 0 = synchronous), or random when `seed` is set.
    pub latency: HashMap<String, u64>,
    /// Externals that resolve to a λO expression: name → (program, function); the call's
    /// arguments become the function's parameters after S.
    pub terms: HashMap<String, (ProgramRef<TPrim>, FuncId)>,
    /// Tasks the evaluator cancelled (speculative calls after a failure).
    pub cancelled: Vec<TaskId>,
    /// The handled exception while a call made in a handler runs (`dispatch_handling`): the
    /// error of the caught value. `@exc_info` returns it (None outside handlers), like
    /// `sys.exc_info()[1]`.
    pub handling: Option<TPrim>,
    seed: Option<u64>,
    pending: Vec<(u64, TaskId, usize, Result<TPrim, String>)>,
}

impl TestHost {
    pub fn new() -> Self {
        TestHost {
            now: 0,
            trace: vec![],
            output: vec![],
            programs: HashMap::new(),
            latency: HashMap::new(),
            terms: HashMap::new(),
            cancelled: vec![],
            handling: None,
            seed: None,
            pending: vec![],
        }
    }

    /// Every asynchronous external gets a pseudo-random latency in 1..=20 drawn from `seed`.
    pub fn with_random_latencies(seed: u64) -> Self {
        let mut h = TestHost::new();
        h.seed = Some(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        h
    }

    /// A pseudo-random number that depends on the seed and the call itself (not on the order
    /// calls are made in, so that every evaluation order sees the same latencies).
    fn call_random(&self, name: &str, args: &[TPrim]) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.seed.hash(&mut h);
        name.hash(&mut h);
        format!("{args:?}").hash(&mut h);
        h.finish()
    }

    fn latency_of(&mut self, name: &str, args: &[TPrim]) -> u64 {
        if let Some(l) = self.latency.get(name) {
            return *l;
        }
        let pure = matches!(name, "truth" | "eq" | "lt" | "add" | "global") || name.starts_with("h_");
        if self.seed.is_some() && !pure {
            return 1 + self.call_random(name, args) % 20;
        }
        0
    }

    /// Class of an external by its name: `u*` / `llm` unordered, `r*` readonly, the rest sequential
    /// (`print`, `w*`, `fail`, ...). Pure helpers are unordered.
    pub fn class_of(name: &str) -> Class {
        match name {
            "h_reraise" => Class::Sequential,
            "llm" | "add" | "inc" | "eq" | "lt" | "truth" | "concat" | "global" | "range" => Class::Unordered,
            n if n.starts_with('u') || n.starts_with("h_") => Class::Unordered,
            n if n.starts_with('r') => Class::Readonly,
            _ => Class::Sequential,
        }
    }

    pub(crate) fn apply(&mut self, name: &str, args: &[TPrim]) -> Result<TPrim, String> {
        use TPrim::*;
        let int = |p: &TPrim| match p {
            Int(i) => Ok(*i),
            other => Err(format!("{name}: not an int: {other:?}")),
        };
        if self.terms.contains_key(name) {
            let mut t = vec![Str("#term".into()), Str(name.into())];
            t.extend_from_slice(args);
            return Ok(Tuple(t));
        }
        Ok(match name {
            "print" => {
                self.output.push(args.iter().map(show).collect::<Vec<_>>().join(" "));
                None
            }
            "llm" => Str(format!("<{}>", args.iter().map(show).collect::<Vec<_>>().join(","))),
            "add" => Int(int(&args[0])? + int(&args[1])?),
            "inc" => Int(int(&args[0])? + 1),
            "eq" => Bool(args[0] == args[1]),
            "lt" => Bool(int(&args[0])? < int(&args[1])?),
            "truth" => Bool(truthy(&args[0])),
            "concat" => Str(args.iter().map(show).collect()),
            "range" => Tuple((0..int(&args[0])?).map(Int).collect()),
            "global" => Ext(show(&args[0])),
            "u_list" => Tuple(args.to_vec()),
            "h_loop_next" => Int(if int(&args[0])? == 2 { 0 } else { int(&args[0])? }),
            "h_loop_exit" => Int(if int(&args[0])? == 1 { 0 } else { int(&args[0])? }),
            "h_loop_again" => Bool(matches!(int(&args[0])?, 0 | 2)),
            "h_select_return" => if int(&args[0])? == 3 { args[1].clone() } else { None },
            "h_is_caught" => Bool(matches!(&args[0], Tuple(t) if t.first() == Some(&Str("#caught".into())))),
            "h_caught_exception" => match &args[0] {
                Tuple(t) if t.len() == 3 => t[1].clone(),
                other => return Err(format!("h_caught_exception: not caught: {other:?}")),
            },
            "h_is_raised" => Bool(int(&args[0])? == 4),
            // The test world's exceptions are their messages; a class is a string matching the
            // messages that start with it (`"boom"`), a tuple any of its items; anything else is
            // CPython's TypeError.
            "h_exc_match" => {
                let err = match &args[0] {
                    Tuple(t) if t.len() == 3 => show(&t[1]),
                    other => return Err(format!("h_exc_match: not caught: {other:?}")),
                };
                let classes = match &args[1] {
                    Tuple(items) => items.clone(),
                    one => vec![one.clone()],
                };
                let mut matched = false;
                for c in &classes {
                    let Str(prefix) = c else {
                        return Err("TypeError: catching classes that do not inherit from BaseException is not allowed".into());
                    };
                    matched |= err.starts_with(prefix.as_str());
                }
                Bool(matched)
            }
            // Fails with the caught error itself.
            "h_reraise" => match &args[0] {
                Tuple(t) if t.len() == 3 => return Err(show(&t[1])),
                other => return Err(format!("h_reraise: not caught: {other:?}")),
            },
            "exc_info" => match &self.handling {
                Some(Tuple(t)) if t.len() == 3 => t[1].clone(),
                _ => None,
            },
            // A parse that fails on what mentions "bad" (unordered `u_parse`, sequential `s_parse`).
            "u_parse" | "s_parse" => {
                let s = args.iter().map(show).collect::<Vec<_>>().join(",");
                if s.contains("bad") {
                    return Err(format!("KeyError {s}"));
                }
                Str(s)
            }
            "fail" | "u_fail" | "u_fail2" => return Err(format!("boom {}", args.iter().map(show).collect::<Vec<_>>().join(","))),
            // u*/r*/w*/s*: identity-ish externals that return their first argument (or None).
            _ => args.first().cloned().unwrap_or(None),
        })
    }
}

impl Default for TestHost {
    fn default() -> Self {
        Self::new()
    }
}

pub fn show(p: &TPrim) -> String {
    match p {
        TPrim::Str(s) => s.clone(),
        other => other.fmt_prim(),
    }
}

fn truthy(p: &TPrim) -> bool {
    match p {
        TPrim::Bool(b) => *b,
        TPrim::Int(i) => *i != 0,
        TPrim::Str(s) => !s.is_empty(),
        TPrim::None => false,
        TPrim::Tuple(v) => !v.is_empty(),
        TPrim::Ext(_) => true,
    }
}

impl Host for TestHost {
    type Prim = TPrim;
    type Error = String;

    fn inline_target(&mut self, f: &TPrim, nargs: usize, kwnames: &[String]) -> Option<ProgramRef<TPrim>> {
        let TPrim::Ext(name) = f else { return None };
        let p = self.programs.get(name)?;
        let entry = &p.funcs[p.entry as usize];
        (kwnames.is_empty() && entry.nparams as usize == nargs + 1).then(|| p.clone())
    }

    fn classify_callee(&mut self, f: &TPrim) -> Option<Class> {
        match f {
            TPrim::Ext(n) => Some(TestHost::class_of(n)),
            _ => None,
        }
    }

    fn as_term(&mut self, v: &TPrim) -> Option<(ProgramRef<TPrim>, FuncId, Vec<TPrim>)> {
        let TPrim::Tuple(items) = v else { return None };
        let (Some(TPrim::Str(tag)), Some(TPrim::Str(name))) = (items.first(), items.get(1)) else { return None };
        if tag != "#term" {
            return None;
        }
        let (prog, fid) = self.terms.get(name)?.clone();
        Some((prog, fid, items[2..].to_vec()))
    }

    fn is_eager(&mut self, f: &TPrim) -> bool {
        matches!(f, TPrim::Ext(n) if n == "global")
    }

    fn eager_call(&mut self, f: &TPrim, args: &[TPrim]) -> Result<TPrim, String> {
        let TPrim::Ext(name) = f else { return Err(format!("not callable: {f:?}")) };
        let name = name.clone();
        let result = self.apply(&name, args);
        let class = TestHost::class_of(&name);
        self.trace.push(Call { name, args: args.to_vec(), class, start: self.now, end: self.now });
        result
    }

    fn classify(&mut self, f: &TPrim, _args: &[TPrim], _kw: &[String]) -> Class {
        match f {
            TPrim::Ext(n) => TestHost::class_of(n),
            _ => Class::Sequential,
        }
    }

    fn dispatch(&mut self, task: TaskId, f: &TPrim, args: &[TPrim], _kw: &[String]) -> Dispatch<TPrim, String> {
        let TPrim::Ext(name) = f else {
            return Dispatch::Done(Err(format!("not callable: {f:?}")));
        };
        let name = name.clone();
        let latency = self.latency_of(&name, args);
        let result = self.apply(&name, args);
        let i = self.trace.len();
        self.trace.push(Call {
            name: name.clone(),
            args: args.to_vec(),
            class: TestHost::class_of(&name),
            start: self.now,
            end: self.now + latency,
        });
        if latency == 0 {
            Dispatch::Done(result)
        } else {
            self.pending.push((self.now + latency, task, i, result));
            Dispatch::Pending
        }
    }

    fn dispatch_handling(
        &mut self,
        task: TaskId,
        f: &TPrim,
        args: &[TPrim],
        kw: &[String],
        handling: Option<&TPrim>,
    ) -> Dispatch<TPrim, String> {
        let before = std::mem::replace(&mut self.handling, handling.cloned());
        let r = self.dispatch(task, f, args, kw);
        self.handling = before;
        r
    }

    fn cancel(&mut self, task: TaskId) {
        let now = self.now;
        if let Some(p) = self.pending.iter_mut().find(|p| p.1 == task) {
            p.0 = now;
            p.3 = Err("cancelled".into());
            self.trace[p.2].end = now;
            self.cancelled.push(task);
        }
    }

    fn wait(&mut self) -> Result<Vec<(TaskId, Result<TPrim, String>)>, String> {
        let next = self.pending.iter().map(|p| p.0).min().ok_or("wait with nothing pending")?;
        self.now = next;
        let (done, rest): (Vec<_>, Vec<_>) = self.pending.drain(..).partition(|p| p.0 == next);
        self.pending = rest;
        Ok(done.into_iter().map(|(_, t, _, r)| (t, r)).collect())
    }

    fn truthy(&mut self, v: &TPrim) -> Result<bool, String> {
        Ok(truthy(v))
    }

    fn make_tuple(&mut self, items: Vec<TPrim>) -> TPrim {
        TPrim::Tuple(items)
    }

    fn elements(&mut self, v: &TPrim) -> Result<Vec<TPrim>, String> {
        match v {
            TPrim::Tuple(items) => Ok(items.clone()),
            other => Err(format!("TypeError: not iterable: {other:?}")),
        }
    }

    fn note_failure(&mut self, e: String, _line: u32, later: Vec<TPrim>) -> String {
        if later.is_empty() {
            return e;
        }
        let names: Vec<String> = later.iter().map(|p| p.fmt_prim()).collect();
        format!("{e} (already ran: {})", names.join(" "))
    }

    fn internal_error(&mut self, kind: &str, msg: &str) -> String {
        format!("{kind}: {msg}")
    }

    /// `<"#caught" error line>`; `h_is_caught` tests for it, `h_caught_exception` takes the error.
    fn caught(&mut self, e: String, line: u32) -> TPrim {
        TPrim::Tuple(vec![TPrim::Str("#caught".into()), TPrim::Str(e), TPrim::Int(line as i64)])
    }
}

/// Lowering into the test world: intrinsics become externals named after their key.
impl PrimFactory for TestHost {
    type Prim = TPrim;

    fn constant(&mut self, c: &Const) -> TPrim {
        match c {
            Const::None => TPrim::None,
            Const::Bool(b) => TPrim::Bool(*b),
            Const::Int(i) => TPrim::Int(*i),
            Const::Str(s) => TPrim::Str(s.clone()),
            Const::Tuple(v) => TPrim::Tuple(v.iter().map(|c| self.constant(c)).collect()),
            Const::Float(f) => TPrim::Str(f.to_string()),
            Const::Opaque { repr, .. } | Const::Nested { repr, .. } => TPrim::Str(repr.clone()),
            Const::Globals => TPrim::Str("<globals>".into()),
        }
    }

    fn string(&mut self, s: &str) -> TPrim {
        TPrim::Str(s.to_string())
    }

    fn intrinsic(&mut self, i: &Intrinsic) -> TPrim {
        TPrim::Ext(match i.key().as_str() {
            "binary_add" => "add".into(),
            "iter" => "u_iter".into(),
            // `await f(...)` gives the callable itself (unordered); `await x` is sequential.
            "await_call" => "u_await_call".into(),
            k => k.to_string(),
        })
    }

    /// The fresh-operand mask shows in the name (`@in.fresh2`), so that lowering goldens pin it.
    fn intrinsic_fresh(&mut self, i: &Intrinsic, fresh: u32) -> TPrim {
        match self.intrinsic(i) {
            TPrim::Ext(name) => TPrim::Ext(format!("{name}.fresh{fresh}")),
            other => other,
        }
    }

    fn global_loader(&mut self) -> TPrim {
        TPrim::Ext("global".into())
    }

    fn bound_check(&mut self) -> TPrim {
        TPrim::Ext("u_bound".into())
    }

    fn helper(&mut self, name: &str) -> TPrim {
        TPrim::Ext(format!("h_{name}"))
    }
}
