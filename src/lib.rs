//! poppy_jit: CPython 3.11 bytecode → Bezoar → λO, run by an opportunistic evaluator whose
//! external calls are ordered by concurrency controllers. See docs/ARCHITECTURE.md.
pub mod api;
pub mod bezoar;
pub mod control;
pub mod explain;
pub mod hook;
pub mod host;
pub mod lambda_o;
pub mod lift;
pub mod lower;
pub mod pipeline;
pub mod py311;
pub mod pyobj;
pub mod stats;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    api::register(m)?;
    explain::register(m)?;
    Ok(())
}
