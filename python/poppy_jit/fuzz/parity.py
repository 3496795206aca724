"""Fallback parity between CPython versions, measured on generated programs.

docs/versions.md promises no fallback reason on 3.12/3.13 that 3.11 does not also have. This
generates N cases once (`gen.generate`, fixed seed, in the interpreter running this), writes them
as program files (no sleeping externals), runs each file with PYTHONPOPPY=1 under every
interpreter given (each must have poppy_jit installed), and compares, case by case, the set of
(function, reason) fallbacks each version reported (`poppy_jit.stats()`, as the fuzzer's runner
collects them; reasons compared without their line numbers, which differ where a version's
bytecode places a construct elsewhere):

    python -m poppy_jit.fuzz.parity -n 300 --seed 7 --constructs +exceptions \\
        --python 3.11=.venv/bin/python --python 3.12=target/py3.12/venv/bin/python \\
        --python 3.13=target/py3.13/venv/bin/python

It prints, per version, how many cases ran and in how many the case's @poppy function compiled,
then every case whose reasons differ from the first version's (the reference), grouped by the
reasons only the other version has. Exit status 1 when a version has a reason the reference
does not. `explain DIR` (internal) is the per-interpreter step: it writes DIR/reasons-X.Y.json.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

BATCH = 25


def _kind(reason: str) -> str:
    return re.sub(r"\s*\bat line \d+|\bline \d+", "", reason or "").strip()


def generate(n: int, seed: int, constructs: tuple, out: Path) -> int:
    from . import gen
    cases = gen.generate(n, seed, constructs)
    files = []
    for k in range(0, len(cases), BATCH):
        nums = list(range(k, min(k + BATCH, len(cases))))
        path = out / f"parity_{k:05d}.py"
        path.write_text(gen.program_text([cases[i] for i in nums], 0.0, nums))
        files.append(path.name)
    (out / "cases.json").write_text(json.dumps({"n": len(cases), "files": files}))
    return len(cases)


def explain(out: Path, timeout: float) -> Path:
    """Run every program file under this interpreter with PYTHONPOPPY=1; write the reasons."""
    from . import runner
    meta = json.loads((out / "cases.json").read_text())
    result = {}
    for name in meta["files"]:
        run = runner.run_file(out / name, poppy=True, timeout=timeout)
        for num, reps in run.entries.items():
            fbs = sorted({(str(fb.get("function")), _kind(fb.get("reason"))) for r in reps
                          for fb in r.get("fallbacks", [])})
            main = reps[0].get("function", "?").rsplit(".", 1)[-1] if reps else "?"
            compiled = sum(r.get("compiled", 0) for r in reps) > 0 and not any(
                f.rsplit(".", 1)[-1] == main for f, _ in fbs)
            result[str(num)] = {"fallbacks": fbs, "compiled": compiled}
    v = f"{sys.version_info[0]}.{sys.version_info[1]}"
    path = out / f"reasons-{v}.json"
    path.write_text(json.dumps(result))
    return path


def compare(versions: list, data: dict) -> tuple:
    """Lines of the report, and whether a later version has a reason the first does not."""
    ref = versions[0]
    lines, extra = [], False
    for v in versions:
        d = data[v]
        lines.append(f"{v}: {len(d)} cases ran, the @poppy function compiled in "
                     f"{sum(c['compiled'] for c in d.values())}")
    for v in versions[1:]:
        only_v, only_ref, cases = Counter(), Counter(), []
        for num in sorted(set(data[ref]) & set(data[v]), key=int):
            a = {tuple(x) for x in data[ref][num]["fallbacks"]}
            b = {tuple(x) for x in data[v][num]["fallbacks"]}
            if a != b:
                cases.append(num)
                for _, r in b - a:
                    only_v[r] += 1
                for _, r in a - b:
                    only_ref[r] += 1
        missing = sorted(set(data[ref]) ^ set(data[v]), key=int)
        lines.append(f"{v} vs {ref}: {len(cases)} cases with differing fallbacks"
                     + (f" (cases run by one only: {missing[:20]})" if missing else ""))
        for r, k in only_v.most_common():
            lines.append(f"    {k:4d} x only on {v}: {r}")
        for r, k in only_ref.most_common():
            lines.append(f"    {k:4d} x only on {ref}: {r}")
        if cases:
            lines.append(f"    cases: {', '.join(cases[:40])}{' …' if len(cases) > 40 else ''}")
        extra |= bool(only_v)
    return lines, extra


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["explain"]:
        explain(Path(argv[1]), float(argv[2]) if len(argv) > 2 else 120.0)
        return 0
    from .__main__ import parse_constructs
    p = argparse.ArgumentParser(prog="python -m poppy_jit.fuzz.parity", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=300)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--constructs", default="+exceptions")
    p.add_argument("--python", action="append", required=True, metavar="VERSION=PATH",
                   help="an interpreter to compare (the first is the reference)")
    p.add_argument("--dir", help="keep the programs and reasons here (default: a temporary one)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per program file")
    args = p.parse_args(argv)
    pythons = [tuple(x.split("=", 1)) for x in args.python]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.dir or tmp)
        out.mkdir(parents=True, exist_ok=True)
        n = generate(args.n, args.seed, parse_constructs(args.constructs, False), out)
        print(f"{n} cases (seed {args.seed}, constructs {args.constructs})", flush=True)
        data = {}
        for v, py in pythons:
            subprocess.run([py, "-m", "poppy_jit.fuzz.parity", "explain", str(out),
                            str(args.timeout)], check=True)
            data[v] = json.loads((out / f"reasons-{v}.json").read_text())
        lines, extra = compare([v for v, _ in pythons], data)
        print("\n".join(lines))
    return 1 if extra else 0


if __name__ == "__main__":
    sys.exit(main())
