# Issue 16's whole example: `with section("classify"):` (a user context manager whose enter and
# exit are sequential external calls) around p625's loop of try/except/else/finally with
# `json.loads(llm(...))["label"]` in the body and `log` calls in `else` and `finally`. Results,
# the calls and the `log` lines are CPython's; an item whose retry fails too ends the loop, the
# exception passing the finally clause and the section's exit (which logs it) to the caller.
# The loop's iterations run speculatively (issue 16): the first requests of all 7 items are in
# flight together, though the whole loop is in a with body; after the item whose retry fails,
# the later items' requests may have been made too (allowed, counted in `speculative_calls`),
# never their log lines.
# difftest: min_in_flight=7
import asyncio
import contextlib
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


@contextlib.contextmanager
def section(name):
    log(f"start {name}")
    try:
        yield name
    except Exception as e:
        log(f"{name} failed: {type(e).__name__}")
        raise
    else:
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


print(classify_all([f"item{i}" for i in range(7)]))
try:
    print(classify_all([f"item{i}" for i in range(5, 10)]))
except TypeError as e:
    print("caller caught", type(e).__name__, e)
