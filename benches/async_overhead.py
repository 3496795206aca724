"""Added cost per async external call: poppy_jit vs asyncio.gather of the same coroutines, in one
process, side by side (issue 3). Also memory per in-flight call.

    PYTHONPOPPY=1 python benches/async_overhead.py [--sizes 1000,10000,100000] [--repeat 3]

For n calls of an `@unordered async def noop(i)` that returns after one event-loop turn:
- gather: `loop.run_until_complete(asyncio.gather(*(noop_raw(i) for i in range(n))))`
- poppy : a @poppy function `for i in range(n): noop(i)` (the λO fold dispatches all n at once)
Reported: seconds per run (best of --repeat, the two interleaved, each after gc.collect()), µs per call, and poppy's added µs per call.
Memory: tracemalloc peak while n calls are in flight (Python allocations), per call; and the
evaluator's own (Rust) memory per call: peak live λO variables × bytes per variable plus one
controller per call, from stats() (reclaimed variables are reused, so this is the peak).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
import tracemalloc

import poppy_jit
from poppy_jit import poppy, unordered
from poppy_jit._loop import get_loop


async def noop_raw(i):
    await asyncio.sleep(0)
    return i


noop = unordered(noop_raw)


@poppy
def many(n):
    for i in range(n):
        noop(i)


async def _gather(n: int):
    return await asyncio.gather(*(noop_raw(i) for i in range(n)))


def time_gather(n: int) -> float:
    loop = get_loop()
    t = time.perf_counter()
    loop.run_until_complete(_gather(n))
    return time.perf_counter() - t


def time_poppy(n: int) -> float:
    t = time.perf_counter()
    many(n)
    return time.perf_counter() - t


def peak_bytes(fn, n: int) -> int:
    gc.collect()
    tracemalloc.start()
    fn(n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def rust_bytes_per_call(n: int) -> float:
    poppy_jit.reset_stats()
    time_poppy(n)
    st = poppy_jit.stats()
    lay = st["runtime_layout"]
    return (st["peak_slots"] * lay["slot_bytes"] + n * lay["controller_bytes"]) / n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not poppy_jit.is_enabled():
        print("run with PYTHONPOPPY=1", file=sys.stderr)
        return 2
    print(f"{'calls':>8} {'gather s':>10} {'poppy s':>10} {'gather µs/call':>15} "
          f"{'poppy µs/call':>14} {'added µs/call':>14} {'gather B/call':>14} {'poppy B/call':>13} "
          f"{'rust B/call':>12}")
    for n in (int(s) for s in a.sizes.split(",")):
        # Interleaved (gather, poppy, gather, ...), each from a freshly collected heap, best of
        # --repeat: drift of a shared machine hits both columns alike.
        gs, ps = [], []
        for _ in range(a.repeat):
            for fn, out in ((time_gather, gs), (time_poppy, ps)):
                gc.collect()
                out.append(fn(n))
        g, p = min(gs), min(ps)
        mg = peak_bytes(time_gather, n) / n
        mp = peak_bytes(time_poppy, n) / n
        mr = rust_bytes_per_call(n)
        print(f"{n:>8} {g:>10.4f} {p:>10.4f} {g / n * 1e6:>15.2f} {p / n * 1e6:>14.2f} "
              f"{(p - g) / n * 1e6:>14.2f} {mg:>14.0f} {mp:>13.0f} {mr:>12.0f}")
    st = poppy_jit.stats()
    print(f"stats: runs={st['runs']} reductions={st['reductions']} "
          f"external={st['external_calls']} fallbacks={len(st['fallbacks'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
