# A local assigned only on one branch and read on the other path: CPython raises
# UnboundLocalError; the compiled function must raise the same after the same output.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def pick(items):
    for it in items:
        if llm(f"yesno: pick {it}") == "yes":
            chosen = it
            log(f"chose {it}")
    return chosen


@poppy
def loop_var(items):
    for it in items:
        log(f"item {it}")
    return it


print(pick(["a", "b", "c", "d"]))
print(loop_var(["x"]))
print(pick([]))
print("not reached")
