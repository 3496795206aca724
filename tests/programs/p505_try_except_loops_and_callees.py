# try/except compiled inside loops, with what could go wrong there: a retry `while` loop with a
# counter, continue/break from a handler and from the else clause, two statements one after the
# other in a loop body, calls after the raising point never made (I2: the unordered `llm` after
# a failing subscript is not called), a @poppy callee and an internal helper raising inside the
# body (a catching call is not inlined: the callee runs as CPython, its frames in the
# traceback), an else clause whose exception the same handlers do not catch, `as e` unbound
# after its handler, and locals as they were at the raising point.
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def parse_count(reply):
    n = int(reply)
    if n % 3 == 0:
        raise ValueError(f"multiple of three: {n}")
    return n


def check(x):
    if x == "bad":
        raise KeyError(x)
    return x.upper()


@poppy
def retry_until(limit):
    tries = 0
    while True:
        try:
            n = parse_count(llm(f"count: attempt {tries}"))
        except ValueError as e:
            log(f"attempt {tries} failed: {e}")
            tries += 1
            if tries >= limit:
                return None
            continue
        else:
            log(f"attempt {tries} ok")
            break
    return n, tries


@poppy
def loop_mix(items):
    seen = []
    for i, it in enumerate(items):
        try:
            v = check(it)
            w = {"A": 1, "B": 2}[v]
            llm(f"after lookup {it}")  # never called when the subscript raised
        except KeyError as e:
            seen.append(("key", str(e), i))
            if it == "stop":
                break
            continue
        else:
            if w == 2:
                seen.append(("else-continue", it))
                continue
        try:
            seen.append(lookup(it))
            x = 10 // (w - 1)
        except ZeroDivisionError:
            seen.append(("zero", it, w))
            x = None
        seen.append(("x", x))
    else:
        seen.append("no break")
    return seen


@poppy
def else_not_caught(k):
    try:
        v = llm(f"count: {k}")
    except ValueError:
        return "handler"
    else:
        return {"a": 1}[k]


@poppy
def unbound_after(k):
    try:
        return {"a": 1}[k]
    except KeyError as e:
        log(f"caught {e}")
    return e


@poppy
def locals_at_raise(ks):
    a = b = c = None
    try:
        a = llm(f"count: {ks[0]}")
        b = {"x": a}[ks[1]]
        c = llm(f"count: {ks[2]}")
    except KeyError:
        log(f"a={a} b={b} c={c}")
    return a, b, c


print(retry_until(4))
print(retry_until(1))
print(loop_mix(["a", "b", "bad", "c", "a", "stop", "a"]))
print(loop_mix(["a", "b"]))
for f, arg in ((else_not_caught, "zz"), (unbound_after, "q"), (locals_at_raise, ["p", "y", "r"]),
               (locals_at_raise, ["p", "x", "r"]), (write, "")):
    try:
        print(f(arg) if f is not write else f(arg, 1))
    except Exception as exc:
        print("escaped:", type(exc).__name__, exc)
