# `raise` inside loops with break/continue and a while loop whose only way out is a raise: the
# loop keeps CPython's results and sequential calls, a loop left by the raise stops (the
# unordered calls it started speculatively after the raise are cancelled), and the run that
# raises is the program's last statement (its traceback goes to stdout in full).
# difftest: expect_rc=1
import sys
import traceback

import poppy_jit
from poppy_jit import _prologue, poppy
from _ext import llm, lookup, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def scan(items, bad):
    found = []
    for it in items:
        if it == "skip":
            continue
        if it == "stop":
            break
        if it == bad:
            raise LookupError(f"bad item {it}")
        found.append(llm(f"tag {it}"))
        log(f"tagged {it}")
    return found


@poppy
def countdown(n):
    i = 0
    while True:
        i += 1
        note = lookup(f"step {i}")
        if i > n:
            raise OverflowError(f"ran past {n} after {note}")
        log(f"step {i}")


@poppy
def nested(rows):
    out = []
    for r in rows:
        for c in r:
            if c < 0:
                raise ValueError(f"negative cell {c} in row {r}")
            out.append(c)
        log(f"row {r}")
    return out


def hook(tp, e, tb):
    print("".join(traceback.format_exception(tp, e, tb)).replace(__file__, "<prog>"))
    sys.__excepthook__(tp, e, tb)


sys.excepthook = hook
print(scan(["a", "skip", "b", "stop", "bad"], "bad"))
print(nested([[1, 2], [3]]))
try:
    scan(["a", "bad", "b"], "bad")
except LookupError as e:
    print("caught", e)
try:
    nested([[1, 2], [3, -4, 5], [6]])
except ValueError as e:
    print("caught", e)
if poppy_jit.is_enabled() and _prologue.UNSUPPORTED is None:  # the compiled path runs here
    assert not poppy_jit.stats()["fallbacks"], poppy_jit.stats()["fallbacks"]
countdown(3)
