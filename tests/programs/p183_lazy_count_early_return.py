# Endless iterators with an early exit: `for i in itertools.count(): if i > 3: return i` must
# stop after five items (materialising it grew memory until MemoryError).
import itertools

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def first_over(limit):
    for i in itertools.count():
        if i > limit:
            return i
    return -1


@poppy
def cycle_until(n):
    seen = []
    for c in itertools.cycle("abc"):
        seen.append(c)
        if len(seen) == n:
            break
    log("".join(seen))
    return seen


@poppy
def ask_until_yes():
    for k in itertools.count(1):
        reply = llm(f"yesno: attempt {k}")
        print("attempt", k, reply)
        if reply == "yes":
            return k
    return 0


def naturals():
    n = 0
    while True:
        print("natural", n)
        yield n
        n += 1


@poppy
def first_square_over(bound):
    for n in naturals():
        if n * n > bound:
            return n
    return None


print(first_over(3))
print(cycle_until(7))
print(ask_until_yes())
print(first_square_over(20))
