//! Golden tests for every IR stage (Cranelift filetest style): an input file, its expected output
//! in a file next to it, and one switch, `BLESS=1 cargo test --release --test golden`, that
//! rewrites every expected file (review the diff by hand!). tests/golden/README.md says what each
//! directory pins down and how to add a case.
//!
//! - `lift/NAME.py` holds a function `f`; the expected lift is `NAME.bezoar` (Bezoar text) or
//!   `NAME.fallback` (the `Fallback`'s Display).
//! - `bezoar/NAME.bezoar` holds hand-written Bezoar text that must be canonical: printing what it
//!   parses to gives the file back byte for byte.
//! - `lower/NAME.bezoar` (`#` header lines, then Bezoar text in canonical form) lowers to
//!   `NAME.lo` (λO text with the test host's primitives, canonical too). Header directives:
//!   `# options: force_memory` (the golden is the lowering that keeps every variable in M),
//!   and, to also run the program on the test host under both lowerings, `# args:`,
//!   `# expect:` / `# expect-error:`, `# output:`, `# latency:` and `# end:` (the virtual end
//!   time, of the golden's own lowering), as in the λO goldens; `# expect-force_memory:` /
//!   `# expect-error-force_memory:` for a known divergence of the force_memory lowering.
//! - `lambda_o/NAME.lo` holds λO programs whose text after the leading `#` lines must be
//!   canonical; src/lambda_o/tests.rs runs them as their headers say.
use poppy_jit::bezoar::text as bezoar_text;
use poppy_jit::lambda_o::eval::run_bounded;
use poppy_jit::lambda_o::testhost::{show, TPrim, TestHost};
use poppy_jit::lambda_o::text as lo_text;
use poppy_jit::lambda_o::PrimText;
use poppy_jit::lift::lift;
use poppy_jit::lower::{lower, LowerOptions};
use poppy_jit::bytecode::lifter_code_info as code_info;
use poppy_jit::stats::RunStats;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::rc::Rc;

// ---- the filetest frame shared by every suite ---------------------------------------------------

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

fn rel(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path).display().to_string()
}

/// One golden suite: counts its cases, collects mismatches, and under `BLESS=1` rewrites the
/// expected files instead of comparing them.
struct Suite {
    name: &'static str,
    bless: bool,
    cases: usize,
    failures: Vec<String>,
}

impl Suite {
    fn new(name: &'static str) -> Self {
        Suite { name, bless: std::env::var("BLESS").is_ok_and(|v| v == "1"), cases: 0, failures: Vec::new() }
    }

    /// The file at `path` must hold `actual` (under BLESS: now it does).
    fn expect_file(&mut self, path: &Path, actual: &str) {
        if self.bless {
            if fs::read_to_string(path).ok().as_deref() != Some(actual) {
                fs::write(path, actual).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
            return;
        }
        match fs::read_to_string(path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => self.fail(format!("{}: differs (- expected, + actual):\n{}", rel(path), diff(&expected, actual))),
            Err(_) => self.fail(format!("{}: missing; actual:\n{actual}", rel(path))),
        }
    }

    /// A failure BLESS cannot repair (the input itself is wrong, or a property other than the
    /// text does not hold).
    fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }

    fn finish(self, at_least: usize) {
        eprintln!("golden {}: {} cases", self.name, self.cases);
        assert!(self.cases >= at_least, "golden {}: {} cases, expected at least {at_least}", self.name, self.cases);
        assert!(
            self.failures.is_empty(),
            "{} golden {} mismatches (BLESS=1 rewrites the expected files):\n\n{}",
            self.failures.len(),
            self.name,
            self.failures.join("\n")
        );
    }
}

/// A line diff of `a` → `b` (longest common subsequence) with two lines of context.
fn diff(a: &str, b: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut lines: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| lines[k.saturating_sub(2)..(k + 3).min(lines.len())].iter().any(|l| l.0 != ' ');
    let mut out = String::new();
    let mut skipped = false;
    for (k, (tag, line)) in lines.iter().enumerate() {
        if near_change(k) {
            out += &format!("{tag} {line}\n");
            skipped = false;
        } else if !skipped {
            out += "  …\n";
            skipped = true;
        }
    }
    out
}

