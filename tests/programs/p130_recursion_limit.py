# KNOWN BUG (xfail): recursion of a compiled @poppy function is not bounded by Python's recursion
# limit. CPython raises "RecursionError: maximum recursion depth exceeded" for deep(5000); under
# PYTHONPOPPY=1 the inlined recursion runs on the evaluator's heap and returns 5000 (exit 0).
# (A runaway recursion would grow memory instead of raising.)
# difftest: expect_rc=1
# difftest: xfail=1
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
