# Known gap found running an unmodified Tree-of-Thoughts program (issue 15): the proposal loop
# reads an attribute of an object the run was given (readonly), calls the model, and operates on
# its result at once (`gpt(...)[0].split('\n')`). The operation's class depends on the result's
# type (a user object's method may do anything), so it is known only when the result arrives, and
# until then the order is not passed on: the next iteration's attribute read (readonly) waits,
# and the model calls of the loop run one at a time although none needs another's result.
# No sound fix without knowing more of the result's type: `lookup` declares none, so the
# subscript (and then `.split` on the item) may run a user `__getitem__`/`__getattribute__`
# with any effect (rebinding `task.prefix`), which the next read must see. A declared `-> list`
# would make the subscript a read of the list, but the item's type — and so the `.split` — is
# still unknown; it would take a declared element type (`-> list[str]`, checked at arrival like
# today's `-> str`), which neither this program nor ToT's `gpt` (`-> list`) gives.
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
