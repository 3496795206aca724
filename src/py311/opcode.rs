//! CPython 3.11 opcode numbers, inline-cache sizes and jump decoding.
//!
//! The table mirrors `Lib/opcode.py` of CPython 3.11 (`opmap` and `_inline_cache_entries`); the test
//! at the bottom checks it against the running interpreter's `opcode` module.

// One `pub const NAME: u8` per opcode plus `OPCODES`, `name` and `cache_entries` over the same
// table (the macro every version's table uses).
crate::pyver::opcode_table! {
    CACHE = 0, 0;
    POP_TOP = 1, 0;
    PUSH_NULL = 2, 0;
    NOP = 9, 0;
    UNARY_POSITIVE = 10, 0;
    UNARY_NEGATIVE = 11, 0;
    UNARY_NOT = 12, 0;
    UNARY_INVERT = 15, 0;
    BINARY_SUBSCR = 25, 4;
    GET_LEN = 30, 0;
    MATCH_MAPPING = 31, 0;
    MATCH_SEQUENCE = 32, 0;
    MATCH_KEYS = 33, 0;
    PUSH_EXC_INFO = 35, 0;
    CHECK_EXC_MATCH = 36, 0;
    CHECK_EG_MATCH = 37, 0;
    WITH_EXCEPT_START = 49, 0;
    GET_AITER = 50, 0;
    GET_ANEXT = 51, 0;
    BEFORE_ASYNC_WITH = 52, 0;
    BEFORE_WITH = 53, 0;
    END_ASYNC_FOR = 54, 0;
    STORE_SUBSCR = 60, 1;
    DELETE_SUBSCR = 61, 0;
    GET_ITER = 68, 0;
    GET_YIELD_FROM_ITER = 69, 0;
    PRINT_EXPR = 70, 0;
    LOAD_BUILD_CLASS = 71, 0;
    LOAD_ASSERTION_ERROR = 74, 0;
    RETURN_GENERATOR = 75, 0;
    LIST_TO_TUPLE = 82, 0;
    RETURN_VALUE = 83, 0;
    IMPORT_STAR = 84, 0;
    SETUP_ANNOTATIONS = 85, 0;
    YIELD_VALUE = 86, 0;
    ASYNC_GEN_WRAP = 87, 0;
    PREP_RERAISE_STAR = 88, 0;
    POP_EXCEPT = 89, 0;
    STORE_NAME = 90, 0;
    DELETE_NAME = 91, 0;
    UNPACK_SEQUENCE = 92, 1;
    FOR_ITER = 93, 0;
    UNPACK_EX = 94, 0;
    STORE_ATTR = 95, 4;
    DELETE_ATTR = 96, 0;
    STORE_GLOBAL = 97, 0;
    DELETE_GLOBAL = 98, 0;
    SWAP = 99, 0;
    LOAD_CONST = 100, 0;
    LOAD_NAME = 101, 0;
    BUILD_TUPLE = 102, 0;
    BUILD_LIST = 103, 0;
    BUILD_SET = 104, 0;
    BUILD_MAP = 105, 0;
    LOAD_ATTR = 106, 4;
    COMPARE_OP = 107, 2;
    IMPORT_NAME = 108, 0;
    IMPORT_FROM = 109, 0;
    JUMP_FORWARD = 110, 0;
    JUMP_IF_FALSE_OR_POP = 111, 0;
    JUMP_IF_TRUE_OR_POP = 112, 0;
    POP_JUMP_FORWARD_IF_FALSE = 114, 0;
    POP_JUMP_FORWARD_IF_TRUE = 115, 0;
    LOAD_GLOBAL = 116, 5;
    IS_OP = 117, 0;
    CONTAINS_OP = 118, 0;
    RERAISE = 119, 0;
    COPY = 120, 0;
    BINARY_OP = 122, 1;
    SEND = 123, 0;
    LOAD_FAST = 124, 0;
    STORE_FAST = 125, 0;
    DELETE_FAST = 126, 0;
    POP_JUMP_FORWARD_IF_NOT_NONE = 128, 0;
    POP_JUMP_FORWARD_IF_NONE = 129, 0;
    RAISE_VARARGS = 130, 0;
    GET_AWAITABLE = 131, 0;
    MAKE_FUNCTION = 132, 0;
    BUILD_SLICE = 133, 0;
    JUMP_BACKWARD_NO_INTERRUPT = 134, 0;
    MAKE_CELL = 135, 0;
    LOAD_CLOSURE = 136, 0;
    LOAD_DEREF = 137, 0;
    STORE_DEREF = 138, 0;
    DELETE_DEREF = 139, 0;
    JUMP_BACKWARD = 140, 0;
    CALL_FUNCTION_EX = 142, 0;
    EXTENDED_ARG = 144, 0;
    LIST_APPEND = 145, 0;
    SET_ADD = 146, 0;
    MAP_ADD = 147, 0;
    LOAD_CLASSDEREF = 148, 0;
    COPY_FREE_VARS = 149, 0;
    RESUME = 151, 0;
    MATCH_CLASS = 152, 0;
    FORMAT_VALUE = 155, 0;
    BUILD_CONST_KEY_MAP = 156, 0;
    BUILD_STRING = 157, 0;
    LOAD_METHOD = 160, 10;
    LIST_EXTEND = 162, 0;
    SET_UPDATE = 163, 0;
    DICT_MERGE = 164, 0;
    DICT_UPDATE = 165, 0;
    PRECALL = 166, 1;
    CALL = 171, 4;
    KW_NAMES = 172, 0;
    POP_JUMP_BACKWARD_IF_NOT_NONE = 173, 0;
    POP_JUMP_BACKWARD_IF_NONE = 174, 0;
    POP_JUMP_BACKWARD_IF_FALSE = 175, 0;
    POP_JUMP_BACKWARD_IF_TRUE = 176, 0;
}

