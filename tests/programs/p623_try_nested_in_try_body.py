# Try statements nested in a try body compile: the inner statement first in the outer body (its
# test a tuple with a module attribute, each part of which may raise), an inner exception no inner
# handler matches reaching the outer handlers (the same object, traceback at the raising line),
# a bare `raise` in an inner handler (the inner handler's exception, for the outer handlers) and
# in a try body nested in a handler (the handler's exception, for the inner handlers), a
# failure in an inner handler, else clause or test caught by the outer try with its `__context__`,
# a try/finally and a try/except/finally in a try body, a bare raise in a while loop's nested
# handler, and locals at each raising point.
import json
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p623", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def pending():
    t = sys.exc_info()[1]
    return repr(t) if t else "nothing"


class Codec:
    Error = ValueError


codec = Codec()


@poppy
def first_in_body(items):
    out = []
    for it in items:
        try:
            try:
                v = json.loads(it)["label"]
            except (json.JSONDecodeError, KeyError) as e:
                log(f"inner {type(e).__name__} sees {pending()}")
                if it == "{}":
                    raise
                v = len(llm(f"count: {it}"))
            out.append(v)
        except KeyError as e:
            out.append(f"outer {e!r} {frames(e)}")
        except TypeError as e:
            out.append(f"outer type {e}")
    return out


@poppy
def failing_parts(kind):
    a = 0
    try:
        a = 1
        try:
            a = 2
            x = {"k": 1}[kind]
        except (codec.Error, getattr(sys, kind, KeyError)) as e:
            a = 3
            if kind == "handler":
                log(f"inner handler sees {pending()}")
                x = int("not a number")
            x = -1
        else:
            a = 4
            x = [][x]
        a = 5
    except ValueError as e:
        return f"outer ValueError {e} context {e.__context__!r} a={a}"
    except IndexError as e:
        return f"outer IndexError {e} context {e.__context__!r} a={a}"
    except AttributeError as e:
        return f"outer AttributeError context {e.__context__!r} a={a}"
    return a, x


@poppy
def finally_inside(keys):
    got = []
    for k in keys:
        try:
            try:
                got.append(lookup(k)[int(k)])
            except IndexError:
                got.append(f"short {k}")
            finally:
                log(f"inner finally {k} sees {pending()}")
            try:
                got.append(100 // int(k))
            finally:
                log(f"second finally {k} sees {pending()}")
        except (ValueError, ZeroDivisionError) as e:
            got.append(f"outer {e!r}")
        finally:
            log(f"outer finally {k} sees {pending()}")
    return got


@poppy
def retry_while(limit, salt):
    tries = 0
    n = None
    while n is None:
        try:
            try:
                tries += 1
                n = int(llm(f"count: attempt {tries} {salt}"))
                if n % 3 != 0 and tries < limit:
                    raise ValueError(f"attempt {tries} gave {n}")
            except ValueError:
                if tries >= 2:
                    raise
                log(f"retry after {tries}")
                n = None
        except ValueError as e:
            log(f"giving up: {e} sees {pending()} {frames(e)}")
            n = -1
    return n, tries


@poppy
def reraise_in_inner_body(x):
    try:
        return int(x)
    except ValueError as e:
        try:
            log(f"handling {e}")
            raise
        except ValueError as e2:
            out = f"inner caught the same: {e2 is e}, sees {pending()}, frames {frames(e2)}"
        except KeyError:
            out = "never"
    return out


print(first_in_body(['{"label": 1}', "nope", '{"x": 2}', "{}", "[1]"]))
for kind in ("k", "q", "handler", "maxsize"):
    try:
        print(kind, failing_parts(kind))
    except Exception as e:
        print(kind, "caller caught", repr(e), repr(e.__context__), frames(e))
print(finally_inside(["1", "0", "x", "123456", "7"]))
print(retry_while(1, "a"), retry_while(5, "a"), retry_while(5, "b"), retry_while(5, "c"))
print(reraise_in_inner_body("12"), reraise_in_inner_body("twelve"))
