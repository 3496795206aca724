//! Decoding `co_code` into instructions: `EXTENDED_ARG` prefixes folded into the argument, inline
//! `CACHE` entries skipped, each instruction tagged with its source line (the decoding step is
//! `pyver::decode::next_instr`, shared by every version; `Instr` adds 3.11's jump meanings).
use super::opcode::{self, EXTENDED_ARG};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instr {
    /// Byte offset of the instruction including its `EXTENDED_ARG` prefixes (what jumps target).
    pub offset: u32,
    /// Byte offset of the opcode itself (after any prefixes).
    pub op_offset: u32,
    pub opcode: u8,
    /// The argument with `EXTENDED_ARG` prefixes folded in.
    pub arg: u32,
    /// Source line from `co_lines()`, 0 when the instruction has none.
    pub line: u32,
}

impl Instr {
    /// Byte offset of the instruction that follows, past the inline caches.
    pub fn next_offset(&self) -> u32 {
        self.op_offset + 2 + 2 * opcode::cache_entries(self.opcode) as u32
    }

    /// The jump target if this is a jump.
    pub fn jump_target(&self) -> Option<u32> {
        opcode::jump_target(self.op_offset, self.opcode, self.arg)
    }

    pub fn name(&self) -> &'static str {
        opcode::name(self.opcode)
    }
}

/// Iterates over the instructions of `code`; `lines` is `CodeInfo::lines`.
pub struct Instructions<'a> {
    code: &'a [u8],
    lines: &'a [(u32, u32, u32)],
    pos: usize,
}

pub fn instructions<'a>(code: &'a [u8], lines: &'a [(u32, u32, u32)]) -> Instructions<'a> {
    Instructions { code, lines, pos: 0 }
}

impl Iterator for Instructions<'_> {
    type Item = Instr;

    fn next(&mut self) -> Option<Instr> {
        let r = crate::pyver::decode::next_instr(self.code, self.lines, &mut self.pos, opcode::cache_entries, EXTENDED_ARG)?;
        Some(Instr { offset: r.offset, op_offset: r.op_offset, opcode: r.opcode, arg: r.arg, line: r.line })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::py311::code_info;
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    /// Compares the decoder with `dis.get_instructions` on a function large enough to need
    /// EXTENDED_ARG (more than 256 constants) and with jumps, caches and lines.
    #[test]
    fn decoder_matches_dis() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            let mut src = String::from("import dis\ndef f(a):\n");
            for i in 0..300 {
                src.push_str(&format!("    a = a + {i}.5\n"));
            }
            src.push_str("    for x in a:\n        if x:\n            g(x.y, k=a[1])\n    return a\n");
            src.push_str(
                "expected = [(i.offset, i.opcode, i.arg or 0, i.positions.lineno or 0)\n\
                 for i in dis.get_instructions(f) if i.opname != 'EXTENDED_ARG']\n",
            );
            py.run_bound(&src, Some(&ns), None).unwrap();
            let expected: Vec<(u32, u8, u32, u32)> = ns.get_item("expected").unwrap().unwrap().extract().unwrap();
            let ci = code_info(&ns.get_item("f").unwrap().unwrap().getattr("__code__").unwrap()).unwrap();
            let ours: Vec<Instr> = instructions(&ci.code, &ci.lines).collect();
            let got: Vec<(u32, u8, u32, u32)> = ours.iter().map(|i| (i.op_offset, i.opcode, i.arg, i.line)).collect();
            assert_eq!(got, expected);
            let extended: Vec<&Instr> = ours.iter().filter(|i| i.offset != i.op_offset).collect();
            assert!(!extended.is_empty() && extended.iter().all(|i| i.arg > 255 && i.op_offset == i.offset + 2));
        });
    }
}
