# try/finally compiled (3.11): the finally clause runs after the body completes and after it
# raises — with the exception handled meanwhile (sys.exc_info() in a helper), then re-raised
# unchanged (same object, traceback at the raising line) — and an exception inside the finally
# clause replaces the pending one, with it as `__context__`. In a loop with a body that reads an
# LLM reply, in a handler of a try/except (the finally's exception is the handler's then), in
# the else clause, and at the end of a function that returns after it.
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale, write

set_latency_scale(0.1)

_OURS = ("p575", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def pending():
    t = sys.exc_info()[0]
    return t.__name__ if t else "nothing"


@poppy
def per_item(items):
    out = []
    for it in items:
        try:
            n = int(llm(f"count: {it}"))
            if n % 2:
                write(it, n)
            out.append(100 // (n % 5))
        finally:
            log(f"done {it} with {pending()} pending")
        out.append(it)
    return out


@poppy
def replaced(x):
    try:
        y = {"a": 1}[x]
    finally:
        log(f"cleanup {x}")
        if x == "boom":
            raise RuntimeError("cleanup failed")
    return y


@poppy
def in_handler_and_else(keys):
    got = []
    for k in keys:
        try:
            v = lookup(k)[9]
        except IndexError:
            try:
                got.append(int(k))
            finally:
                log(f"handler cleanup {k}: {pending()}")
        else:
            try:
                got.append(v)
            finally:
                log(f"else cleanup {k}: {pending()}")
    return got


@poppy
def at_end(x):
    y = 0
    try:
        y = len(llm(x))
    finally:
        log(f"at end {y}")
    return y


for items in (["a"], ["b", "c"], ["a", "b", "c", "d", "e", "f", "g", "h"]):
    try:
        print(per_item(items))
    except ZeroDivisionError as e:
        print("caller caught", e, frames(e))
print(replaced("a"))
for x in ("zz", "boom"):
    try:
        replaced(x)
    except (KeyError, RuntimeError) as e:
        print("caller caught", repr(e), repr(e.__context__), frames(e))
print(in_handler_and_else(["12", "a longer key", "7"]))
try:
    in_handler_and_else(["3", "nope"])
except ValueError as e:
    print("caller caught", repr(e), repr(e.__context__))
print(at_end("hello"))
