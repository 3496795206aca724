//! Test helpers for the version normalisations (`py312::normalise`, `py313::normalise`), which
//! all end in 3.11's form: the code object of a function written in Python, the 3.11 names of a
//! code's instructions, and the well-formedness every normalised code must have.

use super::decode::{instructions, Instr};
use super::{code_info, exception_table, CodeInfo};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashSet;

/// The `CodeInfo` (as the running interpreter made it) of the function `f` that `src` defines.
pub(crate) fn code_info_of(src: &str) -> CodeInfo {
    pyo3::prepare_freethreaded_python();
    Python::with_gil(|py| {
        let ns = PyDict::new_bound(py);
        py.run_bound(src, Some(&ns), None).unwrap();
        let code = ns.get_item("f").unwrap().unwrap().getattr("__code__").unwrap();
        code_info(&code).unwrap()
    })
}

/// The 3.11 opcode names of `ci`'s instructions.
pub(crate) fn names(ci: &CodeInfo) -> Vec<&'static str> {
    instructions(&ci.code, &ci.lines).map(|i| i.name()).collect()
}

/// Every jump lands on an instruction, every instruction has a line, every table entry covers
/// instructions and targets one (3.11 form); the same for the nested code objects.
pub(crate) fn well_formed(ci: &CodeInfo) {
    let ins: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
    let starts: HashSet<u32> = ins.iter().map(|i| i.offset).collect();
    for i in &ins {
        if let Some(t) = i.jump_target() {
            assert!(starts.contains(&t), "{} at {} to {t}", i.name(), i.offset);
        }
    }
    assert_eq!(ci.lines.last().map(|l| l.1), Some(ci.code.len() as u32));
    for e in exception_table::entries(&ci.exceptiontable) {
        assert!(starts.contains(&e.start) && starts.contains(&e.target) && e.start < e.end, "{e:?}");
    }
    ci.children.values().for_each(well_formed);
}
