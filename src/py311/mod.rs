//! Everything specific to CPython 3.11 bytecode: reading a code object (`CodeInfo`), decoding
//! `co_code` into instructions (`decode`), opcode numbers and classes (`opcode`), the meaning of
//! instruction arguments (`oparg`) and the exception table (`exception_table`).
//!
//! The lifter matches on these opcodes but takes every number, table and bit layout from here.
//! Depends on `bezoar::ir` only for the constant and operator types it decodes into.
pub mod decode;
pub mod exception_table;
pub mod opcode;
pub mod oparg;
// Used by the normalisations' tests, which run on the versions they normalise.
#[cfg(all(test, any(poppy_py = "3.12", poppy_py = "3.13")))]
pub(crate) mod testing;

use crate::bezoar::ir::Const;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyLong, PyString, PyTuple};

/// The parts of a 3.11 code object the lifter needs, copied out of Python.
#[derive(Clone, Debug, PartialEq)]
pub struct CodeInfo {
    pub name: String,
    pub qualname: String,
    pub filename: String,
    pub firstlineno: u32,
    pub argcount: u32,
    pub posonlyargcount: u32,
    pub kwonlyargcount: u32,
    pub flags: u32,
    pub varnames: Vec<String>,
    pub cellvars: Vec<String>,
    pub freevars: Vec<String>,
    pub names: Vec<String>,
    /// `co_consts`, converted element by element (same indices).
    pub consts: Vec<Const>,
    /// `co_code`: the de-specialised bytecode (adaptive instructions already mapped back).
    pub code: Vec<u8>,
    /// `co_lines()`: `(start byte offset, end byte offset, line)`, line 0 when there is none.
    pub lines: Vec<(u32, u32, u32)>,
    pub exceptiontable: Vec<u8>,
    /// The code objects among `co_consts` (comprehensions, lambdas, inner functions), by index.
    pub children: std::collections::BTreeMap<u32, CodeInfo>,
}

impl CodeInfo {
    /// The names of the "fast locals" slots that `LOAD_FAST`, `LOAD_DEREF`, `MAKE_CELL`, ... index
    /// in 3.11: the locals, then the cell variables that are not also locals (parameters), then
    /// the free variables.
    pub fn localsplus(&self) -> Vec<String> {
        let mut out = self.varnames.clone();
        out.extend(self.cellvars.iter().filter(|c| !self.varnames.contains(c)).cloned());
        out.extend(self.freevars.iter().cloned());
        out
    }

    /// The number of locals CPython binds from a call's arguments: positional and keyword-only
    /// parameters, then the `*args` tuple and the `**kwargs` dict.
    pub fn nparams(&self) -> usize {
        (self.argcount + self.kwonlyargcount) as usize
            + (self.flags & CO_VARARGS != 0) as usize
            + (self.flags & CO_VARKEYWORDS != 0) as usize
    }

    /// A comprehension or generator expression, which 3.11 compiles as a nested function called
    /// at once with the iterator of its first `for` (the parameter `ITER_ARG`).
    pub fn is_comprehension(&self) -> bool {
        matches!(self.name.as_str(), "<listcomp>" | "<setcomp>" | "<dictcomp>" | "<genexpr>")
    }

    pub fn is_genexpr(&self) -> bool {
        self.name == "<genexpr>"
    }

    /// The source line of the instruction at byte `offset` (0 when it has none).
    pub fn line_at(&self, offset: u32) -> u32 {
        self.lines.iter().find(|l| l.0 <= offset && offset < l.1).map_or(0, |l| l.2)
    }
}

/// The parameter of a comprehension's code object holding its iterator.
pub const ITER_ARG: &str = ".0";

/// `co_flags` bits (Include/cpython/code.h).
pub const CO_VARARGS: u32 = 0x0004;
pub const CO_VARKEYWORDS: u32 = 0x0008;
pub const CO_GENERATOR: u32 = 0x0020;
pub const CO_COROUTINE: u32 = 0x0080;
pub const CO_ITERABLE_COROUTINE: u32 = 0x0100;
pub const CO_ASYNC_GENERATOR: u32 = 0x0200;

