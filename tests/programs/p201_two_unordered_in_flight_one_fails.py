# Two unordered calls in flight, the second one raises: the sequential call after both waits for
# both to succeed, so it never runs, whichever of them finishes first.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, write


@poppy
def two_in_flight(topic):
    a = llm(f"slow {topic}")
    b = llm(f"fail: {topic}")
    c = llm(f"other {topic}")
    log("both done")                     # no argument from a or b: still waits for them
    write("c", c)
    return a, b


print("two unordered calls in flight")
print(two_in_flight("z"))
