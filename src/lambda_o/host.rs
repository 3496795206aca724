//! The boundary between the λO runtime and the world of primitives (Python objects in production,
//! a small simulated world in Rust tests).
use super::term::{FuncId, ProgramRef};
use crate::control::Class;
use crate::bezoar::{Const, Intrinsic};
use std::time::Instant;

/// What happened to one external call of a run (collected when `Host::tracing()` is on).
pub struct CallRecord<P> {
    /// Index of the call in sequential program order within the run (1-based), if known.
    pub position: Option<u64>,
    pub func: P,
    pub args: Vec<P>,
    pub kwnames: Vec<String>,
    pub class: Class,
    /// Queued (the evaluator reached the call), arguments known, dispatched, finished.
    pub queued: Instant,
    pub ready: Instant,
    pub dispatched: Option<Instant>,
    pub done: Option<Instant>,
    pub ok: bool,
    /// Source line of the call (0 when unknown) and whether it was ordered against an object
    /// the run created (per-object ordering), for the diagnosis of waits.
    pub line: u32,
    pub object_ordered: bool,
}

pub type TaskId = u64;

/// Where an inlined callee's parameter comes from (`Host::inline_binding`).
#[derive(Clone, Debug)]
pub enum Bind<P> {
    /// The call's argument at this index (positional ones first, then the keyword values).
    Arg(usize),
    /// A value: a parameter's default, a bound method's receiver.
    Value(P),
}

pub enum Dispatch<P, E> {
    /// The call ran to completion during `dispatch` (a cheap synchronous external).
    Done(Result<P, E>),
    /// The call is running; its result will come back from `Host::wait` under the same TaskId.
    Pending,
}

pub trait Host {
    type Prim: Clone + 'static;
    type Error: Clone + 'static;

    /// Per-object ordering (all three default to "no owned objects"): if the finished call `f`
    /// made `result` as a fresh mutable container (a list/dict/set display, `list(...)`), the
    /// object's key (its identity); the host keeps it alive for the run.
    fn fresh_key(&mut self, _f: &Self::Prim, _result: &Self::Prim) -> Option<u64> {
        None
    }
    /// The keys of every fresh container the finished call made: `fresh_key`'s, or for a call
    /// that makes several at once (an internal region's outputs) each of them. `keywords`: the
    /// call passed keyword arguments (some makers make a fresh object only without them).
    fn fresh_keys(&mut self, f: &Self::Prim, result: &Self::Prim, _keywords: bool) -> Vec<u64> {
        self.fresh_key(f, result).into_iter().collect()
    }
    /// Keys of the mutable containers a call of `f` with `args` can reach directly: the
    /// arguments (looking into tuples) and the object `f` is a method of.
    fn object_keys(&mut self, _f: &Self::Prim, _args: &[Self::Prim]) -> Vec<u64> {
        Vec::new()
    }
    /// The same for the arguments alone.
    fn arg_keys(&mut self, _args: &[Self::Prim]) -> Vec<u64> {
        Vec::new()
    }
    /// Keys of the containers code holding `values` could reach: `arg_keys`, and also inside
    /// tuples of the runtime's own that are not exact tuples (an internal region's outputs hold
    /// the containers it made). For values internal code not yet run will work on.
    fn reach_keys(&mut self, values: &[Self::Prim]) -> Vec<u64> {
        self.arg_keys(values)
    }
    /// If the call touches nothing but one container (its receiver) and stores or reads nothing
    /// else that could reach another object: (receiver key, writes? (None: touches no state at
    /// all), the other arguments).
    fn scope(&mut self, _f: &Self::Prim, _args: &[Self::Prim], _kwnames: &[String]) -> Option<crate::control::Scope<Self::Prim>> {
        None
    }
    /// `scope` for a call whose pending arguments (`Partial::Pending`, also inside tuples) are
    /// values it only stores: (receiver key, writes?) if it touches nothing but its receiver
    /// whatever they turn out to be.
    fn scope_pending(&mut self, _f: &Self::Prim, _args: &[crate::control::Partial<Self::Prim>], _kwnames: &[String]) -> Option<(u64, bool, Option<u64>)> {
        None
    }

