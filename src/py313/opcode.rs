//! CPython 3.13 opcode numbers, inline-cache sizes and jump decoding.
//!
//! The table mirrors `Lib/opcode.py` of CPython 3.13 (`opmap` below 256, and
//! `_inline_cache_entries`); the tests at the bottom check it against the running interpreter's
//! `opcode` and `dis` modules when the crate is built for 3.13 (`cfg(poppy_py = "3.13")`).
//! Opcodes from `MIN_INSTRUMENTED_OPCODE` up are the instrumented forms `sys.monitoring` swaps in;
//! `co_code` never shows them.
#![allow(dead_code)]

crate::pyver::opcode_table! {
    CACHE = 0, 0;
    BEFORE_ASYNC_WITH = 1, 0;
    BEFORE_WITH = 2, 0;
    BINARY_SLICE = 4, 0;
    BINARY_SUBSCR = 5, 1;
    CHECK_EG_MATCH = 6, 0;
    CHECK_EXC_MATCH = 7, 0;
    CLEANUP_THROW = 8, 0;
    DELETE_SUBSCR = 9, 0;
    END_ASYNC_FOR = 10, 0;
    END_FOR = 11, 0;
    END_SEND = 12, 0;
    EXIT_INIT_CHECK = 13, 0;
    FORMAT_SIMPLE = 14, 0;
    FORMAT_WITH_SPEC = 15, 0;
    GET_AITER = 16, 0;
    RESERVED = 17, 0;
    GET_ANEXT = 18, 0;
    GET_ITER = 19, 0;
    GET_LEN = 20, 0;
    GET_YIELD_FROM_ITER = 21, 0;
    INTERPRETER_EXIT = 22, 0;
    LOAD_ASSERTION_ERROR = 23, 0;
    LOAD_BUILD_CLASS = 24, 0;
    LOAD_LOCALS = 25, 0;
    MAKE_FUNCTION = 26, 0;
    MATCH_KEYS = 27, 0;
    MATCH_MAPPING = 28, 0;
    MATCH_SEQUENCE = 29, 0;
    NOP = 30, 0;
    POP_EXCEPT = 31, 0;
    POP_TOP = 32, 0;
    PUSH_EXC_INFO = 33, 0;
    PUSH_NULL = 34, 0;
    RETURN_GENERATOR = 35, 0;
    RETURN_VALUE = 36, 0;
    SETUP_ANNOTATIONS = 37, 0;
    STORE_SLICE = 38, 0;
    STORE_SUBSCR = 39, 1;
    TO_BOOL = 40, 3;
    UNARY_INVERT = 41, 0;
    UNARY_NEGATIVE = 42, 0;
    UNARY_NOT = 43, 0;
    WITH_EXCEPT_START = 44, 0;
    BINARY_OP = 45, 1;
    BUILD_CONST_KEY_MAP = 46, 0;
    BUILD_LIST = 47, 0;
    BUILD_MAP = 48, 0;
    BUILD_SET = 49, 0;
    BUILD_SLICE = 50, 0;
    BUILD_STRING = 51, 0;
    BUILD_TUPLE = 52, 0;
    CALL = 53, 3;
    CALL_FUNCTION_EX = 54, 0;
    CALL_INTRINSIC_1 = 55, 0;
    CALL_INTRINSIC_2 = 56, 0;
    CALL_KW = 57, 0;
    COMPARE_OP = 58, 1;
    CONTAINS_OP = 59, 1;
    CONVERT_VALUE = 60, 0;
    COPY = 61, 0;
    COPY_FREE_VARS = 62, 0;
    DELETE_ATTR = 63, 0;
    DELETE_DEREF = 64, 0;
    DELETE_FAST = 65, 0;
    DELETE_GLOBAL = 66, 0;
    DELETE_NAME = 67, 0;
    DICT_MERGE = 68, 0;
    DICT_UPDATE = 69, 0;
    ENTER_EXECUTOR = 70, 0;
    EXTENDED_ARG = 71, 0;
    FOR_ITER = 72, 1;
    GET_AWAITABLE = 73, 0;
    IMPORT_FROM = 74, 0;
    IMPORT_NAME = 75, 0;
    IS_OP = 76, 0;
    JUMP_BACKWARD = 77, 1;
    JUMP_BACKWARD_NO_INTERRUPT = 78, 0;
    JUMP_FORWARD = 79, 0;
    LIST_APPEND = 80, 0;
    LIST_EXTEND = 81, 0;
    LOAD_ATTR = 82, 9;
    LOAD_CONST = 83, 0;
    LOAD_DEREF = 84, 0;
    LOAD_FAST = 85, 0;
    LOAD_FAST_AND_CLEAR = 86, 0;
    LOAD_FAST_CHECK = 87, 0;
    LOAD_FAST_LOAD_FAST = 88, 0;
    LOAD_FROM_DICT_OR_DEREF = 89, 0;
    LOAD_FROM_DICT_OR_GLOBALS = 90, 0;
    LOAD_GLOBAL = 91, 4;
    LOAD_NAME = 92, 0;
    LOAD_SUPER_ATTR = 93, 1;
    MAKE_CELL = 94, 0;
    MAP_ADD = 95, 0;
    MATCH_CLASS = 96, 0;
    POP_JUMP_IF_FALSE = 97, 1;
    POP_JUMP_IF_NONE = 98, 1;
    POP_JUMP_IF_NOT_NONE = 99, 1;
    POP_JUMP_IF_TRUE = 100, 1;
    RAISE_VARARGS = 101, 0;
    RERAISE = 102, 0;
    RETURN_CONST = 103, 0;
    SEND = 104, 1;
    SET_ADD = 105, 0;
    SET_FUNCTION_ATTRIBUTE = 106, 0;
    SET_UPDATE = 107, 0;
    STORE_ATTR = 108, 4;
    STORE_DEREF = 109, 0;
    STORE_FAST = 110, 0;
    STORE_FAST_LOAD_FAST = 111, 0;
    STORE_FAST_STORE_FAST = 112, 0;
    STORE_GLOBAL = 113, 0;
    STORE_NAME = 114, 0;
    SWAP = 115, 0;
    UNPACK_EX = 116, 0;
    UNPACK_SEQUENCE = 117, 1;
    YIELD_VALUE = 118, 0;
    RESUME = 149, 0;
    INSTRUMENTED_RESUME = 236, 0;
    INSTRUMENTED_END_FOR = 237, 0;
    INSTRUMENTED_END_SEND = 238, 0;
    INSTRUMENTED_RETURN_VALUE = 239, 0;
    INSTRUMENTED_RETURN_CONST = 240, 0;
    INSTRUMENTED_YIELD_VALUE = 241, 0;
    INSTRUMENTED_LOAD_SUPER_ATTR = 242, 0;
    INSTRUMENTED_FOR_ITER = 243, 0;
    INSTRUMENTED_CALL = 244, 0;
    INSTRUMENTED_CALL_KW = 245, 0;
    INSTRUMENTED_CALL_FUNCTION_EX = 246, 0;
    INSTRUMENTED_INSTRUCTION = 247, 0;
    INSTRUMENTED_JUMP_FORWARD = 248, 0;
    INSTRUMENTED_JUMP_BACKWARD = 249, 0;
    INSTRUMENTED_POP_JUMP_IF_TRUE = 250, 0;
    INSTRUMENTED_POP_JUMP_IF_FALSE = 251, 0;
    INSTRUMENTED_POP_JUMP_IF_NONE = 252, 0;
    INSTRUMENTED_POP_JUMP_IF_NOT_NONE = 253, 0;
    INSTRUMENTED_LINE = 254, 0;
}

