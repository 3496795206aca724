# Reads of a list or dict around its mutations, where the mutation waits for an LLM reply: a
# program-defined @readonly external, len/sorted/str/copy/slicing/`in`/dict.fromkeys on the list,
# item assignment and extend, and a dict grown in a loop with its size and keys recorded.
# difftest: min_in_flight=2
from poppy_jit import poppy, readonly
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


@readonly
def peek(lst):
    return tuple(lst)


@poppy
def readonly_then_mutate(xs):
    lst = list(xs)
    a = peek(lst)
    lst.append(llm("x")[:3])
    b = peek(lst)
    lst.append("y")
    return a, b, lst


@poppy
def builtins_interleaved(xs):
    lst = list(xs)
    n1 = len(lst)
    s1 = sorted(lst)
    r1 = str(lst)
    c1 = lst.copy()
    sl = lst[:]
    lst.append(llm("count: z"))
    n2 = len(lst)
    lst[0] = llm("first")[:4]
    inn = "a" in lst
    d = dict.fromkeys(lst)
    lst.extend([lookup("e")])
    return n1, s1, r1, c1, sl, n2, inn, list(d), lst


@poppy
def dict_interleave(keys):
    d = {}
    snap = []
    for k in keys:
        d[k] = llm(f"count: {k}")
        snap.append(len(d))
        snap.append(sorted(d))
        if k == keys[0]:
            d.pop(k)
    return d, snap


@poppy
def counters(words):
    seen = {}
    order = []
    for w in words:
        reply = llm(f"yesno: {w}")
        seen[reply] = seen.get(reply, 0) + 1
        order.append((w, dict(seen)))
    return order


print(readonly_then_mutate(["a"]))
print(builtins_interleaved(["b", "a"]))
print(dict_interleave(["k1", "k2", "k3"]))
print(counters(["p", "q", "r", "s"]))
