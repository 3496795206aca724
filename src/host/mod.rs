//! The Python host: λO primitives are Python objects, external calls are Python calls.
//!
//! - Classification and the intrinsic callables come from `poppy_jit._rt` (the annotation library
//!   is Python data that users extend).
//! - Sync externals run inline in `dispatch`; `async def` externals become tasks on this thread's
//!   event loop, `blocking=True` ones run on the runtime's blocking threads and `time.sleep(x)`
//!   becomes a timer (both on the tokio runtime of `pool`); all complete futures of the loop,
//!   whose done-callbacks stop it so `wait` returns as soon as something finished (no polling).
use crate::bezoar::{Const, Intrinsic};
use crate::control::Class;
use crate::lambda_o::{Dispatch, Host, PrimFactory, ProgramRef, TaskId};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFunction, PyString, PyTuple};
use pyo3::exceptions::PyRuntimeError;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

pub mod pool;

pub type Obj = Py<PyAny>;

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

/// LOAD_GLOBAL as an external: looks a name up in a function's globals, then its builtins.
/// Global loads are single-assignment reads (PopPy §7), classified unordered; the host runs
/// them without calling into Python.
#[pyclass(module = "poppy_jit._core", frozen)]
pub struct GlobalLoader {
    globals: Py<PyDict>,
    builtins: Py<PyDict>,
}

impl GlobalLoader {
    pub fn new(py: Python<'_>, globals: Bound<'_, PyDict>) -> PyResult<Self> {
        let builtins = match globals.get_item("__builtins__")? {
            Some(b) => match b.downcast::<PyDict>() {
                Ok(d) => d.clone(),
                Err(_) => b.getattr("__dict__")?.downcast_into::<PyDict>()?,
            },
            None => py.import_bound("builtins")?.dict(),
        };
        Ok(GlobalLoader { globals: globals.unbind(), builtins: builtins.unbind() })
    }

    pub fn lookup(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Obj> {
        if let Some(v) = self.globals.bind(py).get_item(name)? {
            return Ok(v.unbind());
        }
        if let Some(v) = self.builtins.bind(py).get_item(name)? {
            return Ok(v.unbind());
        }
        Err(pyo3::exceptions::PyNameError::new_err(format!("name '{name}' is not defined")))
    }
}

#[pymethods]
impl GlobalLoader {
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __poppy_unordered_loader__: bool = true;

    fn __call__(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Obj> {
        self.lookup(py, name)
    }
}

/// Completions of asynchronous externals, queued by done-callbacks on this thread's loop.
type DoneQueue = Rc<RefCell<Vec<(TaskId, Obj)>>>;

/// The done-callback of one task: queues its completion and stops the loop so the evaluator
/// regains control (no polling).
#[pyclass(unsendable)]
struct DoneCallback {
    task: TaskId,
    queue: DoneQueue,
    stop: Obj,
}

#[pymethods]
impl DoneCallback {
    fn __call__(&self, py: Python<'_>, fut: Bound<'_, PyAny>) -> PyResult<()> {
        let first = {
            let mut q = self.queue.borrow_mut();
            q.push((self.task, fut.unbind()));
            q.len() == 1
        };
        // One stop per batch: the loop finishes its current iteration (running every other
        // callback already scheduled) before returning to the evaluator.
        if first {
            self.stop.call0(py)?;
        }
        Ok(())
    }
}

/// Runs async externals as tasks on this thread's event loop and blocking ones on worker threads.
struct Executor<'py> {
    create_task: Bound<'py, PyAny>,
    run_forever: Bound<'py, PyAny>,
    stop: Obj,
    queue: DoneQueue,
    running: Running,
    loop_: Bound<'py, PyAny>,
}

impl<'py> Executor<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let loop_ = py.import_bound("poppy_jit._loop")?.call_method0("get_loop")?;
        if loop_.call_method0("is_running")?.is_truthy()? {
            return Err(PyRuntimeError::new_err("poppy_jit: event loop already running"));
        }
        Ok(Executor {
            create_task: loop_.getattr("create_task")?,
            run_forever: loop_.getattr("run_forever")?,
            stop: loop_.getattr("stop")?.unbind(),
            queue: Rc::new(RefCell::new(Vec::new())),
            running: Running::default(),
            loop_,
        })
    }

    fn watch(&mut self, py: Python<'py>, task: TaskId, fut: Bound<'py, PyAny>) -> PyResult<()> {
        let cb = DoneCallback { task, queue: self.queue.clone(), stop: self.stop.clone_ref(py) };
        fut.call_method1("add_done_callback", (Py::new(py, cb)?,))?;
        self.running.insert(task, fut.unbind());
        Ok(())
    }
}

