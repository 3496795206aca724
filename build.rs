// Builds the C shim (the only code that touches CPython-internal frame structures) against the
// running interpreter's headers, including the internal ones (Py_BUILD_CORE).
use std::process::Command;

fn python_config(var: &str) -> String {
    let python = std::env::var("PYO3_PYTHON")
        .or_else(|_| std::env::var("PYTHON_SYS_EXECUTABLE"))
        .unwrap_or_else(|_| "python3".to_string());
    let out = Command::new(&python)
        .args(["-c", &format!("import sysconfig; print(sysconfig.get_config_var('{var}') or '')")])
        .output()
        .expect("running python3 to read sysconfig");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn main() {
    println!("cargo:rerun-if-changed=shim/poppy_shim.c");
    println!("cargo:rerun-if-changed=shim/poppy_shim.h");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
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
