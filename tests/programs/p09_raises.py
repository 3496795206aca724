# An unordered external raises: same output before it, same exception, nothing after it.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log


@poppy
def run(items):
    for item in items:
        print(item, llm(f"say {item}"))
    log("before failure")
    answer = llm("fail: forbidden topic")
    print("never printed", answer)
    log("never logged")


run(["a", "b", "c"])
print("not reached")