/// Futures of the calls in flight, by task id (task ids are dense: the evaluator's controller
/// indices), so that no hashing is on the per-call path.
#[derive(Default)]
struct Running {
    futs: Vec<Option<Obj>>,
    count: usize,
}

impl Running {
    fn insert(&mut self, task: TaskId, fut: Obj) {
        let i = task as usize;
        if self.futs.len() <= i {
            self.futs.resize_with(i + 1, || None);
        }
        if self.futs[i].replace(fut).is_none() {
            self.count += 1;
        }
    }
    fn remove(&mut self, task: &TaskId) -> Option<Obj> {
        let r = self.futs.get_mut(*task as usize).and_then(Option::take);
        if r.is_some() {
            self.count -= 1;
        }
        r
    }
    fn get(&self, task: &TaskId) -> Option<&Obj> {
        self.futs.get(*task as usize).and_then(Option::as_ref)
    }
    fn is_empty(&self) -> bool {
        self.count == 0
    }
    fn drain(&mut self) -> Vec<Obj> {
        self.count = 0;
        self.futs.drain(..).flatten().collect()
    }
}

/// What the host knows about a callee, computed once per callee per run.
enum Callee {
    Loader,
    /// Declared with @unordered/@readonly/@sequential; `returns` is a stand-in value of its
    /// declared return type when that is an immutable atom (str, int, float, bool, bytes, None).
    External { class: Class, inner: Obj, is_async: bool, blocking: bool, returns: Option<Obj> },
    Plain,
}

pub fn rt_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import_bound("poppy_jit._rt")
}

/// Split λO call arguments into Python positional args and keyword args.
fn call_args<'py>(
    py: Python<'py>,
    args: &[Obj],
    kwnames: &[String],
) -> PyResult<(Bound<'py, PyTuple>, Option<Bound<'py, PyDict>>)> {
    let npos = args.len() - kwnames.len();
    let pos = PyTuple::new_bound(py, args[..npos].iter().map(|a| a.bind(py)));
    if kwnames.is_empty() {
        return Ok((pos, None));
    }
    let kw = PyDict::new_bound(py);
    for (k, v) in kwnames.iter().zip(&args[npos..]) {
        kw.set_item(k, v.bind(py))?;
    }
    Ok((pos, Some(kw)))
}

/// `f(*positional, **keywords)` through the vectorcall protocol: no argument tuple or keyword
/// dict is built (the last `kwnames.len()` of `args` are the keyword values).
fn vcall<'py>(py: Python<'py>, f: &Bound<'py, PyAny>, args: &[Obj], kwnames: &[String]) -> PyResult<Bound<'py, PyAny>> {
    let mut small = [std::ptr::null_mut::<pyo3::ffi::PyObject>(); 8];
    let mut big = Vec::new();
    let ptrs: &[*mut pyo3::ffi::PyObject] = if args.len() <= small.len() {
        for (slot, a) in small.iter_mut().zip(args) {
            *slot = a.as_ptr();
        }
        &small[..args.len()]
    } else {
        big.extend(args.iter().map(|a| a.as_ptr()));
        &big
    };
    let kw = (!kwnames.is_empty()).then(|| PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k))));
    let npos = args.len() - kwnames.len();
    // SAFETY: the argument pointers are borrowed from `args`, alive for the whole call; the
    // kwnames tuple (if any) is alive until the end of this function; the GIL is held (`py`).
    unsafe {
        let r = pyo3::ffi::PyObject_Vectorcall(
            f.as_ptr(),
            ptrs.as_ptr(),
            npos,
            kw.as_ref().map_or(std::ptr::null_mut(), |k| k.as_ptr()),
        );
        Bound::from_owned_ptr_or_err(py, r)
    }
}

pub struct PyHost<'py> {
    py: Python<'py>,
    rt: Bound<'py, PyModule>,
    classify: Bound<'py, PyAny>,
    executor: Option<Executor<'py>>,
    /// `poppy_jit._trace` when PYTHONPOPPY_TRACE is on, with the run's function name.
    trace: Option<(Bound<'py, PyAny>, String)>,
    /// perf_counter() when the run started (tracing only).
    run_start: f64,
    /// The qualified name of the function being run (for messages).
    run_name: String,
    /// Callees seen in this run, by object address (every callee stays alive in the run's
    /// slots until the run ends, so addresses are not reused meanwhile).
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
}

