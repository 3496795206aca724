//! Making one external call: a global load or a decorated external on a Rust fast path (the
//! undecorated function, called through vectorcall), `async def` externals as tasks,
//! `blocking=True` externals and `time.sleep` on the executor, anything else inline. A
//! KeyboardInterrupt or SystemExit from a synchronous call aborts the run. A call made by an
//! `except` handler runs with the caught exception handled (`handling.rs`), wherever it runs.
use super::callee::Callee;
use super::{pool, PyErrRef, PyHost};
use crate::lambda_o::{Dispatch, TaskId};
use crate::pyobj::{GlobalLoader, Obj};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

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

/// Make the call `f(args)` for `task`; `handling`: the exception the `except` handler making the
/// call is handling (the thread's handled exception while the call runs).
pub(super) fn dispatch<'py>(
    h: &mut PyHost<'py>,
    task: TaskId,
    f: &Obj,
    args: &[Obj],
    kwnames: &[String],
    handling: Option<&Obj>,
) -> Dispatch<Obj, PyErrRef> {
    if let Some(e) = &h.abort {
        return Dispatch::Done(Err(e.clone()));
    }
    let d = match h.try_dispatch(task, f, args, kwnames, handling) {
        Ok(d) => d,
        Err(e) => Dispatch::Done(Err(PyErrRef::new(e))),
    };
    if let Dispatch::Done(Err(e)) = &d {
        let py = h.py;
        let v = e.0.value_bound(py);
        if v.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>() || v.is_instance_of::<pyo3::exceptions::PySystemExit>() {
            h.abort = Some(e.clone());
        }
    }
    d
}

impl<'py> PyHost<'py> {
    fn try_dispatch(
        &mut self,
        task: TaskId,
        f: &Obj,
        args: &[Obj],
        kwnames: &[String],
        handling: Option<&Obj>,
    ) -> PyResult<Dispatch<Obj, PyErrRef>> {
        let py = self.py;
        // An error is normalised (its `__context__` set) while the exception is still handled.
        let run = |f: &Bound<'py, PyAny>| {
            super::handling::with_handled(py, handling, || {
                vcall(py, f, args, kwnames).inspect_err(|e| {
                    e.value_bound(py);
                })
            })
        };
        let callee = self.callee(f);
        if let Callee::Loader = &*callee {
            // (Its NameError takes its `__context__` from the handled exception when made.)
            let r = super::handling::with_handled(py, handling, || self.eager_global(f, &args[0]));
            return Ok(Dispatch::Done(r.map_err(PyErrRef::new)));
        }
        if let Callee::External { inner, is_async, blocking, .. } = &*callee {
            // Call the undecorated function directly (the decorator's wrapper would block).
            let inner = inner.bind(py);
            if *is_async {
                let coro = match run(inner) {
                    Ok(c) => c,
                    Err(e) => return Ok(Dispatch::Done(Err(PyErrRef::new(e)))),
                };
                // Each step of the coroutine runs with the handled exception set.
                let coro = match handling {
                    Some(exc) => super::handling::Handling::wrap(py, coro.unbind(), exc.clone_ref(py))?.into_any(),
                    None => coro,
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
                if pool::submit(py, inner, pos.clone(), kw.clone(), &ex.loop_, &call, handling)? {
                    ex.watch(py, task, call.into_any())?;
                    return Ok(Dispatch::Pending);
                }
            }
            let r = run(inner).map(|v| v.unbind());
            return Ok(Dispatch::Done(self.guard_after(f, r).map_err(PyErrRef::new)));
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
        let r = run(f.bind(py)).map(|v| v.unbind());
        Ok(Dispatch::Done(self.guard_after(f, r).map_err(PyErrRef::new)))
    }

    /// An eager global read (the loader), recorded for the guard.
    pub(super) fn eager_global(&mut self, f: &Obj, name: &Obj) -> PyResult<Obj> {
        let py = self.py;
        let loader = f.bind(py).downcast::<GlobalLoader>()?;
        let v = loader.get().lookup(py, name.bind(py))?;
        self.guard.record(py, loader, name, &v)?;
        Ok(v)
    }

    /// A read of a module attribute out of program order, recorded for the guard: false if the
    /// name gave another object earlier in the run (the run is then failed with the guard's error).
    pub(super) fn guard_module_read(&mut self, module: &Bound<'py, PyAny>, dict: &Bound<'py, PyDict>, name: &Bound<'py, PyAny>, v: &Bound<'py, PyAny>) -> bool {
        let py = self.py;
        match self.guard.record_module(py, module, dict, &name.clone().unbind(), &v.clone().unbind()) {
            Ok(()) => true,
            Err(e) => {
                self.abort = Some(PyErrRef::new(e));
                false
            }
        }
    }

    /// After asynchronous or blocking calls completed (their code ran on the loop or on a worker
    /// thread): the guard's error if one of them rebound a name the run had read.
    pub(super) fn guard_after_tasks(&mut self) -> Result<(), PyErrRef> {
        self.guard_check(&|| "an asynchronous or blocking call".to_string())
    }

    /// The result of a synchronous call `f`, or the guard's error if it rebound a global the run
    /// had read eagerly.
    fn guard_after(&mut self, f: &Obj, r: PyResult<Obj>) -> PyResult<Obj> {
        let py = self.py;
        self.guard_check(&|| call_name(py, f)).map_err(|e| e.to_pyerr(py))?;
        r
    }

    /// The guard's check after `call` completed; its error also aborts the run.
    fn guard_check(&mut self, call: &dyn Fn() -> String) -> Result<(), PyErrRef> {
        let py = self.py;
        self.guard.check(py, call).map_err(|e| {
            let e = PyErrRef::new(e);
            self.abort = Some(e.clone());
            e
        })
    }
}

/// The guard on globals read eagerly (the module scan, `pipeline::globals`, cannot see every
/// rebinding: `setattr(sys.modules[...], ...)` from another module) and on module attributes read
/// out of program order (`callee::module_attr`). For each dict the run read so: its version tag
/// when last checked and each name read with the object it gave. After every call that completes
/// (one integer compare per dict when it did not change) and at each eager read, a name now bound
/// to another object fails the run with a RuntimeError naming it and the call, and is marked
/// rebindable, so the next translation (a global) or classification (a module attribute) reads
/// it in program order.
#[derive(Default)]
pub(super) struct GlobalsGuard {
    dicts: Vec<GuardedDict>,
}

struct GuardedDict {
    source: Source,
    version: u64,
    read: std::collections::HashMap<usize, (Obj, Obj)>,
}

/// Where the names were read: a global loader's globals (a name missing there is looked up in
/// its builtins), or a module's `__dict__`.
enum Source {
    Globals(Py<GlobalLoader>),
    Module { dict: Py<PyDict>, module: String },
}

impl Source {
    fn dict<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self {
            Source::Globals(l) => l.bind(py).get().globals().bind(py).clone().into_any(),
            Source::Module { dict, .. } => dict.bind(py).clone().into_any(),
        }
    }