/// Opcodes at or above this number take an argument (the others ignore theirs).
pub const HAVE_ARGUMENT: u8 = 90;

/// Relative jumps towards lower offsets (3.11 has no absolute jumps).
pub fn is_backward_jump(op: u8) -> bool {
    matches!(
        op,
        JUMP_BACKWARD
            | JUMP_BACKWARD_NO_INTERRUPT
            | POP_JUMP_BACKWARD_IF_NOT_NONE
            | POP_JUMP_BACKWARD_IF_NONE
            | POP_JUMP_BACKWARD_IF_FALSE
            | POP_JUMP_BACKWARD_IF_TRUE
    )
}

/// Every opcode whose argument is a jump distance (`opcode.hasjrel` in 3.11).
pub fn is_jump(op: u8) -> bool {
    is_backward_jump(op)
        || matches!(
            op,
            FOR_ITER
                | JUMP_FORWARD
                | JUMP_IF_FALSE_OR_POP
                | JUMP_IF_TRUE_OR_POP
                | POP_JUMP_FORWARD_IF_FALSE
                | POP_JUMP_FORWARD_IF_TRUE
                | SEND
                | POP_JUMP_FORWARD_IF_NOT_NONE
                | POP_JUMP_FORWARD_IF_NONE
        )
}

/// Target byte offset of the jump instruction whose opcode sits at byte `offset` with (folded)
/// argument `arg`, or `None` if `op` is not a jump. Distances count 2-byte code units from the end of
/// the instruction including its inline caches (as in `dis._get_jump_target`).
pub fn jump_target(offset: u32, op: u8, arg: u32) -> Option<u32> {
    if !is_jump(op) {
        return None;
    }
    let next = offset + 2 + 2 * cache_entries(op) as u32;
    Some(if is_backward_jump(op) { next - 2 * arg } else { next + 2 * arg })
}

/// `POP_JUMP_*` conditional jumps: `(tests for None, jumps when the test holds)`. The truth tests
/// "hold" when the value is true; the None tests when the value is None.
pub fn pop_jump_sense(op: u8) -> Option<(bool, bool)> {
    match op {
        POP_JUMP_FORWARD_IF_TRUE | POP_JUMP_BACKWARD_IF_TRUE => Some((false, true)),
        POP_JUMP_FORWARD_IF_FALSE | POP_JUMP_BACKWARD_IF_FALSE => Some((false, false)),
        POP_JUMP_FORWARD_IF_NONE | POP_JUMP_BACKWARD_IF_NONE => Some((true, true)),
        POP_JUMP_FORWARD_IF_NOT_NONE | POP_JUMP_BACKWARD_IF_NOT_NONE => Some((true, false)),
        _ => None,
    }
}