struct ObjectsApi<'py> {
    makers: std::collections::HashSet<usize>,
    fresh_args: Bound<'py, PyAny>,
    scope: Bound<'py, PyAny>,
    owned_ok: Bound<'py, PyAny>,
    maker: Bound<'py, PyAny>,
}

/// The key of an exact list, dict or set (its address), if `o` is one.
fn container_key(o: &Bound<'_, PyAny>) -> Option<u64> {
    use pyo3::types::{PyList, PySet};
    (o.is_exact_instance_of::<PyList>() || o.is_exact_instance_of::<PyDict>() || o.is_exact_instance_of::<PySet>())
        .then(|| o.as_ptr() as u64)
}

/// The key of the list/dict/set a builtin method object is bound to.
fn method_receiver_key(f: &Bound<'_, PyAny>) -> Option<u64> {
    // SAFETY: PyCFunction_Check only reads the type of a live object (GIL held).
    if unsafe { pyo3::ffi::PyCFunction_Check(f.as_ptr()) } == 0 {
        return None;
    }
    container_key(&f.getattr(pyo3::intern!(f.py(), "__self__")).ok()?)
}

/// Keys of the containers among `o` and, inside tuples, their items.
fn collect_keys(o: &Bound<'_, PyAny>, out: &mut Vec<u64>, depth: u32) {
    if let Some(k) = container_key(o) {
        out.push(k);
    } else if let Some(k) = method_receiver_key(o) {
        out.push(k); // `lst.append` given away gives the list away
    } else if depth < 8 {
        if let Ok(t) = o.downcast_exact::<PyTuple>() {
            for x in t.iter() {
                collect_keys(&x, out, depth + 1);
            }
        }
    }
}

