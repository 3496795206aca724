"""Issue 16's example as written: `with section("classify"):` around a loop of
try/except/else/finally, each item's label parsed from an LLM reply and retried with a stricter
prompt when the reply is not JSON or has no label. Plain CPython and PYTHONPOPPY=1 side by side
in one run (each measurement a fresh interpreter, the two alternating), against the ideal.

    python benches/issue16_example.py [--items 12] [--latency 0.2] [--repeat 3]

The model is simulated (`asyncio.sleep(latency)`); which replies need a retry is fixed by the
item's index (every third one), so plain CPython makes items + k requests one after another and
the ideal is two latencies: the first request of every item together, then the k retries
together. Reported: seconds per run (best of --repeat), the speed-up, the ideal speed-up and the
share of it reached, and whether both printed the same log lines and returned the same labels.

The list of items is built for the call (`classify_all(list(items))`): a list the caller also
keeps may be changed by the sequential calls in the loop's body (`log`, the section's exit), so
the loop reads it one item at a time, in program order, and its iterations wait for each other
(docs/semantics.md, "Loops in try and with bodies"); `--shared` measures that case.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import time

import poppy_jit
from poppy_jit import poppy, sequential, unordered

LATENCY = 0.2


@unordered
async def llm(prompt):
    await asyncio.sleep(LATENCY)
    i = int(prompt.rsplit("item", 1)[1])
    if "strictly" in prompt or i % 3:
        return json.dumps({"label": f"L{i % 4}"})
    return "not json" if i % 2 else json.dumps({"lbl": i})


LOG = io.StringIO()


@sequential
def log(msg):
    print(msg, file=LOG)


@contextlib.contextmanager
def section(name):
    log(f"start {name}")
    yield
    log(f"end {name}")


@poppy
def classify_all(items):
    labels = []
    with section("classify"):
        for it in items:
            try:
                label = json.loads(llm(f"classify {it}"))["label"]
            except (json.JSONDecodeError, KeyError):
                label = json.loads(llm(f"classify strictly {it}"))["label"]
            else:
                log(f"ok {it}")
            finally:
                log(f"done {it}")
            labels.append(label)
    return labels


def child(n: int, shared: bool) -> None:
    items = [f"item{i}" for i in range(n)]
    t = time.perf_counter()
    out = classify_all(items) if shared else classify_all(list(items))
    t = time.perf_counter() - t
    st = poppy_jit.stats() if poppy_jit.is_enabled() else {}
    print(json.dumps({"t": t, "out": out, "log": LOG.getvalue(), "fallbacks": st.get("fallbacks", []),
                      "speculative": st.get("speculative_calls", 0)}))


def measure(poppy_on: bool, a) -> dict:
    env = dict(os.environ, PYTHONPOPPY="1" if poppy_on else "0")
    cmd = [sys.executable, __file__, "--child", "--items", str(a.items), "--latency", str(a.latency)]
    if a.shared:
        cmd.append("--shared")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    global LATENCY
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=12)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shared", action="store_true", help="pass a list the caller keeps")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    LATENCY = a.latency
    if a.child:
        return child(a.items, a.shared)
    runs = {"plain": [], "poppy": []}
    for _ in range(a.repeat):
        for name in ("plain", "poppy"):
            runs[name].append(measure(name == "poppy", a))
    plain_t = min(r["t"] for r in runs["plain"])
    poppy_t = min(r["t"] for r in runs["poppy"])
    same = all((r["out"], r["log"]) == (runs["plain"][0]["out"], runs["plain"][0]["log"])
               for r in runs["plain"] + runs["poppy"])
    retries = sum(1 for i in range(a.items) if i % 3 == 0)
    ideal = 2 * LATENCY
    speed, ideal_speed = plain_t / poppy_t, plain_t / ideal
    print(f"items {a.items}, requests {a.items + retries} ({retries} retries), latency {LATENCY:.3f} s, "
          f"best of {a.repeat}{', list kept by the caller' if a.shared else ''}")
    print(f"plain  {plain_t:7.3f} s")
    print(f"poppy  {poppy_t:7.3f} s   speed-up {speed:5.2f}x")
    print(f"ideal  {ideal:7.3f} s   speed-up {ideal_speed:5.2f}x   share of ideal {speed / ideal_speed:6.1%}")
    print(f"identical labels and log lines: {same}; fallbacks {runs['poppy'][0]['fallbacks']}; "
          f"speculative calls {runs['poppy'][0]['speculative']}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
