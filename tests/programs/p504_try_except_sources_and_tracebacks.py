# try/except compiled (docs/design-exceptions.md, stage 1) with exceptions from every kind of
# source — an async external, a blocking one (worker thread), a sequential one, internal
# operations (subscript, int(), attribute, division) — and handlers whose calls look at the
# exception being handled from each kind of external: sys.exc_info() in a blocking external
# (set on its worker thread), in an async one (set while its coroutine is stepped), in a
# sequential one; traceback.format_exc() and logging.exception in a handler (the traceback shows
# the @poppy function's line where it was raised, as CPython's does); an exception raised in a
# handler chained to the handled one; an unmatched one escaping with its traceback unchanged.
import asyncio
import logging
import sys
import time
import traceback

from poppy_jit import poppy, sequential, unordered
from _ext import llm, log, lookup, set_latency_scale, write

set_latency_scale(0.1)


@unordered(blocking=True)
def seen_blocking(tag):
    time.sleep(0.002)
    return f"{tag}: blocking sees {sys.exc_info()[1]!r}"


@unordered
async def seen_async(tag):
    first = repr(sys.exception())
    await asyncio.sleep(0.002)
    return f"{tag}: async sees {first} then {sys.exception()!r}"


@sequential
def seen_sequential(tag):
    return f"{tag}: sequential sees {sys.exc_info()[0]}"


@unordered(blocking=True)
def fails_blocking(key):
    time.sleep(0.001)
    raise LookupError(f"no such key {key!r}")


# (An async external's frames under plain CPython include the annotation's own wrapper, which
# runs it to completion: only the program's frames are compared.)
_OURS = ("p504", "_ext")


def short_tb(text=None):
    """The exception being handled: its frames' functions and lines in this program."""
    lines = (text or traceback.format_exc()).splitlines()
    return [ln.strip().split("/")[-1] for ln in lines
            if ln.strip().startswith("Traceback") or "Error" in ln
            or (ln.strip().startswith("File") and any(o in ln for o in _OURS))]


class ShortTracebacks(logging.Formatter):
    def formatException(self, ei):
        return "\n".join(short_tb(super().formatException(ei)))


_handler = logging.StreamHandler(sys.stdout)
_handler.setFormatter(ShortTracebacks("%(levelname)s %(message)s"))
logging.getLogger().addHandler(_handler)


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


@poppy
def from_sources(k):
    out = []
    try:
        out.append(llm(f"fail: async {k}"))
    except ValueError as e:
        out.append(seen_blocking("async"))
        out.append(seen_async("async"))
        out.append(seen_sequential(f"async {e}"))
    try:
        out.append(fails_blocking(k))
    except LookupError as e:
        out.append(seen_async("blocking"))
        out.append(frames(e))
    try:
        write("", k)
    except KeyError as e:
        out.append(seen_blocking(f"sequential {e}"))
    for op in ("sub", "int", "attr", "div"):
        try:
            if op == "sub":
                v = {"a": 1}[k]
            elif op == "int":
                v = int(k)
            elif op == "attr":
                v = k.no_such_attribute
            else:
                v = 1 / len(k[:0])
        except (KeyError, ValueError, AttributeError, ZeroDivisionError) as e:
            v = f"{type(e).__name__}: {e}"
            out.append(short_tb())
        out.append(v)
    return out


@poppy
def logs_it(k):
    try:
        return int(write("", k))
    except KeyError:
        logging.exception("could not write %s", k)
        log(f"tb {short_tb()}")
        return -1


@poppy
def chained_in_handler(k):
    try:
        return {"x": 1}[k]
    except KeyError:
        return llm(f"fail: while handling {k}")


@poppy
def escapes(k):
    total = 0
    try:
        total += len(lookup(k))
        total += int(k)
    except KeyError:
        total = -1
    return total


def show(exc):
    print("escaped:", type(exc).__name__, exc, "| context:", repr(exc.__context__),
          "| frames:", frames(exc))


print(from_sources("b"))
print(logs_it("p"))
for f, arg in ((chained_in_handler, "q"), (escapes, "zz")):
    try:
        print(f(arg))
    except Exception as exc:
        show(exc)
print("handled after:", sys.exc_info())
