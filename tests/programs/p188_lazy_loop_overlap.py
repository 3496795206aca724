# A lazily iterated loop over a generator: each `next` runs the generator's code, an ordered
# call, so it waits for every earlier call to succeed — CPython never resumes the generator once
# a call in the loop body raised (issue 14) — and the body's unordered calls of one iteration do
# not overlap the next iteration's. Here the replies flow only into other unordered calls
# (`-> str` lets those classify before the reply arrives); results as in CPython, one item at a
# time (checked from poppy_jit.stats()["peak_in_flight"]).
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
    assert poppy_jit.stats()["peak_in_flight"] == 1, poppy_jit.stats()["peak_in_flight"]
print(fire_all(5))
print("ok")
