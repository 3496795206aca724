# The everyday memo cache: a dict the caller owns (a module-level global passed in, so not the
# run's own object), looked up before each request and filled after it. The look-up of the next
# key reads another entry than the pending store `cache[k] = v` (waiting for its reply), so it
# may run before the store (`objects::read_order`) — but only once the calls between them are
# known to pass the order on: `len(v)` of the pending reply is classified from the reply's
# declared type (`-> str`), and a read that walked back to it before then walks again. Before,
# the walk stopped there for good and every request waited for the one before it.
# difftest: min_in_flight=6
import asyncio
import time

from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)

CACHE = {"seen before": "AN OLD ANSWER"}


@unordered
async def ask(prompt) -> str:
    with _traced("llm", "unordered", prompt):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        return _answer(prompt, "plain", 3)


@poppy
def lengths(keys, cache):
    out = []
    for k in keys:
        if k in cache:
            v = cache[k]
        else:
            v = ask(k)
            cache[k] = v
        out.append(len(v))
    return out


print(lengths([f"question {i}" for i in range(6)] + ["seen before", "question 2"], CACHE))
print(sorted(CACHE))
