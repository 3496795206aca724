//! Which CPython the extension is built for, and whether the compiled path runs on it.
//!
//! One wheel per interpreter: build.rs reads the building interpreter's version and sets
//! `cfg(poppy_py = "3.NN")`; this module is the only place Rust code asks which one it is.
//! The bytecode reader for a version lives beside `py311/` (`py312/`, `py313/`); a version whose
//! lifter front end is not complete runs every @poppy function in plain CPython with the reason
//! [`compiled_path`] gives (the Python side, `_prologue.COMPILED_VERSIONS`, installs no prologue
//! there). Depends on nothing: `crate::bytecode` picks the version's reader.

/// `(major, minor)` of the CPython this extension was built for.
pub const VERSION: (u32, u32) = if cfg!(poppy_py = "3.13") {
    (3, 13)
} else if cfg!(poppy_py = "3.12") {
    (3, 12)
} else {
    (3, 11)
};

/// The versions whose bytecode the lifter translates (keep in step with
/// `python/poppy_jit/_prologue.py: COMPILED_VERSIONS`).
pub const COMPILED: &[(u32, u32)] = &[(3, 11), (3, 12), (3, 13)];

/// Whether CPython runs list, set and dict comprehensions in their function's own frame (PEP 709,
/// 3.12 on): an enclosing local they read is then that frame's local (UnboundLocalError when
/// unbound), where a comprehension with a code object of its own (every one on 3.11, generator
/// expressions always) reads it as a free variable (NameError).
pub const COMPREHENSIONS_INLINED: bool = VERSION.0 == 3 && VERSION.1 >= 12;

/// Ok when @poppy functions can be compiled on this interpreter; otherwise the fallback reason
/// for `code` (naming its first line, as every fallback reason names a line).
pub fn compiled_path(code: &pyo3::Bound<'_, pyo3::PyAny>) -> Result<(), String> {
    if COMPILED.contains(&VERSION) {
        return Ok(());
    }
    use pyo3::types::PyAnyMethods;
    let line: u32 = code.getattr("co_firstlineno").and_then(|l| l.extract()).unwrap_or(0);
    Err(format!("CPython {}.{}: compiled path not supported yet at line {line}", VERSION.0, VERSION.1))
}

#[cfg(test)]
mod tests {
    use pyo3::prelude::*;

    #[test]
    fn built_for_the_running_interpreter() {
        pyo3::prepare_freethreaded_python();
        Python::with_gil(|py| {
            let v = py.version_info();
            assert_eq!((v.major as u32, v.minor as u32), super::VERSION);
        });
    }
}

pub mod decode;
pub mod layout;

/// Defines, in a version's `opcode` module, one `pub const NAME: u8` per opcode plus the lookup
/// functions over the same table, so that numbers, names and cache sizes cannot drift apart.
macro_rules! opcode_table {
    ($($name:ident = $num:literal, $cache:literal;)*) => {
        $(pub const $name: u8 = $num;)*

        /// Every opcode below 256 as `(name, number, inline cache entries)`.
        pub const OPCODES: &[(&str, u8, usize)] = &[$((stringify!($name), $num, $cache)),*];

        /// The opcode's name, or `"<unknown>"` for numbers this version does not define.
        pub fn name(op: u8) -> &'static str {
            match op {
                $($num => stringify!($name),)*
                _ => "<unknown>",
            }
        }

        /// Number of 2-byte `CACHE` entries that follow the instruction in `co_code`.
        pub fn cache_entries(op: u8) -> usize {
            match op {
                $($num => $cache,)*
                _ => 0,
            }
        }
    };
}
pub(crate) use opcode_table;

/// The tests of a version's `opcode` module against the running interpreter's `opcode` and `dis`
/// (expanded inside a `#[cfg(all(test, poppy_py = "3.NN"))]` module beside the table).
#[cfg(test)]
#[allow(unused_macros)] // used only when built for 3.12 or 3.13
macro_rules! opcode_table_tests {
    () => {
        use super::*;
        use pyo3::prelude::*;
        use pyo3::types::PyDict;
        use std::collections::BTreeMap;

        #[test]
        fn table_matches_python_opcode_module() {
            pyo3::prepare_freethreaded_python();
            Python::with_gil(|py| {
                let ns = PyDict::new_bound(py);
                py.run_bound(
                    "import opcode\n\
                     c = opcode._inline_cache_entries\n\
                     cache = ({opcode.opmap[n]: k for n, k in c.items() if n in opcode.opmap} if isinstance(c, dict)\n\
                     \x20        else dict(enumerate(c)))\n\
                     table = {n: (o, cache.get(o, 0)) for n, o in opcode.opmap.items() if o < 256}\n\
                     hasjrel = sorted(o for o in opcode.hasjrel if o < 256)\n\
                     have_argument = opcode.HAVE_ARGUMENT\n\
                     min_instrumented = opcode.MIN_INSTRUMENTED_OPCODE\n",
                    Some(&ns),
                    None,
                )
                .unwrap();
                let get = |k: &str| ns.get_item(k).unwrap().unwrap();
                let python: BTreeMap<String, (u8, usize)> = get("table").extract().unwrap();
                let ours: BTreeMap<String, (u8, usize)> =
                    OPCODES.iter().map(|&(n, o, c)| (n.to_string(), (o, c))).collect();
                assert_eq!(ours, python);
                for &(n, o, c) in OPCODES {
                    assert_eq!((name(o), cache_entries(o)), (n, c));
                }
                let hasjrel: Vec<u8> = get("hasjrel").extract().unwrap();
                let ours: Vec<u8> = (0..=255u8).filter(|&o| is_jump(o)).collect();
                assert_eq!(ours, hasjrel);
                assert_eq!(HAVE_ARGUMENT, get("have_argument").extract::<u8>().unwrap());
                assert_eq!(MIN_INSTRUMENTED_OPCODE, get("min_instrumented").extract::<u8>().unwrap());
            });
        }

        #[test]
        fn jump_targets_match_dis() {
            pyo3::prepare_freethreaded_python();
            Python::with_gil(|py| {
                let ns = PyDict::new_bound(py);
                py.run_bound(
                    "import dis\n\
                     def f(xs):\n    for x in xs:\n        if x:\n            g(x)\n        if x is None:\n            break\n    \
                     while xs:\n        xs = xs[1:]\n    return [y for y in xs if y]\n\
                     jumps = [(i.offset, i.opcode, i.arg, i.argval) for i in dis.get_instructions(f)\n\
                     \x20        if i.opcode in dis.hasjrel]\n",
                    Some(&ns),
                    None,
                )
                .unwrap();
                let jumps: Vec<(u32, u8, u32, u32)> = ns.get_item("jumps").unwrap().unwrap().extract().unwrap();
                assert!(jumps.len() >= 6, "{jumps:?}");
                for (offset, op, arg, target) in jumps {
                    assert_eq!(jump_target(offset, op, arg), Some(target), "{} at {offset}", name(op));
                }
            });
        }
    };
}
#[cfg(test)]
#[allow(unused_imports)]
pub(crate) use opcode_table_tests;