/// Splits a file into its leading `#` comment lines (kept verbatim) and the text after them. The
/// header lines are blanked, not removed, so that parse errors name the file's own line numbers.
fn split_header(src: &str) -> (String, String) {
    let mut header = String::new();
    let mut body = String::new();
    let mut in_header = true;
    for line in src.split_inclusive('\n') {
        if in_header && line.starts_with('#') {
            header.push_str(line);
            body.push('\n');
        } else {
            in_header = false;
            body.push_str(line);
        }
    }
    (header, body)
}

/// The canonical Bezoar text of `body`.
fn canonical_bezoar(body: &str) -> Result<String, String> {
    Ok(bezoar_text::print(&bezoar_text::parse(body)?))
}

/// The canonical λO text of `body`.
fn canonical_lo(body: &str) -> Result<String, String> {
    Ok(lo_text::print(&lo_text::parse::<TPrim>(body)?))
}

// ---- lift: Python bytecode → Bezoar ----------------------------------------------------------------

/// Compiles `path` (file name as the code's filename, relative to the crate) and lifts its `f`.
/// Returns the expected file's extension and contents.
fn lift_file(py: Python<'_>, path: &Path) -> (&'static str, String) {
    let src = fs::read_to_string(path).unwrap();
    let rel = rel(path);
    let builtins = py.import_bound("builtins").unwrap();
    let code = builtins.getattr("compile").unwrap().call1((src, &rel, "exec")).unwrap();
    let ns = PyDict::new_bound(py);
    builtins.getattr("exec").unwrap().call1((code, &ns)).unwrap();
    let f = ns.get_item("f").unwrap().unwrap_or_else(|| panic!("{rel} defines no function f"));
    // The running version's bytecode in the lifter's form (docs/versions.md); a construct the
    // version's normalisation cannot give that form is a fallback like the lifter's own.
    let ci = match code_info(&f.getattr("__code__").unwrap()) {
        Ok(ci) => ci,
        Err(reason) => return ("fallback", format!("{reason}\n")),
    };
    match lift(&ci) {
        Ok(func) => {
            let printed = bezoar_text::print(&func);
            assert_eq!(bezoar_text::parse(&printed).as_ref(), Ok(&func), "{rel}: text form does not round-trip");
            ("bezoar", printed)
        }
        Err(fallback) => ("fallback", format!("{fallback}\n")),
    }
}

