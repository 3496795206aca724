# Failures caught by plain code around the @poppy function: a failing unordered call and an
# operator error on a pending reply stop the ordered calls after them (as in CPython), and the
# program goes on with the next run.
from poppy_jit import poppy
from _ext import llm, log, write


@poppy
def ask_then_log(topic):
    a = llm(f"fail: {topic}")
    log("after the failing call")        # arguments ready at once: must still wait
    write("topic", topic)
    return a


@poppy
def divide(topic):
    n = int(llm(f"count: {topic}"))
    ratio = 10 // (n * 0)                # ZeroDivisionError once the count is known
    log("never")
    return ratio


@poppy
def fine(topic):
    a = llm(f"ok {topic}")
    log("after a call that succeeded")
    return a


for fn, arg in [(ask_then_log, "x"), (divide, "y"), (fine, "w")]:
    try:
        print(fn.__name__, fn(arg))
    except Exception as e:
        print(fn.__name__, "raised", type(e).__name__, e)
