# Nested try statements compiled (a try in a try body, in a handler, in an else clause): an
# exception no inner handler matches reaches the outer handlers (the same object), failures in
# the inner else, handler and test are caught by the outer try, each handler sees its own
# exception as the handled one (sys.exc_info, __context__), break/continue/return out of both
# handlers unbind both `as` names, and locals are those at the raising point.
import sys

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def current():
    return repr(sys.exc_info()[1])


@poppy
def nested(items):
    out = []
    for it in items:
        try:
            v = {"a": "1", "b": "x", "c": "2", "d": "stop"}[it]
            try:
                w = int(v)
            except ValueError as e:
                log(f"inner {e} sees {current()}")
                if it == "b":
                    continue
                w = -1
            out.append(w)
        except KeyError as e:
            log(f"outer {e} sees {current()}")
            try:
                out.append(int(llm(f"fail: {it}")))
            except ValueError as e2:
                log(f"inner of handler {e2} sees {current()} context {e2.__context__!r}")
                if it == "z":
                    break
        else:
            try:
                log(f"else {int(v) * 2}")
            except ZeroDivisionError:
                pass
    return out


@poppy
def unmatched_inner(k):
    a = None
    try:
        a = llm(f"count: {k}")
        try:
            return {"x": a}[k]
        except ValueError:
            return "inner"
    except KeyError as e:
        return f"outer caught {e!r} with a={a}"


@poppy
def inner_else_and_test_fail(k):
    try:
        try:
            v = llm(f"count: {k}")
        except NoSuchName:
            return "never"
        else:
            return int(k)
    except ValueError as e:
        return f"outer: {e}"


@poppy
def test_fails(k):
    try:
        try:
            v = {"a": 1}[k]
        except NoSuchName:
            return "never"
    except NameError as e:
        return f"outer: {e} context {e.__context__!r}"


@poppy
def return_from_both(k):
    try:
        raise KeyError(k)
    except KeyError as e:
        try:
            raise ValueError(k)
        except ValueError as f:
            return f"{e!r} {f!r} {f.__context__!r}"


@poppy
def names_after(k):
    try:
        raise KeyError(k)
    except KeyError as e:
        try:
            raise ValueError(k)
        except ValueError as f:
            pass
    try:
        return f
    except NameError as g:
        return f"{type(g).__name__}: {g}"


@poppy
def handled_in_nested(k):
    try:
        raise KeyError(k)
    except KeyError:
        log(f"outer sees {current()}")
        try:
            int(k)
        except ValueError as e2:
            log(f"inner sees {current()} context {e2.__context__!r}")
        log(f"outer again sees {current()}")
    return current()


@poppy
def in_loop_in_body(xs):
    # (A try in a try body falls back for now — lowering it failed.)
    out = []
    try:
        for x in xs:
            try:
                out.append(10 // x)
            except ZeroDivisionError:
                out.append(None)
    except IndexError:
        pass
    return out


print(in_loop_in_body([1, 0, 5]))
print(handled_in_nested("h"))
print(nested(["a", "b", "c", "q", "z", "a"]))
for f, arg in ((unmatched_inner, "y"), (inner_else_and_test_fail, "7"), (inner_else_and_test_fail, "n"),
               (test_fails, "q"), (return_from_both, "r"), (names_after, "s")):
    try:
        print(f(arg))
    except Exception as exc:
        print("escaped:", type(exc).__name__, exc, repr(exc.__context__))
print("after:", sys.exc_info())
