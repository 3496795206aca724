//! Bezoar IR (PopPy §5): data types, text form, and passes.
pub mod ir;
pub mod passes;
pub mod text;

pub use ir::*;
