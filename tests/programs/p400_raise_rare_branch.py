# `raise` in a rarely taken branch no longer makes the function run as plain CPython: the loop's
# unordered calls overlap, and when the branch is taken the run raises CPython's exception (type,
# message, traceback lines) at the raise's place in program order: the sequential calls before it
# ran, none after it.
# The failing run is the program's last statement (uncaught: speculative unordered calls after the
# raise are allowed only in a failing run); its traceback goes to stdout, compared in full.
# difftest: min_in_flight=3
# difftest: expect_rc=1
import sys
import traceback

import poppy_jit
from poppy_jit import _prologue, poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


class ValidationError(Exception):
    pass


@poppy
def summarise(topics, limit):
    out = []
    for t in topics:
        answer = llm(f"summarise {t}")
        if len(answer) > limit:
            raise ValidationError(f"answer for {t!r} too long: {len(answer)} > {limit}")
        log(f"ok {t}")
        out.append(answer)
    return out


def hook(tp, e, tb):
    print("".join(traceback.format_exception(tp, e, tb)).replace(__file__, "<prog>"))
    sys.__excepthook__(tp, e, tb)


sys.excepthook = hook
print(summarise(["alps", "lakes", "rivers", "moors"], 1000))
if poppy_jit.is_enabled() and _prologue.UNSUPPORTED is None:  # the compiled path runs here
    assert not poppy_jit.stats()["fallbacks"], poppy_jit.stats()["fallbacks"]
summarise(["alps", "lakes", "rivers", "moors"], 24)
