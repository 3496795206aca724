# Loops of internal work inside try bodies, handlers, else clauses and with bodies run as
# regions (one step). When the stretch raises midway — a str among the ints, a missing key —
# the region declines and the stretch runs operation by operation, so the exception is raised
# where CPython raises it, with the locals as they were there, and the handler or `__exit__`
# sees it; `xs.extend([... for q in xs])` keeps the method lookup out of the region.
import contextlib

from poppy_jit import poppy, unordered
from _ext import log


class Tracked:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        log(f"enter {self.name}")
        return self

    def __exit__(self, et, e, tb):
        log(f"exit {self.name} {et.__name__ if et else None}")
        return et is KeyError


@unordered
def fetch(k):
    return [k, k + 1, k + 2]


@poppy
def sums(items):
    out = []
    for xs in items:
        t = -1
        try:
            t = 0
            for x in xs:
                t += x * x
        except TypeError as e:
            out.append(("partial", t, str(e)))
            t = [str(x) for x in xs]
        else:
            t = [t + i for i in range(3)]
        out.append(t)
    return out


@poppy
def doubled(n):
    xs = list(range(n))
    with contextlib.suppress(KeyError):
        xs.extend([q + 1 for q in xs])
        xs.extend([{1: q}[q] for q in xs])
    return len(xs), xs[:5], xs[-3:]


@poppy
def counted(words, k):
    counts = {}
    with Tracked(f"count {k}") as tr:
        for w in words:
            counts[w] = counts.get(w, 0) + 1
        total = 0
        for w in words:
            total += counts[w[:k]]
    return tr.name, total, sorted(counts.items())


@poppy
def mixed(keys):
    got = [fetch(k) for k in keys]
    res = []
    for g in got:
        try:
            res.append(sum([v * v for v in g]))
            res.append(sum([1 / (v - 3) for v in g]))
        except ZeroDivisionError:
            res.append("zero")
    return res


print(sums([[1, 2, 3], [4, "x", 5], [], [2, 2]]))
print(doubled(4))
print(doubled(1))
print(doubled(0))
print(counted(["ab", "cd", "ab"], 2))
try:
    print(counted(["ab", "cd", "ab"], 1))
except KeyError as e:
    print("caller", repr(e))
print(mixed([1, 4, 7]))
