# A region given a container must not hand it back as something the run owns: returned as it is
# (`best = xs`) it is the caller's list, not a fresh one; stored inside a fresh output (`wrapped =
# [xs]`) the compiled code would have let it escape, so the region declines and the stretch runs
# operation by operation. Each case reads the list after a sequential call that changes it
# (slow to start: it waits for an earlier llm call); owning it wrongly would read it too early.
from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@sequential
def grow(holder, key):
    holder[key].append("extra")


@sequential
def push(xs):
    xs.append("pushed")


@poppy
def returned_as_is(xs):
    best = xs
    total = 0
    for x in xs:
        total += len(x)
    slow = llm("slow one")
    push(xs)
    return total, len(best), best[-1], slow[:3]


@poppy
def stored_inside(topic):
    xs = []
    for i in range(3):
        xs.append(llm(f"about {topic} {i}"))
    wrapped = [xs, 0]
    n = 0
    for x in xs:
        n += len(x)
    slow = llm("slow two")
    grow(wrapped, 0)
    log(f"{n} {slow[:3]}")
    return n, len(xs), xs[-1]


@poppy
def stored_in_dict(topic):
    xs = []
    for i in range(2):
        xs.append(llm(f"on {topic} {i}"))
    table = {}
    for x in xs:
        table[x[:4]] = len(x)
    table["all"] = xs
    slow = llm("slow three")
    grow(table, "all")
    return len(xs), xs[-1], slow[:3]


print(returned_as_is(["ab", "cde"]))
print(stored_inside("tide"))
print(stored_in_dict("moss"))