/// `poppy_jit._trace` if tracing is enabled.
pub fn trace_module(py: Python<'_>) -> Option<Bound<'_, PyAny>> {
    let m = py.import_bound("poppy_jit._trace").ok()?;
    m.getattr("enabled").ok()?.is_truthy().ok()?.then(|| m.into_any())
}

/// Instants as `time.perf_counter()` seconds (both are CLOCK_MONOTONIC based; anchored on one
/// simultaneous reading, so the conversion is exact up to the reading's own cost).
pub struct Clock {
    py_now: f64,
    rs_now: std::time::Instant,
}

impl Clock {
    pub fn new(py: Python<'_>) -> PyResult<Self> {
        let py_now = py.import_bound("time")?.call_method0("perf_counter")?.extract()?;
        Ok(Clock { py_now, rs_now: std::time::Instant::now() })
    }
    pub fn at(&self, t: std::time::Instant) -> f64 {
        if t <= self.rs_now {
            self.py_now - (self.rs_now - t).as_secs_f64()
        } else {
            self.py_now + (t - self.rs_now).as_secs_f64()
        }
    }
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
            recursion_limit: None,
            abort: None,
            objects: None,
            owned: Vec::new(),
        })
    }

    fn objects_api(&mut self) -> Option<&ObjectsApi<'py>> {
        if self.objects.is_none() {
            let m = self.py.import_bound("poppy_jit._objects").ok()?;
            let makers: std::collections::HashSet<usize> = m.getattr("MAKERS").ok()?.extract().ok()?;
            self.objects = Some(ObjectsApi {
                makers,
                fresh_args: m.getattr("FRESH_ARGS").ok()?,
                scope: m.getattr("scope").ok()?,
                owned_ok: m.getattr("owned_ok").ok()?,
                maker: m.getattr("maker").ok()?,
            });
        }
        self.objects.as_ref()
    }

    /// The function (and arguments) whose frame this run replaces.
    pub fn set_frame(&mut self, func: Obj, args: Vec<Obj>, on_stack: bool) {
        self.frame = Some((func, args));
        self.frame_on_stack = on_stack;
    }

    /// Where the run's own frame should point after a failure (see `frame_on_stack`).
    pub fn top_site(&self) -> Option<(u32, i32)> {
        self.top_site
    }

    /// End of a run: cancel and reap anything still in flight (only possible when the run was
    /// aborted by an error), so no task or callback of this run outlives it.
    pub fn finish(&mut self) -> PyResult<()> {
        if let Some(ex) = &mut self.executor {
            if !ex.running.is_empty() {
                let pending: Vec<Obj> = ex.running.drain();
                self.rt.call_method1("cancel_all", (ex.loop_.clone(), pending))?;
            }
            ex.queue.borrow_mut().clear();
        }
        Ok(())
    }

    fn executor(&mut self) -> PyResult<&mut Executor<'py>> {
        if self.executor.is_none() {
            self.executor = Some(Executor::new(self.py)?);
        }
        Ok(self.executor.as_mut().unwrap())
    }

    fn callee(&mut self, f: &Obj) -> Rc<Callee> {
        if let Some((o, c)) = &self.last_callee {
            if o.is(f) {
                return c.clone();
            }
        }
        let b = f.bind(self.py);
        // Only functions (decorated externals) and global loaders are described; anything else
        // (builtins, bound methods, intrinsics) is a plain callee.
        if !b.is_instance_of::<PyFunction>() && !b.is_instance_of::<GlobalLoader>() {
            return self.plain.clone();
        }
        let key = f.as_ptr() as usize;
        let c = match self.callees.get(&key) {
            Some((_, c)) => c.clone(),
            None => {
                let c = Rc::new(describe(b).unwrap_or(Callee::Plain));
                self.callees.insert(key, (f.clone_ref(self.py), c.clone()));
                c
            }
        };
        self.last_callee = Some((f.clone_ref(self.py), c.clone()));
        c
    }

    fn try_dispatch(
        &mut self,
        task: TaskId,
        f: &Obj,
        args: &[Obj],
        kwnames: &[String],
    ) -> PyResult<Dispatch<Obj, PyErrRef>> {
        let py = self.py;
        let callee = self.callee(f);
        if let Callee::Loader = &*callee {
            let loader = f.bind(py).downcast::<GlobalLoader>()?.get();
            return Ok(Dispatch::Done(loader.lookup(py, args[0].bind(py)).map_err(PyErrRef::new)));
        }
        if let Callee::External { inner, is_async, blocking, .. } = &*callee {
            // Call the undecorated function directly (the decorator's wrapper would block).
            let inner = inner.bind(py);
            if *is_async {
                let coro = match vcall(py, inner, args, kwnames) {
                    Ok(c) => c,
                    Err(e) => return Ok(Dispatch::Done(Err(PyErrRef::new(e)))),
                };
                let ex = self.executor()?;
                let t = ex.create_task.call1((coro,))?;
                ex.watch(py, task, t)?;
                return Ok(Dispatch::Pending);
            }
            if *blocking {
                // On a runtime-owned worker thread (pool.rs); inline once the pool is closed.
                let (pos, kw) = call_args(py, args, kwnames)?;
                let ex = self.executor()?;
                let call = Bound::new(py, pool::BlockingCall::new())?;
                if pool::submit(py, inner, pos.clone(), kw.clone(), &ex.loop_, &call)? {
                    ex.watch(py, task, call.into_any())?;
                    return Ok(Dispatch::Pending);
                }
            }
            return Ok(Dispatch::Done(vcall(py, inner, args, kwnames).map(|v| v.unbind()).map_err(PyErrRef::new)));
        }
        if let Some(dur) = pool::timer_duration(py, f, args, kwnames) {
            // `time.sleep(x)`: a timer task (pool.rs) instead of stalling this thread; inline once
            // the executor is closed.
            let ex = self.executor()?;
            let call = Bound::new(py, pool::BlockingCall::new())?;
            if pool::start_timer(py, dur, &ex.loop_, &call)? {
                ex.watch(py, task, call.into_any())?;
                return Ok(Dispatch::Pending);
            }
        }
        Ok(Dispatch::Done(vcall(py, f.bind(py), args, kwnames).map(|v| v.unbind()).map_err(PyErrRef::new)))
    }
}

fn describe(f: &Bound<'_, PyAny>) -> PyResult<Callee> {
    if f.is_instance_of::<GlobalLoader>() {
        return Ok(Callee::Loader);
    }
    if !f.is_instance_of::<PyFunction>() {
        return Ok(Callee::Plain);
    }
    let Some(spec) = f.getattr("__dict__")?.downcast_into::<PyDict>()?.get_item("__poppy_external__")? else {
        return Ok(Callee::Plain);
    };
    let class = match spec.getattr("kind")?.extract::<String>()?.as_str() {
        "unordered" => Class::Unordered,
        "readonly" => Class::Readonly,
        _ => Class::Sequential,
    };
    let inner = spec.getattr("fn")?;
    let returns = rt_module(f.py())?.call_method1("return_stand_in", (&inner,))?;
    Ok(Callee::External {
        class,
        is_async: spec.getattr("is_async")?.is_truthy()?,
        blocking: spec.getattr("blocking")?.is_truthy()?,
        returns: (!returns.is_none()).then(|| returns.getattr("value")).transpose()?.map(|v| v.unbind()),
        inner: inner.unbind(),
    })
}

