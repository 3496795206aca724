//! Python objects that compiling and running both need: `Obj` (the λO primitive of the Python
//! host), the global-loader primitive (`loader`), what Rust and Python share by definition
//! (`contract`: reordering class codes and names, immutable atoms), the Python support modules
//! the runtime reads (`poppy_jit._rt`, `poppy_jit._trace`) and the clock that puts Rust instants
//! on Python's `perf_counter` timeline.
//!
//! Below `pipeline` and `host` (both use it); of the crate it uses only `control::Class`.
use pyo3::prelude::*;

pub mod contract;
pub mod loader;

pub use loader::GlobalLoader;

pub type Obj = Py<PyAny>;

pub fn rt_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import_bound("poppy_jit._rt")
}

/// `poppy_jit._trace` if tracing is enabled.
pub fn trace_module(py: Python<'_>) -> Option<Bound<'_, PyAny>> {
    let m = py.import_bound("poppy_jit._trace").ok()?;
    m.getattr("enabled").ok()?.is_truthy().ok()?.then(|| m.into_any())
}

/// Instants as `time.perf_counter()` seconds (both are CLOCK_MONOTONIC based; anchored on one
/// simultaneous reading, so the conversion is exact up to the reading's own cost).
pub struct Clock {
    py_now: f64,
    rs_now: std::time::Instant,
}

impl Clock {
    pub fn new(py: Python<'_>) -> PyResult<Self> {
        let py_now = py.import_bound("time")?.call_method0("perf_counter")?.extract()?;
        Ok(Clock { py_now, rs_now: std::time::Instant::now() })
    }
    pub fn at(&self, t: std::time::Instant) -> f64 {
        if t <= self.rs_now {
            self.py_now - (self.rs_now - t).as_secs_f64()
        } else {
            self.py_now + (t - self.rs_now).as_secs_f64()
        }
    }
}

/// A function's `__qualname__` (for messages and the statistics).
pub fn qualname(func: &Bound<'_, PyAny>) -> String {
    func.getattr("__qualname__").and_then(|q| q.extract()).unwrap_or_else(|_| "<function>".into())
}
