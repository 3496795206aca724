# The shape without its try statement: `with section("classify"):` around a loop of LLM
# calls, the section a contextlib.contextmanager generator that logs its start and end (and what
# ended it). Its end comes after every call of the loop; an exception in an iteration ends the
# loop there, reaches the section's generator, and is re-raised to the caller or suppressed by it
# (the loop's locals as they were when it raised); a section entered twice in a row, one of them
# failing. The iterations run speculatively (issue 16): later iterations' llm calls may already
# have been made when an earlier one raises — allowed, and counted in `speculative_calls` —, but
# none of their ordered effects (the log lines, the stores into `labels`) happens.
import contextlib
import json
import sys

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@contextlib.contextmanager
def section(name, tolerate=()):
    log(f"start {name}")
    try:
        yield name
    except tolerate as e:
        log(f"{name} tolerated {type(e).__name__}: {e}")
    else:
        log(f"end {name}")


@poppy
def classify(items, tolerate=()):
    labels = {}
    done = 0
    with section("classify", tolerate) as name:
        for item in items:
            reply = llm(f"yesno: {item}")
            labels[item] = json.loads(json.dumps({"label": reply}))["label"]
            if item.startswith("bad"):
                labels[item] = int(reply)
            done += 1
    log(f"{name}: {done} done")
    return labels, done


@poppy
def twice(items):
    out = []
    for round_ in ("first", "second"):
        with section(round_, tolerate=KeyError):
            for it in items:
                out.append(llm(f"count: {round_} {it}"))
            if round_ == "second":
                out.append({}["missing"])
    return out


print(classify(["apple", "pear", "fig"]))
try:
    print(classify(["apple", "bad pear", "fig"]))
except ValueError as e:
    print("caller caught", type(e).__name__, e, repr(e.__context__))
print(classify(["apple", "bad pear", "fig"], ValueError))
print(twice(["x", "y"]))
sys.stdout.flush()