impl<'py> Host for PyHost<'py> {
    fn fresh_key(&mut self, f: &Obj, result: &Obj) -> Option<u64> {
        let py = self.py;
        let r = result.bind(py);
        let key = container_key(r)?;
        let api = self.objects_api()?;
        let f = f.bind(py);
        let maker = if f.get_type().is(&api.fresh_args) {
            f.getattr("fn").ok().map(|x| x.as_ptr() as usize)
        } else {
            Some(f.as_ptr() as usize)
        };
        // A Python predicate that raises counts as false: the object is then not owned.
        let holds = |pred: &Bound<'py, PyAny>, x: &Bound<'py, PyAny>| pred.call1((x,)).is_ok_and(|b| b.is_truthy().unwrap_or(false));
        if !maker.is_some_and(|m| api.makers.contains(&m)) && !holds(&api.maker, &f) {
            return None;
        }
        if !r.is_exact_instance_of::<pyo3::types::PyList>() && !holds(&api.owned_ok, r) {
            return None;
        }
        self.owned.push(result.clone_ref(py));
        Some(key)
    }

    fn object_keys(&mut self, f: &Obj, args: &[Obj]) -> Vec<u64> {
        let py = self.py;
        let mut out = self.arg_keys(args);
        out.extend(method_receiver_key(f.bind(py)));
        out
    }

    fn arg_keys(&mut self, args: &[Obj]) -> Vec<u64> {
        let py = self.py;
        let mut out = Vec::new();
        for a in args {
            collect_keys(a.bind(py), &mut out, 0);
        }
        out
    }

    fn scope(&mut self, f: &Obj, args: &[Obj], kwnames: &[String]) -> Option<(u64, Option<bool>, Vec<Obj>)> {
        let py = self.py;
        let api = self.objects_api()?;
        let args_t = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
        let kw = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
        let r = api.scope.call1((f.bind(py), args_t, kw)).ok()?;
        if r.is_none() {
            return None;
        }
        let (recv, write, rest): (Bound<'_, PyAny>, Option<bool>, Bound<'_, PyTuple>) = r.extract().ok()?;
        let key = container_key(&recv)?;
        Some((key, write, rest.iter().map(|x| x.unbind()).collect()))
    }

    type Prim = Obj;
    type Error = PyErrRef;

    fn inline_target(&mut self, f: &Obj, nargs: usize, kwnames: &[String]) -> Option<ProgramRef<Obj>> {
        if !kwnames.is_empty() {
            return None;
        }
        let py = self.py;
        let program = crate::hook::inline_program(py, f.bind(py), nargs)?;
        // Inlining does not use the interpreter's stack, so unbounded recursion would never
        // raise RecursionError. The evaluator does not say how deep an inlined call is, so the
        // count of inlined calls of one function in a run stands for its depth: past
        // sys.getrecursionlimit() for a function that may call itself (through @poppy functions
        // it names: `_prologue.recursive`), further calls go through CPython (a nested plain
        // run), where the limit applies. Other functions (a helper called from a loop) get 100
        // times that, a safety net for recursion the name check cannot see.
        let limit = *self.recursion_limit.get_or_insert_with(|| {
            py.import_bound("sys")
                .and_then(|s| s.call_method0("getrecursionlimit"))
                .and_then(|l| l.extract())
                .unwrap_or(1000)
        });
        match self.inlined.iter_mut().find(|(g, _, _)| g.is(f)) {
            Some((_, n, max)) if *n >= *max => return None,
            Some((_, n, _)) => *n += 1,
            None => {
                let recursive = py
                    .import_bound("poppy_jit._prologue")
                    .and_then(|m| m.call_method1("recursive", (f.bind(py),)))
                    .and_then(|r| r.is_truthy())
                    .unwrap_or(true);
                let max = if recursive { limit } else { limit.saturating_mul(100) };
                self.inlined.push((f.clone_ref(py), 1, max));
            }
        }
        Some(program)
    }

    fn is_eager(&mut self, f: &Obj) -> bool {
        matches!(&*self.callee(f), Callee::Loader)
    }

    fn eager_call(&mut self, f: &Obj, args: &[Obj]) -> Result<Obj, PyErrRef> {
        let py = self.py;
        let loader = f.bind(py).downcast::<GlobalLoader>().map_err(|e| PyErrRef::new(e.into()))?.get();
        loader.lookup(py, args[0].bind(py)).map_err(PyErrRef::new)
    }

