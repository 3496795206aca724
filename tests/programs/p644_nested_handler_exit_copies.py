# A try statement nested in an `as` handler, whose own handlers all go on after it (issue 21):
# 3.13 gives each inner handler's exit its own copy of the outer handler's continuation (its
# POP_EXCEPT, the `as` name's clean-up and the code after the outer statement, up to the return),
# where 3.12 has one copy after the nested statement's clean-up block. 3.13 fell back ("exception
# handler shape"; p623's `reraise_in_inner_body`); the normaliser now shares the copies as 3.12
# does. Variants: two and three inner handlers, an inner handler with an `as` name of its own,
# a continuation that calls and fails, the outer exception re-raised inside, each path taken.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__) if "p644" in f.filename]


@poppy
def two_handlers(x, inner):
    try:
        return int(x)
    except ValueError as e:
        try:
            log(f"handling {e}")
            if inner == "key":
                raise KeyError(x)
            raise
        except ValueError as e2:
            out = f"same: {e2 is e}"
        except KeyError:
            out = "key"
    return out


@poppy
def three_handlers(x, inner):
    try:
        n = int(x)
        return llm(f"count: {n}")
    except ValueError as e:
        try:
            log(f"handling {e}")
            if inner == "zero":
                out = 1 // 0
            elif inner == "index":
                out = [][1]
            else:
                out = llm(f"yesno: {x}")
        except ZeroDivisionError:
            out = "zero"
        except IndexError:
            out = "index"
        except TypeError:
            out = "type"
    return out


@poppy
def named_inner(x, inner):
    try:
        return int(x)
    except ValueError as e:
        try:
            if inner:
                raise LookupError(inner)
            out = llm(f"yesno: {e}")
        except LookupError as le:
            out = f"lookup {le}"
        except ArithmeticError as ae:
            out = f"arith {ae}"
    return out


@poppy
def failing_continuation(x, inner):
    try:
        return int(x)
    except ValueError as e:
        try:
            if inner:
                raise KeyError(inner)
            out = x
        except KeyError as k:
            out = str(k)
        except OSError:
            out = "os"
    return llm(f"count: {out}") + str(10 // len(inner))


def attempt(f, *args):
    try:
        print(f.__name__, args, repr(f(*args)))
    except Exception as e:
        print(f.__name__, args, "caller caught", type(e).__name__, e, frames(e))


for x in ("12", "twelve"):
    for inner in ("", "key", "zero", "index", "other"):
        attempt(two_handlers, x, inner)
        attempt(three_handlers, x, inner)
        attempt(named_inner, x, inner)
        attempt(failing_continuation, x, inner)
