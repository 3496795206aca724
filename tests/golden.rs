//! Golden tests (Cranelift filetest style).
//!
//! `tests/golden/lift/NAME.py` holds a function `f`; the expected lift is `NAME.bezoar` (Bezoar text)
//! or `NAME.fallback` (the `Fallback`'s Display). `BLESS=1 cargo test --test lift_golden` rewrites
//! the expected files (review them by hand!).
//!
//! `tests/golden/bezoar/NAME.bezoar` holds hand-written Bezoar text that must parse and print back
//! byte for byte.
use poppy_jit::bezoar::text;
use poppy_jit::lift::lift;
use poppy_jit::py311::code_info;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::fs;
use std::path::{Path, PathBuf};

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// Compiles `path` (file name as the code's filename, relative to the crate) and lifts its `f`.
/// Returns the expected file's extension and contents.
fn lift_file(py: Python<'_>, path: &Path) -> (&'static str, String) {
    let src = fs::read_to_string(path).unwrap();
    let rel = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().to_str().unwrap();
    let builtins = py.import_bound("builtins").unwrap();
    let code = builtins.getattr("compile").unwrap().call1((src, rel, "exec")).unwrap();
    let ns = PyDict::new_bound(py);
    builtins.getattr("exec").unwrap().call1((code, &ns)).unwrap();
    let f = ns.get_item("f").unwrap().unwrap_or_else(|| panic!("{rel} defines no function f"));
    let ci = code_info(&f.getattr("__code__").unwrap()).unwrap();
    match lift(&ci) {
        Ok(func) => {
            let printed = text::print(&func);
            assert_eq!(text::parse(&printed).as_ref(), Ok(&func), "{rel}: text form does not round-trip");
            ("bezoar", printed)
        }
        Err(fallback) => ("fallback", format!("{fallback}\n")),
    }
}

#[test]
fn lift_golden() {
    pyo3::prepare_freethreaded_python();
    let bless = std::env::var("BLESS").is_ok_and(|v| v == "1");
    let cases = files("tests/golden/lift", "py");
    assert!(cases.len() >= 20, "golden cases missing");
    let mut failures = Vec::new();
    Python::with_gil(|py| {
        for case in &cases {
            let (ext, actual) = lift_file(py, case);
            let expected_path = case.with_extension(ext);
            let other_path = case.with_extension(if ext == "bezoar" { "fallback" } else { "bezoar" });
            if bless {
                fs::write(&expected_path, &actual).unwrap();
                if other_path.exists() {
                    fs::remove_file(&other_path).unwrap();
                }
                continue;
            }
            match fs::read_to_string(&expected_path) {
                Ok(expected) if expected == actual => {}
                Ok(expected) => {
                    failures.push(format!("{}:\n--- expected\n{expected}--- actual\n{actual}", expected_path.display()))
                }
                Err(_) => failures.push(format!(
                    "{}: missing (is there a {}?); actual:\n{actual}",
                    expected_path.display(),
                    other_path.display()
                )),
            }
        }
    });
    assert!(
        failures.is_empty(),
        "{} golden mismatches (BLESS=1 to rewrite):\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn bezoar_text_golden() {
    let cases = files("tests/golden/bezoar", "bezoar");
    assert!(!cases.is_empty());
    for case in cases {
        let src = fs::read_to_string(&case).unwrap();
        let f = text::parse(&src).unwrap_or_else(|e| panic!("{}: {e}", case.display()));
        assert_eq!(text::print(&f), src, "{}: print(parse(text)) differs", case.display());
    }
}
