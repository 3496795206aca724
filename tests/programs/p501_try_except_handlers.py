# try/except/else as CPython runs them, in @poppy functions: typed handlers (a class, a tuple,
# bare `except`, the first matching one of several, a subclass), `as e` (unbound after the
# handler), `else` (only when the body did not raise; its own exception is not caught by the
# same handlers), the locals after the statement (assignments before the raising point happened,
# after it did not), exceptions from async, blocking and sequential externals and from internal
# operations (subscript, division, conversion, attribute), a handler expression evaluated only
# when an exception arrives (a NameError there), and an inlined @poppy callee raising inside the
# body. They compile (docs/design-exceptions.md, stage 1) but for the one with a bare `except`,
# which falls back (it would catch KeyboardInterrupt).
import sys

from poppy_jit import poppy
from _ext import llm, log, lookup, write, set_latency_scale

set_latency_scale(0.1)


class AppError(Exception):
    pass


class Refused(AppError):
    pass


@poppy
def typed(kind):
    a = llm(f"first {kind}")
    b = "unset"
    try:
        b = llm(f"second {kind}")
        if kind == "value":
            x = int(b)
        elif kind == "key":
            x = {"k": 1}[b]
        elif kind == "zero":
            x = len(b) / 0
        elif kind == "attr":
            x = b.no_such_attribute
        elif kind == "app":
            raise Refused(b)
        else:
            x = len(b)
        c = llm(f"third {kind} {x}")
    except ValueError as e:
        log(f"value: {e}")
        c = "v"
    except (KeyError, ZeroDivisionError) as e:
        log(f"key or zero: {type(e).__name__} {e}")
        c = "kz"
    except AppError as e:
        log(f"app: {type(e).__name__} {e}")
        c = "app"
    except:  # noqa: E722
        log(f"bare: {sys.exc_info()[0].__name__}")
        c = "bare"
    else:
        log(f"else {kind}")
    return a, b, c


@poppy
def external_raises(prompts):
    out = []
    for p in prompts:
        try:
            r = llm(p)
            log(f"got {p}")
        except ValueError as e:
            r = f"caught {e}"
        out.append(r)
    return out


@poppy
def sequential_raises(keys):
    done = []
    for k in keys:
        try:
            write(k, lookup(k))
            done.append(k)
        except KeyError as e:
            log(f"write failed: {e!r}")
    return done


@poppy
def check(x):
    if x < 0:
        raise AppError(f"negative {x}")
    return llm(f"check {x}")


@poppy
def inlined_callee(xs):
    out = []
    for x in xs:
        try:
            out.append(check(x))
        except AppError as e:
            log(f"callee raised {e}")
            out.append(None)
    return out


@poppy
def else_raises(k):
    try:
        v = llm(f"else {k}")
    except KeyError:
        v = "handler"
    else:
        v = {"a": v}[k]
    return v


@poppy
def handler_expression_fails(k):
    try:
        return {"a": 1}[k]
    except undefined_name_here:  # noqa: F821
        return "never"


@poppy
def name_unbound_after(k):
    e = "before"
    try:
        {"a": 1}[k]
    except KeyError as e:
        log(f"handling {e}")
    return e


def show(fn, *args):
    try:
        print(fn.__name__, "->", fn(*args))
    except BaseException as exc:
        print(fn.__name__, "raised", type(exc).__name__, exc,
              "context:", type(exc.__context__).__name__)


for kind in ["ok", "value", "key", "zero", "attr", "app"]:
    show(typed, kind)
show(external_raises, ["a", "fail: b", "c", "fail: d"])
show(sequential_raises, ["x", "", "y"])
show(inlined_callee, [1, -2, 3])
show(else_raises, "a")
show(else_raises, "b")
show(handler_expression_fails, "a")
show(handler_expression_fails, "b")
show(name_unbound_after, "a")
show(name_unbound_after, "b")
