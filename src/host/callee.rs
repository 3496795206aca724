//! What the host knows about a callee (`Callee`, described once per callee per run from its
//! `__poppy_external__` spec) and the reordering class of a call: from the callee alone when its
//! declaration says, from the arguments (immutable atoms: unordered as declared) or else from the
//! annotation library (`poppy_jit._annotations.classify`); stand-in results for calls whose
//! arguments are still pending.
//!
//! A callable that wraps a decorated external is that external with arguments bound in front:
//! `functools.partial(ext, …)`, a bound method whose function is an external (a method annotated
//! on its class), an object whose class's `__call__` is one. It is described as the external
//! (same class, async/blocking dispatch), calling the undecorated function with the bound
//! arguments, which count for its class like the call's own.
use super::PyHost;
use crate::control::Class;
use crate::pyobj::{contract, rt_module, GlobalLoader, Obj};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFunction, PyString, PyTuple, PyType};
use pyo3::sync::GILOnceCell;
use std::rc::Rc;

/// What the host knows about a callee, computed once per callee per run.
pub(super) enum Callee {
    Loader,
    /// A cheap, synchronous, unobservable Python helper of the runtime (`__poppy_eager__`, e.g.
    /// `poppy_jit._awaits.await_call_of`): called by the statement itself, like a global load.
    Eager,
    /// Declared with @unordered/@readonly/@sequential; `returns` is a stand-in for its result
    /// while it is pending when it declares a plain data type (`poppy_jit._declared`: an atom's
    /// stand-in value, or a `Typed`), `declared` that declaration (checked at arrival),
    /// `explicit` whether it was given as `returns=` (else a return annotation, not enforced
    /// when nothing relied on it: `_rt.check_declared`).
    /// `bound`: for a wrapper of the external (see the module doc), the decorated function and
    /// the arguments the wrapper binds (they are judged with the call's own).
    External {
        class: Class,
        inner: Obj,
        is_async: bool,
        blocking: bool,
        returns: Option<Obj>,
        declared: Option<Obj>,
        explicit: bool,
        bound: Option<(Obj, Vec<Obj>)>,
    },
    /// Builds a new tuple or list of its arguments without reading them (`_build_tuple`,
    /// `_build_list`): unordered whatever they are, known from the callee alone — so the order
    /// passes it before its arguments are known (a comprehension's `(x,)` appended to its list
    /// does not hold up the calls after the one that computes `x`).
    Holder { tuple: bool },
    Plain,
}

impl<'py> PyHost<'py> {
    pub(super) fn callee(&mut self, f: &Obj) -> Rc<Callee> {
        if let Some((o, c)) = &self.last_callee {
            if o.is(f) {
                return c.clone();
            }
        }
        let b = f.bind(self.py);
        // Only functions (decorated externals), global loaders and what may wrap an external
        // (Python bound methods, partials, instances of Python classes) are described; anything
        // else (builtins, methods of builtins, intrinsics) is a plain callee.
        if !b.is_instance_of::<PyFunction>() && !b.is_instance_of::<GlobalLoader>() && !may_wrap(b) {
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
}

fn describe(f: &Bound<'_, PyAny>) -> PyResult<Callee> {
    if f.is_instance_of::<GlobalLoader>() {
        return Ok(Callee::Loader);
    }
    if !f.is_instance_of::<PyFunction>() {
        return match wrapped_external(f)? {
            Some((wrapper, spec, inner, bound)) => external(f.py(), &spec, inner, Some((wrapper.unbind(), bound))),
            None => Ok(Callee::Plain),
        };
    }
    let Some(spec) = spec_of(f)? else {
        let eager = f.getattr("__dict__")?.downcast_into::<PyDict>()?.get_item("__poppy_eager__")?.is_some();
        if eager {
            return Ok(Callee::Eager);
        }
        let intrinsics = f.py().import_bound("poppy_jit._intrinsics")?;
        for (name, tuple) in [("_build_tuple", true), ("_build_list", false)] {
            if intrinsics.getattr(name)?.is(f) {
                return Ok(Callee::Holder { tuple });
            }
        }
        return Ok(Callee::Plain);
    };
    let inner = spec.getattr("fn")?;
    external(f.py(), &spec, inner, None)
}

fn external<'py>(py: Python<'py>, spec: &Bound<'py, PyAny>, inner: Bound<'py, PyAny>, bound: Option<(Obj, Vec<Obj>)>) -> PyResult<Callee> {
    let class = contract::class_of_name(&spec.getattr("kind")?.extract::<String>()?).unwrap_or(Class::Sequential);
    let rt = rt_module(py)?;
    let decl = rt.call_method1("declared_return", (spec,))?;
    let (mut returns, mut declared, mut explicit) = (None, None, false);
    if !decl.is_none() {
        explicit = decl.get_item(2)?.is_truthy()?;
        let stand_in = decl.get_item(0)?.getattr("value")?;
        if !stand_in.is(&rt.getattr("_declared")?.getattr("NO")?) {
            returns = Some(stand_in.unbind());
        }
        declared = Some(decl.get_item(1)?.unbind());
    }
    Ok(Callee::External {
        class,
        is_async: spec.getattr("is_async")?.is_truthy()?,
        blocking: spec.getattr("blocking")?.is_truthy()?,
        returns,
        declared,
        explicit,
        inner: inner.unbind(),
        bound,
    })
}

/// The `__poppy_external__` spec of a decorated external function.
fn spec_of<'py>(f: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !f.is_instance_of::<PyFunction>() {
        return Ok(None);
    }
    f.getattr("__dict__")?.downcast_into::<PyDict>()?.get_item("__poppy_external__")
}

