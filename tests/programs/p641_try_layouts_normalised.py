# try statements whose 3.12/3.13 layout differs from 3.11's and is normalised into it: a
# try/except whose handlers all raise, nested in a finally's body and followed by more of it (3.12
# puts its handler chain after the function); a `break` ending a try body in a `for` loop whose
# code after the loop is a small `return y` (3.12 copies it into the body); a try/except with an
# else clause whose handler always raises; a try/finally whose finally body runs on every path;
# a try/except around a try/finally around a try/except whose handler may re-raise, in a loop (the
# outer statement's body ends with the finally's normal copy and the loop's jump back).
# Each runs on the paths that matter (no exception, caught, re-raised, raised in the finally
# body), with externals inside, and the trace, results and tracebacks are CPython's.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__) if "p641" in f.filename]


@poppy
def nested_raises(x):
    try:
        b = llm(f"prepare: {x}")
        try:
            a = int(x)
        except ValueError:
            log(f"bad {x}")
            raise
        c = len(b) + a
    finally:
        log(f"finally {x}")
    return c


@poppy
def first_good(xs):
    y = "none"
    for x in xs:
        try:
            y = llm(f"check: {x}") + str(int(x))
            break
        except ValueError:
            log(f"skip {x}")
    return y


@poppy
def else_after_raising_handler(x):
    out = []
    try:
        v = int(x)
    except ValueError as e:
        out.append(f"bad {e}")
        raise KeyError(x) from e
    else:
        out.append(llm(f"good: {v}"))
    out.append("after")
    return out


@poppy
def finally_in_loop(xs):
    total = 0
    for x in xs:
        try:
            total += int(llm(f"count: {x}") and x)
        finally:
            log(f"seen {x}")
        total += 1
    return total


@poppy
def raise_in_nested_handler(xs):
    out = []
    for x in xs:
        try:
            try:
                try:
                    v = int(llm(f"parse: {x}") and x)
                except ValueError:
                    if x == "bad":
                        raise
                    v = -1
                out.append(v)
            finally:
                log(f"finally {x}")
        except ValueError as e:
            out.append(f"caught {e}")
    log("done")
    return out


for x in ["3", "q"]:
    try:
        print(nested_raises(x))
    except Exception as e:
        print("caught", repr(e), frames(e))
print(first_good(["a", "b", "7", "8"]), first_good(["a"]), first_good([]))
for x in ["5", "z"]:
    try:
        print(else_after_raising_handler(x))
    except KeyError as e:
        print("caught", repr(e), repr(e.__cause__), frames(e))
print(finally_in_loop(["1", "2", "3"]))
print(raise_in_nested_handler(["1", "zz", "bad", "4"]))
try:
    print(finally_in_loop(["1", "2", "x"]))
except ValueError as e:
    print("caught", repr(e), frames(e))
