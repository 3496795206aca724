//! The Python host: λO primitives are Python objects, external calls are Python calls.
//! `PyHost` is one run's `lambda_o::Host`; this file holds its state and the trait's table, each
//! concern in its own module:
//!
//! - `callee`: what a callee is (decorated external, global loader, anything else) and the
//!   reordering class of a call (the annotation library, `poppy_jit._rt.classify`, is Python data
//!   that users extend).
//! - `dispatch`: making a call. Sync externals run inline; `async def` externals become tasks on
//!   this thread's event loop, `blocking=True` ones run on the runtime's blocking threads and
//!   `time.sleep(x)` becomes a timer (both on the tokio runtime of `pool`).
//! - `executor`: the futures in flight; done-callbacks stop the loop so `wait` returns as soon
//!   as something finished (no polling).
//! - `objects`: per-object ordering's keys and scopes. `inline`: inlining @poppy callees and the program's own internal
//!   functions (their translations from `pipeline`), binding parameters as CPython does, within
//!   the recursion limit. `handling`: the exception an `except` handler handles, set around the
//!   calls it makes; the re-raise of an exception no handler matched. `failure`: tracebacks and notes
//!   of a failed run. `trace`: call records for PYTHONPOPPY_TRACE. `regions`: the containers an
//!   internal region returns that it made itself are owned like those the compiled code builds.
//!
//! Uses `pipeline` (inlining) and `pyobj`; must not use `hook` or `api`.
use crate::control::Class;
use crate::lambda_o::{CallRecord, Dispatch, Host, ProgramRef, TaskId};
use crate::pyobj::{rt_module, trace_module, Obj};
use callee::Callee;
use executor::Executor;
use objects::ObjectsApi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

mod callee;
mod dispatch;
mod executor;
mod failure;
pub mod handling;
mod inline;
pub use inline::inlinable;
mod objects;
pub mod pool;
mod regions;
mod trace;

/// A Python exception as a λO error value (PyErr itself is not Clone).
#[derive(Clone, Debug)]
pub struct PyErrRef(pub Arc<PyErr>);

impl PyErrRef {
    pub fn new(e: PyErr) -> Self {
        PyErrRef(Arc::new(e))
    }
    pub fn to_pyerr(&self, py: Python<'_>) -> PyErr {
        self.0.clone_ref(py)
    }
}

/// The host of one λO run (made per run by `hook`, dropped when it ends).
pub struct PyHost<'py> {
    py: Python<'py>,
    rt: Bound<'py, PyModule>,
    classify: Bound<'py, PyAny>,
    executor: Option<Executor<'py>>,
    /// A compiled `async def`'s run: its caller's running loop and the run's waker (see
    /// `set_async`); None for a run that drives this thread's own loop.
    running_loop: Option<(Obj, Obj)>,
    /// `poppy_jit._trace` when PYTHONPOPPY_TRACE is on, with the run's function name.
    trace: Option<(Bound<'py, PyAny>, String)>,
    /// perf_counter() when the run started (tracing only).
    run_start: f64,
    /// The qualified name of the function being run (for messages).
    run_name: String,
    /// Functions and loaders seen in this run, by identity (the object is kept so that its
    /// address cannot be reused by another object during the run), and the last one asked about.
    callees: HashMap<usize, (Obj, Rc<Callee>)>,
    last_callee: Option<(Obj, Rc<Callee>)>,
    plain: Rc<Callee>,
    /// The @poppy function this run stands for and its arguments, and the @poppy functions
    /// inlined into the run: what a failure's traceback entries are built from.
    frame: Option<(Obj, Vec<Obj>)>,
    /// The function's real frame is on the interpreter stack (it needs no stand-in entry).
    frame_on_stack: bool,
    /// On failure with the frame on the stack: (line, CALL offset or -1) it should show.
    top_site: Option<(u32, i32)>,
    /// Each inlined function with the number of times it was inlined in this run and the most
    /// it may be (see `inline_target`).
    inlined: Vec<(Obj, usize, usize)>,
    /// Plain functions met as callees, by identity: whether they are the program's own code to
    /// compile (`inline.rs`).
    internal: HashMap<usize, (Obj, bool)>,
    /// sys.getrecursionlimit(), read when the run first inlines a call.
    recursion_limit: Option<usize>,
    /// A KeyboardInterrupt or SystemExit raised by a synchronous external: the run is aborted
    /// (no further call is started, the next `wait` fails with it), as it is when one arrives
    /// while waiting — rather than waiting for calls still in flight to finish.
    abort: Option<PyErrRef>,
    /// Per-object ordering: `poppy_jit._objects` (MAKERS ids, FreshArgs, scope), loaded on
    /// first use, and the owned objects of this run (kept alive so their keys stay unique).
    objects: Option<ObjectsApi<'py>>,
    owned: Vec<Obj>,
    /// Keys of the arguments only the run's frame holds (`Host::owned_from_start`).
    private_args: Vec<u64>,
    /// Globals read eagerly, checked after calls (dispatch.rs).
    guard: dispatch::GlobalsGuard,
    /// Each exception a catching call caught, with the line of the call and its traceback as
    /// it came (failure.rs: a re-raise of it fails there, with that traceback).
    caught_at: Vec<(Obj, u32, Obj)>,
}

