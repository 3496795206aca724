# A blocking external declared with `returns=` (a tuple of lines), reached as an attribute of a
# class (`Client.complete(...)`: the callee is a read in program order, pending when the call is
# reached) and its result iterated, indexed and joined into lists the run made. The declared type
# lets the result's operations pass the order on before it arrives, and a call whose callee is
# still pending is judged by what it can reach (the callee, a read, and a str argument: no list
# of the run's), so the appends to the run's own lists do not wait and the calls overlap.
# difftest: min_in_flight=3
import time

from poppy_jit import poppy, unordered
from _ext import _delay, _h, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)


class Client:
    @staticmethod
    @unordered(blocking=True, returns=tuple[str, ...])
    def complete(prompt):
        with _traced("lookup", "unordered", prompt):
            time.sleep(_delay("complete", prompt))
            deadline = time.monotonic() + _RENDEZVOUS_CAP
            while _rendezvous_pending(deadline):
                time.sleep(0.002)
            return tuple(f"{prompt}/{i}:{_h(prompt, i)[0] % 7}" for i in range(1 + _h(prompt)[0] % 3))


class Task:
    topic = "t"


@poppy
def outline(task, parts):
    heads = []
    sizes = []
    for p in parts:
        lines = Client.complete(task.topic + "-" + p)
        heads.append(lines[0].split(":")[0])
        sizes.append(len(lines))
    return heads, sizes


print(outline(Task(), ["a", "b", "c", "d", "e"]))