    /// Whether a readonly call `f(*args)` may run before the earlier calls `writes` (callee,
    /// arguments with pending ones as `Partial::Pending`): see `control::Env::read_passes`.
    fn read_passes(&mut self, _f: &Self::Prim, _args: &[Self::Prim], _kwnames: &[String], _writes: &[(Self::Prim, Vec<crate::control::Partial<Self::Prim>>)]) -> bool {
        false
    }

    /// If `f` is an internal (compiled) function that can be inlined for a call with `nargs`
    /// arguments of which the last `kwnames.len()` are keywords, its program (entry takes
    /// [S, args...] and returns (S', result)).
    fn inline_target(
        &mut self,
        f: &Self::Prim,
        nargs: usize,
        kwnames: &[String],
    ) -> Option<ProgramRef<Self::Prim>>;

    /// Like `inline_target`, with how the callee's parameters are bound from the call: each of
    /// the program's parameters (after the order) is the call's argument `Bind::Arg(i)` or a
    /// value the host supplies (`Bind::Value`: a default, a bound method's receiver). The
    /// default binds the `nargs` arguments in order (`inline_target`).
    fn inline_binding(
        &mut self,
        f: &Self::Prim,
        nargs: usize,
        kwnames: &[String],
    ) -> Option<(ProgramRef<Self::Prim>, Vec<Bind<Self::Prim>>)> {
        let prog = self.inline_target(f, nargs, kwnames)?;
        Some((prog, (0..nargs).map(Bind::Arg).collect()))
    }

    /// The class of calling `f` if it does not depend on the arguments (a decorated external), so
    /// that a readonly call can pass the order on before its arguments are known.
    fn classify_callee(&mut self, _f: &Self::Prim) -> Option<Class> {
        None
    }

    /// Whether calling `f` returns a new tuple of its arguments and does nothing else (the
    /// lifter's `_build_tuple`): per-object ordering then sees through a pending result of it.
    fn builds_tuple(&mut self, _f: &Self::Prim) -> bool {
        false
    }

    /// For a call whose arguments are not all known yet: the class it will have, judged from the
    /// known arguments and, for pending ones, a stand-in value of the type their producer is
    /// declared to return (`hints[i]`; None: nothing known). None if that cannot be decided.
    /// When the real arguments arrive, a stricter real class is an error (the declaration lied).
    fn classify_hinted(&mut self, _f: &Self::Prim, _args: &[Option<Self::Prim>], _kw: &[String]) -> Option<Class> {
        None
    }

    /// A stand-in for the result of calling `f` on these (possibly stand-in) arguments, if its
    /// type is known without running it for real: a decorated external's declared return type,
    /// or a pure operation applied to stand-ins. Only used for `classify_hinted`.
    fn result_hint(&mut self, _f: &Self::Prim, _args: &[Option<Self::Prim>], _kw: &[String]) -> Option<Self::Prim> {
        None
    }

    /// Whether `p` is an immutable atom (None, bool, int, float, str, bytes): no container, and
    /// it holds none.
    fn is_atom(&mut self, _p: &Self::Prim) -> bool {
        false
    }

    /// A finished external call's value `v` against what the callee declared it returns (its
    /// declared result type, on whose strength later operations may have been classified
    /// before it arrived): an error fails the call instead of binding `v`. `relied` describes
    /// what was ordered on the strength of the declaration, if anything was. Ok(false): the
    /// value does not match a declaration that is not enforced (a return annotation nothing
    /// relied on): it is used as it is, and the declaration's stand-in must not be used again.
    fn check_result(&mut self, _f: &Self::Prim, _v: &Self::Prim, _relied: Option<&str>) -> Result<bool, Self::Error> {
        Ok(true)
    }

    /// Whether calls of `f` get their result stand-in from a declared result type.
    fn declares_result(&mut self, _f: &Self::Prim) -> bool {
        false
    }

    /// Whether calling `f` is cheap, synchronous, unordered and never observable (a global
    /// name look-up): such a call is made as soon as its arguments are known, by the statement
    /// itself, with no controller; the order passes through it unchanged.
    fn is_eager(&mut self, _f: &Self::Prim) -> bool {
        false
    }