    fn classify_callee(&mut self, f: &Obj) -> Option<Class> {
        match &*self.callee(f) {
            Callee::Loader => Some(Class::Unordered),
            // An unordered external is readonly when an argument is mutable (it must see the
            // argument as it is at its place in program order): that needs the arguments.
            Callee::External { class: Class::Unordered, .. } => None,
            Callee::External { class, .. } => Some(*class),
            Callee::Plain => None,
        }
    }

    fn classify_hinted(&mut self, f: &Obj, args: &[Option<Obj>], kwnames: &[String]) -> Option<Class> {
        let args: Option<Vec<Obj>> = args.iter().map(|a| a.as_ref().map(|o| o.clone_ref(self.py))).collect();
        Some(self.classify(f, &args?, kwnames))
    }

    fn result_hint(&mut self, f: &Obj, args: &[Option<Obj>], _kw: &[String]) -> Option<Obj> {
        let py = self.py;
        match &*self.callee(f) {
            Callee::External { returns, .. } => returns.as_ref().map(|r| r.clone_ref(py)),
            Callee::Loader => None,
            Callee::Plain => {
                let args: Option<Vec<Obj>> = args.iter().map(|a| a.as_ref().map(|o| o.clone_ref(py))).collect();
                let args = PyTuple::new_bound(py, args?);
                let r = self.rt.call_method1("hint_apply", (f.bind(py), args)).ok()?;
                (!r.is_none()).then(|| r.getattr("value").ok()).flatten().map(|v| v.unbind())
            }
        }
    }

    fn classify(&mut self, f: &Obj, args: &[Obj], kwnames: &[String]) -> Class {
        if let Some(c) = self.classify_callee(f) {
            return c;
        }
        let py = self.py;
        if let Callee::External { .. } = &*self.callee(f) {
            // Unordered as declared when every argument is an immutable atom (the common case,
            // decided here); otherwise the annotation library judges the arguments.
            let atom = |a: &Obj| {
                let a = a.bind(py);
                a.is_exact_instance_of::<PyString>()
                    || a.is_exact_instance_of::<pyo3::types::PyLong>()
                    || a.is_exact_instance_of::<pyo3::types::PyFloat>()
                    || a.is_exact_instance_of::<pyo3::types::PyBool>()
                    || a.is_none()
                    || a.is_exact_instance_of::<pyo3::types::PyBytes>()
            };
            if args.iter().all(atom) {
                return Class::Unordered;
            }
        }
        let a = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
        let k = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
        match self.classify.call1((f.bind(py), a, k)).and_then(|c| c.extract::<u8>()) {
            Ok(0) => Class::Unordered,
            Ok(1) => Class::Readonly,
            // Unknown, or classification itself failed: sequential is always sound.
            _ => Class::Sequential,
        }
    }

    fn dispatch(&mut self, task: TaskId, f: &Obj, args: &[Obj], kwnames: &[String]) -> Dispatch<Obj, PyErrRef> {
        if let Some(e) = &self.abort {
            return Dispatch::Done(Err(e.clone()));
        }
        let d = match self.try_dispatch(task, f, args, kwnames) {
            Ok(d) => d,
            Err(e) => Dispatch::Done(Err(PyErrRef::new(e))),
        };
        if let Dispatch::Done(Err(e)) = &d {
            let py = self.py;
            let v = e.0.value_bound(py);
            if v.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>() || v.is_instance_of::<pyo3::exceptions::PySystemExit>() {
                self.abort = Some(e.clone());
            }
        }
        d
    }

    fn cancel(&mut self, task: TaskId) {
        let py = self.py;
        let Some(ex) = self.executor.as_mut() else { return };
        let Some(fut) = ex.running.get(&task) else { return };
        let fut = fut.bind(py);
        // Blocking calls run to completion on their threads (they report as usual); timers and
        // asyncio tasks are cancelled and report CancelledError through their done-callback.
        match fut.downcast::<pool::BlockingCall>() {
            Ok(call) => {
                let _ = pool::interrupt(call, &ex.loop_);
            }
            Err(_) => {
                let _ = fut.call_method0("cancel");
            }
        }
    }