    fn lookup(&self, py: Python<'_>, name: &Obj) -> Option<Obj> {
        match self {
            Source::Globals(l) => l.bind(py).get().lookup(py, name.bind(py)).ok(),
            Source::Module { dict, .. } => dict.bind(py).get_item(name.bind(py)).ok().flatten().map(|v| v.unbind()),
        }
    }

    fn rebound(&self, py: Python<'_>, name: &Bound<'_, PyAny>, by: &str) -> PyErr {
        crate::pipeline::globals::mark_rebindable(py, &self.dict(py), name);
        let (what, later) = match self {
            Source::Globals(_) => (format!("global '{name}'"), "Later calls"),
            Source::Module { module, .. } => (format!("module attribute '{module}.{name}'"), "Later runs"),
        };
        pyo3::exceptions::PyRuntimeError::new_err(format!(
            "poppy_jit: {what} was rebound by {by} while the @poppy run had already read it (not in \
             program order); the run cannot go on with the stale value. {later} read it in program order"
        ))
    }
}

impl GlobalsGuard {
    fn entry(&mut self, py: Python<'_>, dict: &Bound<'_, PyAny>, module: bool, make: impl FnOnce() -> Source) -> usize {
        let found = self.dicts.iter().position(|d| matches!(d.source, Source::Module { .. }) == module && d.source.dict(py).is(dict));
        found.unwrap_or_else(|| {
            let version = crate::pipeline::globals::dict_version(dict);
            self.dicts.push(GuardedDict { source: make(), version, read: Default::default() });
            self.dicts.len() - 1
        })
    }

    fn note(&mut self, py: Python<'_>, i: usize, name: &Obj, value: &Obj) -> PyResult<()> {
        let d = &mut self.dicts[i];
        match d.read.get(&(name.as_ptr() as usize)) {
            Some((_, old)) if !old.is(value) => Err(d.source.rebound(py, name.bind(py), "a call that completed earlier")),
            Some(_) => Ok(()),
            None => {
                d.read.insert(name.as_ptr() as usize, (name.clone_ref(py), value.clone_ref(py)));
                Ok(())
            }
        }
    }

    /// Record an eager read of `name` through `loader` that gave `value`; Err if the same name
    /// gave another object earlier in the run.
    pub(super) fn record(&mut self, py: Python<'_>, loader: &Bound<'_, GlobalLoader>, name: &Obj, value: &Obj) -> PyResult<()> {
        let globals = loader.get().globals().bind(py).clone().into_any();
        let i = self.entry(py, &globals, false, || Source::Globals(loader.clone().unbind()));
        self.note(py, i, name, value)
    }

    /// Record a read of the attribute `name` of `module` (its `__dict__` is `dict`) made out of
    /// program order, which gave `value`; Err as `record`.
    pub(super) fn record_module(&mut self, py: Python<'_>, module: &Bound<'_, PyAny>, dict: &Bound<'_, PyDict>, name: &Obj, value: &Obj) -> PyResult<()> {
        let i = self.entry(py, dict.as_any(), true, || Source::Module {
            dict: dict.clone().unbind(),
            module: module.getattr("__name__").and_then(|n| n.extract::<String>()).unwrap_or_else(|_| "<module>".into()),
        });
        self.note(py, i, name, value)
    }

    /// After `call` completed: Err if a name read out of program order is now bound to another
    /// object.
    pub(super) fn check(&mut self, py: Python<'_>, call: &dyn Fn() -> String) -> PyResult<()> {
        for d in &mut self.dicts {
            let version = crate::pipeline::globals::dict_version(&d.source.dict(py));
            if version == d.version {
                continue;
            }
            d.version = version;
            for (name, old) in d.read.values() {
                if !d.source.lookup(py, name).is_some_and(|n| n.is(old)) {
                    return Err(d.source.rebound(py, name.bind(py), &call()));
                }
            }
        }
        Ok(())
    }
}

fn call_name(py: Python<'_>, f: &Obj) -> String {
    let b = f.bind(py);
    let q = b.getattr("__qualname__").and_then(|q| q.extract::<String>()).unwrap_or_else(|_| "<callable>".into());
    match b.getattr("__module__").and_then(|m| m.extract::<String>()) {
        Ok(m) if m != "builtins" => format!("{m}.{q}()"),
        _ => format!("{q}()"),
    }
}
