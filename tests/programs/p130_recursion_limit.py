# Recursion of a compiled @poppy function is bounded by Python's recursion limit as in CPython:
# deep(5000) raises "RecursionError: maximum recursion depth exceeded" (it once returned 5000:
# inlined recursion ran on the evaluator's heap).
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import log, set_latency_scale

set_latency_scale(0.1)


@poppy
def deep(n):
    if n == 0:
        return 0
    return 1 + deep(n - 1)


print(deep(900))
log("within the limit")
print(deep(5000))
print("not reached")
