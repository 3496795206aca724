# An unordered call that raises stops the program in CPython: no sequential call after it in
# program order may run under PYTHONPOPPY=1 either, even when its arguments are ready long
# before the failing call finishes (issue 14: sequential calls used to run speculatively).
from poppy_jit import poppy
from _ext import llm, log, note, write


@poppy
def ask_then_log(topic):
    a = llm(f"fail: {topic}")
    log("after the failing call")        # arguments ready at once: must still wait
    write("topic", topic)
    return a


@poppy
def ask_each(topics):
    answers = []
    for t in topics:
        answers.append(llm(t))
        note(f"asked {t}")               # not after the failing one, nor any later
    return answers


@poppy
def divide(topic):
    n = int(llm(f"count: {topic}"))
    ratio = 10 // (n * 0)                # ZeroDivisionError once the count is known
    log("never")
    return ratio


@poppy
def two_in_flight(topic):
    a = llm(f"slow {topic}")
    b = llm(f"fail: {topic}")
    c = llm(f"other {topic}")
    log(f"both done {a} {b}")
    return c


for fn, arg in [(ask_then_log, "x"), (ask_each, ["p", "q", "fail: r", "s", "t"]),
                (divide, "y"), (two_in_flight, "z")]:
    try:
        print(fn.__name__, fn(arg))
    except Exception as e:
        print(fn.__name__, "raised", type(e).__name__, e)
