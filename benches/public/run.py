"""Two unmodified public programs through `python -m poppy_jit run` against plain CPython, with
a deterministic stand-in model (docs/benchmarks.md, "Unmodified public programs").

    python benches/public/run.py --tot PATH_TO_TREE_OF_THOUGHT_LLM --debate PATH_TO_LLM_MULTIAGENT_DEBATE
        [--tot-latency 0.2] [--debate-latency 0.02] [--repeat 1] [--puzzles 1]

The programs are not part of this repository: PATH_* are checkouts you made yourself (their files
are run as they are). `standin/openai` (ours) is put first on PYTHONPATH: the old `openai` API
those programs call, answering from the prompt alone after a fixed latency. Each variant runs in
a fresh interpreter, plain and launched alternately; stdout must be identical (object addresses
masked: both programs print reprs of functions and partials, whose addresses differ from run to
run even plainly). The ideal replaces the plain run's model time (calls × latency) by the
critical path of model calls (rounds × latency).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _run(cmd, cwd, env):
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t, r


def _mask(s: str) -> str:
    return re.sub(r"0x[0-9a-f]+", "0x…", s)


def bench(name, cwd, argv, config, extra_path, latency, repeat, rounds, calls_log):
    env = dict(os.environ, STANDIN_LATENCY=str(latency),
               PYTHONPATH=os.pathsep.join([os.path.join(HERE, "standin"), *extra_path]))
    env.pop("PYTHONPOPPY", None)
    plain_t, poppy_t, same = [], [], True
    ncalls = None
    for _ in range(repeat):
        with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
            t, plain = _run([sys.executable, *argv], cwd, dict(env, STANDIN_LOG=log.name))
            ncalls = len(log.read().splitlines())
        plain_t.append(t)
        t, launched = _run([sys.executable, "-m", "poppy_jit", "run", "--config", config, *argv],
                           cwd, env)
        poppy_t.append(t)
        same = same and _mask(plain.stdout) == _mask(launched.stdout) \
            and plain.returncode == launched.returncode
    plain_s, poppy_s = statistics.median(plain_t), statistics.median(poppy_t)
    ideal_s = plain_s - ncalls * latency + rounds * latency
    ideal_x, got_x = plain_s / ideal_s, plain_s / poppy_s
    share = (got_x - 1) / (ideal_x - 1) if ideal_x > 1 else float("nan")
    print(f"{name:10} calls {ncalls:4}  rounds {rounds:4}  plain {plain_s:7.2f} s  poppy "
          f"{poppy_s:7.2f} s ({got_x:.2f}×)  ideal {ideal_s:6.2f} s ({ideal_x:.1f}×)  share of "
          f"ideal speed-up {share * 100:5.1f} %  stdout identical: {same}")
    return same


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tot", help="checkout of princeton-nlp/tree-of-thought-llm")
    ap.add_argument("--debate", help="checkout of composable-models/llm_multiagent_debate")
    ap.add_argument("--tot-latency", type=float, default=0.2, help="seconds per model call")
    ap.add_argument("--debate-latency", type=float, default=0.02, help="seconds per model call")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--puzzles", type=int, default=1)
    a = ap.parse_args()
    ok = True
    if a.tot:
        start = 900
        argv = ["run.py", "--task", "game24", "--task_start_index", str(start), "--task_end_index",
                str(start + a.puzzles), "--method_generate", "propose", "--method_evaluate",
                "value", "--method_select", "greedy", "--n_evaluate_sample", "3",
                "--n_select_sample", "5"]
        # 4 steps, each a round of proposals then a round of values, puzzle after puzzle.
        ok &= bench("ToT game24", a.tot, argv, os.path.join(HERE, "tot.toml"),
                    [os.path.join(a.tot, "src")], a.tot_latency, a.repeat, 8 * a.puzzles, None)
    if a.debate:
        # 100 questions × 3 rounds × 2 agents; within a question each round needs the last.
        ok &= bench("debate", os.path.join(a.debate, "math"), ["gen_math.py"],
                    os.path.join(HERE, "debate.toml"), [], a.debate_latency, a.repeat, 3, None)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
