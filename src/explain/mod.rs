//! explain: static analyses behind `python -m poppy_jit explain`.
//!
//! - `overlap`: which external call sites of a compiled function may be in flight at the same
//!   time, computed on the Bezoar IR with the runtime's own ordering rules (`crate::control`'s
//!   `Policy`, the evaluator's per-object ordering) and classification (an `Oracle`), and the
//!   reason the others never are. `build` turns the IR into an event graph of one run, `graph`
//!   answers "may q start before p finished" on it.
//! - `py`: the Python entry (`_core.overlaps`) and the oracle backed by the Python host.
//!
//! Depends on `bezoar`, `control`, `lambda_o::Class` and, for the Python entry only, on `hook`
//! (the compile pipeline) and `host` (classification). Nothing depends on it.
pub mod build;
pub mod graph;
pub mod oracle;
pub mod overlap;
mod py;
#[cfg(test)]
mod tests;

pub use overlap::{analyse, Analysis, SiteReport, Where};
pub use py::register;