/// Opcodes at or above this number take an argument (the others ignore theirs).
pub const HAVE_ARGUMENT: u8 = 44;
/// The first of the instrumented opcodes.
pub const MIN_INSTRUMENTED_OPCODE: u8 = 236;

/// Relative jumps towards lower offsets (3.13 has no absolute jumps).
pub fn is_backward_jump(op: u8) -> bool {
    matches!(op, JUMP_BACKWARD | JUMP_BACKWARD_NO_INTERRUPT)
}

/// Every opcode whose argument is a jump distance (`opcode.hasjrel` in 3.13, below 256).
pub fn is_jump(op: u8) -> bool {
    is_backward_jump(op) || matches!(op, FOR_ITER | JUMP_FORWARD | POP_JUMP_IF_FALSE | POP_JUMP_IF_NONE | POP_JUMP_IF_NOT_NONE | POP_JUMP_IF_TRUE | SEND)
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

/// `POP_JUMP_IF_*` conditional jumps (forward only since 3.12): `(tests for None, jumps when the
/// test holds)`.
pub fn pop_jump_sense(op: u8) -> Option<(bool, bool)> {
    match op {
        POP_JUMP_IF_TRUE => Some((false, true)),
        POP_JUMP_IF_FALSE => Some((false, false)),
        POP_JUMP_IF_NONE => Some((true, true)),
        POP_JUMP_IF_NOT_NONE => Some((true, false)),
        _ => None,
    }
}

pub fn is_unconditional_jump(op: u8) -> bool {
    matches!(op, JUMP_FORWARD | JUMP_BACKWARD | JUMP_BACKWARD_NO_INTERRUPT)
}

#[cfg(all(test, poppy_py = "3.13"))]
mod tests {
    crate::pyver::opcode_table_tests!();
}