#[test]
fn lift_golden() {
    pyo3::prepare_freethreaded_python();
    let mut suite = Suite::new("lift");
    Python::with_gil(|py| {
        // Another version's lift is the 3.11 one (`lift/NAME.*`) unless its bytecode gives a
        // different one, kept in `lift/3.NN/NAME.*` (blessing writes only those that differ).
        let v = poppy_jit::pyver::VERSION;
        let version_dir = (v != (3, 11)).then(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/lift/{}.{}", v.0, v.1)));
        for case in files("lift", "py") {
            let (ext, actual) = lift_file(py, &case);
            let base = |ext: &str| case.with_extension(ext);
            let (expected_path, other_path) = match &version_dir {
                None => (base(ext), base(if ext == "bezoar" { "fallback" } else { "bezoar" })),
                Some(dir) => {
                    let own = |ext: &str| dir.join(case.with_extension(ext).file_name().unwrap());
                    let same_as_base = fs::read_to_string(base(ext)).ok().as_deref() == Some(actual.as_str());
                    if suite.bless {
                        for e in ["bezoar", "fallback"] {
                            if own(e).exists() && (same_as_base || e != ext) {
                                fs::remove_file(own(e)).unwrap();
                            }
                        }
                        if same_as_base {
                            suite.cases += 1;
                            continue;
                        }
                        fs::create_dir_all(dir).unwrap();
                    }
                    if own("bezoar").exists() || own("fallback").exists() || suite.bless {
                        (own(ext), own(if ext == "bezoar" { "fallback" } else { "bezoar" }))
                    } else {
                        (base(ext), base(if ext == "bezoar" { "fallback" } else { "bezoar" }))
                    }
                }
            };
            if suite.bless && other_path.exists() {
                fs::remove_file(&other_path).unwrap();
            }
            if !suite.bless && !expected_path.exists() && other_path.exists() {
                suite.fail(format!("{}: missing (there is a {}); actual:\n{actual}", rel(&expected_path), rel(&other_path)));
            } else {
                suite.expect_file(&expected_path, &actual);
            }
            suite.cases += 1;
        }
    });
    suite.finish(20);
}

// ---- regions: the internal regions pass on lifted Bezoar --------------------------------------------

/// `regions/NAME.py` (a function `f`): its Bezoar after `passes::form_regions`, then each region's
/// live values and Python source, in `NAME.regions`.
#[test]
fn regions_golden() {
    pyo3::prepare_freethreaded_python();
    let mut suite = Suite::new("regions");
    Python::with_gil(|py| {
        for case in files("regions", "py") {
            let src = fs::read_to_string(&case).unwrap();
            let rel = rel(&case);
            let builtins = py.import_bound("builtins").unwrap();
            let code = builtins.getattr("compile").unwrap().call1((src, &rel, "exec")).unwrap();
            let ns = PyDict::new_bound(py);
            builtins.getattr("exec").unwrap().call1((code, &ns)).unwrap();
            let f = ns.get_item("f").unwrap().unwrap_or_else(|| panic!("{rel} defines no function f"));
            let ci = code_info(&f.getattr("__code__").unwrap()).unwrap();
            let mut func = lift(&ci).unwrap_or_else(|fb| panic!("{rel}: {fb}"));
            let regions = poppy_jit::bezoar::passes::form_regions(&mut func);
            let mut actual = bezoar_text::print(&func);
            assert_eq!(bezoar_text::parse(&actual).as_ref(), Ok(&func), "{rel}: text form does not round-trip");
            for r in &regions {
                let outs: Vec<&str> = r.outputs.iter().map(|v| v.as_str()).collect();
                actual.push_str(&format!(
                    "\n# region.{} line {} consts {:?}: in [{}] out [{}]\n{}",
                    r.index,
                    r.line,
                    r.consts,
                    r.inputs.join(", "),
                    outs.join(", "),
                    r.source
                ));
            }
            suite.expect_file(&case.with_extension("regions"), &actual);
            suite.cases += 1;
        }
    });
    suite.finish(4);
}

// ---- Bezoar text ---------------------------------------------------------------------------------

#[test]
fn bezoar_text_golden() {
    let mut suite = Suite::new("bezoar");
    for case in files("bezoar", "bezoar") {
        let src = fs::read_to_string(&case).unwrap();
        let (header, body) = split_header(&src);
        match canonical_bezoar(&body) {
            Ok(printed) => suite.expect_file(&case, &(header + &printed)),
            Err(e) => suite.fail(format!("{}: {e}", rel(&case))),
        }
        suite.cases += 1;
    }
    suite.finish(1);
}

// ---- lowering: Bezoar → λO -------------------------------------------------------------------------

/// The directives of a lowering case's header.
#[derive(Default)]
struct LowerCase {
    force_memory: bool,
    run: bool,
    args: Vec<TPrim>,
    expect: Option<Result<String, String>>,
    /// A different expected result of the force_memory lowering (a known divergence, with a
    /// `# BUG:` line saying so).
    expect_force_memory: Option<Result<String, String>>,
    output: Vec<String>,
    latency: HashMap<String, u64>,
    end: Option<u64>,
}

fn lower_directives(header: &str) -> Result<LowerCase, String> {
    let mut c = LowerCase::default();
    for line in header.lines().filter_map(|l| l.strip_prefix("# ")) {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim();
        match k {
            "options" => {
                for o in v.split_whitespace() {
                    match o {
                        "force_memory" => c.force_memory = true,
                        other => return Err(format!("unknown option {other:?}")),
                    }
                }
            }
            "args" => {
                c.run = true;
                c.args = split_args(v).into_iter().map(TPrim::parse_prim).collect::<Result<_, _>>()?;
            }
            "expect" => {
                c.run = true;
                c.expect = Some(Ok(v.to_string()));
            }
            "expect-error" => {
                c.run = true;
                c.expect = Some(Err(v.to_string()));
            }
            "expect-force_memory" => c.expect_force_memory = Some(Ok(v.to_string())),
            "expect-error-force_memory" => c.expect_force_memory = Some(Err(v.to_string())),
            "output" => c.output = v.split(" | ").filter(|s| !s.is_empty()).map(str::to_string).collect(),
            "latency" => {
                for kv in v.split_whitespace() {
                    let (n, l) = kv.split_once('=').ok_or("latency: NAME=TICKS ...")?;
                    c.latency.insert(n.to_string(), l.parse().map_err(|_| format!("bad latency {l:?}"))?);
                }
            }
            "end" => c.end = Some(v.parse().map_err(|_| format!("bad end time {v:?}"))?),
            _ => {}
        }
    }
    Ok(c)
}

/// Splits `# args:` at the spaces outside tuples (`<1 2>`) and strings.
fn split_args(s: &str) -> Vec<&str> {
    let (mut out, mut start, mut depth, mut quoted) = (Vec::new(), None, 0, false);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '<' if !quoted => depth += 1,
            '>' if !quoted => depth -= 1,
            c if c.is_whitespace() && !quoted && depth == 0 => {
                if let Some(b) = start.take() {
                    out.push(&s[b..i]);
                }
                continue;
            }
            _ => {}
        }
        start.get_or_insert(i);
    }
    out.extend(start.map(|b| &s[b..]));
    out
}