impl<'py> PyHost<'py> {
    pub fn new(py: Python<'py>, name: &str) -> PyResult<Self> {
        let rt = rt_module(py)?;
        let classify = rt.getattr("classify")?;
        let trace = trace_module(py).map(|m| (m, name.to_string()));
        let run_start = match &trace {
            Some(_) => py.import_bound("time")?.call_method0("perf_counter")?.extract()?,
            None => 0.0,
        };
        Ok(PyHost {
            py,
            rt,
            classify,
            executor: None,
            running_loop: None,
            trace,
            run_start,
            run_name: name.to_string(),
            callees: HashMap::new(),
            last_callee: None,
            plain: Rc::new(Callee::Plain),
            frame: None,
            frame_on_stack: false,
            top_site: None,
            inlined: Vec::new(),
            internal: HashMap::new(),
            recursion_limit: None,
            abort: None,
            objects: None,
            owned: Vec::new(),
            private_args: Vec::new(),
            guard: Default::default(),
            caught_at: Vec::new(),
        })
    }

    /// The function (and arguments) whose frame this run replaces.
    /// The arguments (lists and dicts) nothing but the run's frame holds: owned by the run from
    /// its start (see `objects::private_arg`).
    pub fn note_private_arg(&mut self, arg: &Obj, refcnt: isize) {
        let py = self.py;
        if let Some(k) = objects::private_arg(self, arg.bind(py), refcnt) {
            self.private_args.push(k);
        }
    }

    pub fn set_frame(&mut self, func: Obj, args: Vec<Obj>, on_stack: bool) {
        self.frame = Some((func, args));
        self.frame_on_stack = on_stack;
    }

    /// Run on the caller's running event loop `loop_` (a compiled `async def`): completions of
    /// async, blocking and timer calls call `waker` instead of stopping a loop, and the run takes
    /// them with `take_finished` between its steps instead of blocking in `wait`.
    pub fn set_async(&mut self, loop_: Obj, waker: Obj) {
        self.running_loop = Some((loop_, waker));
    }

    /// An async run: the calls that finished since the last call.
    pub fn take_finished(&mut self) -> Vec<(TaskId, Result<Obj, PyErrRef>)> {
        executor::take_finished(self)
    }

    /// An async run that ends early: cancels what is in flight, returns the asyncio futures
    /// among them (to await, so nothing of the run outlives it).
    pub fn cancel_in_flight(&mut self) -> PyResult<Vec<Obj>> {
        executor::cancel_in_flight(self)
    }

    /// The KeyboardInterrupt or SystemExit that aborted the run, if one did.
    pub fn aborted(&self) -> Option<PyErrRef> {
        self.abort.clone()
    }

