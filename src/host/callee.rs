//! What the host knows about a callee (`Callee`, described once per callee per run from its
//! `__poppy_external__` spec) and the reordering class of a call: from the callee alone when its
//! declaration says, from the arguments (immutable atoms: unordered as declared) or else from the
//! annotation library (`poppy_jit._annotations.classify`); stand-in results for calls whose
//! arguments are still pending.
use super::PyHost;
use crate::control::Class;
use crate::pyobj::{contract, rt_module, GlobalLoader, Obj};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFunction, PyString, PyTuple};
use std::rc::Rc;

/// What the host knows about a callee, computed once per callee per run.
pub(super) enum Callee {
    Loader,
    /// Declared with @unordered/@readonly/@sequential; `returns` is a stand-in value of its
    /// declared return type when that is an immutable atom (str, int, float, bool, bytes, None).
    External { class: Class, inner: Obj, is_async: bool, blocking: bool, returns: Option<Obj> },
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
    let class = contract::class_of_name(&spec.getattr("kind")?.extract::<String>()?).unwrap_or(Class::Sequential);
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

pub(super) fn classify_callee<'py>(h: &mut PyHost<'py>, f: &Obj) -> Option<Class> {
    match &*h.callee(f) {
        Callee::Loader => Some(Class::Unordered),
        // An unordered external is readonly when an argument is mutable (it must see the
        // argument as it is at its place in program order): that needs the arguments.
        Callee::External { class: Class::Unordered, .. } => None,
        Callee::External { class, .. } => Some(*class),
        Callee::Plain => None,
    }
}

pub(super) fn classify_hinted<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Option<Obj>], kwnames: &[String]) -> Option<Class> {
    let args: Option<Vec<Obj>> = args.iter().map(|a| a.as_ref().map(|o| o.clone_ref(h.py))).collect();
    Some(classify(h, f, &args?, kwnames))
}

pub(super) fn result_hint<'py>(h: &mut PyHost<'py>, f: &Obj, args: &[Option<Obj>], _kw: &[String]) -> Option<Obj> {
    let py = h.py;
    match &*h.callee(f) {
        Callee::External { returns, .. } => returns.as_ref().map(|r| r.clone_ref(py)),
        Callee::Loader => None,
        Callee::Plain => {
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
    if let Callee::External { .. } = &*h.callee(f) {
        // Unordered as declared when every argument is an immutable atom (the common case,
        // decided here); otherwise the annotation library judges the arguments.
        if args.iter().all(|a| contract::is_atom(a.bind(py))) {
            return Class::Unordered;
        }
    }
    let a = PyTuple::new_bound(py, args.iter().map(|a| a.bind(py)));
    let k = PyTuple::new_bound(py, kwnames.iter().map(|k| PyString::new_bound(py, k)));
    match h.classify.call1((f.bind(py), a, k)).and_then(|c| c.extract::<u8>()) {
        Ok(code) => contract::class_of_code(code).unwrap_or(Class::Sequential),
        // Classification itself failed: sequential is always sound (so is an unknown code).
        Err(_) => Class::Sequential,
    }
}
