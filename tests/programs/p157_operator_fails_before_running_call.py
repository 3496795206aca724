# An earlier statement raises (an operator) while a later unordered call, dispatched speculatively
# before the order reached it, is still running: the run must take that call's outcome and end
# with CPython's exception (it used to wait forever for a call it no longer counted as running).
# Found by the program fuzzer (poppy_jit.fuzz).
# difftest: expect_rc=1
from poppy_jit import poppy, sequential
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def fails_in_loop(items):
    out = []
    for it in items:
        out.append(10 // it)
        llm(items[0])
    return out


@poppy
def operator_fails(n, prompt):
    x = 1 // n
    for q in range(2):
        pass
    llm(prompt)          # argument known at once: dispatched before the failure is known
    return x


print(operator_fails(2, "two"), fails_in_loop([1, 2]))
operator_fails(0, "zero")
