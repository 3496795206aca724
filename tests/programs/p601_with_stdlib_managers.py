# `with` on the standard library's context managers: contextlib.suppress (the exceptions it names
# are suppressed, others pass through with their traceback), contextlib.contextmanager generators
# (the code around the `yield` runs as __enter__/__exit__; an exception in the body is thrown into
# the generator, which may suppress it, let it through or replace it — its traceback and
# __context__ as CPython shows them), nullcontext, a file opened for writing then reading (closed
# after the statement, also when the body raises), and a threading lock (released after).
import contextlib
import os
import sys
import tempfile
import threading
import traceback

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)

def frames(e):
    """Every entry of the traceback, the standard library's included."""
    return [(os.path.basename(f.filename), f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r}"


@contextlib.contextmanager
def section(name, swallow=(), replace=False):
    log(f"start {name}")
    try:
        yield name.title()
    except swallow as e:
        log(f"{name} swallowed {e!r} while handling {sys.exc_info()[1]!r}")
    except Exception as e:
        log(f"{name} saw {e!r}")
        if replace:
            raise LookupError(f"{name} replaced {e}") from None if replace == "quiet" else e
        raise
    finally:
        log(f"end {name}")


@poppy
def suppressed(keys):
    table = {"a": 1, "b": 2}
    out = []
    for k in keys:
        with contextlib.suppress(KeyError, ZeroDivisionError):
            out.append(llm(f"count: {k}"))
            out.append(table[k])
            out.append(10 // (table[k] - 1))
        out.append(f"after {k}")
    return out


@poppy
def generators(x, swallow=(), replace=False):
    with section("outer", swallow, replace) as title:
        log(f"inside {title}")
        value = 100 // x
        log(f"value {value}")
    return locals_like(title, x)


def locals_like(title, x):
    return f"{title} done with {x}"


@poppy
def files(path, text):
    with open(path, "w") as fh:
        fh.write(text)
        log(f"wrote {len(text)}")
    print("closed after writing:", fh.closed)
    with open(path) as fh:
        data = fh.read()
        if "bad" in data:
            raise ValueError(f"bad data: {data}")
    print("closed after reading:", fh.closed)
    return data


@poppy
def first_line(path):
    with open(path) as fh:
        return fh.readline().strip()


@poppy
def locked(lock, items):
    out = []
    with lock:
        for it in items:
            out.append(lookup(it))
        print("locked inside:", lock.locked())
    print("locked after:", lock.locked())
    with contextlib.nullcontext(len(out)) as n:
        out.append(n)
    return out


print(suppressed(["a", "b", "c"]))

for args in ((5,), (0,), (0, ZeroDivisionError), (0, (), True), (0, (), "quiet")):
    try:
        print(generators(*args))
    except Exception as e:
        print("caller caught", show(e), "cause", repr(e.__cause__))

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "data.txt")
    print(files(path, "good data"))
    print(first_line(path))
    try:
        print(files(path, "bad data"))
    except ValueError as e:
        print("caller caught", show(e))
        print("file closed:", e.__traceback__ is not None)

lock = threading.Lock()
print(locked(lock, ["k1", "k2"]))
print("lock free:", not lock.locked())
