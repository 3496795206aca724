# A dict the run created, used as a cache of pending results (the shape of Tree-of-Thoughts'
# `local_value_cache`): `if k in cache: ... else: v = f(ask(k)); cache[k] = v`, with `v` a value
# computed from a declared result (so it has a stand-in before the reply arrives). The store is
# on one key; the next iteration's look-up of another key must not wait for it. The stand-in
# once let the store be classified from hints (sequential, in the global order) before per-object
# ordering could find it local, so every look-up waited for the previous reply: one request in
# flight.
# difftest: min_in_flight=6
import asyncio
import time

from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)


@unordered
async def ask(prompt, n=3) -> list[str]:
    with _traced("llm", "unordered", prompt, n=n):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        return [_answer("value: " + prompt, "plain", 3) + f" #{i}" for i in range(n)]


@poppy
def scores(candidates):
    cache = {}
    for c in candidates:
        if c in cache:
            score = 0
        else:
            score = len(ask(c, n=len(c)))
            cache[c] = score
    return sorted(cache.items())


print(scores([f"c{i % 6}" for i in range(9)]))
