# A ZeroDivisionError in the third iteration of a loop that prints each LLM reply: the first
# three lines are printed, nothing after them, although later iterations' LLM calls are
# independent and may already have run under PYTHONPOPPY=1.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def report(items):
    total = 0
    for i, x in enumerate(items):
        reply = llm(f"count: {x}")
        print(x, reply)
        total += 100 // (2 - i)
        log(f"total {total}")
    return total


print(report(["a", "b", "c", "d", "e"]))
print("not reached")
