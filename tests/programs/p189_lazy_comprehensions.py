# Comprehensions and generator expressions over a generator pull one item at a time, interleaved
# with the element expression's calls as in CPython; any() stops pulling at the first hit.
from poppy_jit import poppy
from _ext import log, set_latency_scale

set_latency_scale(0.1)


def gen(n):
    for i in range(n):
        print("gen", i)
        yield i


def shout(x):
    print("element", x)
    return x * 10


@poppy
def as_list(n):
    return [shout(x) for x in gen(n)]


@poppy
def as_dict(n):
    return {x: shout(x) for x in gen(n) if x % 2 == 0}


@poppy
def total(n):
    return sum(shout(x) for x in gen(n))


@poppy
def has_big(n):
    return any(x > 1 for x in gen(n))


@poppy
def nested_comp(n):
    return [(x, y) for x in gen(n) for y in gen(x)]


log("start")
print(as_list(3))
print(as_dict(4))
print(total(3))
print(has_big(10))
print(nested_comp(3))
