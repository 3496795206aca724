# Two errors in one run: a slow LLM call that fails, then (later in program order, but ready at
# once) a division by zero and an int() of a non-number. CPython raises the LLM's ValueError
# first; under PYTHONPOPPY=1 the later pure operations may be evaluated earlier, but the run must
# still raise the error that comes first in program order.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def later_errors(n):
    log("start")
    first = llm(f"fail: slow topic {n}")
    ratio = 10 / (n - n)
    number = int("not a number")
    print("unreachable", first, ratio, number)
    return ratio


@poppy
def warm_up(n):
    total = 0
    for i in range(n):
        total += int(llm(f"count: w{i}"))
    return total


print(warm_up(3))
print(later_errors(4))
print("not reached")
