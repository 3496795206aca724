//! What Rust and Python must agree on, defined once in `poppy_jit._contract` (plain Python: plain
//! mode, which never imports `_core`, uses the same definitions) and read here when `_core` is
//! imported (`init`): the reordering classes by code and name, and the immutable atoms.
use crate::control::Class;
use pyo3::exceptions::PyImportError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyType;

/// The reordering classes by code: the annotation library's `classify` returns the index, and
/// `_contract.CLASS_NAMES` lists their `Class::name()`s in this order (checked by `init`).
pub const CLASSES: [Class; 3] = [Class::Unordered, Class::Readonly, Class::Sequential];

/// The class `classify` means by `code`.
pub fn class_of_code(code: u8) -> Option<Class> {
    CLASSES.get(code as usize).copied()
}

/// The class an external's declared `kind` names.
pub fn class_of_name(name: &str) -> Option<Class> {
    CLASSES.into_iter().find(|c| c.name() == name)
}

/// `_contract.ATOMS`, read by `init`.
static ATOMS: GILOnceCell<Vec<Py<PyType>>> = GILOnceCell::new();

/// Whether `o`'s exact type is an immutable atom (`_contract.ATOMS`). False before `init`.
pub fn is_atom(o: &Bound<'_, PyAny>) -> bool {
    let Some(atoms) = ATOMS.get(o.py()) else { return false };
    let t = o.get_type_ptr();
    atoms.iter().any(|a| a.as_ptr() as *mut pyo3::ffi::PyTypeObject == t)
}

/// Read `poppy_jit._contract`; an error (the import of `_core` fails) if its classes are not
/// `CLASSES`.
pub fn init(py: Python<'_>) -> PyResult<()> {
    let m = py.import_bound("poppy_jit._contract")?;
    let names: Vec<String> = m.getattr("CLASS_NAMES")?.extract()?;
    let ours: Vec<&str> = CLASSES.iter().map(|c| c.name()).collect();
    if names != ours {
        return Err(PyImportError::new_err(format!(
            "poppy_jit._contract.CLASS_NAMES is {names:?}, the runtime's classes are {ours:?}"
        )));
    }
    let atoms = m
        .getattr("ATOMS")?
        .iter()?
        .map(|t| Ok(t?.downcast_into::<PyType>()?.unbind()))
        .collect::<PyResult<Vec<_>>>()?;
    let _ = ATOMS.set(py, atoms);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for (code, class) in CLASSES.into_iter().enumerate() {
            assert_eq!(class_of_code(code as u8), Some(class));
            assert_eq!(class_of_name(class.name()), Some(class));
        }
        assert_eq!(class_of_code(3), None);
        assert_eq!(class_of_name("ordered"), None);
    }
}