    /// Where the run's own frame should point after a failure (see `frame_on_stack`).
    pub fn top_site(&self) -> Option<(u32, i32)> {
        self.top_site
    }

    /// End of a run: cancel and reap anything still in flight (only possible when the run was
    /// aborted by an error), so no task or callback of this run outlives it.
    pub fn finish(&mut self) -> PyResult<()> {
        executor::finish(self)
    }
}

impl<'py> Host for PyHost<'py> {
    type Prim = Obj;
    type Error = PyErrRef;

    // Per-object ordering (objects.rs).
    fn fresh_key(&mut self, f: &Obj, result: &Obj) -> Option<u64> {
        objects::fresh_key(self, f, result, true)
    }

    fn fresh_keys(&mut self, f: &Obj, result: &Obj, keywords: bool) -> Vec<u64> {
        if let Some(keys) = regions::fresh_outputs(self, f, result) {
            return keys;
        }
        objects::fresh_key(self, f, result, keywords).into_iter().collect()
    }

    fn object_keys(&mut self, f: &Obj, args: &[Obj]) -> Vec<u64> {
        objects::object_keys(self, f, args)
    }

    fn arg_keys(&mut self, args: &[Obj]) -> Vec<u64> {
        objects::arg_keys(self, args)
    }

    fn reach_keys(&mut self, values: &[Obj]) -> Vec<u64> {
        objects::reach_keys(self, values)
    }

    fn scope(&mut self, f: &Obj, args: &[Obj], kwnames: &[String]) -> Option<crate::control::Scope<Obj>> {
        objects::scope(self, f, args, kwnames)
    }

