//! Compiling @poppy functions, and the translations kept per code object.
//!
//! - `compile`: a function's bytecode → Bezoar (`lift`) → Bezoar passes → λO (`lower`, which
//!   prunes dead statements), with Python objects as primitives (`factory`). `compile_function`
//!   is the entry point; an `Err` is the fallback reason.
//! - `cache`: the co_extra payload of a @poppy code object (`CodeEntry`: its translation per
//!   globals dict, or its fallback), compiled on first use, and `inline_program`, what the host
//!   inlines for a call of a @poppy function.
//!
//! - `globals`: which global reads are made in program order (the module scan, the guard's
//!   marks), and the rewrite of those reads into `load_global`.
//!
//! Used by `hook` (running an intercepted frame), `host` (inlining) and `api` (`explain`,
//! `mark_poppy`); it must not depend on any of them.
mod cache;
mod compile;
mod factory;
pub mod globals;

pub use cache::{compiled_for_call, ensure_init, entry_rc, inline_program, mark_poppy, set_mark, take_new_fallbacks, CodeEntry};
pub use compile::{program_text, Compiled};
pub use factory::{const_to_py, PyFactory};

use pyo3::prelude::*;

/// Compile a Python function: bytecode → Bezoar → λO (a @poppy function from its original code,
/// not the copy with the interception prologue). Err is the fallback reason. Not cached: the
/// runtime's translations come from `CodeEntry::get_or_compile`.
pub fn compile_function(py: Python<'_>, func: &Bound<'_, PyAny>) -> Result<Compiled, String> {
    let code = func.getattr("__code__").map_err(|e| e.to_string())?;
    compile::compile(py, func, &cache::original_code(code))
}
