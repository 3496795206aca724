"""CPU-bound externals off the evaluator's process (python/poppy_jit/_executors.py), side by side.

    python benches/scale_out.py [--calls 16] [--secs 0.2] [--repeat 3] [--rounds 2] [--no-ray]

One @poppy program: `calls` external calls, each ~`secs` of pure-Python CPU work (an integer hash
loop, calibrated once in this process so that every variant does the same work), results summed.
Variants, each in a fresh interpreter, alternating in every round so they share the machine's
load:
- plain:   PYTHONPOPPY unset, the work function called directly (sequential CPython);
- threads: PYTHONPOPPY=1, `@unordered(blocking=True)`: the runtime's thread pool (the GIL lets one
           call run at a time);
- process: PYTHONPOPPY=1, `@unordered(executor="process")` (a pool sized to the cores);
- ray:     PYTHONPOPPY=1, `@unordered(executor="ray")` on a local Ray started with num_cpus=2
           (skipped when Ray is not installed);
- split:   the measured ideal: one plain interpreter per core at the same time, each making its
           share of the calls (the wall time of the slowest). On a shared machine this says how
           much parallelism was actually there; on an idle one it is plain / cores.
Each child runs the program once cold (worker processes start) and `repeat` times warm. Every
variant must return plain's result (checked). The work is calibrated in CPU time
(`time.process_time`), so a loaded machine stretches wall times but not the work.

Per-call cost of an engine (for the estimate of a larger cluster in docs/annotations.md): the same
program with `--noop-calls` (200) calls of no work, warm, per call.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    import poppy_jit
    from poppy_jit import poppy, unordered

    MODE, N, CALLS, REPEAT = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    FIRST, STEP = int(sys.argv[5]), int(os.environ.get("SCALE_OUT_STEP", "1"))
    sys.path.insert(0, os.environ["SCALE_OUT_DIR"])
    from scale_out_work import burn

    if MODE == "ray":
        import ray
        t = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        RAY_INIT = time.perf_counter() - t

    if MODE == "plain":
        work = burn
    elif MODE == "threads":
        work = unordered(blocking=True)(burn)
    else:
        import scale_out_work
        work = getattr(scale_out_work, "burn_" + MODE)

    @poppy
    def program(calls, n):
        total = 0
        for i in range(FIRST, calls, STEP):
            total = total + work(i, n)
        return total

    assert poppy_jit.is_enabled() == (MODE != "plain")
    res = {"mode": MODE}
    t = time.perf_counter()
    res["result"] = program(CALLS, N)
    res["cold"] = time.perf_counter() - t
    warm = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        assert program(CALLS, N) == res["result"]
        warm.append(time.perf_counter() - t)
    res["warm"] = warm
    if MODE == "ray":
        res["ray_init"] = RAY_INIT
    print(json.dumps(res))
    """
)

WORK = textwrap.dedent(
    """
    from poppy_jit import unordered


    def burn(i, n):
        # Pure-Python CPU work: holds the GIL throughout.
        x = i
        for k in range(n):
            x = (x * 1103515245 + k) % 2147483648
        return x % 1000


    burn_process = unordered(executor="process")(burn)
    burn_ray = unordered(executor="ray")(burn)
    """
)


def calibrate(secs: float) -> int:
    """Loop count for ~`secs` of `burn` in this interpreter (best of 3 short probes)."""
    ns = {}
    exec(WORK.replace("from poppy_jit import unordered", "unordered = lambda **k: (lambda f: f)"), ns)
    probe = 200_000
    best = min(_timed(ns["burn"], probe) for _ in range(3))
    return int(probe * secs / best)


def _timed(f, n) -> float:
    t = time.process_time()
    f(0, n)
    return time.process_time() - t


