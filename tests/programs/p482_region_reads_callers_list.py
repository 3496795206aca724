# A region may run on a list or dict the run was given (not created) when the stretch changes no
# object it did not make: it only reads them, so the region call is readonly in the global order.
# `extend_later` (sequential, slow to start: it waits for an earlier llm call) changes the
# caller's list before the loop in program order; a region that did not wait for it would sum a
# shorter list. The dict is read the same way, and a sequential change after the loop must not
# be seen by it.
# difftest: min_in_flight=2
from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@sequential
def extend_later(xs, n):
    xs.extend(range(100, 100 + n))


@sequential
def rename(d):
    d["late"] = d.pop("early")


@poppy
def summarise(xs, d):
    a = llm("count: first")
    b = llm("count: second")
    extend_later(xs, int(a))
    total = 0
    for x in xs:
        total += x * x
    keys = []
    for k in d:
        keys.append(k.upper())
    rename(d)
    log(f"{total} {keys} {b}")
    return total, keys, len(xs)


numbers = list(range(20))
table = {"early": 1, "b": 2}
print(summarise(numbers, table))
print(numbers[-3:], table)
