# Issue 16's loop as written, with its finally clause (p620's first call): `json.loads` is read
# under the module-attribute guard, the check after each operation of the gated try body is
# unordered, so the first requests of all 7 items are in flight together, the `log` lines of
# `else` and `finally` in CPython's order. (On 3.12/3.13 too: their layout, which puts the code
# after the statement into the finally's normal copy, is normalised into 3.11's, as for p624.)
# difftest: min_in_flight=7
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
