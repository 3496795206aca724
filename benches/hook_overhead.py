"""Cost of the interposer on code that is not @poppy (issue 5): pure-Python loop-heavy and
call-heavy workloads, timed side by side in one process with the PEP 523 hook off and on.

    python benches/hook_overhead.py [--repeat 7]

"off" is plain CPython after `import poppy_jit` without PYTHONPOPPY (the hook is not installed,
`_core` is not even imported); "on" installs the hook with `poppy_jit.enable()`. The two are
interleaved (off, on, off, on, ...) and the best of --repeat runs is kept for each.
"""
from __future__ import annotations

import argparse
import sys
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    if poppy_jit.is_enabled():
        print("run without PYTHONPOPPY: the script switches the hook itself", file=sys.stderr)
        return 2
    print(f"{'workload':<12} {'hook off s':>11} {'hook on s':>10} {'on/off':>7}")
    for name, fn in (("loop-heavy", loop_heavy), ("call-heavy", call_heavy)):
        off, on = [], []
        for _ in range(a.repeat):
            off.append(best(fn, 1))
            poppy_jit.enable()
            on.append(best(fn, 1))
            poppy_jit.disable()
        print(f"{name:<12} {min(off):>11.4f} {min(on):>10.4f} {min(on) / min(off):>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