    fn wait(&mut self) -> Result<Vec<(TaskId, Result<Obj, PyErrRef>)>, PyErrRef> {
        let py = self.py;
        if let Some(e) = &self.abort {
            return Err(e.clone());
        }
        let rt = self.rt.clone();
        let ex = self.executor().map_err(PyErrRef::new)?;
        if ex.queue.borrow().is_empty() {
            // An exception out of the loop itself (KeyboardInterrupt while waiting) aborts the run.
            ex.run_forever.call0().map_err(PyErrRef::new)?;
            if ex.queue.borrow().is_empty() {
                // Woken with nothing finished: was the run cancelled (`await poppy_jit.run`'s
                // caller was)? Then abort; `finish` cancels what is in flight.
                let cancelled = rt.call_method0("take_cancel").and_then(|c| c.is_truthy()).map_err(PyErrRef::new)?;
                if cancelled {
                    let e = pyo3::exceptions::asyncio::CancelledError::new_err("poppy_jit.run was cancelled");
                    return Err(PyErrRef::new(e));
                }
            }
        }
        let done: Vec<(TaskId, Obj)> = std::mem::take(&mut *ex.queue.borrow_mut());
        let mut out = Vec::with_capacity(done.len());
        for (task, fut) in done {
            ex.running.remove(&task);
            // `result()` returns the value, or raises the call's exception (CancelledError for a
            // cancelled task): either way, that is the call's outcome.
            let r = fut.bind(py).call_method0(pyo3::intern!(py, "result")).map(|v| v.unbind()).map_err(PyErrRef::new);
            out.push((task, r));
        }
        Ok(out)
    }

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

    fn note_failure(&mut self, e: PyErrRef, line: u32, later: Vec<Obj>) -> PyErrRef {
        // The @poppy function's frame is not on the stack while λO runs: put the entries CPython
        // would have had into the traceback (poppy_jit._traceback), with a note (PEP 678) for
        // what they cannot show.
        let py = self.py;
        let err = e.to_pyerr(py);
        let value = err.value_bound(py).clone();
        // A fetched error keeps its traceback beside the value until it is raised again.
        if let Some(tb) = err.traceback_bound(py) {
            let _ = value.setattr("__traceback__", tb);
        }
        let mut notes = Vec::new();
        if line > 0 {
            let placed = match &self.frame {
                Some((func, args)) => py.import_bound("poppy_jit._traceback").and_then(|m| {
                    let args = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
                    let inlined = pyo3::types::PyList::new_bound(py, self.inlined.iter().map(|(f, _, _)| f.bind(py)));
                    m.call_method1("place", (&value, func.bind(py), args, inlined, line, self.frame_on_stack))
                }),
                None => Ok(PyString::new_bound(
                    py,
                    &format!("poppy_jit: raised by the external call at line {line} of {}", self.run_name),
                )
                .into_any()),
            };
            let placed = placed.and_then(|r| {
                if r.is_instance_of::<PyTuple>() {
                    let (note, site): (Bound<'_, PyAny>, Option<(u32, i32)>) = r.extract()?;
                    self.top_site = site;
                    Ok(note)
                } else {
                    Ok(r)
                }
            });
            match placed {
                Ok(note) if note.is_none() => {}
                Ok(note) => notes.push(note.to_string()),
                Err(tb_err) => {
                    tb_err.print(py);
                    notes.push(format!("poppy_jit: raised by the external call at line {line} of {}", self.run_name));
                }
            }
        }
        if !later.is_empty() {
            let names: Vec<String> = later
                .iter()
                .map(|f| {
                    let f = f.bind(py);
                    f.getattr("__qualname__")
                        .or_else(|_| f.getattr("__name__"))
                        .and_then(|n| n.extract::<String>())
                        .unwrap_or_else(|_| f.get_type().name().map(|n| n.to_string()).unwrap_or_default())
                })
                .collect();
            notes.push(format!(
                "poppy_jit: this call is @unordered and ran concurrently with {} later ordered \
                 call(s) that had already run when it failed: {}",
                names.len(),
                names.join(", ")
            ));
        }
        for note in notes {
            let _ = value.call_method1("add_note", (note,));
        }
        // A fresh PyErr, so that restoring it raises the traceback set on the value.
        PyErrRef::new(PyErr::from_value_bound(value.into_any()))
    }

    fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    fn record_calls(&mut self, records: Vec<crate::lambda_o::CallRecord<Obj>>) {
        let py = self.py;
        let Some((m, name)) = &self.trace else { return };
        let Ok(clock) = Clock::new(py) else { return };
        let opt = |t: Option<std::time::Instant>| t.map(|t| clock.at(t));
        let recs: Vec<PyObject> = records
            .into_iter()
            .map(|r| {
                let args = PyTuple::new_bound(py, r.args.iter().map(|a| a.bind(py)));
                (
                    r.position,
                    r.func,
                    args,
                    r.class.name(),
                    clock.at(r.queued),
                    clock.at(r.ready),
                    opt(r.dispatched),
                    opt(r.done),
                    r.ok,
                )
                    .into_py(py)
            })
            .collect();
        let end = clock.at(std::time::Instant::now());
        if let Err(e) = m.call_method1("record_run", (name.as_str(), self.run_start, end, recs)) {
            e.print(py);
        }
    }

    fn internal_error(&mut self, kind: &str, msg: &str) -> PyErrRef {
        let py = self.py;
        let err = py
            .import_bound("builtins")
            .and_then(|b| b.getattr(kind))
            .and_then(|cls| cls.call1((msg,)))
            .map(PyErr::from_value_bound)
            .unwrap_or_else(|e| e);
        PyErrRef::new(err)
    }
}

/// Builds the primitives a compiled function needs, bound to its code object and globals.
pub struct PyFactory<'py> {
    pub py: Python<'py>,
    pub rt: Bound<'py, PyModule>,
    pub consts: Bound<'py, PyTuple>,
    pub loader: Obj,
}

