"""The runtime's executor for blocking externals and timers (src/host/pool.rs), measured in fresh
interpreters; with --compare, two builds side by side (alternating, same window).

    python benches/blocking_pool.py [--repeat 5]                       # this interpreter's build
    python benches/blocking_pool.py --compare OLD_PYTHON NEW_PYTHON    # e.g. venvs of main and a branch

Cases (each a @poppy function, PYTHONPOPPY=1, best and worst of --repeat runs in one process after
one warm-up run that starts the threads):
- fan32: 32 `@unordered(blocking=True)` calls that each `time.sleep(0.02)`: one thread per call,
  ideal 20 ms (plain CPython: 640 ms).
- fan64: 64 such calls: beyond the 32-thread cap, two waves, ideal 40 ms.
- chain200: 200 blocking no-op calls, each depending on the previous one: one hand-over and
  one delivery per call (µs per round trip).
- fan200: 200 blocking no-op calls at once (µs per call).
- sleep_overlap: `time.sleep(0.2)` followed by 8 `@unordered async` calls that sleep 0.1 s: with
  the sleep inline on the evaluator thread ≈ 0.3 s; as a timer the async calls run during it,
  ≈ 0.2 s.
- sleep0_chain: 200 `time.sleep(0)` in a loop: completed on the loop's next turn vs an inline call.
- sleep5_chain: 20 `time.sleep(0.005)` in a loop (ms per sleep): a tokio timer's millisecond
  granularity vs CPython's nanosleep.
Threads: OS threads of the process (/proc/self/task) right after the fan32 runs, and 2.5 s later
(the executor's idle threads exit after 2 s).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import asyncio, json, os, statistics, sys, time
    import poppy_jit
    from poppy_jit import poppy, unordered

    assert poppy_jit.is_enabled()
    REPEAT = int(sys.argv[1])

    @unordered(blocking=True)
    def nap(i):
        time.sleep(0.02)
        return i

    @unordered(blocking=True)
    def noop(i):
        return i

    @unordered
    async def wait_async(i):
        await asyncio.sleep(0.1)
        return i

    @poppy
    def fan(n):
        total = 0
        for i in range(n):
            total = total + nap(i)
        return total

    @poppy
    def fan_noop(n):
        total = 0
        for i in range(n):
            total = total + noop(i)
        return total

    @poppy
    def chain(n):
        x = 0
        for i in range(n):
            x = noop(x) + 1
        return x

    @poppy
    def sleep_overlap(n):
        time.sleep(0.2)
        total = 0
        for i in range(n):
            total = total + wait_async(i)
        return total

    @poppy
    def sleep0_chain(n):
        for i in range(n):
            time.sleep(0)
        return n

    @poppy
    def sleep5_chain(n):
        for i in range(n):
            time.sleep(0.005)
        return n

    def tasks():
        return len(os.listdir("/proc/self/task"))

    def timed(f, *args):
        f(*args)  # warm-up (starts threads, compiles)
        out = []
        for _ in range(REPEAT):
            t = time.perf_counter()
            f(*args)
            out.append(time.perf_counter() - t)
        return out

    res = {}
    res["fan32"] = timed(fan, 32)
    res["threads_after_fan32"] = tasks()
    res["fan64"] = timed(fan, 64)
    res["chain200"] = timed(chain, 200)
    res["fan200"] = timed(fan_noop, 200)
    res["sleep_overlap"] = timed(sleep_overlap, 8)
    res["sleep0_chain"] = timed(sleep0_chain, 200)
    res["sleep5_chain"] = timed(sleep5_chain, 20)
    time.sleep(2.5)
    res["threads_after_idle"] = tasks()
    st = poppy_jit.stats()
    res["timer_tasks"] = st.get("timer_tasks")
    res["blocking_calls"] = st["blocking_calls"]
    print(json.dumps(res))
    """
)

UNITS = {"fan32": ("ms", 1e3, 1), "fan64": ("ms", 1e3, 1), "chain200": ("µs/call", 1e6, 200),
         "fan200": ("µs/call", 1e6, 200), "sleep_overlap": ("ms", 1e3, 1),
         "sleep0_chain": ("µs/call", 1e6, 200), "sleep5_chain": ("ms/call", 1e3, 20)}


def run(python: str, repeat: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}
    env["PYTHONPOPPY"] = "1"
    p = subprocess.run([python, "-c", CHILD, str(repeat)], capture_output=True, text=True, env=env,
                       timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{python} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(samples, key):
    unit, scale, per = UNITS[key]
    lo, hi = min(samples) * scale / per, max(samples) * scale / per
    return f"{lo:.2f}–{hi:.2f} {unit}" if unit == "ms/call" else f"{lo:.1f}–{hi:.1f} {unit}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2, help="processes per build (alternating)")
    ap.add_argument("--compare", nargs=2, metavar=("OLD_PYTHON", "NEW_PYTHON"))
    args = ap.parse_args()
    builds = {"old": args.compare[0], "new": args.compare[1]} if args.compare else {"this": sys.executable}
    results = {name: [] for name in builds}
    print(f"load average before: {os.getloadavg()}")
    for _ in range(args.rounds):
        for name, py in builds.items():
            results[name].append(run(py, args.repeat))
    print(f"load average after: {os.getloadavg()}")
    names = list(builds)
    print("| case | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for key in UNITS:
        cells = [fmt([s for r in results[n] for s in r[key]], key) for n in names]
        print(f"| {key} | " + " | ".join(cells) + " |")
    for key in ("threads_after_fan32", "threads_after_idle", "blocking_calls", "timer_tasks"):
        cells = [", ".join(str(r[key]) for r in results[n]) for n in names]
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
