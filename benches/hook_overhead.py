"""Cost of intercepting @poppy functions on code that is not @poppy (issue 5): pure-Python
loop-heavy and call-heavy workloads, timed side by side in one process.

    python benches/hook_overhead.py [--repeat 7]

"off" is plain CPython after `import poppy_jit` without PYTHONPOPPY (`_core` is not even
imported); "on" enables the runtime with `poppy_jit.enable()` (with a @poppy function defined, so
its code carries the interception prologue). "any 523" (when a C compiler is available) installs
instead a minimal PEP 523 eval-frame function that only forwards every frame to CPython's
evaluator (tests/support/chainer.c): what any PEP 523 user pays on 3.11, since CPython then stops
inlining Python-to-Python calls and specialising CALL for Python functions (poppy_jit's earlier
design paid exactly this). The configurations are interleaved (off, on, any, off, on, any, ...)
and the best of --repeat runs is kept for each.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

import poppy_jit


def loop_heavy(n=300_000):
    total = 0
    for i in range(n):
        if i % 3:
            total += i * i
        else:
            total -= i
    return total


@poppy_jit.poppy
def annotated(x):  # never called here: its presence must not slow other code down
    return x


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) + leaf(x)


def call_heavy(n=100_000):
    total = 0
    for i in range(n):
        total += middle(i)
    return total


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def build_minimal_pep523():
    """The test-only forwarding PEP 523 extension, or None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    src = os.path.join(os.path.dirname(__file__), "..", "tests", "support", "chainer.c")
    if cc is None or not os.path.exists(src):
        return None
    out = tempfile.mkdtemp(prefix="pep523-")
    target = os.path.join(out, "chainer" + sysconfig.get_config_var("EXT_SUFFIX"))
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", f"-I{sysconfig.get_paths()['include']}", src,
                        "-o", target], capture_output=True)
    if r.returncode != 0:
        return None
    sys.path.insert(0, out)
    import chainer
    return chainer


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    if poppy_jit.is_enabled():
        print("run without PYTHONPOPPY: the script switches poppy_jit itself", file=sys.stderr)
        return 2
    floor = build_minimal_pep523()
    print(f"{'workload':<12} {'off s':>11} {'on s':>10} {'any 523 s':>10} {'on/off':>7} "
          f"{'any/off':>8}")
    for name, fn in (("loop-heavy", loop_heavy), ("call-heavy", call_heavy)):
        off, on, any_ = [], [], []
        for _ in range(a.repeat):
            off.append(best(fn, 1))
            poppy_jit.enable()
            on.append(best(fn, 1))
            poppy_jit.disable()
            if floor is not None:
                floor.install()
                any_.append(best(fn, 1))
                floor.uninstall()
        any_s = f"{min(any_):>10.4f}" if any_ else f"{'-':>10}"
        any_r = f"{min(any_) / min(off):>8.3f}" if any_ else f"{'-':>8}"
        print(f"{name:<12} {min(off):>11.4f} {min(on):>10.4f} {any_s} {min(on) / min(off):>7.3f} "
              f"{any_r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
