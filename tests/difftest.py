"""Differential testing: each program in tests/programs/ under plain CPython and PYTHONPOPPY=1.

A program passes when both runs have identical stdout, identical exit code, the same final
stderr line (the exception type and message, if any), and external-call traces (written by
tests/programs/_ext.py) that are equal modulo the reorderings the annotations allow:

* @sequential calls: the same calls in the same order;
* @readonly calls: between two consecutive sequential calls, the same multiset;
* @unordered calls: the same multiset over the whole run — except that when the run fails (both
  runs exit with the same non-zero code), PYTHONPOPPY=1 may have dispatched unordered calls that
  come after the failing call in program order, in parallel with it (the documented limitation in
  docs/annotations.md "Known limitations"): extra unordered calls are then accepted, missing ones
  are not; so are extra readonly calls after the last sequential call (speculative reads; no
  sequential call runs after a failing call).

The PYTHONPOPPY=1 trace must also respect the concurrency controller (PopPy §6.2): a sequential
call never starts while a readonly or sequential call is in flight, and a readonly call never
starts while a sequential call is in flight.  A `# difftest: min_in_flight=N` line in a program
requires at least N external calls in flight at once under PYTHONPOPPY=1 (checked without
depending on the machine's load: once an overlap has begun, the slow test externals stay in
flight until N calls were in flight together, for at most a second; _ext.py); `# difftest:
expect_rc=N` gives the expected exit code (default 0); `# difftest: xfail=1` marks a program that
exposes a known poppy_jit bug (the pytest test is a strict xfail: it is reported once fixed);
`# difftest: threads=1` a program that runs external calls on several threads itself (so its
plain run is not one call at a time either).

Under PYTHONPOPPY=1, _ext.py writes `poppy_jit.stats()` into the trace: which @poppy functions
compiled and which fell back, and why.  Every fallback must name a reason and a line.

Run all programs: `python tests/difftest.py [-v] [--summary] [program ...]`; `--summary` also
prints, per program, the @poppy functions it defines and how many compiled or fell back, and at the
end the total with the fallback reasons grouped.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

PROGRAMS_DIR = Path(__file__).resolve().parent / "programs"
_DIRECTIVE = re.compile(r"^#\s*difftest:\s*(\w+)\s*=\s*(\S+)\s*$")


def programs() -> list:
    return sorted(p for p in PROGRAMS_DIR.glob("*.py") if not p.name.startswith("_"))


def _compiled_path() -> bool:
    """Whether this CPython runs @poppy functions compiled (docs/versions.md; elsewhere they all
    fall back to CPython with a reason naming the version). Where it does, `async def` compiles too."""
    try:
        from poppy_jit import _prologue
    except ImportError:
        return True
    return _prologue.UNSUPPORTED is None


COMPILED_PATH = _compiled_path()
# `# difftest: coroutine=1`: the overlap needs a compiled `async def` (compiled wherever the
# compiled path is, since CPython 3.12's and 3.13's await loops are normalised too).
COMPILED_COROUTINES = COMPILED_PATH


def directives(path: Path) -> dict:
    """`# difftest: key=value` lines of a program, values as ints. Where the compiled path is not
    supported yet, the runs must still be identical, but neither the overlap a program requires
    (`min_in_flight`) nor a known bug of the compiled path (`xfail`) can show: both are dropped.
    `coroutine=1` says the overlap needs a compiled `async def`: dropped where those fall back."""
    out = {}
    for line in path.read_text().splitlines():
        m = _DIRECTIVE.match(line)
        if m:
            out[m.group(1)] = int(m.group(2))
    if not COMPILED_PATH:
        out.pop("min_in_flight", None)
        out.pop("xfail", None)
    if out.pop("coroutine", 0) and not COMPILED_COROUTINES:
        out.pop("min_in_flight", None)
    return out


_POPPY_WARNING = re.compile(r":\d+: Poppy\w*Warning: poppy_jit: ")


@dataclass
class Run:
    stdout: str
    stderr: str
    rc: int
    trace: dict  # {"calls": [...], "max_in_flight": n}; empty if the program wrote none

    @property
    def poppy_stats(self) -> dict | None:
        """`poppy_jit.stats()` at exit of a PYTHONPOPPY=1 run (None for a plain run)."""
        return self.trace.get("poppy_stats")

    @property
    def error_line(self) -> str:
        """The last non-empty stderr line (for an uncaught exception: 'Type: message'), not
        counting the PEP 678 notes poppy_jit adds to an external's exception (where the call was
        made, since the @poppy frame is not in the traceback)."""
        lines = []
        warning_source = False
        for ln in self.stderr.splitlines():
            # poppy_jit's warnings (why a function runs plainly): the line and its source line.
            if _POPPY_WARNING.search(ln):
                warning_source = True
                continue
            if warning_source and ln.startswith("  "):
                warning_source = False
                continue
            warning_source = False
            if ln.strip() and not ln.startswith("poppy_jit: "):
                lines.append(ln)
        return lines[-1] if lines else ""


def poppy_functions(path: Path) -> list:
    """Qualified names of the functions a program decorates with @poppy (also `@poppy_jit.poppy`
    and `@poppy(...)`), nested ones included, found by parsing its source."""
    found = []

    def is_poppy(dec: ast.expr) -> bool:
        if isinstance(dec, ast.Call):
            dec = dec.func
        return (isinstance(dec, ast.Name) and dec.id == "poppy") or (
            isinstance(dec, ast.Attribute) and dec.attr == "poppy")

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                if any(is_poppy(d) for d in child.decorator_list):
                    found.append(name)
                visit(child, name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(), str(path)), "")
    return found


_LINE = re.compile(r"\bline \d+")


def check_fallbacks(stats: dict | None) -> list:
    """Fallbacks recorded without a reason that names a line."""
    if not stats:
        return []
    return [f"fallback of {fb.get('function')!r} has no reason naming a line: "
            f"{fb.get('reason')!r}" for fb in stats.get("fallbacks", [])
            if not fb.get("reason") or not _LINE.search(fb["reason"])]


def _package_parent() -> str:
    """Directory holding the poppy_jit package this interpreter imports (installed copy), or the
    source tree's python/ if it imports none."""
    try:
        import poppy_jit
    except ImportError:
        return str(Path(__file__).resolve().parent.parent / "python")
    return str(Path(poppy_jit.__file__).resolve().parent.parent)