/// Reads a code object (`f.__code__`) of the running 3.11 interpreter.
pub fn code_info(code: &Bound<'_, PyAny>) -> PyResult<CodeInfo> {
    let get = |attr: &str| code.getattr(attr);
    let consts = get("co_consts")?;
    let consts = consts.downcast::<PyTuple>()?;
    let lines = get("co_lines")?
        .call0()?
        .iter()?
        .map(|item| {
            let (start, end, line): (u32, u32, Option<u32>) = item?.extract()?;
            Ok((start, end, line.unwrap_or(0)))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut children = std::collections::BTreeMap::new();
    for (i, c) in consts.iter().enumerate() {
        if c.hasattr("co_code")? {
            children.insert(i as u32, code_info(&c)?);
        }
    }
    Ok(CodeInfo {
        children,
        name: get("co_name")?.extract()?,
        qualname: get("co_qualname")?.extract()?,
        filename: get("co_filename")?.extract()?,
        firstlineno: get("co_firstlineno")?.extract()?,
        argcount: get("co_argcount")?.extract()?,
        posonlyargcount: get("co_posonlyargcount")?.extract()?,
        kwonlyargcount: get("co_kwonlyargcount")?.extract()?,
        flags: get("co_flags")?.extract()?,
        varnames: get("co_varnames")?.extract()?,
        cellvars: get("co_cellvars")?.extract()?,
        freevars: get("co_freevars")?.extract()?,
        names: get("co_names")?.extract()?,
        consts: consts.iter().enumerate().map(|(i, c)| convert_const(&c, i as u32)).collect::<PyResult<_>>()?,
        code: get("co_code")?.downcast::<PyBytes>()?.as_bytes().to_vec(),
        lines,
        exceptiontable: get("co_exceptiontable")?.downcast::<PyBytes>()?.as_bytes().to_vec(),
    })
}

/// Converts `co_consts[co_index]`; values without a structured form become `Const::Opaque`.
/// (Code objects are named without their address, so printed Bezoar is reproducible.)
fn convert_const(c: &Bound<'_, PyAny>, co_index: u32) -> PyResult<Const> {
    if let Some(k) = structured_const(c) {
        return Ok(k);
    }
    let repr = if c.hasattr("co_code")? {
        format!("<code object {} line {}>", c.getattr("co_qualname")?, c.getattr("co_firstlineno")?)
    } else {
        c.repr()?.to_string()
    };
    Ok(Const::Opaque { co_index, repr })
}

/// None/bool/int (fitting i64)/float/str, or a tuple of those; `None` for anything else.
fn structured_const(c: &Bound<'_, PyAny>) -> Option<Const> {
    if c.is_none() {
        Some(Const::None)
    } else if c.is_exact_instance_of::<PyBool>() {
        c.extract().ok().map(Const::Bool)
    } else if c.is_exact_instance_of::<PyLong>() {
        c.extract().ok().map(Const::Int)
    } else if c.is_exact_instance_of::<PyFloat>() {
        c.extract().ok().map(Const::Float)
    } else if c.is_exact_instance_of::<PyString>() {
        // Fails (→ Opaque) for strings holding lone surrogates, which Rust strings cannot.
        c.extract().ok().map(Const::Str)
    } else if c.is_exact_instance_of::<PyTuple>() {
        let items = c.downcast::<PyTuple>().ok()?;
        items.iter().map(|item| structured_const(&item)).collect::<Option<_>>().map(Const::Tuple)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::types::PyDict;

    fn with_function<R>(src: &str, check: impl FnOnce(&Bound<'_, PyAny>) -> R) -> R {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let ns = PyDict::new_bound(py);
            py.run_bound(src, Some(&ns), None).unwrap();
            check(&ns.get_item("f").unwrap().unwrap())
        })
    }

    #[test]
    fn reads_code_object_fields() {
        let src =
            "def f(a, /, b, *, c):\n    x = (1, 2.5, 'é', None, True, (3,))\n    y = 1180591620717411303424\n    \
                   z = b'raw'\n    w = frozenset()\n    return a\n";
        with_function(src, |f| {
            let ci = code_info(&f.getattr("__code__").unwrap()).unwrap();
            assert_eq!(ci.name, "f");
            assert_eq!(ci.qualname, "f");
            assert_eq!(ci.filename, "<string>");
            assert_eq!(ci.firstlineno, 1);
            assert_eq!((ci.argcount, ci.posonlyargcount, ci.kwonlyargcount), (2, 1, 1));
            assert_eq!(ci.varnames, ["a", "b", "c", "x", "y", "z", "w"]);
            assert!(ci.cellvars.is_empty() && ci.freevars.is_empty());
            assert_eq!(ci.names, ["frozenset"]);
            let tuple = Const::Tuple(vec![
                Const::Int(1),
                Const::Float(2.5),
                Const::Str("é".into()),
                Const::None,
                Const::Bool(true),
                Const::Tuple(vec![Const::Int(3)]),
            ]);
            assert!(ci.consts.contains(&tuple), "{:?}", ci.consts);
            let i70 = ci
                .consts
                .iter()
                .position(|c| matches!(c, Const::Opaque { repr, .. } if repr == "1180591620717411303424"));
            let bytes = ci.consts.iter().position(|c| matches!(c, Const::Opaque { repr, .. } if repr == "b'raw'"));
            for pos in [i70, bytes] {
                let pos = pos.expect("opaque constant present");
                assert!(matches!(ci.consts[pos], Const::Opaque { co_index, .. } if co_index as usize == pos));
            }
            // The code starts with RESUME; co_lines covers every instruction and names line 1 first.
            assert_eq!(ci.code[0], opcode::RESUME);
            assert_eq!(ci.lines.first(), Some(&(0, 2, 1)));
            assert_eq!(ci.lines.last().unwrap().1 as usize, ci.code.len());
            assert!(ci.lines.iter().any(|l| l.2 == 6));
            assert!(ci.exceptiontable.is_empty());
            assert_eq!(ci.flags & (CO_VARARGS | CO_GENERATOR), 0);
        });
    }

    #[test]
    fn reads_flags_cells_and_exception_table() {
        let src = "def f(*args, **kw):\n    x = 1\n    try:\n        yield x\n    except E:\n        pass\n    \
                   return lambda: x\n";
        with_function(src, |f| {
            let ci = code_info(&f.getattr("__code__").unwrap()).unwrap();
            assert_ne!(ci.flags & CO_VARARGS, 0);
            assert_ne!(ci.flags & CO_VARKEYWORDS, 0);
            assert_ne!(ci.flags & CO_GENERATOR, 0);
            assert_eq!(ci.cellvars, ["x"]);
            assert!(!ci.exceptiontable.is_empty());
        });
    }
}
