# A @sequential external raises: the exception reaches the caller as CPython raises it, and no
# later readonly or sequential external runs, even ones that do not depend on the failed call.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, read, write, log


@poppy
def update(keys):
    before = read("limit")
    print("limit", before)
    for k in keys:
        write(k, llm(f"value of {k}"))
    write("", before)  # raises KeyError
    print("unreachable", read("greeting"))
    log("never logged")
    write("after", 1)


update(["a", "b"])
