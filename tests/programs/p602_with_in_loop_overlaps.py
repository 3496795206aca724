# A `with` inside a loop whose iterations make unordered LLM calls: before the statement, in its
# body and after it. The manager's __enter__/__exit__ (sequential: they print and log) keep
# CPython's order, and each body's calls run one after another (a with body is gated like a try
# body), but nothing orders an unordered call after an earlier iteration's statement: the calls of
# all iterations are in flight together. A body that raises in some iterations (the reply is not a
# number) has its exception passed to __exit__, which suppresses ValueError only; the loop goes
# on with the locals as they were at the raising point.
# difftest: min_in_flight=6
import sys

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


class Section:
    def __init__(self, name, suppress=()):
        self.name, self.suppress = name, suppress

    def __enter__(self):
        print("enter", self.name)
        return str(self.name).upper()

    def __exit__(self, t, e, tb):
        log(f"exit {self.name} {t.__name__ if t else 'ok'}")
        return t is not None and issubclass(t, self.suppress)


@poppy
def pipeline(items):
    out = []
    for it in items:
        first = llm(f"summarise: {it}")
        with Section(f"item {it}") as tag:
            second = llm(f"count: {tag} {first}")
        third = llm(f"yesno: {it}")
        out.append((it, len(first), second, third))
    return out


@poppy
def counted(items):
    counts = {}
    for it in items:
        n = -1
        with Section(it, suppress=ValueError):
            reply = llm(f"{'count' if len(it) > 3 else 'list'}: {it}")
            n = int(reply)
        counts[it] = n
    return counts


for row in pipeline(["apple", "pear", "fig", "plum", "kiwi", "lime"]):
    print(row)
print(counted(["apple", "fig", "pear", "kiwi", "yam"]))
try:
    print(counted(["apple", None]))
except TypeError as e:
    print("caller caught", type(e).__name__, e, repr(e.__context__), file=sys.stdout)
