# After a failing unordered call (here an operator error in an inlined @poppy callee, and a
# failing blocking external) a later readonly call may run speculatively — it has no effects —
# but no sequential call after the failure runs. Found by the program fuzzer (seed 7).
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, read


@poppy
def ratio(x):
    return 100 // x


@poppy
def main(n):
    log("start")
    r = ratio(n)            # ZeroDivisionError
    v = read("greeting")    # readonly: may run (speculatively) under PYTHONPOPPY=1
    log(f"never {v}")
    return r, llm("never asked")


print(main(0))