/// Could `f` wrap an external: a Python bound method, a `functools.partial`, an instance of a
/// class defined in Python (its `__call__`)?
fn may_wrap(f: &Bound<'_, PyAny>) -> bool {
    if is_method(f) || is_partial(f) {
        return true;
    }
    // SAFETY: reading the flags of a live object's type, GIL held.
    let flags = unsafe { pyo3::ffi::PyType_GetFlags(pyo3::ffi::Py_TYPE(f.as_ptr())) };
    flags & pyo3::ffi::Py_TPFLAGS_HEAPTYPE != 0 && !f.is_instance_of::<PyType>()
}

pub(super) fn is_partial(f: &Bound<'_, PyAny>) -> bool {
    static T: GILOnceCell<Py<PyType>> = GILOnceCell::new();
    is_exactly(f, &T, "functools", "partial")
}

/// A bound method of a Python function (`types.MethodType`).
pub(super) fn is_method(f: &Bound<'_, PyAny>) -> bool {
    static T: GILOnceCell<Py<PyType>> = GILOnceCell::new();
    is_exactly(f, &T, "types", "MethodType")
}

fn is_exactly(f: &Bound<'_, PyAny>, cell: &GILOnceCell<Py<PyType>>, module: &str, name: &str) -> bool {
    let py = f.py();
    let t = cell.get_or_try_init(py, || -> PyResult<_> { Ok(py.import_bound(module)?.getattr(name)?.downcast_into::<PyType>()?.unbind()) });
    t.is_ok_and(|t| f.get_type().is(t.bind(py)))
}

/// If `f` wraps a decorated external (module doc): (the decorated function, its spec, what to
/// call instead of `f`: the undecorated function with the same bound arguments, those bound
/// arguments).
#[allow(clippy::type_complexity)]
fn wrapped_external<'py>(f: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, Vec<Obj>)>> {
    let py = f.py();
    let types = py.import_bound("types")?;
    if is_method(f) {
        let func = f.getattr("__func__")?;
        let Some(spec) = spec_of(&func)? else { return Ok(None) };
        let this = f.getattr("__self__")?;
        let inner = types.getattr("MethodType")?.call1((spec.getattr("fn")?, &this))?;
        return Ok(Some((func, spec, inner, vec![this.unbind()])));
    }
    if is_partial(f) {
        let func = f.getattr("func")?;
        let (wrapper, spec, base, mut bound) = if let Some(spec) = spec_of(&func)? {
            let base = spec.getattr("fn")?;
            (func, spec, base, Vec::new())
        } else if let Some(w) = wrapped_external(&func)? {
            w
        } else {
            return Ok(None);
        };
        let args = f.getattr("args")?.downcast_into::<PyTuple>()?;
        let keywords = f.getattr("keywords")?.downcast_into::<PyDict>()?;
        bound.extend(args.iter().map(|a| a.unbind()));
        bound.extend(keywords.values().iter().map(|a| a.unbind()));
        let mut pargs = vec![base];
        pargs.extend(args.iter());
        let inner = py.import_bound("functools")?.getattr("partial")?.call(PyTuple::new_bound(py, pargs), Some(&keywords))?;
        return Ok(Some((wrapper, spec, inner, bound)));
    }
    // An object whose class's __call__ is an external (looked up on the type, as a call does).
    let Ok(call) = f.get_type().getattr("__call__") else { return Ok(None) };
    let Some(spec) = spec_of(&call)? else { return Ok(None) };
    let inner = types.getattr("MethodType")?.call1((spec.getattr("fn")?, f))?;
    Ok(Some((call, spec, inner, vec![f.clone().unbind()])))
}

