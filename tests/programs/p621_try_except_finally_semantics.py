# try/except/else/finally compiled: an exception in the body caught by a handler, one no handler
# matches, one raised in a handler (its `__context__` the handled one), one in the else clause, one
# in the finally clause (replacing the pending one, which is its `__context__`), a bare `raise` in
# a handler (the same object, traceback at the raising line), `as e` unbound after its handler,
# the exception the finally clause sees as handled (sys.exc_info() in a helper and an external),
# locals at the raising point, and the finally clause running exactly once on every path.
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale, write

set_latency_scale(0.1)

_OURS = ("p621", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def pending():
    t = sys.exc_info()[1]
    return repr(t) if t else "nothing"


def show(e):
    chain = []
    while e is not None:
        chain.append(repr(e))
        e = e.__context__
    return " <- ".join(chain)


@poppy
def step(kind, x):
    trail = []
    try:
        trail.append("body")
        if kind == "body-key":
            v = {"a": 1}[x]
        elif kind.endswith("unmatched"):
            v = 1 / int(x)
        else:
            v = len(llm(f"count: {x}")) + int(x)
        trail.append(f"v={v}")
    except (ValueError, KeyError) as e:
        trail.append(f"handler {e!r} sees {pending()}")
        if kind == "handler-raises":
            raise RuntimeError(f"handler failed for {x}")
        if kind == "handler-reraise":
            raise
        if kind == "handler-external":
            llm(f"fail: in handler {x}")
        v = -1
    else:
        trail.append("else")
        if kind == "else-raises":
            v = [][int(x)]
        log(f"else {x} {v}")
    finally:
        trail.append(f"finally sees {pending()}")
        log(f"finally {kind} {x} sees {pending()}")
        if kind.startswith("finally-raises"):
            raise LookupError(f"finally failed for {x}")
    trail.append("after")
    return v, trail


@poppy
def names_after(x):
    e = "before"
    try:
        y = int(x)
    except ValueError as e:
        y = str(e)
    finally:
        write("finally", x)
    try:
        return y, e
    except NameError as n:  # UnboundLocalError: `e` unbound after its handler
        return y, repr(n)


@poppy
def locals_at_raise(keys):
    got = []
    n = 0
    for k in keys:
        try:
            n += 1
            got.append(lookup(k))
            n += int(k)
        except ValueError:
            got.append(f"bad {k} at n={n}")
        finally:
            got.append(f"finally n={n}")
    return got, n


cases = [
    ("call", "12"),
    ("body-value", "zz"),
    ("body-key", "a"),
    ("body-key", "q"),
    ("body-unmatched", "0"),
    ("handler-raises", "zz"),
    ("handler-reraise", "zz"),
    ("handler-external", "zz"),
    ("else-raises", "3"),
    ("finally-raises", "5"),
    ("finally-raises-body", "zz"),
    ("finally-raises-unmatched", "0"),
]
for kind, x in cases:
    try:
        print(kind, x, step(kind, x))
    except Exception as e:
        print(kind, x, "caller caught", show(e), frames(e))
print(names_after("7"))
print(names_after("seven"))
print(locals_at_raise(["1", "x", "2", "y"]))
