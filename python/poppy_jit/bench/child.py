"""One benchmark configuration in a fresh interpreter: `python -m poppy_jit.bench.child SPEC OUT`.

SPEC (JSON): {"mode": "python"|"poppy"|"sequential"|"manual", "apps_dir": ..., "jobs": [{"id",
"app", "overrides", "reps"}]}. The mode's environment (PYTHONPOPPY, POPPY_BENCH_ALL_SEQUENTIAL) is
set by the parent, because poppy_jit reads it at import. For each job the child imports the
application module, builds the SDK client (not timed), and times `run(**params)` (the module's PARAMS with the job's overrides) (or
`run_manual(**params)` on the persistent event loop) `reps` times, capturing stdout. The output
compared between configurations is the return value, the captured stdout and the workspace's
effects. Results go to OUT as JSON.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import sys
import time
import traceback


def _run_job(job: dict, mode: str) -> dict:
    import poppy_jit
    from poppy_jit import _loop, ai
    from poppy_jit.bench import ext

    app = importlib.import_module(job["app"])
    params = dict(app.PARAMS, **job["overrides"])
    ai.warm_up()  # client and the SDK's lazy modules, before timing (as in poppy_jit.demo)
    times, outputs, stats = [], [], []
    for _ in range(job["reps"]):
        ext.reset()
        if poppy_jit.is_enabled():
            poppy_jit.reset_stats()
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            t0 = time.perf_counter()
            if mode == "manual":
                result = _loop.run_sync(app.run_manual(**params))
            else:
                result = app.run(**params)
            elapsed = time.perf_counter() - t0
        times.append(elapsed)
        output = json.dumps({"result": repr(result), "stdout": buf.getvalue(),
                             "effects": repr(ext.effects())})
        outputs.append(output)
        if poppy_jit.is_enabled():
            stats.append(poppy_jit.stats())
    return {"id": job["id"], "times": times, "calls": ext.counts(),
            "output_sha": [hashlib.sha256(o.encode()).hexdigest()[:16] for o in outputs],
            "output": outputs[0], "stats": stats}


def main(spec_path: str, out_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    sys.path.insert(0, spec["apps_dir"])
    results = []
    for job in spec["jobs"]:
        try:
            results.append(_run_job(job, spec["mode"]))
        except Exception:  # report and go on with the other applications
            results.append({"id": job["id"], "error": traceback.format_exc()})
    with open(out_path, "w") as f:
        json.dump({"mode": spec["mode"], "results": results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