impl<'py> PyFactory<'py> {
    pub fn new(py: Python<'py>, func: &Bound<'py, PyAny>) -> PyResult<Self> {
        let rt = rt_module(py)?;
        let code = func.getattr("__code__")?;
        let consts = code.getattr("co_consts")?.downcast_into::<PyTuple>()?;
        let globals = func.getattr("__globals__")?.downcast_into::<PyDict>()?;
        let loader = Py::new(py, GlobalLoader::new(py, globals)?)?.into_any();
        Ok(PyFactory { py, rt, consts, loader })
    }

    fn rt_attr(&self, name: &str) -> Obj {
        self.rt.getattr(name).expect("poppy_jit._rt attribute").unbind()
    }
}

pub fn const_to_py(py: Python<'_>, consts: &Bound<'_, PyTuple>, c: &Const) -> Obj {
    match c {
        Const::None => py.None(),
        Const::Bool(b) => PyBool::new_bound(py, *b).to_owned().into_any().unbind(),
        Const::Int(i) => i.into_py(py),
        Const::Float(f) => PyFloat::new_bound(py, *f).into_any().unbind(),
        Const::Str(s) => PyString::new_bound(py, s).into_any().unbind(),
        Const::Tuple(items) => {
            let v: Vec<Obj> = items.iter().map(|i| const_to_py(py, consts, i)).collect();
            PyTuple::new_bound(py, v).into_any().unbind()
        }
        Const::Opaque { co_index, .. } => consts.get_item(*co_index as usize).expect("co_consts index").unbind(),
        Const::Nested { path, .. } => {
            let mut c = consts.get_item(path[0] as usize).expect("co_consts index");
            for &i in &path[1..] {
                c = c.getattr("co_consts").and_then(|cs| cs.get_item(i)).expect("nested co_consts index");
            }
            c.unbind()
        }
        Const::Globals => unreachable!("PyFactory::constant resolves the globals"),
    }
}

impl<'py> PrimFactory for PyFactory<'py> {
    type Prim = Obj;

    fn constant(&mut self, c: &Const) -> Obj {
        if let Const::Globals = c {
            let loader = self.loader.bind(self.py).downcast::<GlobalLoader>().expect("the global loader");
            return loader.borrow().globals.clone_ref(self.py).into_any();
        }
        const_to_py(self.py, &self.consts, c)
    }

    fn string(&mut self, s: &str) -> Obj {
        PyString::new_bound(self.py, s).into_any().unbind()
    }

    fn intrinsic(&mut self, i: &Intrinsic) -> Obj {
        self.rt
            .getattr("intrinsic")
            .and_then(|f| f.call1((i.key(),)))
            .expect("every Intrinsic has a callable in poppy_jit._rt.INTRINSICS")
            .unbind()
    }

    fn intrinsic_fresh(&mut self, i: &Intrinsic, fresh: u32) -> Obj {
        self.rt
            .getattr("intrinsic_fresh")
            .and_then(|f| f.call1((i.key(), fresh)))
            .expect("poppy_jit._rt.intrinsic_fresh wraps every intrinsic")
            .unbind()
    }

    fn global_loader(&mut self) -> Obj {
        self.loader.clone_ref(self.py)
    }

    fn bound_check(&mut self) -> Obj {
        self.rt_attr("bound_check")
    }

    fn helper(&mut self, name: &str) -> Obj {
        self.rt
            .getattr("HELPERS")
            .and_then(|h| h.get_item(name))
            .expect("poppy_jit._rt.HELPERS has every lowering helper")
            .unbind()
    }
}
