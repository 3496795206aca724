# Found by the program generator (seed 99): a list the run made is appended a pending result to
# (an operation on that list alone, ordered per object), then handed to an unordered call (an
# escape: it waits for the append) and then read by a readonly call. The unordered call passes
# the global order on before it has waited for the append, and the readonly call, which follows
# the global order after the escape, was dispatched at once: it saw the list without the append
# (r_sum([7]) instead of r_sum([7, 11]), a different result). A call after an escape that has
# not been ordered yet now waits for the object's earlier operations itself.
from poppy_jit import poppy, readonly
from _ext import llm, set_latency_scale

set_latency_scale(0.5)


@readonly
def total(c):
    return sum(len(str(v)) for v in c)


@poppy
def f(xs):
    l0 = ["seed"]
    l0.append(llm(xs[0]))
    n = llm(l0)
    t = total(l0)
    return n, t, l0


@poppy
def g(xs):
    d = {"k": 1}
    d["answer"] = llm(xs[0])
    first = llm(d)
    seen = total(d.values())
    return first, seen, d


print(f(["a question"]))
print(g(["another question"]))
