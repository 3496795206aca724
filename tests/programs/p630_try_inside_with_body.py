# A try statement inside a `with` body (issue 16): try/except, try/except/else/finally, a try
# around the loop, a try whose exception is not caught (it reaches __exit__, which suppresses it or
# not), an exception raised in a handler or a finally clause (chained, passed to __exit__), the
# handled exception seen by __exit__ and by the handler's calls, `as e` unbound after the handler,
# a with inside a with body (nested managers), and the loop's unordered calls with the manager's
# sequential calls around them in CPython's order.
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p630", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r} cause={e.__cause__!r}"


class Section:
    def __init__(self, name, suppress=False):
        self.name, self.suppress = name, suppress

    def __enter__(self):
        log(f"enter {self.name}")
        return self.name.upper()

    def __exit__(self, t, e, tb):
        handled = sys.exc_info()[1]
        log(f"exit {self.name} {t.__name__ if t else None} {e!r} handled={handled is e}")
        return self.suppress


@poppy
def loop_try_except(items, suppress=False):
    out = []
    with Section("loop", suppress) as name:
        for it in items:
            try:
                n = int(llm(f"count: {it}"))
                out.append(100 // (n % 3) + len(it) // (len(it) - 2))
            except ZeroDivisionError as e:
                out.append(f"{name} {e}")
                log(f"zero {it} {sys.exc_info()[0].__name__}")
    out.append("after")
    return out


@poppy
def loop_full(items):
    labels = []
    with Section("full"):
        for it in items:
            try:
                reply = llm(f"yesno: {it}")
                label = {"yes": "Y"}[reply]
            except KeyError as e:
                label = llm(f"count: {it} {e}")
            else:
                log(f"ok {it}")
            finally:
                log(f"done {it}")
            labels.append(label)
    return labels


@poppy
def uncaught(x, suppress):
    got = "unset"
    with Section("uncaught", suppress):
        try:
            got = 10 // x
            got = {1: "one"}[x]
        except KeyError:
            got = "no key"
        log(f"after try {got}")
    return got


@poppy
def handler_raises(x, suppress):
    with Section("handler", suppress):
        try:
            y = 10 // x
        except ZeroDivisionError as e:
            log(f"caught {e}")
            raise ValueError(f"bad {x}") from e
        else:
            log(f"else {y}")
    try:
        return e
    except NameError as n:
        return f"unbound: {n}"


@poppy
def finally_raises(x, suppress):
    with Section("fin", suppress):
        try:
            log(f"body {x}")
            y = 10 // x
        finally:
            log(f"finally {x}")
            z = [1][x]
        log(f"after {y} {z}")
    return x


@poppy
def try_around_loop(items):
    out = []
    with Section("around"):
        try:
            for it in items:
                out.append(llm(f"count: {it}"))
                out.append(10 // len(it))
        except ZeroDivisionError:
            out.append("empty item")
            log("stopped")
    return out


@poppy
def nested_with(x, inner_suppress, outer_suppress):
    out = []
    with Section("outer", outer_suppress) as a:
        with Section("inner", inner_suppress) as b:
            out.append(a + b)
            out.append(10 // x)
        out.append("after inner")
    out.append("after outer")
    return out


@poppy
def try_in_nested_with(items):
    out = []
    with Section("one") as a:
        for it in items:
            with Section(f"two {it}") as b:
                try:
                    out.append(b + llm(f"yesno: {it}"))
                    out.append(10 // len(it))
                except ZeroDivisionError:
                    out.append(a)
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


attempt(loop_try_except, ["ab", "abc", "abcd", "q", "xyz"])
attempt(loop_try_except, ["ab", "abc", "abcd", "q", "xyz"], True)
attempt(loop_try_except, [f"item{i}" for i in range(8)])
attempt(loop_full, [f"item{i}" for i in range(8)])
for x in (1, 2, 0):
    for s in (False, True):
        attempt(uncaught, x, s)
        attempt(handler_raises, x, s)
for x in (0, 1, 2):
    for s in (False, True):
        attempt(finally_raises, x, s)
attempt(try_around_loop, ["a", "bb", "", "ccc"])
attempt(try_around_loop, ["a", "bb"])
for x in (1, 0):
    for i in (False, True):
        for o in (False, True):
            attempt(nested_with, x, i, o)
attempt(try_in_nested_with, ["a", "", "bb"])
