# A `for` loop over a global list that a helper called in the body appends to: CPython's list
# iterator sees the new items, so the worklist is processed to the end (issue 14, class 2). The
# helper is a @sequential external, an unannotated function, an inlined @poppy callee; the list
# is reached directly, through a local, through enumerate, and in a comprehension.
from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

WORK = [1]


@sequential
def more(x):
    log(f"more {x}")
    if len(WORK) < 5:
        WORK.append(x + 1)


def more_plain(x):
    if len(WORK) < 8:
        WORK.append(x * 2)


@poppy
def more_poppy(x):
    if len(WORK) < 10:
        WORK.append(x + 10)


@poppy
def drain():
    out = []
    for x in WORK:
        more(x)
        out.append(llm(f"item {x}"))
    return out


@poppy
def drain_alias():
    seen = []
    work = WORK
    for i, x in enumerate(work):
        more_plain(x)
        seen.append((i, x))
    return seen


@poppy
def drain_poppy():
    return [(x, more_poppy(x)) for x in WORK]


class Queue:
    def __init__(self):
        self.items = ["a"]

    def push(self, x):
        log(f"push {x}")
        if len(self.items) < 4:
            self.items.append(x + "a")


@poppy
def drain_attr(q):
    out = []
    for x in q.items:
        q.push(x)
        out.append(llm(x))
    return out


print(drain())
print(WORK)
print(drain_alias())
print(WORK)
print(drain_poppy())
print(WORK)
print(drain_attr(Queue()))
