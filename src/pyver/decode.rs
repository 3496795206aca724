//! Decoding `co_code` for the versions after 3.11 (same code-unit format: opcode and argument
//! bytes, `EXTENDED_ARG` prefixes, inline `CACHE` entries whose number depends on the opcode).
//! The version's `opcode` module supplies the cache sizes; this module knows no opcode meanings.

/// One instruction as `co_code` holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawInstr {
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

/// The instructions of `code`; `lines` as in `CodeInfo::lines`.
pub fn instructions(
    code: &[u8],
    lines: &[(u32, u32, u32)],
    cache_entries: fn(u8) -> usize,
    extended_arg: u8,
) -> Vec<RawInstr> {
    let mut pos = 0;
    std::iter::from_fn(|| next_instr(code, lines, &mut pos, cache_entries, extended_arg)).collect()
}

/// Decodes the instruction at byte `*pos` of `code` and moves `*pos` past it (its
/// `EXTENDED_ARG` prefixes and inline caches); None at the end. Every version's decoder is this
/// step with its own cache sizes.
#[inline]
pub fn next_instr(
    code: &[u8],
    lines: &[(u32, u32, u32)],
    pos: &mut usize,
    cache_entries: impl Fn(u8) -> usize,
    extended_arg: u8,
) -> Option<RawInstr> {
    let start = *pos;
    let mut ext: u32 = 0;
    while *pos + 1 < code.len() {
        let (op, arg) = (code[*pos], code[*pos + 1] as u32);
        let op_offset = *pos as u32;
        *pos += 2 * (1 + cache_entries(op));
        if op == extended_arg {
            ext = (ext | arg) << 8;
            continue;
        }
        let line = lines.iter().find(|&&(s, e, _)| s <= op_offset && op_offset < e).map_or(0, |l| l.2);
        return Some(RawInstr { offset: start as u32, op_offset, opcode: op, arg: ext | arg, line });
    }
    None
}

/// The test of a version's decoder against `dis.get_instructions`, on a function that needs
/// `EXTENDED_ARG` (more than 256 constants) and has jumps, caches and lines.
#[cfg(test)]
#[allow(unused_macros)] // used only when built for 3.12 or 3.13
macro_rules! decoder_tests {
    () => {
        #[test]
        fn decoder_matches_dis() {
            use pyo3::prelude::*;
            use pyo3::types::PyDict;
            pyo3::prepare_freethreaded_python();
            Python::with_gil(|py| {
                let ns = PyDict::new_bound(py);
                let mut src = String::from("import dis\ndef f(a):\n");
                for i in 0..300 {
                    src.push_str(&format!("    a = a + {i}.5\n"));
                }
                src.push_str("    for x in a:\n        if x:\n            g(x.y, k=a[1])\n    return [b for b in a]\n");
                src.push_str(
                    "expected = [(i.offset, i.opcode, i.arg or 0, i.positions.lineno or 0)\n\
                     for i in dis.get_instructions(f) if i.opname != 'EXTENDED_ARG']\n",
                );
                py.run_bound(&src, Some(&ns), None).unwrap();
                let expected: Vec<(u32, u8, u32, u32)> = ns.get_item("expected").unwrap().unwrap().extract().unwrap();
                let f = ns.get_item("f").unwrap().unwrap();
                let ci = crate::py311::code_info(&f.getattr("__code__").unwrap()).unwrap();
                let ours = super::instructions(&ci.code, &ci.lines);
                let got: Vec<(u32, u8, u32, u32)> = ours.iter().map(|i| (i.op_offset, i.opcode, i.arg, i.line)).collect();
                assert_eq!(got, expected);
                let extended: Vec<_> = ours.iter().filter(|i| i.offset != i.op_offset).collect();
                assert!(!extended.is_empty() && extended.iter().all(|i| i.arg > 255 && i.op_offset == i.offset + 2));
            });
        }

        #[test]
        fn exception_table_matches_dis() {
            use pyo3::prelude::*;
            use pyo3::types::PyDict;
            pyo3::prepare_freethreaded_python();
            Python::with_gil(|py| {
                let ns = PyDict::new_bound(py);
                py.run_bound(
                    "import dis\n\
                     def f(x):\n    try:\n        g(x)\n    except E as e:\n        h(e)\n    finally:\n        k()\n\
                     expected = [(e.start, e.end, e.target, e.depth, e.lasti) for e in dis._parse_exception_table(f.__code__)]\n",
                    Some(&ns),
                    None,
                )
                .unwrap();
                let expected: Vec<(u32, u32, u32, u32, bool)> = ns.get_item("expected").unwrap().unwrap().extract().unwrap();
                let f = ns.get_item("f").unwrap().unwrap();
                let ci = crate::py311::code_info(&f.getattr("__code__").unwrap()).unwrap();
                let got: Vec<_> = super::super::exception_table::entries(&ci.exceptiontable)
                    .iter()
                    .map(|e| (e.start, e.end, e.target, e.depth, e.lasti))
                    .collect();
                assert!(expected.len() >= 3);
                assert_eq!(got, expected);
            });
        }
    };
}
#[cfg(test)]
#[allow(unused_imports)]
pub(crate) use decoder_tests;
