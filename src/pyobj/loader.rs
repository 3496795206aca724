//! The global-loader primitive: LOAD_GLOBAL as a callable object, made when a function is
//! compiled and recognised by the host (a Rust fast path, no call into Python).
use super::Obj;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// LOAD_GLOBAL as an external: looks a name up in a function's globals, then its builtins.
/// Global loads are single-assignment reads (PopPy §7), classified unordered; the host runs
/// them without calling into Python.
#[pyclass(module = "poppy_jit._core", frozen)]
pub struct GlobalLoader {
    globals: Py<PyDict>,
    builtins: Py<PyDict>,
}

impl GlobalLoader {
    pub fn new(py: Python<'_>, globals: Bound<'_, PyDict>) -> PyResult<Self> {
        let builtins = match globals.get_item("__builtins__")? {
            Some(b) => match b.downcast::<PyDict>() {
                Ok(d) => d.clone(),
                Err(_) => b.getattr("__dict__")?.downcast_into::<PyDict>()?,
            },
            None => py.import_bound("builtins")?.dict(),
        };
        Ok(GlobalLoader { globals: globals.unbind(), builtins: builtins.unbind() })
    }

    /// The globals dict the loader reads.
    pub fn globals(&self) -> &Py<PyDict> {
        &self.globals
    }

    pub fn lookup(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Obj> {
        if let Some(v) = self.globals.bind(py).get_item(name)? {
            return Ok(v.unbind());
        }
        if let Some(v) = self.builtins.bind(py).get_item(name)? {
            return Ok(v.unbind());
        }
        // With its `name`, as CPython's: the traceback's caret and "Did you mean" use it.
        let err = pyo3::exceptions::PyNameError::new_err(format!("name '{name}' is not defined"));
        err.value_bound(py).setattr("name", name)?;
        Err(err)
    }
}

#[pymethods]
impl GlobalLoader {
    #[classattr]
    #[allow(non_upper_case_globals)]
    const __poppy_unordered_loader__: bool = true;

    fn __call__(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Obj> {
        self.lookup(py, name)
    }
}
