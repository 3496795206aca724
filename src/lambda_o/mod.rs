//! λO (OPAL §3): terms, text form, host boundary and the opportunistic evaluator.
pub mod eval;
pub mod host;
pub mod prune;
pub mod term;
pub mod text;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod gen_tests;
/// The simulated host of the Rust tests; public (hidden) for the golden tests in tests/golden.rs.
#[doc(hidden)]
pub mod testhost;

pub use host::*;
pub use term::*;