def run_program(path: Path, poppy: bool, timeout: float = 120, rendezvous: int = 0) -> Run:
    """One run of a program. `rendezvous`: under PYTHONPOPPY=1, the N of `min_in_flight` — the
    slow test externals stay in flight until N calls were in flight together (at most once for
    2 s; tests/programs/_ext.py), so the overlap check does not depend on the machine's load."""
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        env = dict(os.environ, PYTHONPOPPY="1" if poppy else "0", POPPY_TEST_TRACE=trace_path,
                   PYTHONPATH=os.pathsep.join([str(PROGRAMS_DIR), _package_parent()]))
        env.pop("PYTHONPOPPY_STATS", None)
        env.pop("POPPY_TEST_RENDEZVOUS", None)
        if poppy and rendezvous:
            env["POPPY_TEST_RENDEZVOUS"] = str(rendezvous)
        proc = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                              text=True, timeout=timeout, cwd=str(PROGRAMS_DIR))
        trace = {}
        if os.path.exists(trace_path):
            with open(trace_path) as f:
                trace = json.load(f)
    return Run(proc.stdout, proc.stderr, proc.returncode, trace)


def _key(call: dict) -> tuple:
    return (call["name"], call["args"], call["kwargs"])


def compare_traces(plain: list, popped: list, failed: bool = False, spec_calls: int = 0) -> list:
    """Problems (empty: equivalent) between two call lists, modulo allowed reorderings.  `failed`:
    the runs raised, so extra (speculatively dispatched) unordered calls under poppy are allowed.
    `spec_calls`: how many unordered calls the runtime says it started ahead of a loop
    iteration in a try or with body that raised (`stats()["speculative_calls"]`, issue 16):
    that many extra unordered calls are allowed, and no more."""
    problems = []
    seq_plain = [_key(c) for c in plain if c["kind"] == "sequential"]
    seq_poppy = [_key(c) for c in popped if c["kind"] == "sequential"]
    if seq_plain != seq_poppy:
        problems.append(f"sequential calls differ:\n  plain: {seq_plain}\n  poppy: {seq_poppy}")

    def readonly_segments(calls: list) -> list:
        segments = [Counter()]
        for c in calls:
            if c["kind"] == "sequential":
                segments.append(Counter())
            elif c["kind"] == "readonly":
                segments[-1][_key(c)] += 1
        return segments

    ro_plain, ro_poppy = readonly_segments(plain), readonly_segments(popped)
    # A failed run may have made extra readonly calls after its last sequential call
    # (speculative, like unordered ones: no sequential call runs after a failing call).
    speculative = (failed and len(ro_plain) == len(ro_poppy) and ro_plain[:-1] == ro_poppy[:-1]
                   and not ro_plain[-1] - ro_poppy[-1])
    if ro_plain != ro_poppy and not speculative:
        problems.append("readonly calls moved across sequential calls:\n"
                        f"  plain: {[dict(s) for s in ro_plain]}\n"
                        f"  poppy: {[dict(s) for s in ro_poppy]}")

    un_plain = Counter(_key(c) for c in plain if c["kind"] == "unordered")
    un_poppy = Counter(_key(c) for c in popped if c["kind"] == "unordered")
    extra = sum((un_poppy - un_plain).values())
    if un_plain != un_poppy and (un_plain - un_poppy or not (failed or extra <= spec_calls)):
        problems.append(f"unordered calls differ: missing under poppy "
                        f"{dict(un_plain - un_poppy)}, extra under poppy "
                        f"{dict(un_poppy - un_plain)}")
    return problems


