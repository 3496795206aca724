//! What 3.11 instruction arguments mean, in the version-neutral terms of Bezoar: the operator
//! tables of `BINARY_OP` and `COMPARE_OP`, and the bit fields of `LOAD_GLOBAL`, `FORMAT_VALUE`,
//! `MAKE_FUNCTION`, `UNPACK_EX`, `CALL_FUNCTION_EX`, `IS_OP`/`CONTAINS_OP`.
use crate::bezoar::ir::{BinOp, CmpOp, Conversion};

/// `BINARY_OP`'s operators in argument order (`NB_*` in Include/internal/pycore_opcode.h; the
/// in-place forms follow at +13).
const BINARY_OPS: [BinOp; 13] = [
    BinOp::Add,
    BinOp::And,
    BinOp::FloorDiv,
    BinOp::LShift,
    BinOp::MatMul,
    BinOp::Mul,
    BinOp::Mod,
    BinOp::Or,
    BinOp::Pow,
    BinOp::RShift,
    BinOp::Sub,
    BinOp::TrueDiv,
    BinOp::Xor,
];

/// `BINARY_OP arg`: the operator and whether it is the in-place form (`a += b`).
pub fn binary_op(arg: u32) -> Option<(BinOp, bool)> {
    let op = *BINARY_OPS.get(arg as usize % 13).filter(|_| arg < 26)?;
    Some((op, arg >= 13))
}

/// `COMPARE_OP arg` (`dis.cmp_op` order).
pub fn compare_op(arg: u32) -> Option<CmpOp> {
    const CMPS: [CmpOp; 6] = [CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne, CmpOp::Gt, CmpOp::Ge];
    CMPS.get(arg as usize).copied()
}

/// `IS_OP`/`CONTAINS_OP arg`: whether the test is negated (`is not`, `not in`).
pub fn negated(arg: u32) -> bool {
    arg == 1
}

/// `LOAD_GLOBAL arg`: whether a NULL is pushed first (the global is about to be called), and the
/// `co_names` index.
pub fn load_global(arg: u32) -> (bool, u32) {
    (arg & 1 == 1, arg >> 1)
}

/// `FORMAT_VALUE arg`: the conversion (`!s`, `!r`, `!a`) and whether a format spec is on the
/// stack.
pub fn format_value(arg: u32) -> (Conversion, bool) {
    let conv = [Conversion::None, Conversion::Str, Conversion::Repr, Conversion::Ascii][(arg & 3) as usize];
    (conv, arg & 4 != 0)
}

/// A `FORMAT_VALUE` flag 3.11's compiler never sets (its mask is 7), used by the normalised form
/// of a later version's bytecode (`py313::normalise`): convert only, with the conversion in the
/// low bits (`str`, `repr` or `ascii` of the value, which is what 3.13's `CONVERT_VALUE` does
/// before it evaluates a computed format spec). Never executed by CPython: the lifter alone
/// reads the normalised code.
pub const FVC_CONVERT_ONLY: u32 = 8;

/// Whether `FORMAT_VALUE arg` is a conversion alone (`FVC_CONVERT_ONLY`).
pub fn format_convert_only(arg: u32) -> bool {
    arg & FVC_CONVERT_ONLY != 0
}

/// `UNPACK_EX arg`: the number of targets before and after the starred one.
pub fn unpack_ex(arg: u32) -> (u32, u32) {
    (arg & 0xff, arg >> 8)
}

/// `CALL_FUNCTION_EX arg`: whether a keyword-arguments mapping is on the stack.
pub fn call_ex_has_kwargs(arg: u32) -> bool {
    arg & 1 != 0
}

/// `MAKE_FUNCTION` flag: a tuple of positional defaults is on the stack.
pub const MF_DEFAULTS: u32 = 1;
/// `MAKE_FUNCTION` flag: a dict of keyword-only defaults.
pub const MF_KWDEFAULTS: u32 = 2;
/// `MAKE_FUNCTION` flag: the annotations.
pub const MF_ANNOTATIONS: u32 = 4;
/// `MAKE_FUNCTION` flag: a tuple of cells (the closure).
pub const MF_CLOSURE: u32 = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::prelude::*;

    /// The operator tables follow the running interpreter's `dis._nb_ops` and `dis.cmp_op`.
    #[test]
    fn tables_match_dis() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let dis = py.import_bound("dis").unwrap();
            let nb_ops: Vec<(String, String)> = dis.getattr("_nb_ops").unwrap().extract().unwrap();
            assert_eq!(nb_ops.len(), 26);
            let symbol = |op: BinOp| match op {
                BinOp::Add => "+",
                BinOp::And => "&",
                BinOp::FloorDiv => "//",
                BinOp::LShift => "<<",
                BinOp::MatMul => "@",
                BinOp::Mul => "*",
                BinOp::Mod => "%",
                BinOp::Or => "|",
                BinOp::Pow => "**",
                BinOp::RShift => ">>",
                BinOp::Sub => "-",
                BinOp::TrueDiv => "/",
                BinOp::Xor => "^",
            };
            for (arg, (_, sym)) in nb_ops.iter().enumerate() {
                let (op, inplace) = binary_op(arg as u32).unwrap();
                assert_eq!(format!("{}{}", symbol(op), if inplace { "=" } else { "" }), *sym, "BINARY_OP {arg}");
            }
            assert_eq!(binary_op(26), None);
            let cmp_op: Vec<String> = dis.getattr("cmp_op").unwrap().extract().unwrap();
            let cmp_symbol = |op: CmpOp| match op {
                CmpOp::Lt => "<",
                CmpOp::Le => "<=",
                CmpOp::Eq => "==",
                CmpOp::Ne => "!=",
                CmpOp::Gt => ">",
                CmpOp::Ge => ">=",
            };
            for (arg, sym) in cmp_op.iter().enumerate() {
                assert_eq!(cmp_symbol(compare_op(arg as u32).unwrap()), sym);
            }
            assert_eq!(compare_op(cmp_op.len() as u32), None);
        });
    }
}
