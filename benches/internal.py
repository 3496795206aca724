"""Internal code under PYTHONPOPPY=1 against plain CPython, side by side in one process (issue 17).

    PYTHONPOPPY=1 python benches/internal.py [--repeat 5] [--latency 0.02]

Each workload's source is executed twice: once as a @poppy function (run by the runtime; its
loops run as internal regions, src/bezoar/passes/regions.rs) and once as a plain function. The
two are timed interleaved, best of --repeat, after a warm-up call (the translation is cached).

- arith:       `total += i * i % 7` over 200k iterations
- strings:     `s += str(i % 10) + ","` over 100k iterations
- append:      `out.append(i * i)` over 100k iterations
- dict_count:  word counts of a 30k-word text with `counts.get(w, 0) + 1`
- listcomp:    `[x * x for x in range(100_000)]`
- fetch_parse: 8 documents of 3,000 words from an `@unordered async def fetch` (sleeps --latency),
               then the word counts of each (plain: the fetches one after another; the ideal is
               one latency plus the parsing)
- tiny_call:   `return x + 1`, per call: the runtime's fixed cost for a program without externals
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time

import poppy_jit
from poppy_jit import poppy, unordered

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi "
         "rho sigma tau upsilon phi chi psi omega").split()
LATENCY = 0.02


async def _fetch(i):
    await asyncio.sleep(LATENCY)
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(3000))


fetch = unordered(_fetch)

SOURCE = '''
def arith(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total

def strings(n):
    s = ""
    for i in range(n):
        s += str(i % 10) + ","
    return len(s)

def append(n):
    out = []
    for i in range(n):
        out.append(i * i)
    return len(out)

def dict_count(text):
    counts = {}
    for w in text.split():
        counts[w] = counts.get(w, 0) + 1
    return len(counts)

def listcomp(n):
    return len([x * x for x in range(n)])

def fetch_parse(n):
    docs = []
    for i in range(n):
        docs.append(fetch(i))
    sizes = []
    for d in docs:
        counts = {}
        for w in d.split():
            counts[w] = counts.get(w, 0) + 1
        sizes.append(len(counts))
    return sizes

def tiny_call(x):
    return x + 1
'''

TEXT = " ".join(WORDS[(k * 5) % len(WORDS)] for k in range(30_000))
CASES = [("arith", 200_000), ("strings", 100_000), ("append", 100_000), ("dict_count", TEXT),
         ("listcomp", 100_000), ("fetch_parse", 8)]


def build(decorate: bool) -> dict:
    ns = {"fetch": fetch, "__name__": "internal_bench"}
    exec(compile(SOURCE, __file__, "exec"), ns)
    if decorate:
        for name in [n for n, _ in CASES] + ["tiny_call"]:
            ns[name] = poppy(ns[name])
    return ns


def best(fn, arg, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    global LATENCY
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--calls", type=int, default=2000, help="tiny_call calls per timing")
    args = ap.parse_args()
    LATENCY = args.latency
    if not poppy_jit.is_enabled():
        print("run with PYTHONPOPPY=1 (the plain side is measured in the same process)", file=sys.stderr)
        return 2
    popped, plain = build(True), build(False)
    print(f"{'workload':<12} {'plain ms':>10} {'poppy ms':>10} {'poppy/plain':>12}")
    for name, arg in CASES:
        a, b = popped[name], plain[name]
        assert a(arg) == b(arg), name  # warm-up (compiles) and a check of the result
        tp = tq = float("inf")
        for _ in range(args.repeat):
            tq = min(tq, best(b, arg, 1))
            tp = min(tp, best(a, arg, 1))
        print(f"{name:<12} {tq * 1e3:>10.2f} {tp * 1e3:>10.2f} {tp / tq:>12.2f}")
    n = args.calls
    a, b = popped["tiny_call"], plain["tiny_call"]
    a(1)

    def loop(f):
        def run(_):
            for i in range(n):
                f(i)
        return run

    tq = tp = float("inf")
    for _ in range(args.repeat):
        tq = min(tq, best(loop(b), None, 1))
        tp = min(tp, best(loop(a), None, 1))
    print(f"{'tiny_call':<12} {tq / n * 1e6:>9.2f}µ {tp / n * 1e6:>9.2f}µ {'+%.1f µs/run' % ((tp - tq) / n * 1e6):>12}")
    ideal = LATENCY + 0.0
    print(f"(fetch_parse: {CASES[-1][1]} fetches of {LATENCY * 1e3:.0f} ms each; plain fetches them one after another)")
    del ideal
    return 0


if __name__ == "__main__":
    sys.exit(main())
