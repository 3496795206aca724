# CPython code that a run calls (an unannotated helper, a generator consumed by the run) calls an
# async external plainly while another async external of the run is in flight: the plain call
# must not run (and be stopped by) the run's event loop ("Event loop stopped before Future
# completed" before); it runs on a worker thread's loop. Found by the program fuzzer.
import asyncio

from poppy_jit import poppy, unordered
from _ext import log


@unordered
async def slow(x):
    await asyncio.sleep(0.05)
    return x + 1


@unordered
async def fast(x):
    await asyncio.sleep(0.001)
    return f"s{x}"


def helper(x):
    return slow(x)


def numbers(k):
    for j in range(k):
        slow(j)
        yield j


@poppy
def through_helper(n):
    t = fast(n)
    return helper(1), t


@poppy
def through_generator(n):
    t = fast(n)
    return [q for q in numbers(3)], t


@poppy
def in_a_loop(xs):
    out = []
    for x in xs:
        out.append((fast(x), helper(x)))
    return out


print(through_helper(2))
print(through_generator(2))
print(in_a_loop([1, 2, 3]))
log("done")
