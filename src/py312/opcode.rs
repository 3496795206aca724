//! CPython 3.12 opcode numbers, inline-cache sizes and jump decoding.
//!
//! The table mirrors `Lib/opcode.py` of CPython 3.12 (`opmap` below 256, and
//! `_inline_cache_entries`); the tests at the bottom check it against the running interpreter's
//! `opcode` and `dis` modules when the crate is built for 3.12 (`cfg(poppy_py = "3.12")`).
//! Opcodes from `MIN_INSTRUMENTED_OPCODE` up are the instrumented forms `sys.monitoring` swaps in;
//! `co_code` never shows them.
#![allow(dead_code)]

crate::pyver::opcode_table! {
    CACHE = 0, 0;
    POP_TOP = 1, 0;
    PUSH_NULL = 2, 0;
    INTERPRETER_EXIT = 3, 0;
    END_FOR = 4, 0;
    END_SEND = 5, 0;
    NOP = 9, 0;
    UNARY_NEGATIVE = 11, 0;
    UNARY_NOT = 12, 0;
    UNARY_INVERT = 15, 0;
    RESERVED = 17, 0;
    BINARY_SUBSCR = 25, 1;
    BINARY_SLICE = 26, 0;
    STORE_SLICE = 27, 0;
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
    CLEANUP_THROW = 55, 0;
    STORE_SUBSCR = 60, 1;
    DELETE_SUBSCR = 61, 0;
    GET_ITER = 68, 0;
    GET_YIELD_FROM_ITER = 69, 0;
    LOAD_BUILD_CLASS = 71, 0;
    LOAD_ASSERTION_ERROR = 74, 0;
    RETURN_GENERATOR = 75, 0;
    RETURN_VALUE = 83, 0;
    SETUP_ANNOTATIONS = 85, 0;
    LOAD_LOCALS = 87, 0;
    POP_EXCEPT = 89, 0;
    STORE_NAME = 90, 0;
    DELETE_NAME = 91, 0;
    UNPACK_SEQUENCE = 92, 1;
    FOR_ITER = 93, 1;
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
    LOAD_ATTR = 106, 9;
    COMPARE_OP = 107, 1;
    IMPORT_NAME = 108, 0;
    IMPORT_FROM = 109, 0;
    JUMP_FORWARD = 110, 0;
    POP_JUMP_IF_FALSE = 114, 0;
    POP_JUMP_IF_TRUE = 115, 0;
    LOAD_GLOBAL = 116, 4;
    IS_OP = 117, 0;
    CONTAINS_OP = 118, 0;
    RERAISE = 119, 0;
    COPY = 120, 0;
    RETURN_CONST = 121, 0;
    BINARY_OP = 122, 1;
    SEND = 123, 1;
    LOAD_FAST = 124, 0;
    STORE_FAST = 125, 0;
    DELETE_FAST = 126, 0;
    LOAD_FAST_CHECK = 127, 0;
    POP_JUMP_IF_NOT_NONE = 128, 0;
    POP_JUMP_IF_NONE = 129, 0;
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
    LOAD_SUPER_ATTR = 141, 1;
    CALL_FUNCTION_EX = 142, 0;
    LOAD_FAST_AND_CLEAR = 143, 0;
    EXTENDED_ARG = 144, 0;
    LIST_APPEND = 145, 0;
    SET_ADD = 146, 0;
    MAP_ADD = 147, 0;
    COPY_FREE_VARS = 149, 0;
    YIELD_VALUE = 150, 0;
    RESUME = 151, 0;
    MATCH_CLASS = 152, 0;
    FORMAT_VALUE = 155, 0;
    BUILD_CONST_KEY_MAP = 156, 0;
    BUILD_STRING = 157, 0;
    LIST_EXTEND = 162, 0;
    SET_UPDATE = 163, 0;
    DICT_MERGE = 164, 0;
    DICT_UPDATE = 165, 0;
    CALL = 171, 3;
    KW_NAMES = 172, 0;
    CALL_INTRINSIC_1 = 173, 0;
    CALL_INTRINSIC_2 = 174, 0;
    LOAD_FROM_DICT_OR_GLOBALS = 175, 0;
    LOAD_FROM_DICT_OR_DEREF = 176, 0;
    INSTRUMENTED_LOAD_SUPER_ATTR = 237, 0;
    INSTRUMENTED_POP_JUMP_IF_NONE = 238, 0;
    INSTRUMENTED_POP_JUMP_IF_NOT_NONE = 239, 0;
    INSTRUMENTED_RESUME = 240, 0;
    INSTRUMENTED_CALL = 241, 0;
    INSTRUMENTED_RETURN_VALUE = 242, 0;
    INSTRUMENTED_YIELD_VALUE = 243, 0;
    INSTRUMENTED_CALL_FUNCTION_EX = 244, 0;
    INSTRUMENTED_JUMP_FORWARD = 245, 0;
    INSTRUMENTED_JUMP_BACKWARD = 246, 0;
    INSTRUMENTED_RETURN_CONST = 247, 0;
    INSTRUMENTED_FOR_ITER = 248, 0;
    INSTRUMENTED_POP_JUMP_IF_FALSE = 249, 0;
    INSTRUMENTED_POP_JUMP_IF_TRUE = 250, 0;
    INSTRUMENTED_END_FOR = 251, 0;
    INSTRUMENTED_END_SEND = 252, 0;
    INSTRUMENTED_INSTRUCTION = 253, 0;
    INSTRUMENTED_LINE = 254, 0;
}

/// Opcodes at or above this number take an argument (the others ignore theirs).
pub const HAVE_ARGUMENT: u8 = 90;
/// The first of the instrumented opcodes.
pub const MIN_INSTRUMENTED_OPCODE: u8 = 237;

/// Relative jumps towards lower offsets (3.12 has no absolute jumps).
pub fn is_backward_jump(op: u8) -> bool {
    matches!(op, JUMP_BACKWARD | JUMP_BACKWARD_NO_INTERRUPT)
}

/// Every opcode whose argument is a jump distance (`opcode.hasjrel` in 3.12, below 256).
pub fn is_jump(op: u8) -> bool {
    is_backward_jump(op) || matches!(op, FOR_ITER | JUMP_FORWARD | POP_JUMP_IF_FALSE | POP_JUMP_IF_TRUE | SEND | POP_JUMP_IF_NOT_NONE | POP_JUMP_IF_NONE)
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

#[cfg(all(test, poppy_py = "3.12"))]
mod tests {
    crate::pyver::opcode_table_tests!();
}
