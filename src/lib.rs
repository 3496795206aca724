//! poppy_jit: CPython bytecode → Bezoar → λO, run by an opportunistic evaluator whose external
//! calls are ordered by concurrency controllers. See docs/ARCHITECTURE.md (and docs/versions.md:
//! 3.11, 3.12 and 3.13 compile, see `pyver` and `bytecode`).
pub mod api;
pub mod bezoar;
pub mod bytecode;
pub mod control;
pub mod explain;
pub mod hook;
pub mod host;
pub mod lambda_o;
pub mod lift;
pub mod lower;
pub mod oom;
pub mod pipeline;
pub mod py311;
pub mod py312;
pub mod py313;
pub mod pyobj;
pub mod pyver;
pub mod stats;

use pyo3::prelude::*;

#[global_allocator]
static ALLOCATOR: oom::Guarded = oom::Guarded;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    api::register(m)?;
    explain::register(m)?;
    Ok(())
}
