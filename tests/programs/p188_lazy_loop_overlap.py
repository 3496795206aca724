# The unordered calls in the body of a lazily iterated loop still overlap: each `next` is ordered
# only against earlier ordered calls, so the async LLM calls of several iterations are in flight
# at once (checked from the trace and from poppy_jit.stats()["peak_in_flight"]). Here the replies
# flow only into other unordered calls (`-> str` lets those classify before the reply arrives);
# a body that appends a pending reply to a list waits for it before the next `next` (the append
# is classified only once its argument is known), so such a loop runs one item at a time.
# difftest: min_in_flight=2
import asyncio

import poppy_jit
from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _traced, log, set_latency_scale

set_latency_scale(0.1)


@unordered
async def ask(prompt) -> str:
    with _traced("llm", "unordered", prompt):
        await asyncio.sleep(_delay(prompt, "plain"))
        return _answer(prompt, "plain", 3)


def topics(n):
    for i in range(n):
        yield f"topic {i}"


@poppy
def refine_all(n):
    last = None
    for t in topics(n):
        last = ask(ask(f"about {t}"))
    return last


@poppy
def fire_all(n):
    count = 0
    for t in topics(n):
        ask(f"fire {t}")
        count += 1
    log(f"fired {count}")
    return count


print(refine_all(6))
if poppy_jit.is_enabled():
    assert poppy_jit.stats()["peak_in_flight"] > 1, poppy_jit.stats()["peak_in_flight"]
print(fire_all(5))
print("ok")
