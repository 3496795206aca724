"""CityExcursions (OPAL §2) against the simulated LLM service, plain CPython vs PYTHONPOPPY=1.

`python -m poppy_jit.demo` starts a `poppy_jit.sim` server in-process, runs the program below in a
subprocess twice (plain, then PYTHONPOPPY=1), checks that both print exactly the same thing, and
compares poppy's time with the program's critical path taken from the simulator's request log:
the cities request plus the slowest excursions request (nothing can finish earlier than that).
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
import sys
import tempfile
import time

from poppy_jit import poppy
from poppy_jit.ai import llm, warm_up
from poppy_jit.sim import LatencyModel, SimServer, city_excursions as city_responder


@poppy
def city_excursions(region):
    cities = llm(f"List cities in {region}").split("\n")
    for city in cities:
        print(city)
        excursions = llm(f"Excursions in {city}")
        print(excursions)


# Sizing: 1 cities request (~0.33 s) + 8 excursions requests (~0.56 s each) ≈ 5 s sequentially.
LATENCY = LatencyModel(ttft=0.3, per_token=0.004, jitter=0.15, seed=7)
RATIO_LIMIT = 1.15
_ELAPSED_TAG = "poppy-demo-elapsed="


def _child(region: str) -> None:
    """Run the program; report its own elapsed time (and poppy's stats) on stderr / a file."""
    # Build the SDK client before timing (as a program would at start-up), in both runs alike.
    warm_up()
    t0 = time.perf_counter()
    city_excursions(region)
    elapsed = time.perf_counter() - t0
    sys.stdout.flush()
    print(f"{_ELAPSED_TAG}{elapsed:.6f}", file=sys.stderr)
    stats_path = os.environ.get("POPPY_DEMO_STATS")
    if stats_path:
        import poppy_jit
        if poppy_jit.is_enabled():
            with open(stats_path, "w") as f:
                json.dump(poppy_jit.stats(), f)


def _run(region: str, env: dict) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "poppy_jit.demo", "--child", region],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    elapsed = None
    for line in proc.stderr.splitlines():
        if line.startswith(_ELAPSED_TAG):
            elapsed = float(line[len(_ELAPSED_TAG):])
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
            "wall": wall, "elapsed": elapsed}


def _critical_path(records: list) -> tuple:
    cities = [r for r in records if r.prompt.startswith("List cities in")]
    excursions = [r for r in records if r.prompt.startswith("Excursions in")]
    if len(cities) != 1 or not excursions:
        raise RuntimeError(f"unexpected request log: {len(cities)} cities requests, "
                           f"{len(excursions)} excursions requests")
    slowest = max(r.latency for r in excursions)
    return cities[0].latency + slowest, cities[0].latency, slowest, len(excursions)


def _fail_report(name: str, run: dict) -> None:
    print(f"\n{name} run FAILED (exit code {run['rc']}). Its stderr ends with:", file=sys.stderr)
    for line in run["stderr"].strip().splitlines()[-8:]:
        print(f"    {line}", file=sys.stderr)


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m poppy_jit.demo", description=__doc__.split("\n")[0])
    ap.add_argument("--region", default="Oceania")
    ap.add_argument("--time-scale", type=float, default=1.0, help="scale all simulated latencies")
    args = ap.parse_args(argv)

    latency = LatencyModel(LATENCY.ttft, LATENCY.per_token, LATENCY.jitter, LATENCY.seed,
                           args.time_scale)
    # Children must import this same poppy_jit (source tree or installed copy).
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with SimServer(city_responder, latency) as sim, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OPENAI_BASE_URL=sim.base_url,
                   OPENAI_API_KEY=os.environ.get("POPPY_DEMO_API_KEY", "sk-poppy-sim"),
                   PYTHONPATH=os.pathsep.join(
                       [pkg_parent] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        env.pop("PYTHONPOPPY_STATS", None)
        print(f"simulated LLM service at {sim.base_url}")
        print(f"CityExcursions({args.region!r}), plain CPython ...", flush=True)
        plain = _run(args.region, dict(env, PYTHONPOPPY="0"))
        if plain["rc"] != 0:
            _fail_report("plain", plain)
            return 1
        print(plain["stdout"], end="")
        plain_log = sim.requests
        sim.clear_log()

        print(f"\nCityExcursions({args.region!r}), PYTHONPOPPY=1 ...", flush=True)
        stats_path = os.path.join(tmp, "stats.json")
        popped = _run(args.region, dict(env, PYTHONPOPPY="1", POPPY_DEMO_STATS=stats_path))
        poppy_log = sim.requests
        stats = None
        if os.path.exists(stats_path):
            with open(stats_path) as f:
                stats = json.load(f)

    print(f"\nplain : {plain['elapsed']:.3f} s in the program, {plain['wall']:.3f} s with "
          f"interpreter start-up ({len(plain_log)} requests)")
    if popped["rc"] != 0:
        _fail_report("PYTHONPOPPY=1", popped)
        if "poppy_jit._core" in popped["stderr"]:
            print("(the compiled runtime is missing: run `pip install .` first)", file=sys.stderr)
        return 1
    print(f"poppy : {popped['elapsed']:.3f} s in the program, {popped['wall']:.3f} s with "
          f"interpreter start-up ({len(poppy_log)} requests)")
    if stats is not None:
        fallbacks = stats.get("fallbacks", [])
        print(f"        compiled {stats.get('functions_compiled')} function(s), "
              f"peak {stats.get('peak_in_flight')} external calls in flight, "
              f"{len(fallbacks)} fallback(s)")
        for fb in fallbacks:
            print(f"        fallback {fb.get('function')}: {fb.get('reason')}")

    if popped["stdout"] != plain["stdout"]:
        print("\nMISMATCH: the PYTHONPOPPY=1 output differs from plain CPython:", file=sys.stderr)
        sys.stderr.writelines(difflib.unified_diff(
            plain["stdout"].splitlines(True), popped["stdout"].splitlines(True),
            "plain", "poppy"))
        return 1
    print("outputs identical: yes")

    critical, cities_lat, slowest, n = _critical_path(poppy_log)
    ratio = popped["elapsed"] / critical
    print(f"critical path: {critical:.3f} s (cities {cities_lat:.3f} s + slowest of {n} "
          f"excursions {slowest:.3f} s)")
    print(f"speed-up over plain: {plain['elapsed'] / popped['elapsed']:.2f}x")
    flag = "" if ratio <= RATIO_LIMIT else f"   <-- ABOVE {RATIO_LIMIT}: poppy is not reaching " \
                                           "the critical path"
    print(f"poppy_time / critical_path = {ratio:.3f}{flag}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        sys.exit(main())