    /// Whether `f` is an external declared with a reordering class (@unordered, @readonly,
    /// @sequential, or by the config): what the user counts as a call that costs (used to count
    /// speculative calls; a runtime helper or an operation is not one).
    fn is_declared(&mut self, _f: &Self::Prim) -> bool {
        false
    }

    /// Make an eager call (see `is_eager`), with positional arguments only.
    fn eager_call(&mut self, _f: &Self::Prim, _args: &[Self::Prim]) -> Result<Self::Prim, Self::Error> {
        Err(self.internal_error("TypeError", "poppy_jit: eager call of a callee that is not eager"))
    }

    /// If a finished external's value `v` is a λO expression rather than a value (OPAL's resolve
    /// rule: Church-encoded results, streams whose rest is still being computed), the function
    /// to instantiate for it and the primitives to bind as its parameters after S. The call's
    /// result becomes the function's result. S is a fresh, already released order: calls inside
    /// the expression are ordered among themselves, not against the rest of the program.
    fn as_term(&mut self, _v: &Self::Prim) -> Option<(ProgramRef<Self::Prim>, FuncId, Vec<Self::Prim>)> {
        None
    }

    /// The reordering class of calling `f` with these (resolved) arguments.
    fn classify(&mut self, f: &Self::Prim, args: &[Self::Prim], kwnames: &[String]) -> Class;

    /// Keys of the containers the run owns from its start (`control::Controllers::own_from_start`):
    /// arguments nothing but the run's own frame holds.
    fn owned_from_start(&mut self) -> Vec<u64> {
        Vec::new()
    }

    /// The function to call instead of `f` when the call was ordered against its owned object
    /// alone (`control::ObjInfo`): for the read that starts a `for` loop the function's body
    /// cannot hand its container on from (`iter_private`), reading the items at once.
    fn local_variant(&mut self, _f: &Self::Prim) -> Option<Self::Prim> {
        None
    }

    /// Start (or run) the external call.
    fn dispatch(
        &mut self,
        task: TaskId,
        f: &Self::Prim,
        args: &[Self::Prim],
        kwnames: &[String],
    ) -> Dispatch<Self::Prim, Self::Error>;

    /// `dispatch` for a call made while an `except` handler runs (`handling`: the caught value,
    /// `caught`'s result, of the exception being handled; None outside handlers). The host makes
    /// that exception the thread's handled exception for the call (`sys.exc_info()`, the
    /// `__context__` of what the call raises) and restores the previous one after. The default
    /// ignores it.
    fn dispatch_handling(
        &mut self,
        task: TaskId,
        f: &Self::Prim,
        args: &[Self::Prim],
        kwnames: &[String],
        _handling: Option<&Self::Prim>,
    ) -> Dispatch<Self::Prim, Self::Error> {
        self.dispatch(task, f, args, kwnames)
    }

    /// Try to cancel a Pending task (it became speculative: an earlier call in program order
    /// failed). Its outcome must still be reported by `wait` (a cancellation error is fine), or
    /// never if the host cannot cancel it (then it runs to completion and is reported).
    fn cancel(&mut self, _task: TaskId) {}

    /// Block until at least one Pending task has finished and return every finished one.
    /// Only called while at least one task is Pending. An `Err` aborts the whole run (for example
    /// KeyboardInterrupt while waiting); the host cancels what is still running.
    #[allow(clippy::type_complexity)]
    fn wait(&mut self) -> Result<Vec<(TaskId, Result<Self::Prim, Self::Error>)>, Self::Error>;

    /// Truth value of an `ite` condition (already a bool produced by an external `truth` call).
    fn truthy(&mut self, v: &Self::Prim) -> Result<bool, Self::Error>;

    /// A primitive tuple built from primitives (an external call's argument that is a λO tuple of
    /// primitives, OPAL's c̄).
    fn make_tuple(&mut self, items: Vec<Self::Prim>) -> Self::Prim;

