# `with a, b:` and `with a as x, b as (y, z), c:` (several managers, issue 16): entered left to
# right, exited right to left; the inner manager's exit sees the body's exception first and may
# suppress it (the outer one then sees none); an exception raised by an inner __enter__ reaches
# the outer managers' __exit__ only (the inner ones were never entered), one raised by an inner
# __exit__ replaces the body's for the outer ones (chained); the managers' calls are sequential
# externals in CPython's order around the body's unordered calls.
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p633", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r}"


class M:
    def __init__(self, name, suppress=False, fail_enter=False, fail_exit=False):
        self.name, self.suppress, self.fail_enter, self.fail_exit = name, suppress, fail_enter, fail_exit

    def __enter__(self):
        log(f"enter {self.name}")
        if self.fail_enter:
            raise OSError(f"cannot enter {self.name}")
        return (self.name, self.name.upper())

    def __exit__(self, t, e, tb):
        handled = sys.exc_info()[1]
        log(f"exit {self.name} {t.__name__ if t else None} {e!r} handled={handled is e}")
        if self.fail_exit:
            raise KeyError(f"exit of {self.name}")
        return self.suppress


@poppy
def two(x, a, b):
    out = []
    with a, b:
        out.append(llm(f"count: {x}"))
        out.append(10 // x)
    out.append("after")
    return out


@poppy
def three(x, a, b, c):
    out = []
    with a as p, b as (q, r), c:
        out.append(p[0] + q + r)
        out.append(llm(f"yesno: {x}"))
        out.append(10 // x)
    return out


@poppy
def in_loop(items, a, b):
    out = []
    for it in items:
        with a as p, b:
            out.append(llm(f"count: {it} {p[0]}"))
            out.append(len(it) // (len(it) - 1))
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


for x in (1, 0):
    attempt(two, x, M("a"), M("b"))
    attempt(two, x, M("a"), M("b", suppress=True))
    attempt(two, x, M("a", suppress=True), M("b"))
    attempt(two, x, M("a"), M("b", fail_enter=True))
    attempt(two, x, M("a", suppress=True), M("b", fail_enter=True))
    attempt(two, x, M("a"), M("b", fail_exit=True))
    attempt(two, x, M("a", suppress=True), M("b", fail_exit=True))
    attempt(two, x, M("a", fail_exit=True), M("b"))
    attempt(two, x, M("a"), 42)
for x in (2, 0):
    attempt(three, x, M("a"), M("b"), M("c"))
    attempt(three, x, M("a"), M("b", suppress=True), M("c", fail_exit=True))
    attempt(three, x, M("a"), M("b"), M("c", fail_enter=True))
attempt(in_loop, ["ab", "abc", "abcd"], M("a"), M("b"))
attempt(in_loop, ["ab", "x", "abcd"], M("a"), M("b", suppress=True))
attempt(in_loop, ["ab", "x", "abcd"], M("a"), M("b"))
