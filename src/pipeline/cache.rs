//! The per-code-object translation cache: a @poppy code object carries a `CodeEntry` in its
//! co_extra slot (set by `mark_poppy`, freed by CPython with the code object; the copy with the
//! interception prologue shares it). The first call compiles; the translation (one per globals
//! dict the code runs under) or the fallback is kept.
//!
//! Shared state is only touched with the GIL held, which is what makes the `RefCell`s sound.
use super::compile::{compile, Compiled};
use crate::lambda_o::ProgramRef;
use crate::pyobj::{qualname, trace_module, Clock, Obj};
use crate::{py311, stats as counters};
use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::cell::RefCell;
use std::os::raw::{c_int, c_void};
use std::rc::Rc;
use std::time::Instant;

extern "C" {
    fn poppy_shim_init(free_payload: unsafe extern "C" fn(*mut c_void)) -> c_int;
    fn poppy_shim_set_mark(code: *mut ffi::PyObject, payload: *mut c_void) -> c_int;
    fn poppy_shim_get_mark(code: *mut ffi::PyObject) -> *mut c_void;
}

enum EntryState {
    Pending,
    Compiled(Vec<Rc<Compiled>>),
    Fallback,
}

/// The co_extra payload of a @poppy code object (an `Rc`: the original code object and its copy
/// with the interception prologue share one).
pub struct CodeEntry {
    state: RefCell<EntryState>,
    /// The original code object (what is compiled; the prologue copy has extra units).
    code: Obj,
}

impl CodeEntry {
    /// The cached translation for `func`, compiling it on first use.
    pub fn get_or_compile(&self, py: Python<'_>, func: &Bound<'_, PyAny>) -> Option<Rc<Compiled>> {
        let globals = func.getattr("__globals__").ok()?;
        if let Some(found) = self.cached(py, &globals) {
            return found;
        }
        let clock = trace_module(py).and_then(|m| Some((m, Clock::new(py).ok()?)));
        let start = Instant::now();
        let result = compile(py, func, self.code.bind(py));
        let ns = start.elapsed().as_nanos() as u64;
        let name = qualname(func);
        if let Some((m, clock)) = clock {
            let args = PyDict::new_bound(py);
            let _ = args.set_item("fallback", result.as_ref().err());
            let span = (format!("compile {name}"), clock.at(start), clock.at(Instant::now()), args);
            if let Err(e) = m.call_method1("record_phase", span) {
                e.print(py);
            }
        }
        // Another thread may have translated the same function meanwhile (compiling runs Python
        // code, so the GIL can switch): keep the first translation, count it once.
        if let Some(found) = self.cached(py, &globals) {
            return found;
        }
        match result {
            Ok(c) => {
                counters::record_compile(name, ns, None);
                let c = Rc::new(c);
                let mut state = self.state.borrow_mut();
                match &mut *state {
                    // One translation per globals dict the code runs under (a code object shared
                    // by functions of several modules), the most recent few.
                    EntryState::Compiled(cs) => {
                        cs.retain(|old| !old.globals.bind(py).is(&globals));
                        if cs.len() >= MAX_GLOBALS_VARIANTS {
                            cs.remove(0);
                        }
                        cs.push(c.clone());
                    }
                    other => *other = EntryState::Compiled(vec![c.clone()]),
                }
                Some(c)
            }
            Err(reason) => {
                counters::record_compile(name, ns, Some(&reason));
                *self.state.borrow_mut() = EntryState::Fallback;
                NEW_FALLBACKS.with(|n| n.borrow_mut().push((func.clone().unbind(), reason)));
                None
            }
        }
    }

    /// Some(the translation for `globals`, or None for a fallback) if already decided.
    fn cached(&self, py: Python<'_>, globals: &Bound<'_, PyAny>) -> Option<Option<Rc<Compiled>>> {
        match &*self.state.borrow() {
            EntryState::Compiled(cs) => {
                let generation = super::globals::generation();
                cs.iter().find(|c| c.globals.bind(py).is(globals) && c.generation == generation).map(|c| Some(c.clone()))
            }
            EntryState::Fallback => Some(None),
            EntryState::Pending => None,
        }
    }
}

thread_local! {
    /// Functions whose translation just failed on this thread, with the reason, until the hook
    /// reports them (`take_new_fallbacks`): a callee inlined by a caller's translation fails
    /// inside it, so the report cannot be made where the failure is found.
    static NEW_FALLBACKS: RefCell<Vec<(Obj, String)>> = const { RefCell::new(Vec::new()) };
}

