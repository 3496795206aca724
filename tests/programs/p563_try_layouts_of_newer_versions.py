# try/except shapes whose bytecode CPython 3.12 and 3.13 lay out differently from 3.11 (the
# normaliser puts them back into 3.11's layout, py312::handlers): the handler chain after the
# whole function with the handlers jumping back (a body ending in a `for` loop, whose exhaustion
# must still reach the code after the statement, not the handler), a small `return` after the
# statement copied into each handler (after POP_EXCEPT: the `as` name is unbound there and an
# exception it raises has no context), a handler's continuation copied into a handler nested in
# it (3.13), a comprehension in a try body and in a handler (its restoring handler inside the
# try), `continue` at the end of an `if` in a loop in a try body (3.13 leaves its jump outside
# the body's protection), a statement in a loop whose handlers continue or break, and one whose
# body always leaves the loop (return, break).
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)
TABLE = {"a": 1, "b": 2, "c": "x", "stop": 3}


@poppy
def loop_ends_body(xs):
    out = []
    try:
        for x in xs:
            out.append(lookup(x) + str(TABLE[x]))
    except KeyError as e:
        out.append(f"missing {e}")
    out.append(llm(f"after {len(out)}"))
    return out


@poppy
def copied_return(k):
    e = "before"
    try:
        v = {"a": 1}[k]
    except KeyError as e:
        log(f"handling {e!r}")
    return e


@poppy
def copied_return_raises(k, d):
    try:
        v = llm(f"count: {k}")
    except ValueError:
        v = 0
    return 10 // d


@poppy
def nested_continuation(k):
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
def comprehensions(xs, n):
    try:
        total = len([q for q in xs if n > q])
    except TypeError as e:
        total = len([str(q) for q in xs]) + 100
    return total, llm(f"total {total}")


@poppy
def continue_in_body(xs):
    seen = []
    try:
        for x in xs:
            if x % 2:
                continue
            seen.append(llm(f"even {x}"))
    except ZeroDivisionError as e:
        seen.append(str(e))
    w = 0
    return seen, w


class Truthless:
    def __bool__(self):
        raise ZeroDivisionError("no truth")


@poppy
def truth_test_raises(xs):
    seen = []
    try:
        for x in xs:
            if x:
                continue
            seen.append(x)
    except ZeroDivisionError as e:
        seen.append(f"caught {e}")
    return seen


@poppy
def handlers_continue_and_break(items):
    out = []
    for it in items:
        try:
            v = int(TABLE[it])
        except KeyError as e:
            log(f"skip {e}")
            if it == "nope" and out:
                break
            continue
        except ValueError:
            v = -1
        out.append(llm(f"got {v}"))
    return out


@poppy
def body_always_leaves(xs, k):
    got = []
    for x in xs:
        got.append(llm(f"try {x}"))
        try:
            return got, {"a": 1}[k]
        except KeyError as e:
            got.append(f"no {e}")
    for x in xs:
        try:
            n = int(x)
            break
        except ValueError as e:
            got.append(f"bad {x}")
    return got


def show(fn, *args):
    try:
        print(fn.__name__, "->", fn(*args))
    except BaseException as exc:
        print(fn.__name__, "raised", type(exc).__name__, exc,
              "context:", type(exc.__context__).__name__)


show(loop_ends_body, ["a", "b"])
show(loop_ends_body, ["a", "nope", "b"])
show(loop_ends_body, [])
show(copied_return, "a")
show(copied_return, "b")
show(copied_return_raises, "1", 2)
show(copied_return_raises, "x", 0)
show(copied_return_raises, "fail: 1", 0)
show(nested_continuation, "k")
show(comprehensions, [1, 2, 3], 2)
show(comprehensions, [1, "b", 3], 2)
show(continue_in_body, [1, 2, 3, 4])
show(truth_test_raises, [0, 0])
show(truth_test_raises, [0, Truthless(), 0])
show(handlers_continue_and_break, ["a", "b", "nope", "c", "a"])
show(handlers_continue_and_break, ["a", "nope", "b"])
show(handlers_continue_and_break, ["a", "stop", "b"])
show(body_always_leaves, ["1", "2"], "a")
show(body_always_leaves, ["x", "2", "3"], "b")