def _start(mode: str, n: int, calls: int, repeat: int, workdir: str,
           first: int = 0) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}
    if mode != "plain":
        env["PYTHONPOPPY"] = "1"
    env["SCALE_OUT_DIR"] = workdir
    env.setdefault("RAY_AUTH_MODE", "disabled")
    return subprocess.Popen([sys.executable, "-c", CHILD, mode, str(n), str(calls), str(repeat),
                             str(first)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=workdir)


def _result(p: subprocess.Popen, mode: str) -> dict:
    out, err = p.communicate(timeout=1200)
    if p.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{err}")
    return json.loads(out.strip().splitlines()[-1])


def run(mode: str, n: int, calls: int, repeat: int, workdir: str, cores: int = 1) -> dict:
    if mode != "split":
        return _result(_start(mode, n, calls, repeat, workdir), mode)
    # One plain interpreter per core, each with its share of the calls (i = first, first+cores..).
    os.environ["SCALE_OUT_STEP"] = str(cores)
    try:
        shares = [_start("plain", n, calls, repeat, workdir, first=k) for k in range(cores)]
    finally:
        del os.environ["SCALE_OUT_STEP"]
    parts = [_result(p, "split") for p in shares]
    return {"result": sum(r["result"] for r in parts),
            "cold": max(r["cold"] for r in parts),
            "warm": [max(ts) for ts in zip(*(r["warm"] for r in parts))]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=16)
    ap.add_argument("--secs", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--noop-calls", type=int, default=200)
    args = ap.parse_args()
    import tempfile

    modes = ["plain", "split", "threads", "process"]
    if not args.no_ray and importlib.util.find_spec("ray") is not None:
        modes.append("ray")
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as workdir:
        with open(os.path.join(workdir, "scale_out_work.py"), "w") as f:
            f.write(WORK)
        n = calibrate(args.secs)
        print(f"{args.calls} calls × ~{args.secs} s of pure-Python work (n={n}), {cores} cores, "
              f"{args.rounds} rounds × (1 cold + {args.repeat} warm) per variant")
        print(f"load average before: {os.getloadavg()}  ({time.strftime('%H:%M:%S', time.gmtime())} UTC)")
        results: dict = {m: [] for m in modes}
        noop: dict = {m: [] for m in modes if m in ("process", "ray")}
        for _ in range(args.rounds):
            for m in modes:
                results[m].append(run(m, n, args.calls, args.repeat, workdir, cores))
            for m in noop:
                noop[m].append(run(m, 0, args.noop_calls, args.repeat, workdir))
        print(f"load average after: {os.getloadavg()}  ({time.strftime('%H:%M:%S', time.gmtime())} UTC)")
    expected = results["plain"][0]["result"]
    for m in modes:
        for r in results[m]:
            assert r["result"] == expected, (m, r["result"], expected)
    plain = statistics.median(s for r in results["plain"] for s in r["warm"])
    ideal = plain / min(cores, args.calls)
    split = statistics.median(s for r in results["split"] for s in r["warm"])
    print(f"\nall variants returned plain CPython's result ({expected})")
    print(f"ideal on {cores} cores: plain / {cores} = {ideal:.2f} s; measured (split): {split:.2f} s "
          f"= {plain / split:.2f}× plain\n")
    print("| variant | warm median | warm best–worst | cold (first run) | speed-up vs plain (median) "
          "| of ideal (plain / cores) | of measured ideal (split) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for m in modes:
        warm = [s for r in results[m] for s in r["warm"]]
        cold = [r["cold"] for r in results[m]]
        med = statistics.median(warm)
        print(f"| {m} | {med:.2f} s | {min(warm):.2f}–{max(warm):.2f} s | "
              f"{', '.join(f'{c:.2f}' for c in cold)} s | {plain / med:.2f}× | {ideal / med:.0%} | "
              f"{split / med:.0%} |")
    for m, rs in noop.items():
        per = [s / args.noop_calls * 1e6 for r in rs for s in r["warm"]]
        print(f"\n{m}: {args.noop_calls} no-op calls, warm: {statistics.median(per):.0f} µs per call "
              f"(best {min(per):.0f}, worst {max(per):.0f})", end="")
    print()
    if "ray" in modes:
        inits = ", ".join(f"{r['ray_init']:.1f}" for r in results["ray"])
        print(f"ray.init (local, num_cpus=2): {inits} s")


if __name__ == "__main__":
    main()