pub(super) fn classify_callee<'py>(h: &mut PyHost<'py>, f: &Obj) -> Option<Class> {
    match &*h.callee(f) {
        Callee::Loader | Callee::Eager => Some(Class::Unordered),
        // An unordered external is readonly when an argument is mutable (it must see the
        // argument as it is at its place in program order): that needs the arguments.
        Callee::External { class: Class::Unordered, .. } => None,
        Callee::External { class, .. } => Some(*class),
        Callee::Holder { .. } => Some(Class::Unordered),
        Callee::Plain => None,
    }
}

pub(super) fn builds_tuple<'py>(h: &mut PyHost<'py>, f: &Obj) -> bool {
    matches!(&*h.callee(f), Callee::Holder { tuple: true })
}

pub(super) fn classify_hinted<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Option<Obj>], kwnames: &[String]) -> Option<Class> {
    let py = h.py;
    let args: Vec<Obj> = args.iter().map(|a| a.as_ref().map(|o| o.clone_ref(py))).collect::<Option<_>>()?;
    if !is_typed(py, f) && !args.iter().any(|a| is_typed(py, a)) {
        return Some(classify(h, f, &args, kwnames));
    }
    // A stand-in of a declared container type (or a method of one) among them: classified on
    // samples of the types (`_rt.classify_hinted`).
    let a = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
    let k = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
    match h.rt.call_method1("classify_hinted", (f.bind(py), a, k)).and_then(|c| c.extract::<u8>()) {
        Ok(code) => Some(contract::class_of_code(code).unwrap_or(Class::Sequential)),
        Err(_) => None,
    }
}

/// `getattr(module, name)` (`json.loads`, `os.path`): unordered under the host's guard when the
/// module is a plain module, the attribute is a public name in its `__dict__` bound to a function,
/// a class or a module (what modules bind once: not configuration values), and the guard never saw
/// it rebound (`_rt.is_marked`). The read runs no code (the dict look-up is what the module's
/// `__getattribute__` does), so it may move before earlier calls: the guard fails the run if one
/// of them rebinds the name afterwards (dispatch.rs, `GlobalsGuard`). Any other module attribute
/// is a read in program order (readonly, `_annotations._getattr_class`).
fn module_attr<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Obj]) -> bool {
    let py = h.py;
    static GETATTR: GILOnceCell<Obj> = GILOnceCell::new();
    let Ok(getattr) = GETATTR.get_or_try_init(py, || -> PyResult<_> { Ok(py.import_bound("builtins")?.getattr("getattr")?.unbind()) }) else {
        return false;
    };
    let [module, name] = args else { return false };
    if !f.is(getattr) {
        return false;
    }
    let (module, name) = (module.bind(py), name.bind(py));
    // SAFETY: type checks on live objects, the GIL is held.
    if unsafe { pyo3::ffi::PyModule_CheckExact(module.as_ptr()) } == 0 {
        return false;
    }
    let Ok(n) = name.downcast_exact::<PyString>() else { return false };
    if n.to_str().map_or(true, |s| s.starts_with('_')) {
        return false;
    }
    let Ok(m) = module.downcast::<pyo3::types::PyModule>() else { return false };
    let dict = m.dict();
    let Ok(Some(v)) = dict.get_item(n) else { return false };
    // SAFETY: as above.
    let settled = unsafe {
        let p = v.as_ptr();
        pyo3::ffi::PyFunction_Check(p) != 0 || pyo3::ffi::PyCFunction_Check(p) != 0 || pyo3::ffi::PyType_Check(p) != 0 || pyo3::ffi::PyModule_Check(p) != 0
    };
    if !settled || h.rt.call_method1("is_marked", (&dict, n)).and_then(|m| m.is_truthy()).unwrap_or(true) {
        return false;
    }
    h.guard_module_read(module, &dict, name, &v)
}

