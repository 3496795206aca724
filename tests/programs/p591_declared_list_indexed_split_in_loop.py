# A declared `list[str]` result (the shape of Tree-of-Thoughts' `gpt(...)[0].split('\n')`):
# indexed, its item split, the lines' count and membership read — all reads of plain data, known
# to run no user code from the declaration (checked at arrival), so they pass the order on before
# the reply arrives: the next iteration's attribute read of an object the run was given
# (readonly) does not wait, and the calls of the loop overlap.
# difftest: min_in_flight=3
import asyncio
import time

from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)


@unordered
async def propose(prompt, n=2) -> list[str]:
    with _traced("llm", "unordered", prompt, n=n):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        return [_answer("list: " + prompt, "plain", 3) + f"\n#{i}" for i in range(n)]


class Task:
    def __init__(self):
        self.prefix = "step:"


@poppy
def expand(task, states):
    firsts = []
    counts = []
    seen = []
    for s in states:
        prompt = task.prefix + s
        reply = propose(prompt)
        lines = reply[0].split("\n")
        firsts.append(lines[0])
        counts.append(len(lines))
        seen.append("#0" in lines)
    return firsts, counts, seen


print(expand(Task(), ["a", "b", "c", "d", "e"]))
