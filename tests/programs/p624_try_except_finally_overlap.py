# Issue 16's loop with its finally clause, `json.loads` passed in as a parameter: the 12 first
# requests are in flight together (each iteration's try body starts with its unordered request,
# which needs nothing of the iterations before), then the retries, with the `log` lines of the
# else and finally clauses in CPython's order. (Written with `json.loads(...)` in the body, as
# p620 is, one request is in flight at a time: the read of the module attribute waits for the
# previous iteration's `log`, and the gated body holds the next request behind it — p562.)
# difftest: min_in_flight=12
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
            return json.dumps({"label": f"S{h}"})
        if h == 0:
            return "not json"
        if h == 1:
            return json.dumps({"lbl": h})
        return json.dumps({"label": f"L{h}"})


@poppy
def classify_all(items, loads=json.loads):
    labels = []
    for it in items:
        try:
            label = loads(llm(f"classify {it}"))["label"]
        except (json.JSONDecodeError, KeyError):
            label = loads(llm(f"classify strictly {it}"))["label"]
        else:
            log(f"ok {it}")
        finally:
            log(f"done {it}")
        labels.append(label)
    return labels


print(classify_all([f"item{i}" for i in range(12)]))
