# The forms of `raise` and `assert` compiled as CPython runs them: a class is instantiated (its
# __init__ runs in program order), `from e` / `from None` set __cause__ / __suppress_context__, a
# non-exception (or a non-exception cause) is CPython's TypeError, `assert` with and without a
# message (the builtin AssertionError even when a global shadows it), a raise in an inlined
# @poppy callee and in an inner function, and a @poppy function called from an except handler
# (its exception's __context__ is the one being handled). Each traceback is printed in full, but
# for a raise inside an inlined inner function (its frames are not shown yet: a note says so).
import sys
import traceback

import poppy_jit
from poppy_jit import _prologue, poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


class Loud(Exception):
    def __init__(self, *args):
        log(f"Loud{args}")
        super().__init__(*args)


AssertionError = KeyError  # shadowing the builtin does not change `assert`


@poppy
def forms(k):
    answer = llm(f"question {k}")
    log(f"asked {k}")
    if k == 0:
        raise Loud
    if k == 1:
        raise Loud("with", "args")
    if k == 2:
        raise ValueError(f"bad {answer}") from None
    if k == 3:
        raise ValueError("chained") from KeyError(answer)
    if k == 4:
        raise ValueError("cause class") from LookupError
    if k == 5:
        raise 42
    if k == 6:
        raise ValueError("x") from 7
    if k == 7:
        assert k != 7
    assert len(answer) < 5, f"too long: {answer}"
    return answer


@poppy
def check(x):
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x * 2


@poppy
def caller(xs):
    total = 0
    for x in xs:
        total += check(x)
        log(f"checked {x}")
    return total


@poppy
def collect(xs):
    out = []
    for x in xs:
        out.append(str(check(x)))
    return out


@poppy
def with_inner(xs):
    def positive(v):
        if v <= 0:
            raise ValueError(f"not positive: {v}")
        return v

    return [positive(x) for x in xs]


@poppy
def helper_fails(tag):
    log(f"helper {tag}")
    raise RuntimeError(f"helper {tag}")


def show(f, *args, full=True):
    try:
        print("result", f(*args))
    except BaseException as e:
        print("raised", type(e).__name__, repr(e), "cause", repr(e.__cause__), "context",
              repr(e.__context__), "suppress", e.__suppress_context__)
        if full:
            print("".join(traceback.format_exception(e)).replace(__file__, "<prog>"))


for k in range(9):
    show(forms, k)
show(caller, [1, 2, 3])
show(caller, [1, -2, 3])
show(collect, [4, -5])
show(with_inner, [1, 2])
show(with_inner, [1, 0], full=False)
try:
    {}["missing"]
except KeyError:
    show(helper_fails, "in handler")
if poppy_jit.is_enabled() and _prologue.UNSUPPORTED is None:  # the compiled path runs here
    assert not poppy_jit.stats()["fallbacks"], poppy_jit.stats()["fallbacks"]