/// The fallbacks found on this thread since the last call (each function once: its entry keeps
/// the fallback).
pub fn take_new_fallbacks() -> Vec<(Obj, String)> {
    NEW_FALLBACKS.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

/// Translations kept per code object for different globals dicts.
const MAX_GLOBALS_VARIANTS: usize = 4;

fn entry_of(code: &Bound<'_, PyAny>) -> Option<&'static CodeEntry> {
    let p = unsafe { poppy_shim_get_mark(code.as_ptr()) };
    if p.is_null() {
        None
    } else {
        Some(unsafe { &*(p as *const CodeEntry) })
    }
}

/// The λO program of a @poppy function that a call with `nargs` positional arguments can inline.
pub fn inline_program(py: Python<'_>, f: &Bound<'_, PyAny>, nargs: usize) -> Option<ProgramRef<Obj>> {
    if !f.is_instance_of::<pyo3::types::PyFunction>() {
        return None;
    }
    let code = f.getattr("__code__").ok()?;
    // `*args`/`**kwargs` functions bind their parameters from the frame, not positionally.
    if code.getattr("co_flags").ok()?.extract::<u32>().ok()? & (py311::CO_VARARGS | py311::CO_VARKEYWORDS) != 0 {
        return None;
    }
    let entry = entry_of(&code)?;
    let compiled = entry.get_or_compile(py, f)?;
    (compiled.nfree == 0 && compiled.argcount == nargs).then(|| compiled.program.clone())
}

/// The translation of `f` for a call from compiled code: a @poppy function's, or when `internal`
/// (the program's own code, `poppy_jit._config.is_internal`) a plain function's, its code object
/// marked now and compiled at this first call (cached like a @poppy function's). None: not
/// compiled (a fallback, recorded with its reason).
pub fn compiled_for_call(py: Python<'_>, f: &Bound<'_, PyAny>, internal: bool) -> Option<Rc<Compiled>> {
    if !f.is_instance_of::<pyo3::types::PyFunction>() {
        return None;
    }
    let code = f.getattr("__code__").ok()?;
    let entry = match entry_of(&code) {
        Some(e) => e,
        None if internal => {
            mark_poppy(py, &code).ok()?;
            entry_of(&code)?
        }
        None => return None,
    };
    entry.get_or_compile(py, f)
}

unsafe extern "C" fn free_entry(p: *mut c_void) {
    if !p.is_null() {
        drop(Rc::from_raw(p as *const CodeEntry));
    }
}

/// Reserve the co_extra index of the marks (idempotent).
pub fn ensure_init() -> PyResult<()> {
    if unsafe { poppy_shim_init(free_entry) } != 0 {
        return Err(PyRuntimeError::new_err("poppy_jit: could not reserve a co_extra index"));
    }
    Ok(())
}

/// Flag a code object as internal (@poppy).
pub fn mark_poppy(py: Python<'_>, code: &Bound<'_, PyAny>) -> PyResult<()> {
    ensure_init()?;
    if entry_of(code).is_some() {
        return Ok(());
    }
    let entry = Rc::new(CodeEntry { state: RefCell::new(EntryState::Pending), code: code.clone().unbind() });
    set_mark(py, code, &entry)
}

/// The code object `code` was copied from to add the interception prologue, if it is such a
/// copy (else `code` itself): what is compiled.
pub fn original_code<'py>(code: Bound<'py, PyAny>) -> Bound<'py, PyAny> {
    match entry_of(&code) {
        Some(e) => e.code.bind(code.py()).clone(),
        None => code,
    }
}

/// Attach `entry` to `code` (the prologue copy of a code object shares the original's entry).
pub fn set_mark(py: Python<'_>, code: &Bound<'_, PyAny>, entry: &Rc<CodeEntry>) -> PyResult<()> {
    let raw = Rc::into_raw(entry.clone());
    if unsafe { poppy_shim_set_mark(code.as_ptr(), raw as *mut c_void) } != 0 {
        drop(unsafe { Rc::from_raw(raw) });
        return Err(PyErr::fetch(py));
    }
    Ok(())
}

/// The entry `code` is marked with.
pub fn entry_rc(code: &Bound<'_, PyAny>) -> Option<Rc<CodeEntry>> {
    let p = unsafe { poppy_shim_get_mark(code.as_ptr()) };
    if p.is_null() {
        return None;
    }
    let p = p as *const CodeEntry;
    unsafe {
        Rc::increment_strong_count(p);
        Some(Rc::from_raw(p))
    }
}
