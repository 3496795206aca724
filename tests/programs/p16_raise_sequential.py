# A @sequential external raises after all unordered work: same output, same exception.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, write, log


@poppy
def save(rows):
    for r in rows:
        v = llm(f"value for {r}")
        write(r, v)
        log(f"saved {r}")
    write("", "nothing")
    log("never logged")


save(["x", "y"])
