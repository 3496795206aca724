# try/except/finally whose handlers (or body, or else clause) leave by return, break or continue
# (issue 16): the returned value is computed first, then the finally clause runs, then the exit
# takes effect; a finally clause that raises replaces the pending exit (the handled exception as
# its __context__ is gone by then: CPython's POP_EXCEPT comes before the clause); a finally
# clause that returns overrides the handler's return (whose value was computed, then dropped); a
# break from a handler skips the loop's else clause, a continue does not; `as e` is unbound after
# the handler; loops of unordered calls whose handlers leave.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p651", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r}"


def tag(x):
    print("value computed:", x)
    return x


@poppy
def handler_return(x, d=1):
    try:
        if x == "raise":
            raise ValueError(x)
        if x == "body":
            return tag(f"body {x}")
        log(f"no return {x}")
    except ValueError as e:
        return tag(f"handler {e}")
    finally:
        log(f"finally {x}")
        q = 1 // d
    return q


@poppy
def body_and_handler_return(x):
    try:
        if x:
            return tag(f"body {10 // (x - 1)}")
    except ZeroDivisionError:
        return tag("handler")
    finally:
        log(f"finally {x}")
    return "end"


@poppy
def body_and_handler_constant(x):
    try:
        if x:
            return tag(10 // (x - 1))
    except ZeroDivisionError:
        return 2
    finally:
        log(f"finally {x}")
    return 1


@poppy
def loop_handlers(items):
    out = []
    for it in items:
        try:
            n = int(llm(f"count: {it}")) if it != "bad" and it != "stop" else int(it)
        except ValueError as e:
            if it == "stop":
                break
            out.append(f"bad {e.args[0][-6:]}")
            continue
        else:
            if n > 17:
                return tag(f"big {n} after {out}")
            out.append(n)
        finally:
            log(f"fin {it} {len(out)}")
        log(f"after {it}")
    else:
        log("no break")
    return out


@poppy
def finally_returns(x):
    try:
        if x:
            return tag(f"body {x}")
        return 1 // x
    except ZeroDivisionError:
        return tag("handler")
    finally:
        return "finally wins"


@poppy
def finally_overrides(x):
    try:
        y = 10 // x
    except ZeroDivisionError:
        return tag("handler")
    finally:
        return "finally wins"


@poppy
def finally_logs_and_returns(x):
    try:
        y = 10 // x
    except ZeroDivisionError:
        return tag("handler")
    finally:
        log(f"overriding {x}")
        return f"finally wins over {y}"


@poppy
def unbound_after(items):
    e = "before"
    for it in items:
        try:
            int(it)
        except ValueError as e:
            log(f"handling {e}")
            break
        finally:
            log(f"fin {it}")
    return e


@poppy
def handler_raises_then_finally(x):
    try:
        try:
            return 10 // x
        except ZeroDivisionError:
            return int("handler")
        finally:
            log(f"inner finally {x}")
    except ValueError as e:
        return f"outer caught {show(e)}"


@poppy
def typed_handlers(items):
    out = []
    for it in items:
        try:
            out.append({"a": 1}[it] if it != "t" else len(it) + it)
        except KeyError:
            continue
        except TypeError:
            return tag(out)
        finally:
            out.append(f"fin {it}")
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


for x in ("raise", "body", "other"):
    attempt(handler_return, x)
    attempt(handler_return, x, 0)
for x in (0, 1, 2):
    attempt(body_and_handler_return, x)
    attempt(body_and_handler_constant, x)
attempt(loop_handlers, ["a", "bad", "bb", "stop", "cc"])
attempt(loop_handlers, ["a", "bad"])
attempt(loop_handlers, [f"item{i}" for i in range(8)])
for x in (0, 2):
    attempt(finally_returns, x)
for x in (0, 2):
    attempt(finally_overrides, x)
    attempt(finally_logs_and_returns, x)
attempt(unbound_after, ["1", "x", "2"])
attempt(unbound_after, ["1"])
for x in (0, 5):
    attempt(handler_raises_then_finally, x)
attempt(typed_handlers, ["a", "b", "a", "t", "a"])
attempt(typed_handlers, ["b"])
