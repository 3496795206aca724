# An earlier statement raises (a sequential external) while a later unordered call, dispatched speculatively
# before the order reached it, is still running: the run must take that call's outcome and end
# with CPython's exception (it used to wait forever for a call it no longer counted as running).
# Found by the program fuzzer (poppy_jit.fuzz).
# difftest: expect_rc=1
from poppy_jit import poppy, sequential
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@sequential
def bad(x):
    raise ValueError(f"bad {x}")


@poppy
def external_fails(n, key):
    log(f"start {n}")
    x = bad(n)
    for q in range(3):
        log(f"never {q}")
    lookup(key)          # argument known at once: dispatched before the failure is known
    return x


external_fails(1, "k1")
