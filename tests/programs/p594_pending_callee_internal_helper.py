# A call whose callee is still pending — `step` is a global some code of the module rebinds, so
# it is read in program order — that turns out to be a @poppy function (inlined), which reads a
# module list, while the caller appends the declared result's first word and that list's length
# to a list of its own. The per-object walk may pass such a call when neither its callee nor its
# arguments can be the caller's list (its body reaches only what it is given, globals and results
# of calls); results and the module list's reads must stay CPython's. (The calls do not overlap
# yet: the append of `r.split(" ")[0]` after the inlined call still passes the order on late,
# cause not found — docs/benchmarks.md, issue 15 item 6.)
import asyncio
import time

from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)
SEEN = ["b"]


@unordered
async def ask(prompt) -> str:
    with _traced("llm", "unordered", prompt):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        return _answer(prompt, "plain", 3)


@poppy
def step(x):
    n = SEEN.count(x)
    return ask("topic " + x + "!" * n)


def rebind(f):
    global step
    step = f


@poppy
def run(xs):
    out = []
    for x in xs:
        r = step(x)
        out.append(r.split(" ")[0])
        out.append(len(SEEN))
    return out


print(run(["a", "b", "c", "d"]))
print(SEEN)