pub fn is_unconditional_jump(op: u8) -> bool {
    matches!(op, JUMP_FORWARD | JUMP_BACKWARD | JUMP_BACKWARD_NO_INTERRUPT)
}

/// The Python construct an opcode comes from, when it has one obvious source (to say why a
/// function is not lifted).
pub fn construct(op: u8) -> Option<&'static str> {
    Some(match op {
        DELETE_GLOBAL => "del of a global",
        DELETE_DEREF => "del of a variable an inner function captures",
        LOAD_CLASSDEREF => "closure in a class body",
        LOAD_NAME | STORE_NAME | DELETE_NAME => "module or class body",
        RAISE_VARARGS | RERAISE => "raise statement",
        LOAD_ASSERTION_ERROR => "assert statement",
        IMPORT_NAME | IMPORT_FROM | IMPORT_STAR => "import inside the function",
        BEFORE_WITH | BEFORE_ASYNC_WITH => "with statement",
        MATCH_CLASS | MATCH_MAPPING | MATCH_SEQUENCE | MATCH_KEYS | GET_LEN => "match statement",
        YIELD_VALUE | GET_AWAITABLE | SEND | GET_YIELD_FROM_ITER => "yield or await",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::prelude::*;
    use pyo3::types::PyDict;
    use std::collections::BTreeMap;

    #[test]
    fn table_matches_python_opcode_module() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let opcode = py.import_bound("opcode").unwrap();
            let opmap = opcode.getattr("opmap").unwrap();
            let opmap = opmap.downcast::<PyDict>().unwrap();
            let caches: Vec<usize> = opcode.getattr("_inline_cache_entries").unwrap().extract().unwrap();
            let hasjrel: Vec<u8> = opcode.getattr("hasjrel").unwrap().extract().unwrap();
            let hasjabs: Vec<u8> = opcode.getattr("hasjabs").unwrap().extract().unwrap();
            let have_argument: u8 = opcode.getattr("HAVE_ARGUMENT").unwrap().extract().unwrap();

            let python: BTreeMap<String, u8> = opmap.extract().unwrap();
            let ours: BTreeMap<String, u8> = OPCODES.iter().map(|&(n, op, _)| (n.to_string(), op)).collect();
            assert_eq!(ours, python, "opcode numbers differ from Python's opcode.opmap");

            for &(n, op, cache) in OPCODES {
                assert_eq!(name(op), n);
                assert_eq!(cache_entries(op), cache);
                assert_eq!(cache, caches[op as usize], "cache entries of {n}");
            }
            for op in 0..=255u8 {
                assert_eq!(is_jump(op), hasjrel.contains(&op), "is_jump({})", name(op));
                assert_eq!(is_backward_jump(op), name(op).contains("BACKWARD"), "{}", name(op));
            }
            assert!(hasjabs.is_empty(), "3.11 has only relative jumps");
            assert_eq!(HAVE_ARGUMENT, have_argument);
        });
    }

    #[test]
    fn jump_targets_match_dis() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let locals = PyDict::new_bound(py);
            py.run_bound(
                "import dis\n\
                 def f(xs):\n    for x in xs:\n        if x:\n            g(x)\n    while xs:\n        xs = xs[1:]\n\
                 jumps = [(i.offset, i.opcode, i.arg, i.argval) for i in dis.get_instructions(f)\n\
                          if i.opcode in dis.hasjrel]\n",
                Some(&locals),
                None,
            )
            .unwrap();
            let jumps: Vec<(u32, u8, u32, u32)> = locals.get_item("jumps").unwrap().unwrap().extract().unwrap();
            assert!(jumps.iter().any(|j| is_backward_jump(j.1)) && jumps.iter().any(|j| !is_backward_jump(j.1)));
            for (offset, op, arg, target) in jumps {
                assert_eq!(jump_target(offset, op, arg), Some(target), "{} at {offset}", name(op));
            }
        });
    }
}
