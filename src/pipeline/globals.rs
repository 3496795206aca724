//! Which global reads of a compiled function are made in program order.
//!
//! A global that no code can rebind while a run goes on is read once, eagerly (the host's global
//! loader, unordered: loading `print` or `llm` never waits). A global that code of the module
//! can rebind — a name some function of the module stores or deletes (`global X; X = ...`), or
//! any name when such code uses `globals`/`exec`/`eval`/`vars`/`setattr` — is read by the
//! `load_global` intrinsic, a readonly call: after every earlier sequential call, without
//! serialising later ones. The scan of the module (`poppy_jit._rt.rebindable_globals`) is cached
//! per module dict and its version tag. Rebinding the scan cannot see (another module's
//! `mod.X = ...`) is caught by the host's guard, which marks the name (`mark_rebindable`) and
//! bumps `generation`, so translations made before are made again.
//!
//! Uses the Bezoar IR and the Python runtime module; knows nothing of running.
use crate::bezoar::{Block, Const, Expr, Function, Intrinsic, StmtKind};
use crate::pyobj::rt_module;
use pyo3::prelude::*;
use pyo3::types::PyFrozenSet;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

extern "C" {
    fn poppy_shim_dict_version(dict: *mut pyo3::ffi::PyObject) -> u64;
}

/// The version tag of a dict (changes whenever it is modified).
pub fn dict_version(d: &Bound<'_, PyAny>) -> u64 {
    debug_assert!(d.is_instance_of::<pyo3::types::PyDict>());
    // SAFETY: `d` is a live dict (the caller's globals dict), the GIL is held.
    unsafe { poppy_shim_dict_version(d.as_ptr()) }
}

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Bumped whenever the guard marks a name rebindable: translations of an older generation are
/// made again (they may read that name eagerly).
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// The guard saw `name` rebound in `globals` behind a run's back: from now on it is read in
/// program order.
pub fn mark_rebindable(py: Python<'_>, globals: &Bound<'_, PyAny>, name: &Bound<'_, PyAny>) {
    if let Ok(rt) = rt_module(py) {
        if let Err(e) = rt.call_method1("mark_rebindable", (globals, name)) {
            e.print(py);
        }
    }
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The names code of the module can rebind; None for every name.
pub enum Rebindable {
    All,
    Names(HashSet<String>),
}

impl Rebindable {
    fn contains(&self, n: &str) -> bool {
        match self {
            Rebindable::All => true,
            Rebindable::Names(s) => s.contains(n),
        }
    }
}

/// The scan of `globals` (cached per dict and version by the runtime module).
pub fn rebindable(py: Python<'_>, globals: &Bound<'_, PyAny>) -> Result<Rebindable, String> {
    let version = dict_version(globals);
    let r = rt_module(py)
        .and_then(|rt| rt.call_method1("rebindable_globals", (globals, version)))
        .map_err(|e| format!("scanning the module's globals: {e}"))?;
    if r.is_none() {
        return Ok(Rebindable::All);
    }
    let set = r.downcast_into::<PyFrozenSet>().map_err(|e| e.to_string())?;
    Ok(Rebindable::Names(set.iter().filter_map(|n| n.extract::<String>().ok()).collect()))
}

/// Rewrite every `global name` read of a rebindable name into `load_global.name(globals)`.
pub fn order_global_reads(f: &mut Function, names: &Rebindable) {
    if let Rebindable::Names(s) = names {
        if s.is_empty() {
            return;
        }
    }
    let g = f.nregs;
    let mut changed = false;
    rewrite(&mut f.body, names, g, &mut changed);
    if changed {
        f.nregs += 1;
        let k = match f.consts.iter().position(|c| matches!(c, Const::Globals)) {
            Some(k) => k,
            None => {
                f.consts.push(Const::Globals);
                f.consts.len() - 1
            }
        };
        let line = f.body.first().map_or(f.firstlineno, |s| s.line);
        f.body.insert(0, crate::bezoar::Stmt { kind: StmtKind::Let(g, Expr::Const(k as u32)), line });
    }
}

fn rewrite(b: &mut Block, names: &Rebindable, g: u32, changed: &mut bool) {
    for s in b.iter_mut() {
        match &mut s.kind {
            StmtKind::Let(_, e) => {
                if let Expr::Global(n) = e {
                    if names.contains(n) {
                        *e = Expr::Op(Intrinsic::LoadGlobal(n.clone()), vec![g]);
                        *changed = true;
                    }
                }
            }
            StmtKind::If { then_body, else_body, .. } => {
                rewrite(then_body, names, g, changed);
                rewrite(else_body, names, g, changed);
            }
            StmtKind::For { body, .. } | StmtKind::Loop { body } => rewrite(body, names, g, changed),
            StmtKind::Try { .. } => s.kind.blocks_mut().into_iter().for_each(|b| rewrite(b, names, g, changed)),
            _ => {}
        }
    }
}

/// The free variables of `func` (compiled from `code`) that other code may write while it runs
/// (`poppy_jit._rt.written_free_vars`): read through their cell, in program order.
pub fn written_free_vars(py: Python<'_>, func: &Bound<'_, PyAny>, code: &Bound<'_, PyAny>) -> Result<HashSet<String>, String> {
    let r = rt_module(py)
        .and_then(|rt| rt.call_method1("written_free_vars", (func, code)))
        .map_err(|e| format!("scanning the enclosing function: {e}"))?;
    let set = r.downcast_into::<PyFrozenSet>().map_err(|e| e.to_string())?;
    Ok(set.iter().filter_map(|n| n.extract::<String>().ok()).collect())
}
