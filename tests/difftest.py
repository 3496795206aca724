"""Differential testing: each program in tests/programs/ under plain CPython and PYTHONPOPPY=1.

A program passes when both runs have identical stdout, identical exit code, the same final
stderr line (the exception type and message, if any), and external-call traces (written by
tests/programs/_ext.py) that are equal modulo the reorderings the annotations allow:

* @sequential calls: the same calls in the same order;
* @readonly calls: between two consecutive sequential calls, the same multiset;
* @unordered calls: the same multiset over the whole run.

The PYTHONPOPPY=1 trace must also respect the concurrency controller (PopPy §6.2): a sequential
call never starts while a readonly or sequential call is in flight, and a readonly call never
starts while a sequential call is in flight.  A `# difftest: min_in_flight=N` line in a program
requires at least N external calls in flight at once under PYTHONPOPPY=1; `# difftest:
expect_rc=N` gives the expected exit code (default 0).

Run all programs: `python tests/difftest.py [-v] [program ...]`.
"""
from __future__ import annotations

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


def directives(path: Path) -> dict:
    """`# difftest: key=value` lines of a program, values as ints."""
    out = {}
    for line in path.read_text().splitlines():
        m = _DIRECTIVE.match(line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


@dataclass
class Run:
    stdout: str
    stderr: str
    rc: int
    trace: dict  # {"calls": [...], "max_in_flight": n}; empty if the program wrote none

    @property
    def error_line(self) -> str:
        """The last non-empty stderr line (for an uncaught exception: 'Type: message'), not
        counting the PEP 678 notes poppy_jit adds to an external's exception (where the call was
        made, since the @poppy frame is not in the traceback)."""
        lines = [ln for ln in self.stderr.splitlines()
                 if ln.strip() and not ln.startswith("poppy_jit: ")]
        return lines[-1] if lines else ""


def _package_parent() -> str:
    """Directory holding the poppy_jit package this interpreter imports (installed copy), or the
    source tree's python/ if it imports none."""
    try:
        import poppy_jit
    except ImportError:
        return str(Path(__file__).resolve().parent.parent / "python")
    return str(Path(poppy_jit.__file__).resolve().parent.parent)


def run_program(path: Path, poppy: bool, timeout: float = 120) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        trace_path = os.path.join(tmp, "trace.json")
        env = dict(os.environ, PYTHONPOPPY="1" if poppy else "0", POPPY_TEST_TRACE=trace_path,
                   PYTHONPATH=os.pathsep.join([str(PROGRAMS_DIR), _package_parent()]))
        env.pop("PYTHONPOPPY_STATS", None)
        proc = subprocess.run([sys.executable, str(path)], env=env, capture_output=True,
                              text=True, timeout=timeout, cwd=str(PROGRAMS_DIR))
        trace = {}
        if os.path.exists(trace_path):
            with open(trace_path) as f:
                trace = json.load(f)
    return Run(proc.stdout, proc.stderr, proc.returncode, trace)


def _key(call: dict) -> tuple:
    return (call["name"], call["args"], call["kwargs"])


def compare_traces(plain: list, popped: list) -> list:
    """Problems (empty: equivalent) between two call lists, modulo allowed reorderings."""
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
    if ro_plain != ro_poppy:
        problems.append("readonly calls moved across sequential calls:\n"
                        f"  plain: {[dict(s) for s in ro_plain]}\n"
                        f"  poppy: {[dict(s) for s in ro_poppy]}")

    un_plain = Counter(_key(c) for c in plain if c["kind"] == "unordered")
    un_poppy = Counter(_key(c) for c in popped if c["kind"] == "unordered")
    if un_plain != un_poppy:
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
    problems += compare_traces(plain.trace["calls"], popped.trace["calls"])
    problems += check_controller(popped.trace["calls"])
    want = expect.get("min_in_flight")
    if want is not None and popped.trace["max_in_flight"] < want:
        problems.append(f"at most {popped.trace['max_in_flight']} external call(s) in flight "
                        f"under PYTHONPOPPY=1, expected at least {want}")
    return problems


def difftest(path: Path) -> list:
    return compare_runs(run_program(path, poppy=False), run_program(path, poppy=True),
                        directives(path))


def main(argv: list) -> int:
    verbose = "-v" in argv
    names = [a for a in argv if a != "-v"]
    paths = [PROGRAMS_DIR / n for n in names] if names else programs()
    failed = 0
    for path in paths:
        problems = difftest(path)
        failed += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} {path.name}")
        if problems and verbose:
            for p in problems:
                print("    " + p.replace("\n", "\n    "))
    print(f"{len(paths) - failed}/{len(paths)} programs equivalent")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
