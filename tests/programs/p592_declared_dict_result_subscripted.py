# A declared `dict[str, str]` result (a parsed tool reply): subscripted, looked up with `in`
# and `.get`, its value split — reads of plain data, classified before the reply arrives from the
# declaration (checked at arrival), so the next iteration's attribute read of an object the run
# was given does not wait and the calls overlap.
# difftest: min_in_flight=3
import asyncio
import time

from poppy_jit import poppy, unordered
from _ext import _delay, _h, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)


@unordered
async def parse(prompt) -> dict[str, str]:
    with _traced("llm", "unordered", prompt):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        h = _h(prompt)
        out = {"answer": f"{prompt}-{h[0] % 10}", "tags": f"t{h[1] % 3},t{h[2] % 3}"}
        if h[3] % 2:
            out["note"] = "odd"
        return out


class Agent:
    def __init__(self):
        self.prefix = "q:"


@poppy
def ask_all(agent, questions):
    answers = []
    tags = []
    notes = []
    noted = []
    for q in questions:
        reply = parse(agent.prefix + q)
        answers.append(reply["answer"])
        tags.append(reply["tags"].split(","))
        notes.append(reply.get("note", "-"))
        noted.append("note" in reply)
    return answers, tags, notes, noted


print(ask_all(Agent(), ["a", "b", "c", "d", "e"]))