/// Whether `x` is a stand-in of a declared type (`_declared.Typed` or `_declared.Method`).
fn is_typed(py: Python<'_>, x: &Obj) -> bool {
    static TYPES: GILOnceCell<(Py<PyType>, Py<PyType>)> = GILOnceCell::new();
    let Ok(types) = TYPES.get_or_try_init(py, || -> PyResult<_> {
        let m = py.import_bound("poppy_jit._declared")?;
        Ok((m.getattr("Typed")?.downcast_into::<PyType>()?.unbind(), m.getattr("Method")?.downcast_into::<PyType>()?.unbind()))
    }) else {
        return false;
    };
    let t = x.bind(py).get_type();
    t.is(types.0.bind(py)) || t.is(types.1.bind(py))
}

/// At arrival: an external's result must have its declared type (`_rt.check_declared`); the
/// error names the external and the declaration (and `relied`, what was ordered on the strength
/// of it). Ok(false): a return annotation the value does not have, which nothing relied on (the
/// value is used as it is, with a warning).
pub(super) fn check_result<'py>(h: &mut PyHost<'py>, f: &Obj, v: &Obj, relied: Option<&str>) -> Result<bool, PyErr> {
    let py = h.py;
    let callee = h.callee(f);
    let Callee::External { declared: Some(d), inner, explicit, .. } = &*callee else { return Ok(true) };
    let b = v.bind(py);
    // The common declarations of atoms, without calling Python.
    if let Ok(t) = d.bind(py).downcast::<PyType>() {
        if b.get_type().is(t) {
            return Ok(true);
        }
    }
    h.rt.call_method1("check_declared", (d.bind(py), b, inner.bind(py), *explicit, relied))?.is_truthy()
}

/// Whether `f` is an external that declares its result type (its calls' stand-ins come from
/// the declaration).
pub(super) fn declares_result<'py>(h: &mut PyHost<'py>, f: &Obj) -> bool {
    matches!(&*h.callee(f), Callee::External { declared: Some(_), .. })
}

pub(super) fn result_hint<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Option<Obj>], _kw: &[String]) -> Option<Obj> {
    let py = h.py;
    match &*h.callee(f) {
        Callee::External { returns, .. } => returns.as_ref().map(|r| r.clone_ref(py)),
        Callee::Loader | Callee::Eager => None,
        Callee::Plain | Callee::Holder { .. } => {
            let args: Option<Vec<Obj>> = args.iter().map(|a| a.as_ref().map(|o| o.clone_ref(py))).collect();
            let args = PyTuple::new_bound(py, args?);
            let r = h.rt.call_method1("hint_apply", (f.bind(py), args)).ok()?;
            (!r.is_none()).then(|| r.getattr("value").ok()).flatten().map(|v| v.unbind())
        }
    }
}

pub(super) fn classify<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Obj], kwnames: &[String]) -> Class {
    if let Some(c) = classify_callee(h, f) {
        return c;
    }
    let py = h.py;
    if kwnames.is_empty() && module_attr(h, f, args) {
        return Class::Unordered;
    }
    let callee = h.callee(f);
    let mut judged = f.bind(py).clone();
    let mut all: Vec<Obj> = Vec::new();
    if let Callee::External { bound, .. } = &*callee {
        // Unordered as declared when every argument is an immutable atom (the common case,
        // decided here); otherwise the annotation library judges the arguments. A wrapper's
        // bound arguments count as the call's own, judged for the decorated function.
        if let Some((wrapper, pre)) = bound {
            judged = wrapper.bind(py).clone();
            all.extend(pre.iter().map(|a| a.clone_ref(py)));
        }
        if all.iter().chain(args).all(|a| contract::is_atom(a.bind(py))) {
            return Class::Unordered;
        }
    }
    all.extend(args.iter().map(|a| a.clone_ref(py)));
    let a = PyTuple::new_bound(py, all.iter().map(|a| a.bind(py)));
    let k = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
    match h.classify.call1((judged, a, k)).and_then(|c| c.extract::<u8>()) {
        Ok(code) => contract::class_of_code(code).unwrap_or(Class::Sequential),
        // Classification itself failed: sequential is always sound (so is an unknown code).
        Err(_) => Class::Sequential,
    }
}
