# Ownership of what a region returns must stop at what another output reaches. Here the region
# builds `inner` and `rows = [inner]` (a list in a tuple in a list, a list in a dict); both are
# live-out. `grow` (sequential, slow to start: it waits for an earlier llm call) changes `inner`
# through `rows`. Were `inner` owned, reading it after `grow` would be ordered against operations
# on `inner` only and run before `grow`: the lengths printed would be one short (each of the
# first three functions fails so when the region's reachability check is taken out). The last
# one: the same list under two names is one object, one key — owned or not, an escape through
# either name is an escape of it.
from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@sequential
def grow(holder, key):
    holder[key].append("extra")


@sequential
def grow_first(holder):
    holder[0][0].append("extra")


@poppy
def through_list():
    text = llm("list: words", n=4)
    inner = []
    rows = [inner]
    for w in text.split("\n"):
        inner.append(w.split("-")[0])
    slow = llm("slow thing")
    grow(rows, 0)
    n = len(inner)
    last = inner[-1]
    log(f"{slow[:3]} {n} {last}")
    return n


@poppy
def through_tuple():
    text = llm("list: more words", n=3)
    inner = []
    rows = [(inner, "tag")]
    for w in text.split("\n"):
        inner.append(w)
    slow = llm("another slow thing")
    grow_first(rows)
    return len(inner), inner[-1], slow[:3]


@poppy
def through_dict():
    text = llm("list: keyed", n=3)
    words = []
    table = {"w": words}
    for w in text.split("\n"):
        words.append(w)
    slow = llm("a third slow thing")
    grow(table, "w")
    return len(words), words.pop(), slow[:3], len(table["w"])


@poppy
def alias_twice():
    # The same list under two names: both outputs, so it is owned through neither alone.
    text = llm("list: twins", n=3)
    a = []
    b = a
    for w in text.split("\n"):
        a.append(w)
    slow = llm("a fourth slow thing")
    grow({"k": b}, "k")
    return len(a), a[-1], slow[:3]


print(through_list())
print(through_tuple())
print(through_dict())
print(alias_twice())