    fn owned_from_start(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.private_args)
    }

    fn local_variant(&mut self, f: &Obj) -> Option<Obj> {
        objects::local_variant(self, f)
    }

    fn scope_pending(&mut self, f: &Obj, args: &[crate::control::Partial<Obj>], kwnames: &[String]) -> Option<(u64, bool, Option<u64>)> {
        objects::scope_pending(self, f, args, kwnames)
    }

    fn read_passes(&mut self, f: &Obj, args: &[Obj], kwnames: &[String], writes: &[(Obj, Vec<crate::control::Partial<Obj>>)]) -> bool {
        objects::read_passes(self, f, args, kwnames, writes)
    }

    fn inline_target(&mut self, f: &Obj, nargs: usize, kwnames: &[String]) -> Option<ProgramRef<Obj>> {
        inline::inline_binding(self, f, nargs, kwnames).map(|(p, _)| p)
    }

    fn inline_binding(&mut self, f: &Obj, nargs: usize, kwnames: &[String]) -> Option<(ProgramRef<Obj>, Vec<crate::lambda_o::Bind<Obj>>)> {
        inline::inline_binding(self, f, nargs, kwnames)
    }

    // Global loads: made by the `xcall` itself (no controller).
    fn is_eager(&mut self, f: &Obj) -> bool {
        matches!(&*self.callee(f), Callee::Loader | Callee::Eager)
    }

    fn is_declared(&mut self, f: &Obj) -> bool {
        matches!(&*self.callee(f), Callee::External { .. })
    }

    fn eager_call(&mut self, f: &Obj, args: &[Obj]) -> Result<Obj, PyErrRef> {
        if let Callee::Eager = &*self.callee(f) {
            let args = PyTuple::new_bound(self.py, args.iter().map(|a| a.bind(self.py)));
            return f.bind(self.py).call1(args).map(|v| v.unbind()).map_err(PyErrRef::new);
        }
        self.eager_global(f, &args[0]).map_err(PyErrRef::new)
    }

    // Reordering classes (callee.rs).
    fn classify_callee(&mut self, f: &Obj) -> Option<Class> {
        callee::classify_callee(self, f)
    }

    fn builds_tuple(&mut self, f: &Obj) -> bool {
        callee::builds_tuple(self, f)
    }

    fn classify_hinted(&mut self, f: &Obj, args: &[Option<Obj>], kwnames: &[String]) -> Option<Class> {
        callee::classify_hinted(self, f, args, kwnames)
    }

    fn is_atom(&mut self, p: &Obj) -> bool {
        crate::pyobj::contract::is_atom(p.bind(self.py))
    }

    fn check_result(&mut self, f: &Obj, v: &Obj, relied: Option<&str>) -> Result<bool, PyErrRef> {
        callee::check_result(self, f, v, relied).map_err(PyErrRef::new)
    }

    fn declares_result(&mut self, f: &Obj) -> bool {
        callee::declares_result(self, f)
    }

    fn result_hint(&mut self, f: &Obj, args: &[Option<Obj>], kw: &[String]) -> Option<Obj> {
        callee::result_hint(self, f, args, kw)
    }

    fn classify(&mut self, f: &Obj, args: &[Obj], kwnames: &[String]) -> Class {
        callee::classify(self, f, args, kwnames)
    }

    // Running calls (dispatch.rs, executor.rs).
    fn dispatch(&mut self, task: TaskId, f: &Obj, args: &[Obj], kwnames: &[String]) -> Dispatch<Obj, PyErrRef> {
        dispatch::dispatch(self, task, f, args, kwnames, None)
    }

    fn dispatch_handling(&mut self, task: TaskId, f: &Obj, args: &[Obj], kwnames: &[String], handling: Option<&Obj>) -> Dispatch<Obj, PyErrRef> {
        dispatch::dispatch(self, task, f, args, kwnames, handling)
    }

    fn cancel(&mut self, task: TaskId) {
        executor::cancel(self, task)
    }

    fn wait(&mut self) -> Result<Vec<(TaskId, Result<Obj, PyErrRef>)>, PyErrRef> {
        executor::wait(self)
    }

    // Values.
    fn truthy(&mut self, v: &Obj) -> Result<bool, PyErrRef> {
        v.bind(self.py).is_truthy().map_err(PyErrRef::new)
    }

    fn make_tuple(&mut self, items: Vec<Obj>) -> Obj {
        PyTuple::new_bound(self.py, items).into_any().unbind()
    }

    fn elements(&mut self, v: &Obj) -> Result<Vec<Obj>, PyErrRef> {
        let t = v.bind(self.py).downcast::<PyTuple>().map_err(|e| PyErrRef::new(e.into()))?;
        Ok(t.iter().map(|x| x.unbind()).collect())
    }

    // Failures (failure.rs) and tracing (trace.rs).
    fn note_failure(&mut self, e: PyErrRef, line: u32, later: Vec<Obj>) -> PyErrRef {
        failure::note_failure(self, e, line, later)
    }

    fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    fn record_calls(&mut self, records: Vec<CallRecord<Obj>>) {
        trace::record_calls(self, records)
    }

    fn internal_error(&mut self, kind: &str, msg: &str) -> PyErrRef {
        failure::internal_error(self, kind, msg)
    }

    fn caught(&mut self, e: PyErrRef, line: u32) -> Obj {
        failure::caught(self, e, line)
    }

    fn catchable(&mut self, e: &PyErrRef) -> bool {
        let py = self.py;
        let Some(a) = &self.abort else { return true };
        // The run is being aborted: by this very error when a synchronous call raised a
        // KeyboardInterrupt or SystemExit (`dispatch`), which the handler may catch as CPython's
        // would (the run then goes on); by a guard's error or an earlier interrupt otherwise,
        // which no handler of the user's may see.
        let same = a.0.value_bound(py).is(e.0.value_bound(py));
        let v = e.0.value_bound(py);
        let interrupt = v.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>()
            || v.is_instance_of::<pyo3::exceptions::PySystemExit>();
        if same && interrupt {
            self.abort = None;
            return true;
        }
        false
    }

    fn is_interrupt(&mut self, e: &PyErrRef) -> bool {
        self.abort.is_none() && e.0.value_bound(self.py).is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>()
    }
}
