// Builds the C shim (the only code that touches CPython-internal frame structures) against the
// running interpreter's headers, including the internal ones (Py_BUILD_CORE).
use std::process::Command;

fn python_eval(expr: &str) -> String {
    let python = std::env::var("PYO3_PYTHON")
        .or_else(|_| std::env::var("PYTHON_SYS_EXECUTABLE"))
        .unwrap_or_else(|_| "python3".to_string());
    let out = Command::new(&python)
        .args(["-c", &format!("import sys, sysconfig; print({expr})")])
        .output()
        .expect("running python3 to read sysconfig");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn python_config(var: &str) -> String {
    python_eval(&format!("sysconfig.get_config_var('{var}') or ''"))
}

/// The CPython versions this source builds for (one wheel each; src/pyver reads the cfg).
const VERSIONS: &[&str] = &["3.11", "3.12", "3.13"];

fn main() {
    println!("cargo:rerun-if-changed=shim/poppy_shim.c");
    println!("cargo:rerun-if-changed=shim/poppy_shim.h");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    let version = python_eval("'%d.%d' % sys.version_info[:2]");
    if !VERSIONS.contains(&version.as_str()) {
        panic!("poppy_jit builds for CPython {} (this is {version}); see docs/versions.md", VERSIONS.join(", "));
    }
    let values: Vec<String> = VERSIONS.iter().map(|v| format!("\"{v}\"")).collect();
    println!("cargo:rustc-check-cfg=cfg(poppy_py, values({}))", values.join(", "));
    println!("cargo:rustc-cfg=poppy_py=\"{version}\"");
    let include = python_config("INCLUDEPY");
    cc::Build::new()
        .file("shim/poppy_shim.c")
        .include(&include)
        .include(format!("{include}/internal"))
        .define("Py_BUILD_CORE", None)
        .flag_if_supported("-Wno-unused-parameter")
        .compile("poppy_shim");
    // Test binaries (cargo test) link libpython dynamically; let them find it without
    // LD_LIBRARY_PATH. Harmless for the extension module.
    let libdir = python_config("LIBDIR");
    if !libdir.is_empty() {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{libdir}");
    }
}
