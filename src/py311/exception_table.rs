//! Decoding 3.11's `co_exceptiontable` (the format of CPython's
//! `Objects/exception_handling_notes.txt`, read by `dis._parse_exception_table`).
//!
//! Each entry is four varints — start, length, handler target (in 2-byte code units) and
//! `depth << 1 | lasti` — each written as 6-bit chunks, most significant first, bit 6 marking
//! that another chunk follows; bit 7 marks the first byte of an entry.

/// One protected range and its handler, offsets in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub start: u32,
    pub end: u32,
    pub target: u32,
    /// Stack depth at the handler.
    pub depth: u32,
    /// Whether the offset of the raising instruction is pushed too.
    pub lasti: bool,
}

/// The entries of `table`. (A table cut short reads as if padded with zero bytes.)
pub fn entries(table: &[u8]) -> Vec<Entry> {
    let mut r = Reader { table, pos: 0 };
    let mut out = Vec::new();
    while r.pos < table.len() {
        let (start, length, target, depth_lasti) = (r.varint(), r.varint(), r.varint(), r.varint());
        out.push(Entry {
            start: 2 * start,
            end: 2 * (start + length),
            target: 2 * target,
            depth: depth_lasti >> 1,
            lasti: depth_lasti & 1 != 0,
        });
    }
    out
}

struct Reader<'a> {
    table: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        self.pos += 1;
        self.table.get(self.pos - 1).copied().unwrap_or(0)
    }

    fn varint(&mut self) -> u32 {
        let mut b = self.byte();
        let mut v = (b & 63) as u32;
        while b & 64 != 0 {
            b = self.byte();
            v = (v << 6) | (b & 63) as u32;
        }
        v
    }
}

/// Byte offset of the first protected instruction, if the table has an entry.
pub fn first_protected(table: &[u8]) -> Option<u32> {
    entries(table).first().map(|e| e.start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::py311::code_info;
    use pyo3::prelude::*;
    use pyo3::types::PyDict;

    /// Compares the decoder with `dis._parse_exception_table` on try/except, try/finally, with
    /// and nested handlers.
    #[test]
    fn entries_match_dis() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            let src = "import dis\n\
                       def f(a):\n    try:\n        a = g(a)\n    except E as e:\n        try:\n            h(e)\n        \
                       finally:\n            a = 0\n    with cm() as c:\n        a += c\n    return a\n\
                       expected = [(e.start, e.end, e.target, e.depth, e.lasti)\n\
                       for e in dis._parse_exception_table(f.__code__)]\n";
            py.run_bound(src, Some(&ns), None).unwrap();
            let expected: Vec<(u32, u32, u32, u32, bool)> = ns.get_item("expected").unwrap().unwrap().extract().unwrap();
            let ci = code_info(&ns.get_item("f").unwrap().unwrap().getattr("__code__").unwrap()).unwrap();
            let got: Vec<(u32, u32, u32, u32, bool)> =
                entries(&ci.exceptiontable).iter().map(|e| (e.start, e.end, e.target, e.depth, e.lasti)).collect();
            assert!(expected.len() > 3);
            assert_eq!(got, expected);
            assert_eq!(first_protected(&ci.exceptiontable), Some(expected[0].0));
            assert_eq!(first_protected(&[]), None);
        });
    }
}

/// `co_exceptiontable` for `entries` (the inverse of [`entries`]; the normalisations write it).
pub fn encode(entries: &[Entry]) -> Vec<u8> {
    fn varint(out: &mut Vec<u8>, v: u32, first: bool) {
        let mut chunks = vec![v & 63];
        let mut v = v >> 6;
        while v != 0 {
            chunks.push(v & 63);
            v >>= 6;
        }
        let n = chunks.len();
        for (k, c) in chunks.into_iter().rev().enumerate() {
            let mut b = c as u8 | if k + 1 < n { 64 } else { 0 };
            if first && k == 0 {
                b |= 128;
            }
            out.push(b);
        }
    }
    let mut out = Vec::new();
    for e in entries {
        varint(&mut out, e.start / 2, true);
        varint(&mut out, (e.end - e.start) / 2, false);
        varint(&mut out, e.target / 2, false);
        varint(&mut out, (e.depth << 1) | e.lasti as u32, false);
    }
    out
}
