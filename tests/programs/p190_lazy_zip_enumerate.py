# enumerate/zip over a generator are iterated lazily (zip pulls from its first iterable before
# noticing the second is exhausted, as in CPython); over lists they are still materialised. A
# strict zip of unequal lists raises only after the body ran for the common items.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def gen(tag, n):
    for i in range(n):
        print("pull", tag, i)
        yield i


@poppy
def numbered(n):
    out = []
    for i, x in enumerate(gen("e", n), start=1):
        print("body", i, x)
        out.append(i * x)
    return out


@poppy
def paired(n, names):
    out = []
    for x, name in zip(gen("z", n), names):
        log(f"pair {x} {name}")
        out.append(llm(f"count: {name}"))
    return out


@poppy
def over_lists(xs, ys):
    total = 0
    for i, (x, y) in enumerate(zip(xs, ys)):
        total += i * x * y
    for k, v in reversed(list({"a": 1, "b": 2}.items())):
        print("item", k, v)
    return total


@poppy
def strict_pairs(xs, ys):
    for x, y in zip(xs, ys, strict=True):
        print("strict", x, y)
        log(f"strict {x}")
    return "unreachable"


print(numbered(3))
print(paired(5, ["ann", "bob"]))
print(over_lists([1, 2, 3], [4, 5, 6]))
print(strict_pairs([1, 2, 3], ["a", "b"]))
