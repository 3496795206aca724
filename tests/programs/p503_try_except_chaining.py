# Exceptions raised while handling one, as CPython chains them: an external failing in a handler
# (its __context__ is the caught exception), `raise X` in a handler (__context__), `raise X from e`
# (__cause__), `raise X from None` (__suppress_context__), an unmatched exception propagating
# unchanged (same object, its traceback at the user's line), sys.exc_info() inside a handler as
# seen by the function and by an external it calls, and the handled exception cleared after the
# handler. Each escaping exception is printed with its chain and the @poppy frames' lines. They
# compile (docs/design-exceptions.md, stage 1).
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def current():
    """An external that looks at the exception being handled (like logging.exception)."""
    return repr(sys.exc_info()[1])


@poppy
def handler_call_fails(k):
    try:
        llm(f"fail: first {k}")
    except ValueError:
        log("retrying")
        return llm(f"fail: second {k}")


@poppy
def handler_raises(k):
    try:
        return {"a": 1}[k]
    except KeyError as e:
        if k == "plain":
            raise RuntimeError(f"plain {e}")
        if k == "from":
            raise RuntimeError(f"from {e}") from e
        raise RuntimeError(f"none {e}") from None


@poppy
def unmatched(k):
    try:
        v = llm(f"fail: {k}")
    except KeyError:
        v = "never"
    return v


@poppy
def sees_exc_info(k):
    try:
        llm(f"fail: info {k}")
    except ValueError:
        log(f"inside: {current()}")
        log(f"direct: {sys.exc_info()[0].__name__}")
    log(f"after: {current()}")
    return k


def show(fn, *args):
    try:
        print(fn.__name__, "->", fn(*args))
    except Exception as exc:
        print(fn.__name__, "raised", type(exc).__name__, exc)
        print("  cause:", repr(exc.__cause__), "context:", repr(exc.__context__),
              "suppress:", exc.__suppress_context__)
        lines = [(f.name, f.lineno) for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename == __file__ and f.name != "show"]
        print("  frames:", lines)
        if exc.__context__ is not None:
            ctx = exc.__context__
            print("  context frames:", [(f.name, f.lineno) for f in
                                        traceback.extract_tb(ctx.__traceback__)
                                        if f.filename == __file__])


show(handler_call_fails, 1)
for k in ["plain", "from", "none"]:
    show(handler_raises, k)
show(handler_raises, "a")
show(unmatched, "x")
show(sees_exc_info, "y")
