"""Memory of long loops (issue 17): a `@poppy` loop of n iterations, each making an unordered
call, a sequential call and two operations on their pending results, run plain and with
PYTHONPOPPY=1, each in a fresh interpreter; reported: max RSS, time, and the runtime's
`peak_slots`, `fold_parks` and controller size.

    python benches/long_loops.py [--sizes 10000,40000,160000] [--python LABEL=PATH ...]

`--python` adds interpreters with another build of poppy_jit installed (e.g. an older commit's
venv), run side by side with this one, size by size, alternating.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

PROG = '''
import json, resource, sys, time
import poppy_jit
from poppy_jit import poppy, unordered

@unordered
def f(i):
    return i + 1

def g(i):
    return i

@poppy
def run(n):
    t = 0
    for i in range(n):
        t += f(i) + g(i)
    return t

n = int(sys.argv[1])
t0 = time.perf_counter()
r = run(n)
dt = time.perf_counter() - t0
st = poppy_jit.stats() if poppy_jit.is_enabled() else {}
print(json.dumps({"result": r, "s": dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "peak_slots": st.get("peak_slots"), "fold_parks": st.get("fold_parks"),
                  "controller_bytes": st.get("runtime_layout", {}).get("controller_bytes")}))
'''


def one(python: str, n: int, poppy: bool, path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}
    if poppy:
        env["PYTHONPOPPY"] = "1"
    r = subprocess.run([python, path, str(n)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{python} n={n}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,40000,160000")
    ap.add_argument("--python", action="append", default=[], metavar="LABEL=PATH")
    a = ap.parse_args()
    pythons = [("this", sys.executable)] + [tuple(p.split("=", 1)) for p in a.python]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PROG)
        path = f.name
    try:
        print(f"{'n':>8} {'build':>8} {'plain MB':>9} {'poppy MB':>9} {'plain s':>8} {'poppy s':>8} "
              f"{'peak_slots':>11} {'fold_parks':>10} {'ctrl B':>7}")
        for n in (int(s) for s in a.sizes.split(",")):
            for label, py in pythons:
                plain = one(py, n, False, path)
                pop = one(py, n, True, path)
                assert pop["result"] == plain["result"], (label, n)
                print(f"{n:>8} {label:>8} {plain['rss_mb']:>9.0f} {pop['rss_mb']:>9.0f} {plain['s']:>8.2f} "
                      f"{pop['s']:>8.2f} {pop['peak_slots']!s:>11} {pop['fold_parks']!s:>10} "
                      f"{pop['controller_bytes']!s:>7}", flush=True)
    finally:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