def check_controller(calls: list) -> list:
    """Calls that started while the concurrency controller should have held them back."""
    problems = []
    for i, c in enumerate(calls):
        blocking = {"sequential": ("readonly", "sequential"), "readonly": ("sequential",)}
        bad = [k for k in c["in_flight"] if k in blocking.get(c["kind"], ())]
        if bad:
            problems.append(f"call #{i} {c['kind']} {c['name']}{c['args']} started while "
                            f"{bad} call(s) were in flight")
    return problems


def compare_runs(plain: Run, popped: Run, expect: dict | None = None) -> list:
    """Every way in which the PYTHONPOPPY=1 run differs from plain CPython (empty: none)."""
    expect = expect or {}
    problems = []
    if plain.rc != expect.get("expect_rc", 0):
        problems.append(f"plain run exited {plain.rc}, expected {expect.get('expect_rc', 0)}:\n"
                        f"{plain.stderr[-2000:]}")
    if popped.rc != plain.rc:
        problems.append(f"exit code: plain {plain.rc}, poppy {popped.rc}\n"
                        f"poppy stderr:\n{popped.stderr[-2000:]}")
    if popped.stdout != plain.stdout:
        problems.append(f"stdout differs:\n--- plain\n{plain.stdout}--- poppy\n{popped.stdout}")
    if popped.error_line != plain.error_line:
        problems.append(f"final stderr line: plain {plain.error_line!r}, "
                        f"poppy {popped.error_line!r}")
    if not plain.trace or not popped.trace:
        problems.append("a run wrote no trace (POPPY_TEST_TRACE)")
        return problems
    problems += compare_traces(plain.trace["calls"], popped.trace["calls"],
                               failed=plain.rc != 0 and popped.rc == plain.rc,
                               spec_calls=(popped.poppy_stats or {}).get("speculative_calls", 0))
    problems += check_controller(popped.trace["calls"])
    problems += check_fallbacks(popped.poppy_stats)
    want = expect.get("min_in_flight")
    if want is not None and popped.trace["max_in_flight"] < want:
        problems.append(f"at most {popped.trace['max_in_flight']} external call(s) in flight "
                        f"under PYTHONPOPPY=1, expected at least {want}")
    return problems


