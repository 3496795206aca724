# p494 without the declaration: `lookup` declares no result type, so `.split` on its pending
# result may be a user object's method with any effect (rebinding `task.prefix`), which the next
# iteration's attribute read must see: the read waits for the result, and the loop's calls run one
# at a time. (Checked from the test externals' own count of calls in flight at once; results as
# in CPython.)
import _ext
import poppy_jit
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.2)


class Task:
    def __init__(self):
        self.prefix = "next:"


@poppy
def propose_all(task, states):
    out = []
    for s in states:
        prompt = task.prefix + s
        first = lookup(prompt).split(":")[0]
        out.append(first)
    return out


print(propose_all(Task(), ["a", "b", "c", "d"]))
if poppy_jit.is_enabled():
    assert _ext._max_in_flight == 1, _ext._max_in_flight
print("ok")