/// Steps after which a run counts as divergent.
const RUN_BUDGET: u64 = 1_000_000;

/// Lowers `f` as the case says (or with the other memory mode) and runs it on a fresh test host:
/// (result, printed output, virtual end time).
fn lower_and_run(
    f: &poppy_jit::bezoar::Function,
    case: &LowerCase,
    force_memory: bool,
) -> Result<(Result<String, String>, Vec<String>, u64), String> {
    let mut host = TestHost::new();
    host.latency = case.latency.clone();
    let prog = lower(f, &mut host, &LowerOptions { force_memory })?;
    let got = run_bounded(&mut host, Rc::new(prog), case.args.clone(), &mut RunStats::default(), RUN_BUDGET);
    Ok((got.map(|p| show(&p)), host.output, host.now))
}

fn lower_case(suite: &mut Suite, path: &Path) -> Result<(), String> {
    let src = fs::read_to_string(path).map_err(|e| e.to_string())?;
    let (header, body) = split_header(&src);
    if !header.starts_with("# ") {
        return Err("the first line must be a `# ` comment saying what the case pins down".into());
    }
    let case = lower_directives(&header)?;
    let f = bezoar_text::parse(&body)?;
    // The input is canonical Bezoar (BLESS makes it so).
    suite.expect_file(path, &(header.clone() + &bezoar_text::print(&f)));
    let mut host = TestHost::new();
    let prog = lower(&f, &mut host, &LowerOptions { force_memory: case.force_memory })?;
    let printed = lo_text::print(&prog);
    suite.expect_file(&path.with_extension("lo"), &printed);
    // What lowering prints is canonical λO text.
    match canonical_lo(&printed) {
        Ok(again) if again == printed => {}
        Ok(again) => suite.fail(format!("{}: λO text not canonical; reprinted:\n{again}", rel(path))),
        Err(e) => suite.fail(format!("{}: λO text does not parse: {e}", rel(path))),
    }
    if case.run {
        // Both lowerings (promoted locals and everything in M) give the expected result and output.
        let expect = case.expect.clone().unwrap_or(Ok("None".into()));
        for force_memory in [case.force_memory, !case.force_memory] {
            let mode = if force_memory { "force_memory" } else { "promoted" };
            let expect = match &case.expect_force_memory {
                Some(e) if force_memory => e.clone(),
                _ => expect.clone(),
            };
            let (got, output, now) = lower_and_run(&f, &case, force_memory)?;
            if got != expect {
                suite.fail(format!("{} ({mode}): result {got:?}, expected {expect:?}", rel(path)));
            }
            if output != case.output {
                suite.fail(format!("{} ({mode}): output {output:?}, expected {:?}", rel(path), case.output));
            }
            if let Some(end) = case.end.filter(|_| force_memory == case.force_memory) {
                if now != end {
                    suite.fail(format!("{} ({mode}): virtual end time {now}, expected {end}", rel(path)));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn lower_golden() {
    let mut suite = Suite::new("lower");
    for case in files("lower", "bezoar") {
        if let Err(e) = lower_case(&mut suite, &case) {
            suite.fail(format!("{}: {e}", rel(&case)));
        }
        suite.cases += 1;
    }
    suite.finish(30);
}

// ---- λO text -------------------------------------------------------------------------------------

#[test]
fn lambda_o_text_golden() {
    let mut suite = Suite::new("lambda_o");
    for case in files("lambda_o", "lo") {
        let src = fs::read_to_string(&case).unwrap();
        let (header, body) = split_header(&src);
        match canonical_lo(&body) {
            Ok(printed) => suite.expect_file(&case, &(header + &printed)),
            Err(e) => suite.fail(format!("{}: {e}", rel(&case))),
        }
        suite.cases += 1;
    }
    suite.finish(6);
}
