# Issue 16's loop with its finally clause: each item's label is parsed from an LLM reply; a reply
# that is not JSON or has no "label" is retried with a stricter prompt (the retry may fail too: the
# finally clause still runs, then the exception leaves the function), `else` logs success and
# `finally` logs every item's end. The try/except/else/finally compiles (a try/except statement
# as the protected body of the finally) with CPython's results and calls (p625: the overlap).
# difftest: expect_rc=1
import asyncio
import json
import time

from poppy_jit import poppy, unordered
from _ext import _delay, _h, _rendezvous_pending, _traced, log, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.2)


@unordered
async def llm(prompt):
    with _traced("llm", "unordered", prompt):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        h = _h(prompt)[0] % 4
        if "strictly" in prompt:
            return "[1, 2]" if "item7" in prompt else json.dumps({"label": f"S{h}"})
        if h == 0:
            return "not json"
        if h == 1:
            return json.dumps({"lbl": h})
        return json.dumps({"label": f"L{h}"})


@poppy
def classify_all(items):
    labels = []
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


print(classify_all([f"item{i}" for i in range(7)]))
# The retry of item7 fails: the exception leaves the function (its traceback and exit code are
# CPython's). The first requests of the later items may have been made already under
# PYTHONPOPPY=1 (unordered, speculative: allowed in a run that fails, and cancelled).
print(classify_all([f"item{i}" for i in range(12)]))
