# An @unordered external (async `llm`, blocking `lookup`) called with a mutable argument (a list,
# a dict) that the @poppy function mutates right after the call, or after a mutation that waits
# for an LLM reply. CPython passes the object as it is at the call, so the external must see it
# then. (Found by this corpus: such calls used to stay unordered and saw the mutated object, or
# ran before an earlier pending append; since main 922fd9d they are ordered as reads.)
from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


def clear(d):
    d.clear()


@poppy
def mutate_after_unordered(words):
    buf = list(words)
    a = llm(buf)
    buf.append("tail")
    b = lookup(buf)
    buf.pop(0)
    return a, b[:20], buf


@poppy
def dict_passed_then_cleared(d):
    snapshot = llm(f"summarise {sorted(d.items())}")
    raw = llm(d)
    clear(d)
    after = llm(f"after {d}")
    return snapshot.split()[0], raw.split()[-1], after.split()[-1], d


@poppy
def read_before_append(xs):
    lst = list(xs)
    a = lookup(lst)
    lst.append(llm("count: appended")[:2])
    b = lookup(lst)
    return a, b

@poppy
def running_summaries(questions):
    """A natural trigger: summarise the conversation so far after each turn. CPython's i-th call
    sees the first i+1 turns. Under PYTHONPOPPY=1 each turn's append waits for the previous
    turn's `summaries.append` (which waits for that summary), while the unordered call waits for
    nothing and runs first: every call sees only ['hi']."""
    history = []
    summaries = []
    for q in questions:
        history.append(q)
        summaries.append(llm(history)[:12])
    return summaries


print(mutate_after_unordered(["x", "y"]))
print(dict_passed_then_cleared({"b": 2, "a": 1}))
print(read_before_append(["q"]))
print(running_summaries(["hi", "how are you", "bye"]))
