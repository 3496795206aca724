# A `with` statement inside a try body (issue 16): the body's exception passes through __exit__
# (which sees it handled) before the try's handler, unless __exit__ suppresses it (then the else
# clause runs); __enter__ or __exit__ raising inside the try body is caught by its handlers; a
# with in a try/finally body and in a try/except/else/finally body; a try around a with around a
# loop of unordered calls; a with in a try body in a loop (the loop's calls in flight together).
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p631", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r} cause={e.__cause__!r}"


class Section:
    def __init__(self, name, suppress=False, fail_enter=False, fail_exit=False):
        self.name, self.suppress, self.fail_enter, self.fail_exit = name, suppress, fail_enter, fail_exit

    def __enter__(self):
        log(f"enter {self.name}")
        if self.fail_enter:
            raise OSError(f"cannot enter {self.name}")
        return self.name.upper()

    def __exit__(self, t, e, tb):
        handled = sys.exc_info()[1]
        log(f"exit {self.name} {t.__name__ if t else None} {e!r} handled={handled is e}")
        if self.fail_exit:
            raise KeyError(f"exit of {self.name}")
        return self.suppress


@poppy
def caught_after_exit(x, suppress=False):
    out = []
    try:
        with Section("body", suppress) as v:
            out.append(v)
            out.append(10 // x)
        out.append("after with")
    except ZeroDivisionError as e:
        out.append(f"caught {e} {frames(e)}")
        log(f"handler {sys.exc_info()[0].__name__}")
    else:
        out.append("else")
    return out


@poppy
def enter_exit_fail(kind):
    try:
        with Section(kind, fail_enter=kind == "enter", fail_exit=kind == "exit"):
            log(f"body {kind}")
            if kind == "both":
                [][0]
        got = "no exception"
    except (OSError, KeyError) as e:
        got = show(e)
    return got


@poppy
def in_finally_body(x, suppress):
    try:
        with Section("fin", suppress):
            y = 10 // x
            log(f"y {y}")
    finally:
        log(f"finally {x}")
    return x


@poppy
def in_full_try(x):
    try:
        with Section("full") as v:
            y = {0: "zero", 1: "one"}[x]
    except KeyError as e:
        y = f"no {e}"
    else:
        log(f"else {v}")
    finally:
        log("finally")
    return y


@poppy
def try_with_loop(items):
    out = []
    try:
        with Section("loop"):
            for it in items:
                out.append(llm(f"count: {it}"))
                out.append(10 // len(it))
    except ZeroDivisionError:
        out.append("empty")
    return out


@poppy
def loop_try_with(items):
    out = []
    for it in items:
        try:
            with Section(f"s {it}", suppress=it.startswith("s")):
                reply = llm(f"yesno: {it}")
                out.append({"yes": 1}[reply])
        except KeyError as e:
            out.append(f"no {e}")
    return out


@poppy
def with_in_handler_of_try_in_with(x):
    with Section("outer"):
        try:
            y = 10 // x
        except ZeroDivisionError:
            with Section("handler", suppress=True):
                y = int("nope")
            y = "suppressed"
    return y


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


for x in (1, 0):
    for s in (False, True):
        attempt(caught_after_exit, x, s)
for kind in ("none", "enter", "exit", "both"):
    attempt(enter_exit_fail, kind)
for x in (1, 0):
    for s in (False, True):
        attempt(in_finally_body, x, s)
for x in (0, 1, 2):
    attempt(in_full_try, x)
attempt(try_with_loop, ["a", "bb", "", "ccc"])
attempt(try_with_loop, ["a", "bb", "ccc"])
attempt(loop_try_with, ["a", "s1", "bb", "s2", "ccc", "d"])
for x in (1, 0):
    attempt(with_in_handler_of_try_in_with, x)
