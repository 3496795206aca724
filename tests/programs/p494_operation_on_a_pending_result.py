# Known gap found running an unmodified Tree-of-Thoughts program (issue 15): the proposal loop
# reads an attribute of an object the run was given (readonly), calls the model, and operates on
# its result at once (`gpt(...)[0].split('\n')`). The operation's class depends on the result's
# type (a user object's method may do anything), so it is known only when the result arrives, and
# until then the order is not passed on: the next iteration's attribute read (readonly) waits,
# and the model calls of the loop run one at a time although none needs another's result.
# difftest: min_in_flight=2
# difftest: xfail=1
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


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
