//! Decoding 3.11's `co_exceptiontable` (the format of CPython's
//! `Objects/exception_handling_notes.txt`, read by `dis._parse_exception_table`).
//!
//! Each entry is four varints — start, length, handler target (in 2-byte code units) and
//! `depth << 1 | lasti` — each written as 6-bit chunks, most significant first, bit 6 marking
//! that another chunk follows; bit 7 marks the first byte of an entry.
//!
//! `handler_kind`/`constructs` recognise which statement a handler belongs to.
use crate::py311::decode::Instr;

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

/// The statement a handler of the table belongs to, recognised from the handler's first
/// instructions (to name it when a function falls back, and for lifting handlers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerKind {
    /// `try: … except …:` (typed or bare handlers).
    Except,
    /// `try: … finally:` (the exceptional copy of the finally body).
    Finally,
    /// `try: … except* …:`.
    ExceptStar,
    With,
    AsyncWith,
    /// The `END_ASYNC_FOR` handler that ends an `async for` loop.
    AsyncFor,
}

impl HandlerKind {
    pub fn name(self) -> &'static str {
        match self {
            HandlerKind::Except => "try/except",
            HandlerKind::Finally => "try/finally",
            HandlerKind::ExceptStar => "except*",
            HandlerKind::With => "with",
            HandlerKind::AsyncWith => "async with",
            HandlerKind::AsyncFor => "async for",
        }
    }
}

/// The kind of the handler at byte offset `target`, or None for the table's other targets (the
/// clean-up blocks that restore the exception state or unbind `as` names). A statement's own
/// handler starts with `PUSH_EXC_INFO` (or is `END_ASYNC_FOR`); what follows tells them apart:
/// `WITH_EXCEPT_START` (then `GET_AWAITABLE` for `async with`), `CHECK_EG_MATCH`,
/// `CHECK_EXC_MATCH` or a bare handler's `POP_TOP` of the exception; a finally body reaches its
/// `RERAISE`/`POP_EXCEPT`/return (or a nested statement's own `PUSH_EXC_INFO`) first.
pub fn handler_kind(instrs: &[Instr], target: u32) -> Option<HandlerKind> {
    use crate::py311::opcode::*;
    let at = instrs.iter().position(|i| i.offset == target)?;
    match instrs[at].opcode {
        END_ASYNC_FOR => return Some(HandlerKind::AsyncFor),
        PUSH_EXC_INFO => {}
        _ => return None,
    }
    if instrs.get(at + 1).is_some_and(|i| i.opcode == POP_TOP) {
        return Some(HandlerKind::Except);
    }
    for (k, i) in instrs.iter().enumerate().skip(at + 1) {
        match i.opcode {
            WITH_EXCEPT_START => {
                let awaited = instrs.get(k + 1).is_some_and(|n| n.opcode == GET_AWAITABLE);
                return Some(if awaited { HandlerKind::AsyncWith } else { HandlerKind::With });
            }
            CHECK_EG_MATCH => return Some(HandlerKind::ExceptStar),
            CHECK_EXC_MATCH => return Some(HandlerKind::Except),
            RERAISE | POP_EXCEPT | RETURN_VALUE | PUSH_EXC_INFO => return Some(HandlerKind::Finally),
            _ => {}
        }
    }
    Some(HandlerKind::Finally)
}

/// The statements with handlers in a code object, each kind once, in the order of their first
/// protected instruction, with that instruction's byte offset.
pub fn constructs(table: &[u8], instrs: &[Instr]) -> Vec<(HandlerKind, u32)> {
    let mut es = entries(table);
    es.sort_by_key(|e| e.start);
    let mut out: Vec<(HandlerKind, u32)> = Vec::new();
    for e in es {
        // A handler whose body protects nothing (`try: pass`) is the target of no entry; its
        // own code is still protected by the clean-up entry, whose range starts at it.
        if let Some(k) = handler_kind(instrs, e.target).or_else(|| handler_kind(instrs, e.start)) {
            if !out.iter().any(|(o, _)| *o == k) {
                out.push((k, e.start));
            }
        }
    }
    out
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

    /// Each statement with a handler is recognised from its handler, also when statements nest.
    #[test]
    fn handler_kinds() {
        pyo3::prepare_freethreaded_python();
        let cases: &[(&str, &[HandlerKind])] = &[
            ("def f(a):\n    try:\n        a()\n    except KeyError as e:\n        a(e)\n", &[HandlerKind::Except]),
            ("def f(a):\n    try:\n        a()\n    except:\n        a(2)\n", &[HandlerKind::Except]),
            ("def f(a):\n    try:\n        pass\n    except E:\n        a(2)\n", &[HandlerKind::Except]),
            ("def f(a):\n    try:\n        a()\n    finally:\n        a(1)\n", &[HandlerKind::Finally]),
            (
                "def f(a):\n    try:\n        a()\n    except KeyError:\n        a(2)\n    finally:\n        a(1)\n",
                &[HandlerKind::Except, HandlerKind::Finally],
            ),
            (
                "def f(a):\n    try:\n        a()\n    finally:\n        try:\n            a(1)\n        except E:\n            pass\n",
                &[HandlerKind::Finally, HandlerKind::Except],
            ),
            ("def f(a):\n    try:\n        a()\n    except* KeyError:\n        a(2)\n", &[HandlerKind::ExceptStar]),
            ("def f(m):\n    with m as v:\n        v()\n", &[HandlerKind::With]),
            ("async def f(m):\n    async with m as v:\n        v()\n", &[HandlerKind::AsyncWith]),
            ("async def f(m):\n    async for x in m:\n        x()\n", &[HandlerKind::AsyncFor]),
        ];
        Python::with_gil(|py| {
            for (src, expected) in cases {
                let ns = PyDict::new_bound(py);
                py.run_bound(src, Some(&ns), None).unwrap();
                let ci = code_info(&ns.get_item("f").unwrap().unwrap().getattr("__code__").unwrap()).unwrap();
                let instrs: Vec<Instr> = crate::py311::decode::instructions(&ci.code, &ci.lines).collect();
                let got: Vec<HandlerKind> = constructs(&ci.exceptiontable, &instrs).into_iter().map(|(k, _)| k).collect();
                assert_eq!(&got, expected, "{src}");
            }
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
