//! Inlining calls of compiled functions into the run (their translation from `pipeline`): @poppy
//! functions and, transitively, the program's own plain functions, methods, static and class
//! methods (those of modules named internal: `poppy_jit._config.is_internal`), compiled at their
//! first such call and cached on their code object. A call binds the callee's parameters as
//! CPython does — positional and keyword arguments, defaults, keyword-only parameters, a bound
//! method's receiver — or, when it would be a TypeError, is left to CPython, which raises it.
//! Callees that take `*args`/`**kwargs` or are closures are not inlined (a recorded reason).
//! Bounded so that recursion still reaches CPython's recursion limit.
use super::PyHost;
use crate::lambda_o::{Bind, ProgramRef};
use crate::py311;
use crate::pyobj::Obj;
use crate::stats as counters;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFunction, PyTuple};

pub(super) fn inline_binding<'py>(h: &mut PyHost<'py>, f: &Obj, nargs: usize, kwnames: &[String]) -> Option<(ProgramRef<Obj>, Vec<Bind<Obj>>)> {
    let py = h.py;
    let b = f.bind(py);
    // `await f(...)` of a @poppy `async def` (`poppy_jit._awaits.AwaitedPoppy`): f's body in
    // place. Any other call of an `async def` makes a coroutine object: never inlined.
    let awaited = !b.is_instance_of::<PyFunction>() && b.hasattr(pyo3::intern!(py, "__poppy_awaited__")).unwrap_or(false);
    // A bound method of a Python function: its receiver is the first argument. A
    // `functools.partial` of one: its arguments come first, its keywords unless the call gives
    // the same ones (`f(*p.args, *args, **{**p.keywords, **kwargs})`).
    let mut extra_kw: Vec<(String, Bound<'py, PyAny>)> = Vec::new();
    let (func, lead) = if awaited {
        let func = b.getattr("fn").ok()?;
        if !func.is_instance_of::<PyFunction>() {
            return None;
        }
        (func, Vec::new())
    } else if b.is_instance_of::<PyFunction>() {
        (b.clone(), Vec::new())
    } else if super::callee::is_method(b) {
        let func = b.getattr("__func__").ok()?;
        if !func.is_instance_of::<PyFunction>() {
            return None;
        }
        (func, vec![b.getattr("__self__").ok()?])
    } else if super::callee::is_partial(b) {
        let func = b.getattr("func").ok()?;
        if !func.is_instance_of::<PyFunction>() {
            return None;
        }
        let pargs = b.getattr("args").ok()?;
        let pargs = pargs.downcast::<PyTuple>().ok()?;
        let pkw = b.getattr("keywords").ok()?;
        let pkw = pkw.downcast::<PyDict>().ok()?;
        for (k, v) in pkw.iter() {
            let k: String = k.extract().ok()?;
            if !kwnames.contains(&k) {
                extra_kw.push((k, v));
            }
        }
        (func, pargs.iter().collect())
    } else {
        return None;
    };
    let internal = h.is_internal(&func);
    let code = func.getattr("__code__").ok()?;
    let flags: u32 = code.getattr("co_flags").ok()?.extract().ok()?;
    // (A @poppy callee that is not inlined runs as a nested plain run, as it always has; the
    // program's own functions compiled transitively record why they are not inlined.)
    let marked = crate::pipeline::entry_rc(&code).is_some();
    if (flags & py311::CO_COROUTINE != 0) != awaited {
        return None;
    }
    if flags & (py311::CO_VARARGS | py311::CO_VARKEYWORDS) != 0 {
        if internal && !marked {
            not_inlined(&func, &code, "it takes *args or **kwargs");
        }
        return None;
    }
    let compiled = crate::pipeline::compiled_for_call(py, &func, internal)?;
    if compiled.nfree != 0 {
        if internal && !marked {
            not_inlined(&func, &code, "it is a closure");
        }
        return None;
    }
    let binds = bind(&func, &code, lead, nargs, kwnames, extra_kw)?;
    if binds.len() != compiled.argcount {
        return None;
    }
    if !within_limit(h, &func) {
        return None;
    }
    Some((compiled.program.clone(), binds))
}

/// Whether a run would inline a call of the function `f` with `nargs` arguments (the last
/// `kwnames.len()` by keyword): what `explain` reports. Compiles `f` (not cached when it is not
/// marked); does not mark anything.
pub fn inlinable(py: Python<'_>, f: &Bound<'_, PyAny>, nargs: usize, kwnames: &[String]) -> bool {
    if !f.is_instance_of::<PyFunction>() {
        return false;
    }
    let marked = f.getattr("__poppy__").and_then(|v| v.is_truthy()).unwrap_or(false);
    let internal = || {
        py.import_bound("poppy_jit._config")
            .and_then(|m| m.call_method1("is_internal", (f,)))
            .and_then(|r| r.is_truthy())
            .unwrap_or(false)
    };
    if !marked && !internal() {
        return false;
    }
    let Ok(code) = f.getattr("__code__") else { return false };
    let flags: u32 = code.getattr("co_flags").and_then(|v| v.extract()).unwrap_or(0);
    if flags & (py311::CO_VARARGS | py311::CO_VARKEYWORDS | py311::CO_COROUTINE) != 0 {
        return false;
    }
    match crate::pipeline::compile_function(py, f) {
        Ok(c) if c.nfree == 0 => bind(f, &code, Vec::new(), nargs, kwnames, Vec::new()).is_some_and(|b| b.len() == c.argcount),
        _ => false,
    }
}

/// The parameters of `func` bound from a call with `nargs` arguments (the last `kwnames.len()`
/// by keyword), after the values `lead` (a bound method's receiver, a partial's arguments) and
/// with the keyword values `extra_kw` (a partial's keywords the call does not give): CPython's
/// rules for a function without `*args` or `**kwargs`. None where CPython raises a TypeError (the
/// call then runs in CPython, which does).
fn bind(func: &Bound<'_, PyAny>, code: &Bound<'_, PyAny>, lead: Vec<Bound<'_, PyAny>>, nargs: usize, kwnames: &[String], extra_kw: Vec<(String, Bound<'_, PyAny>)>) -> Option<Vec<Bind<Obj>>> {
    let argcount: usize = code.getattr("co_argcount").ok()?.extract().ok()?;
    let posonly: usize = code.getattr("co_posonlyargcount").ok()?.extract().ok()?;
    let kwonly: usize = code.getattr("co_kwonlyargcount").ok()?.extract().ok()?;
    let varnames: Vec<String> = code.getattr("co_varnames").ok()?.extract().ok()?;
    let n = argcount + kwonly;
    let npos = nargs - kwnames.len();
    let mut slots: Vec<Option<Bind<Obj>>> = (0..n).map(|_| None).collect();
    let i = lead.len();
    if i + npos > argcount {
        return None; // too many positional arguments (a receiver or partial's included)
    }
    for (k, v) in lead.into_iter().enumerate() {
        slots[k] = Some(Bind::Value(v.unbind()));
    }
    for a in 0..npos {
        slots[i + a] = Some(Bind::Arg(a));
    }
    for (k, name) in kwnames.iter().enumerate() {
        let p = varnames[..n].iter().position(|v| v == name)?; // unexpected keyword
        if p < posonly || slots[p].is_some() {
            return None; // positional-only, or given twice
        }
        slots[p] = Some(Bind::Arg(npos + k));
    }
    for (name, v) in extra_kw {
        let p = varnames[..n].iter().position(|x| *x == name)?; // unexpected keyword
        if p < posonly || slots[p].is_some() {
            return None; // positional-only, or given twice
        }
        slots[p] = Some(Bind::Value(v.unbind()));
    }
    let defaults = func.getattr("__defaults__").ok().filter(|d| !d.is_none());
    let defaults = defaults.as_ref().and_then(|d| d.downcast::<PyTuple>().ok());
    let ndefaults = defaults.map_or(0, |d| d.len());
    let kwdefaults = func.getattr("__kwdefaults__").ok().filter(|d| !d.is_none());
    let kwdefaults = kwdefaults.as_ref().and_then(|d| d.downcast::<PyDict>().ok());
    for (p, slot) in slots.iter_mut().enumerate() {
        if slot.is_some() {
            continue;
        }
        let value = if p < argcount {
            let first = argcount.checked_sub(ndefaults)?;
            if p < first {
                return None; // a missing required argument
            }
            defaults?.get_item(p - first).ok()?
        } else {
            kwdefaults?.get_item(&varnames[p]).ok()??
        };
        *slot = Some(Bind::Value(value.unbind()));
    }
    slots.into_iter().collect()
}

