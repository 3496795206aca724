# The evaluation loop of a tree search (the shape of Tree-of-Thoughts' `get_values`): for each
# candidate not seen yet, a helper builds the prompt with a static method of the task, asks the
# model (a declared `list[str]`), reduces the replies with another static method that returns
# early on some candidates, and the loop stores the value into a dict and a list of its own.
# The helpers are the program's own code, compiled with it (`set_internal`) and inlined. The
# store `cache[c] = value` and the append wait for `value`; whether they touch only the run's
# own objects is decided before it arrives, once the inlined calls before them have linked in
# their bodies and their early `return` is decided — so the next candidate's look-up and
# request do not wait for this one's reply. (A reduction that reads the replies further —
# `len(replies[-1])`, a generator over them — still holds the next look-up until the reply
# arrives: docs/benchmarks.md, ToT.)
# difftest: min_in_flight=6
import asyncio
import time

import poppy_jit
from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)
poppy_jit.set_internal(["__main__"])


@unordered
async def ask(prompt, n=3) -> list[str]:
    with _traced("llm", "unordered", prompt, n=n):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        return [_answer("rate: " + prompt, "plain", 3) + f"\n{'sure' if i % 2 else 'likely'}" for i in range(n)]


class Task:
    @staticmethod
    def prompt_for(c):
        last = c.strip().split("\n")[-1]
        return "rate " + last

    @staticmethod
    def reduce(c, replies):
        if len(c.strip().split("\n")) == 4 and "answer" not in c.lower():
            return 0
        return len(replies)


def value_of(task, c, n):
    prompt = task.prompt_for(c)
    replies = ask(prompt, n=n)
    return task.reduce(c, replies)


@poppy
def values_of(task, candidates, n):
    values = []
    cache = {}
    for c in candidates:
        if c in cache:
            value = 0
        else:
            value = value_of(task, c, n)
            cache[c] = value
        values.append(value)
    return values, sorted(cache)


print(values_of(Task(), [f"step {i % 6}\nleft: {i}" for i in range(6)] + ["step 1\nleft: 1"], 3))
