# try/finally whose body leaves by return, break or continue (issue 16): the finally clause runs
# after the exit's value is computed and before the exit takes effect (its calls in CPython's
# order), sees the locals as they were at the exit (a variable the body did not bind yet is
# unbound there: UnboundLocalError from the clause), cannot change a returned value already
# computed, and an exception it raises replaces the pending exit (the return or break is
# discarded: caught by an enclosing handler, or reaching the caller); an exception of the body
# runs the clause and propagates; loops of unordered calls with such a statement in their body.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p634", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r}"


@poppy
def loop_exits(items):
    out = []
    for it in items:
        try:
            reply = llm(f"count: {it}")
            if it.startswith("stop"):
                break
            if it.startswith("skip"):
                continue
            out.append(int(reply) // len(it))
        finally:
            log(f"done {it} {len(out)}")
    return out


@poppy
def returns(x, d=1):
    y = "unset"
    try:
        if x > 2:
            return f"big {llm(f'count: {x}')}"
        if x == 2:
            return None
        y = 10 // x
    finally:
        log(f"finally {x} {y}")
        d = 1 // d
    return y, d


@poppy
def returned_value_kept(x):
    try:
        value = [x]
        return value[0] * 2
    finally:
        value = None
        log(f"value reset {value}")


@poppy
def kept_if_returned(x):
    value = x
    try:
        if x > 1:
            return value
        value = 0
    finally:
        value = None
        log(f"value reset {value}")
    return value


@poppy
def nested_loop_return(items):
    for it in items:
        try:
            for c in it:
                if c == "r":
                    return c + it
                if c == "c":
                    continue
                if c == "b":
                    break
            log(f"after inner {it}")
        finally:
            log(f"fin {it}")
    return "end"


@poppy
def unbound_at_exit(x):
    try:
        if x:
            return "early"
        z = 5
    finally:
        log(f"z is {z}")
    return z


@poppy
def return_in_loop(items):
    for it in items:
        try:
            if it == "x":
                return llm(f"yesno: {it}")
            if it == "n":
                return None
            for c in it:
                if c == "b":
                    break
            log(f"scanned {it}")
        finally:
            log(f"left {it}")
    return "end"


@poppy
def discarded_exit(items):
    out = []
    try:
        for it in items:
            try:
                if it in ("b", ""):
                    break
                out.append(it)
            finally:
                out.append(10 // len(it))
    except ZeroDivisionError as e:
        out.append(f"caught {e}")
    return out


@poppy
def nested_finally(items):
    out = []
    for it in items:
        try:
            try:
                if it == "b":
                    break
                out.append(llm(f"count: {it}"))
            finally:
                log(f"inner {it}")
        finally:
            log(f"outer {it}")
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


attempt(loop_exits, ["a", "skip1", "bb", "ccc", "stop", "dd"])
attempt(loop_exits, ["a", "", "bb"])
attempt(loop_exits, [f"item{i}" for i in range(8)])
for x in (0, 1, 2, 3):
    attempt(returns, x)
    attempt(returns, x, 0)
attempt(returned_value_kept, 4)
for x in (1, 5):
    attempt(kept_if_returned, x)
attempt(nested_loop_return, ["abc", "xcy", "qrs"])
attempt(nested_loop_return, ["a"])
for x in (0, 1):
    attempt(unbound_at_exit, x)
attempt(return_in_loop, ["a", "ab", "x", "c"])
attempt(return_in_loop, ["a", "n"])
attempt(return_in_loop, ["a", "cb"])
attempt(discarded_exit, ["a", "bb", "b", "c"])
attempt(discarded_exit, ["a", "", "b"])
attempt(discarded_exit, ["a", "b"])
attempt(nested_finally, ["a", "c", "b", "d"])
