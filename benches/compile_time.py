"""Compile time per @poppy function (bytecode → Bezoar → λO), on the benchmark applications and on
the differential corpus.

    python benches/compile_time.py [--runs N] [--apps-only | --corpus-only] [--json PATH]

Every run is a fresh interpreter with PYTHONPOPPY=1, so every function is translated afresh.
Times come from `poppy_jit.stats()["compile_times"]` (src/hook.rs: wall time of one translation,
lift + passes + lower, measured around `compile_function`, per function the first time it is
called or inlined; a fallback's time is the time until the lifter gave up).

* apps: each application of benches/apps run once per run in the benchmark harness's `poppy`
  configuration (`poppy_jit.bench.child`, against the in-process simulated LLM service, latencies
  scaled by 0.05); the stats of its run hold the translations of its functions.
* corpus: each tests/programs/p*.py run with PYTHONPOPPY=1 (tests/programs/_ext.py writes
  `poppy_jit.stats()` into its trace file at exit).

Per function (program/app + qualname) the median over the runs is taken; the table gives the
count, median, 90th percentile and maximum of those per-function times, for compiled functions and
fallbacks separately, the maximum single sample, and the slowest functions.  The first successful
translation in each process is also reported apart ("first"; "compiled_warm" excludes it): it pays
the runtime's one-time initialisation (importing poppy_jit._rt, ~1 ms).  Targets (issue #4):
median ≤ 0.2 ms, max ≤ 2 ms per compiled function.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MEDIAN_MS, TARGET_MAX_MS = 0.2, 2.0


def _add(samples: dict, where: str, entries: list, first_in_process: bool = True) -> bool:
    """Add translations made in one process; the first successful one of a process is keyed
    apart: it pays the runtime's one-time initialisation (importing poppy_jit._rt when the first
    λO program is built; a fallback stops before that).  Returns whether that one was seen."""
    for e in entries:
        first = first_in_process and e["compiled"]
        first_in_process = first_in_process and not first
        samples[(where, e["function"], e["compiled"], first)].append(e["ms"])
    return not first_in_process


def app_samples(runs: int) -> dict:
    """{(app, qualname, compiled, first in its process): [ms per run]} from the benchmark
    applications (one child process runs all apps, so only the first app has a first)."""
    from poppy_jit.bench import harness
    from poppy_jit.bench.responders import LATENCY, respond
    from poppy_jit.sim import SimServer

    apps = harness.discover(harness.APPS_DIR)
    jobs = [{"id": a, "app": a, "overrides": {}, "reps": 1} for a in apps]
    samples = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp, \
            SimServer(respond, dataclasses.replace(LATENCY, time_scale=0.05)) as sim:
        for i in range(runs):
            print(f"[compile_time] apps run {i + 1}/{runs} ({len(apps)} apps) ...",
                  file=sys.stderr, flush=True)
            results, _ = harness.run_mode("poppy", jobs, harness.APPS_DIR, sim, tmp)
            first = True  # the child runs the apps in order in one process
            for app in apps:
                r = results[app]
                if "error" in r:
                    raise RuntimeError(f"{app} failed:\n{r['error']}")
                entries = r["stats"][0].get("compile_times", [])
                seen = _add(samples, app, entries, first)
                first = first and not seen
    return samples


def corpus_samples(runs: int) -> dict:
    """{(program, qualname, compiled, first in its process): [ms per run]} from tests/programs."""
    sys.path.insert(0, str(ROOT / "tests"))
    import difftest

    samples = defaultdict(list)
    progs = difftest.programs()
    for i in range(runs):
        print(f"[compile_time] corpus run {i + 1}/{runs} ({len(progs)} programs) ...",
              file=sys.stderr, flush=True)
        for p in progs:
            stats = difftest.run_program(p, poppy=True).poppy_stats or {}
            _add(samples, p.name, stats.get("compile_times", []))
    return samples


def _pct(xs: list, q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def summarise(samples: dict) -> dict:
    """Rows: compiled (all), compiled_warm (not the first successful translation of a process),
    first (the first successful translation of each process), fallback."""
    out = {}
    rows = {"compiled": lambda k: k[2], "compiled_warm": lambda k: k[2] and not k[3],
            "first": lambda k: k[3], "fallback": lambda k: not k[2]}
    for row, keep in rows.items():
        per_fn = {k: statistics.median(v) for k, v in samples.items() if keep(k)}
        raw = [x for k, v in samples.items() if keep(k) for x in v]
        if not per_fn:
            out[row] = {"count": 0}
            continue
        vals = list(per_fn.values())
        slowest = sorted(per_fn.items(), key=lambda kv: -kv[1])[:5]
        out[row] = {
            "count": len(vals), "median_ms": statistics.median(vals), "p90_ms": _pct(vals, 0.9),
            "max_ms": max(vals), "max_sample_ms": max(raw), "samples": len(raw),
            "slowest": [{"where": k[0], "function": k[1], "ms": ms} for k, ms in slowest]}
    return out


def format_summary(name: str, s: dict, runs: int) -> str:
    lines = [f"== {name} ({runs} run(s); per function: median over runs) =="]
    lines.append(f"{'':13} {'count':>5} {'median_ms':>10} {'p90_ms':>8} {'max_ms':>8} "
                 f"{'max_sample':>10}")
    for kind in ("compiled", "compiled_warm", "first", "fallback"):
        r = s[kind]
        if not r["count"]:
            lines.append(f"{kind:13} {0:5d}")
            continue
        lines.append(f"{kind:13} {r['count']:5d} {r['median_ms']:10.3f} {r['p90_ms']:8.3f} "
                     f"{r['max_ms']:8.3f} {r['max_sample_ms']:10.3f}")
    for kind in ("compiled", "compiled_warm"):
        c = s[kind]
        if c["count"]:
            ok = c["median_ms"] <= TARGET_MEDIAN_MS and c["max_ms"] <= TARGET_MAX_MS
            lines.append(f"target for {kind} (median ≤ {TARGET_MEDIAN_MS} ms, max ≤ "
                         f"{TARGET_MAX_MS} ms): {'met' if ok else 'MISSED'}")
    for kind in ("compiled", "compiled_warm"):
        c = s[kind]
        if c["count"]:
            lines.append(f"slowest {kind}: " + ", ".join(
                f"{e['where']}:{e['function']} {e['ms']:.3f}" for e in c["slowest"]))
    return "\n".join(lines)


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per app/program")
    ap.add_argument("--apps-only", action="store_true")
    ap.add_argument("--corpus-only", action="store_true")
    ap.add_argument("--json", metavar="PATH", help="write the summaries as JSON")
    args = ap.parse_args(argv)
    out = {"runs": args.runs}
    if not args.corpus_only:
        out["apps"] = summarise(app_samples(args.runs))
        print(format_summary("benches/apps", out["apps"], args.runs))
    if not args.apps_only:
        out["corpus"] = summarise(corpus_samples(args.runs))
        print(format_summary("tests/programs", out["corpus"], args.runs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
