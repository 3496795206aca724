# `with` on a context manager class of the program: __enter__ and __exit__ are sequential calls in
# program order around the body (their prints and log lines where CPython makes them); an
# exception in the body is passed to __exit__ as (type, value, traceback) with the exception being
# handled meanwhile (sys.exc_info() inside __exit__), then re-raised unchanged (same object,
# traceback at the raising line) unless __exit__'s result is true — truth as CPython computes it,
# a __bool__ that raises included (its exception has the body's as __context__). An exception
# raised by __exit__ replaces the body's (with it as __context__); one raised by __enter__ skips
# the body and __exit__; a manager without __enter__ or __exit__ is CPython's TypeError; the `as`
# target is inside the statement (an unpacking error goes to __exit__). Also a `with` without
# `as`, one whose body always raises, one in a loop, one in an except handler, one after another,
# one whose body ends with a return (the exit runs before it; a suppressed exception goes on after
# the statement: the next iteration).
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p600", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r}"


class Truthy:
    def __init__(self, value):
        self.value = value

    def __bool__(self):
        if self.value == "boom":
            raise RuntimeError("__bool__ failed")
        return bool(self.value)


class Section:
    def __init__(self, name, result=None, fail_enter=False, fail_exit=False, value=None):
        self.name, self.result, self.fail_enter, self.fail_exit = name, result, fail_enter, fail_exit
        self.value = name.upper() if value is None else value

    def __enter__(self):
        print("enter", self.name)
        log(f"enter {self.name}")
        if self.fail_enter:
            raise OSError(f"cannot enter {self.name}")
        return self.value

    def __exit__(self, t, e, tb):
        handled = sys.exc_info()[1]
        print("exit", self.name, t.__name__ if t else None, repr(e), tb is not None and tb.tb_lineno,
              "handled:", repr(handled), handled is e)
        log(f"exit {self.name} {t.__name__ if t else None}")
        if self.fail_exit:
            raise KeyError(f"exit of {self.name} failed")
        return self.result


@poppy
def basic(name, x, result=None):
    with Section(name, result) as v:
        print("body", v)
        y = 10 // x
        print("after division", y)
    print("after with", v)
    return v


@poppy
def no_as(x):
    out = []
    with Section("plain", result=Truthy(x)):
        out.append(llm(f"count: {x}"))
        raise ValueError(f"body of {x}")
    out.append("suppressed")
    return out


@poppy
def failing(kind):
    with Section(kind, fail_enter=kind == "enter", fail_exit=kind == "exit") as v:
        log(f"body {v}")
        if kind != "none":
            {"a": 1}[kind]
    return v


@poppy
def unpacked(value):
    total = "no value"
    with Section("pair", result=True, value=value) as (a, b):
        print("unpacked", a, b)
        total = a + b
    return total


@poppy
def loop(items):
    out = []
    for it in items:
        with Section(f"item {it}", result=it % 2) as v:
            out.append(v)
            out.append(100 // (it - 3))
        log(f"next after {it}")
    return out


@poppy
def in_handler(x):
    try:
        return 1 // x
    except ZeroDivisionError:
        with Section("handler", result=x is None) as v:
            print("in handler", v, repr(sys.exc_info()[1]))
            int("nope")
        return ("suppressed in handler", repr(sys.exc_info()[1]))


@poppy
def two(x):
    with Section("first"):
        a = llm(f"count: {x}")
    b = None
    with Section("second", result=True):
        b = int(a) // x
    return a, b


@poppy
def returning(items):
    for x in items:
        with Section(f"ret {x}", result=x != 2) as v:
            log(f"computing {v}")
            return v + str(10 // x)
    return "every body raised"


@poppy
def not_a_manager(m):
    with m:
        log("never")


for args in (("a", 2), ("b", 0), ("c", 0, True), ("d", 0, 0), ("e", 0, "yes"), ("f", 0, Truthy("")),
             ("g", 0, Truthy("boom"))):
    try:
        print(basic(*args))
    except Exception as e:
        print("caller caught", show(e))

for x in (1, 0, "boom"):
    try:
        print(no_as(x))
    except Exception as e:
        print("caller caught", show(e))

for kind in ("none", "body", "enter", "exit"):
    try:
        print(failing(kind))
    except Exception as e:
        print("caller caught", show(e))

for value in ((1, 2), (1, 2, 3), 5):
    try:
        print(unpacked(value))
    except Exception as e:
        print("caller caught", show(e))

try:
    print(loop([1, 2, 3, 4, 5]))
except Exception as e:
    print("caller caught", show(e))
print(loop([1, 5, 7]))

for x in (2, 0, None):
    try:
        print(in_handler(x))
    except Exception as e:
        print("caller caught", show(e))

for x in (3, 0):
    try:
        print(two(x))
    except Exception as e:
        print("caller caught", show(e))


for items in ([5], [0, 5], [0, 0], [0, 2]):
    try:
        print(returning(items))
    except Exception as e:
        print("caller caught", show(e))


class OnlyEnter:
    def __enter__(self):
        log("OnlyEnter entered")


class OnlyExit:
    def __exit__(self, *a):
        log("OnlyExit exited")


for m in (OnlyEnter(), OnlyExit(), 42):
    try:
        not_a_manager(m)
    except TypeError as e:
        print("caller caught", show(e))
