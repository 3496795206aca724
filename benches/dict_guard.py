"""The globals guard's dict versions on CPython 3.12/3.13: a dict watcher against the deprecated
version tag (`ma_version_tag`), side by side (docs/versions.md, "Layout differences handled in
the shim").

    python benches/dict_guard.py [--repeat 7]

Each configuration runs in a child process with PYTHONPOPPY=1: "watcher" is the default on 3.12
and 3.13 (`PyDict_Watch` on each dict the guard reads, a callback before every modification of
a watched dict), "tag" sets POPPY_DICT_GUARD=tag (the version tag, as on 3.11). Measured:

- run: one call of a compiled @poppy function that reads globals eagerly and makes 8 calls,
  after each of which the guard reads the version of the module's globals (µs per run, the best
  batch of 100 of 30);
- store: plain CPython storing a global of that module (whose dict the guard now watches), ns
  per store (the best batch of 100,000 of 20): what the watcher costs code that is not @poppy.

Configurations interleave (watcher, tag, watcher, …); the best of --repeat processes is kept.
On 3.11 both read the tag (there is nothing to compare: the two rows show the noise).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r'''
import json, sys, time
import poppy_jit
from poppy_jit import poppy

LIMIT = 7
counter = 0


def ext(x):
    return x + 1


@poppy
def run(x):
    for _ in range(8):
        x = ext(x) % LIMIT
    return x


def store(n):
    global counter
    for _ in range(n):
        counter = _


run(1)  # compile; the guard reads (and, with the watcher, watches) this module's globals
assert not poppy_jit.stats()["fallbacks"], poppy_jit.stats()["fallbacks"]
def best_per(fn, batch, batches):
    best = float("inf")
    for _ in range(batches):
        t = time.perf_counter()
        fn(batch)
        best = min(best, (time.perf_counter() - t) / batch)
    return best


def runs(n):
    for i in range(n):
        run(i)


run_us = best_per(runs, 100, 30) * 1e6
store_ns = best_per(store, 100_000, 20) * 1e9
print(json.dumps({"run_us": run_us, "store_ns": store_ns}))
'''


def once(mode: str) -> dict:
    env = dict(os.environ, PYTHONPOPPY="1")
    env.pop("POPPY_DICT_GUARD", None)
    if mode == "tag":
        env["POPPY_DICT_GUARD"] = "tag"
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    best: dict = {}
    for _ in range(args.repeat):
        for mode in ("watcher", "tag"):
            got = once(mode)
            b = best.setdefault(mode, dict(got))
            for k, v in got.items():
                b[k] = min(b[k], v)
    print(f"CPython {sys.version.split()[0]}, best of {args.repeat}")
    print(f"{'':8} {'run (µs)':>10} {'store (ns)':>11}")
    for mode in ("watcher", "tag"):
        print(f"{mode:8} {best[mode]['run_us']:10.1f} {best[mode]['store_ns']:11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