    /// Elements of a `fold` sequence (already materialised by an external call).
    fn elements(&mut self, v: &Self::Prim) -> Result<Vec<Self::Prim>, Self::Error>;

    /// An error raised by λO-level evaluation itself (unbound variable, calling a non-function...).
    /// `kind` is a Python exception name such as "UnboundLocalError" or "TypeError".
    fn internal_error(&mut self, kind: &str, msg: &str) -> Self::Error;

    /// The value of a catching call (`xcall?`) that failed with `e` at source line `line`: what
    /// the compiled handler tests and takes the exception from, and re-raises unchanged when no
    /// handler matches.
    fn caught(&mut self, e: Self::Error, line: u32) -> Self::Prim;

    /// Whether a catching call's failure `e` is the user's to handle: not an error of the runtime
    /// itself (a guard that aborts the run); a KeyboardInterrupt or SystemExit raised by the
    /// call is (a bare `except:` sees it where CPython's does), and no longer aborts the run.
    fn catchable(&mut self, _e: &Self::Error) -> bool {
        true
    }

    /// Whether `e`, out of `wait`, is a KeyboardInterrupt that arrived while waiting: it is
    /// delivered as the failure of the earliest call in flight (`control::interrupt`) instead of
    /// aborting the run, when that call is a catching one.
    fn is_interrupt(&mut self, _e: &Self::Error) -> bool {
        false
    }

    /// The run raises `e`, the failure of the external call at source line `line`. `later` are
    /// the ordered externals after it in program order that had already run (possible only when
    /// it is an unordered call, which passes the order on before it finishes; CPython would not
    /// have made them). The host may attach both to the error.
    fn note_failure(&mut self, e: Self::Error, _line: u32, _later: Vec<Self::Prim>) -> Self::Error {
        e
    }

    /// Whether the host wants a `CallRecord` per external call at the end of the run.
    fn tracing(&self) -> bool {
        false
    }

    /// Receives the run's call records (only called when `tracing()` is true).
    fn record_calls(&mut self, _records: Vec<CallRecord<Self::Prim>>) {}
}

/// What lowering needs from a host: primitives for constants and intrinsic operations.
pub trait PrimFactory {
    type Prim: Clone;
    fn constant(&mut self, c: &Const) -> Self::Prim;
    fn string(&mut self, s: &str) -> Self::Prim;
    /// The callable implementing an intrinsic (extra static operands, such as the attribute name of
    /// `GetAttr`, are passed by lowering as additional `string` arguments after the operands).
    fn intrinsic(&mut self, i: &Intrinsic) -> Self::Prim;
    /// The callable implementing an intrinsic whose operands in `fresh` (a bit mask) are fresh
    /// displays nothing else refers to: classified by their items, not as mutable objects.
    fn intrinsic_fresh(&mut self, i: &Intrinsic, _fresh: u32) -> Self::Prim {
        self.intrinsic(i)
    }
    /// The callable that looks a global name up (module globals, then builtins) when called with
    /// the name as its one argument.
    fn global_loader(&mut self) -> Self::Prim;
    /// An identity callable used to make a possibly-unbound local raise at the point of its load.
    fn bound_check(&mut self) -> Self::Prim;
    /// A runtime helper for exit-status threading: `loop_next(s)` (continue → 0), `loop_exit(s)`
    /// (break → 0), `loop_again(s)` (s is 0 or continue), `select_return(s, v)` (v if s is
    /// return, else None); and for `try`: `is_caught(v)` (v is a `Host::caught` value),
    /// `is_raised(s)` (s is 4, RAISED), `caught_exception(c)` (the exception of the caught value
    /// c), `exc_match(c, E)` (CHECK_EXC_MATCH of c's exception against the class or tuple E,
    /// with its TypeError) — all unordered — and `reraise(c)`, a sequential call that always
    /// fails with c's exception, unchanged.
    fn helper(&mut self, name: &str) -> Self::Prim;
}

/// Text form of primitives (printing always; parsing for hosts used by text tests).
pub trait PrimText: Sized {
    fn fmt_prim(&self) -> String;
    fn parse_prim(s: &str) -> Result<Self, String>;
}
