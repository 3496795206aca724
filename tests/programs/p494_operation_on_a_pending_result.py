# Found running an unmodified Tree-of-Thoughts program (issue 15): the proposal loop reads an
# attribute of an object the run was given (readonly), calls the model, and operates on its
# result at once (`ask(...).split(':')[0]`). An operation's class depends on its operand's type
# (a user object's method may do anything), so on an undeclared result it is known only when the
# result arrives, and until then the order is not passed on (p590: the same loop without the
# declaration runs one call at a time). Here the external declares its result type (`-> str`,
# checked when the result arrives): the split is a read of a str whatever its value, classified
# before it arrives, so the next iteration's attribute read passes and the calls overlap.
# difftest: min_in_flight=2
import time

from poppy_jit import poppy, unordered
from _ext import _delay, _h, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)


@unordered(blocking=True)
def ask(key) -> str:
    with _traced("lookup", "unordered", key):
        time.sleep(_delay("lookup", key))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            time.sleep(0.002)
        return f"<{key}:{_h('lookup', key)[0] % 100}>"


class Task:
    def __init__(self):
        self.prefix = "next:"


@poppy
def propose_all(task, states):
    out = []
    for s in states:
        prompt = task.prefix + s
        first = ask(prompt).split(":")[0]
        out.append(first)
    return out


print(propose_all(Task(), ["a", "b", "c", "d"]))
