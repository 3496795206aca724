//! PEP 523 hook (Rust side): installs the shim's eval-frame function and runs @poppy frames.
use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
