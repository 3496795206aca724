# An unpacking that fails inside a loop: same output before it, same ValueError.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log


@poppy
def split_all(lines):
    for line in lines:
        key, value = line.split("=")
        print(key, llm(f"define {value}"))
    log("never logged")


split_all(["a=apple", "b=banana", "oops", "c=cherry"])