def difftest_runs(path: Path, plain: Run | None = None) -> tuple:
    """(problems, the PYTHONPOPPY=1 run); `plain`: the plain run if already made."""
    want = directives(path)
    popped = run_program(path, poppy=True, rendezvous=want.get("min_in_flight", 0))
    plain = plain if plain is not None else run_program(path, poppy=False)
    return compare_runs(plain, popped, directives(path)), popped


def difftest(path: Path) -> list:
    return difftest_runs(path)[0]


def compile_summary(path: Path, stats: dict | None) -> dict:
    """What happened to a program's @poppy functions under PYTHONPOPPY=1: `defined` (by parsing
    the source), `compiled` (successful translations: stats' functions_compiled, which counts a
    function twice if two threads translate it at once), `fallbacks` ([(function, reason)]);
    functions never translated (not called, or only reached from inside a run) are neither."""
    stats = stats or {}
    return {"defined": len(poppy_functions(path)),
            "compiled": stats.get("functions_compiled", 0),
            "fallbacks": [(fb.get("function"), fb.get("reason"))
                          for fb in stats.get("fallbacks", [])]}


def _reason_kind(reason: str) -> str:
    """A fallback reason without its line number and parenthesised details, for grouping."""
    kind = re.sub(r"\s*\bat line \d+|\bline \d+", "", reason or "")
    return re.sub(r"\s*\([^()]*\)", "", kind).strip() or "?"


def main(argv: list) -> int:
    verbose = "-v" in argv
    summary = "--summary" in argv
    names = [a for a in argv if a not in ("-v", "--summary")]
    paths = [PROGRAMS_DIR / n for n in names] if names else programs()
    failed = xfailed = 0
    totals = {"defined": 0, "compiled": 0, "fallbacks": []}
    for path in paths:
        problems, popped = difftest_runs(path)
        xfail = directives(path).get("xfail")
        failed += bool(problems) != bool(xfail)  # a FAIL, or an XPASS (strict, as in pytest)
        xfailed += bool(problems) and bool(xfail)
        status = ("xfail" if xfail else "FAIL") if problems else ("XPASS" if xfail else "ok  ")
        line = f"{status} {path.name}"
        if summary:
            cs = compile_summary(path, popped.poppy_stats)
            for k in ("defined", "compiled"):
                totals[k] += cs[k]
            totals["fallbacks"] += [(path.name, f, r) for f, r in cs["fallbacks"]]
            line = (f"{line:48} @poppy {cs['defined']:3d}  compiled {cs['compiled']:3d}  "
                    f"fallback {len(cs['fallbacks']):3d}")
        print(line)
        if summary and verbose:
            for f, r in compile_summary(path, popped.poppy_stats)["fallbacks"]:
                print(f"    fallback {f}: {r}")
        if problems and verbose:
            for p in problems:
                print("    " + p.replace("\n", "\n    "))
    print(f"{len(paths) - failed - xfailed}/{len(paths)} programs equivalent"
          + (f" ({xfailed} known failure(s), xfail)" if xfailed else ""))
    if summary:
        fbs = totals["fallbacks"]
        print(f"summary: {totals['defined']} @poppy functions in {len(paths)} programs; "
              f"{totals['compiled']} compiled, {len(fbs)} fell back")
        by_kind = Counter(_reason_kind(r) for _, _, r in fbs)
        for kind, n in by_kind.most_common():
            print(f"  {n:3d} x {kind}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
