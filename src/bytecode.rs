//! The running interpreter's code object in the form the lifter translates: 3.11's `CodeInfo`
//! as it is, 3.12's normalised (`py312::normalise`), 3.13's normalised through 3.12's forms
//! (`py313::normalise`). The one place the pipeline (and the golden lift tests) get bytecode
//! from, so that version differences end here. It sits above the version rooms (`pyver`, which
//! says which version this build is for, and `py311`/`py312`/`py313`) and below `lift`'s users.

/// The code object `code` in the form the lifter translates, or the fallback reason.
pub fn lifter_code_info(code: &pyo3::Bound<'_, pyo3::PyAny>) -> Result<crate::py311::CodeInfo, String> {
    let ci = crate::py311::code_info(code).map_err(|e| format!("reading the code object: {e}"))?;
    if cfg!(poppy_py = "3.12") {
        crate::py312::normalise::normalise(&ci)
    } else if cfg!(poppy_py = "3.13") {
        crate::py313::normalise::normalise(&ci)
    } else {
        Ok(ci)
    }
}