/// A compiled callee that cannot be inlined: recorded once with its reason.
fn not_inlined(func: &Bound<'_, PyAny>, code: &Bound<'_, PyAny>, why: &str) {
    let line: u32 = code.getattr("co_firstlineno").and_then(|l| l.extract()).unwrap_or(0);
    let name = crate::pyobj::qualname(func);
    counters::record_fallback_once(name, format!("not inlined where compiled code calls it: {why} (line {line}); it runs as one external call"));
}

/// Inlining does not use the interpreter's stack, so unbounded recursion would never raise
/// RecursionError. The evaluator does not say how deep an inlined call is, so the count of
/// inlined calls of one function in a run stands for its depth: past sys.getrecursionlimit() for
/// a function that may call itself (through @poppy functions it names: `_prologue.recursive`),
/// further calls go through CPython (a nested plain run), where the limit applies. Other
/// functions (a helper called from a loop) get 100 times that, a safety net for recursion the
/// name check cannot see.
fn within_limit(h: &mut PyHost<'_>, f: &Bound<'_, PyAny>) -> bool {
    let py = h.py;
    let limit = *h.recursion_limit.get_or_insert_with(|| {
        py.import_bound("sys")
            .and_then(|s| s.call_method0("getrecursionlimit"))
            .and_then(|l| l.extract())
            .unwrap_or(1000)
    });
    match h.inlined.iter_mut().find(|(g, _, _)| g.bind(py).is(f)) {
        Some((_, n, max)) if *n >= *max => return false,
        Some((_, n, _)) => *n += 1,
        None => {
            let recursive = py
                .import_bound("poppy_jit._prologue")
                .and_then(|m| m.call_method1("recursive", (f,)))
                .and_then(|r| r.is_truthy())
                .unwrap_or(true);
            let max = if recursive { limit } else { limit.saturating_mul(100) };
            h.inlined.push((f.clone().unbind(), 1, max));
        }
    }
    true
}

impl<'py> PyHost<'py> {
    /// Whether `func` is the program's own code to compile when compiled code calls it (asked
    /// once per function per run).
    fn is_internal(&mut self, func: &Bound<'py, PyAny>) -> bool {
        let key = func.as_ptr() as usize;
        if let Some((_, yes)) = self.internal.get(&key) {
            return *yes;
        }
        let yes = self
            .py
            .import_bound("poppy_jit._config")
            .and_then(|m| m.call_method1("is_internal", (func,)))
            .and_then(|r| r.is_truthy())
            .unwrap_or(false);
        self.internal.insert(key, (func.clone().unbind(), yes));
        yes
    }
}
