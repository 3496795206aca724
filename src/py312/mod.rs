//! Everything specific to CPython 3.12 bytecode, beside `py311/`: opcode numbers and
//! inline-cache sizes (`opcode`, checked against the interpreter's `opcode`/`dis` when built
//! for 3.12) and decoding (`decode`). Reading a code object (`CodeInfo`) and the exception-table
//! format are unchanged from 3.11 and re-exported (the tests here check that on 3.12).
//!
//! `normalise` rewrites a 3.12 code object into the 3.11 one the lifter translates (docs/versions.md
//! lists the rewrites); `bytecode::lifter_code_info` applies it.
//! Depends on `py311` (shared code-object reading, the target forms) and `pyver` (the table
//! macro, the decoder).
mod breaks;
mod finally;
mod handlers;
pub mod normalise;
pub mod opcode;

pub use crate::py311::exception_table;
pub use crate::py311::{code_info, CodeInfo};

pub mod decode {
    //! `co_code` → instructions, with 3.12's cache sizes.
    pub use crate::pyver::decode::RawInstr;

    pub fn instructions(code: &[u8], lines: &[(u32, u32, u32)]) -> Vec<RawInstr> {
        crate::pyver::decode::instructions(code, lines, super::opcode::cache_entries, super::opcode::EXTENDED_ARG)
    }

    #[cfg(all(test, poppy_py = "3.12"))]
    mod tests {
        crate::pyver::decode::decoder_tests!();
    }
}
