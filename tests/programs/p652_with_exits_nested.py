# A return, break or continue leaving several with statements at once (`with a, b:`, a with in a
# with, three deep; issue 16): each __exit__ is called once with (None, None, None), innermost
# first, after a returned value is computed; an exception an inner __exit__ raises there goes to
# the outer managers' __exit__ (which may suppress it: the statement then goes on after the outer
# with) and discards the pending exit; an exit leaving only the inner with of a loop in an outer
# one; loops of unordered calls around them.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p652", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


def show(e):
    return f"{type(e).__name__}: {e} at {frames(e)} context={e.__context__!r}"


def tag(x):
    print("value computed:", x)
    return x


class Section:
    def __init__(self, name, result=None, fail_exit=False):
        self.name, self.result, self.fail_exit = name, result, fail_exit

    def __enter__(self):
        log(f"enter {self.name}")
        return self.name

    def __exit__(self, t, e, tb):
        print("exit", self.name, t.__name__ if t else None, repr(e))
        log(f"exit {self.name} {t.__name__ if t else None}")
        if self.fail_exit:
            raise RuntimeError(f"exit of {self.name} failed")
        return self.result


@poppy
def pair_return(items, fail="", suppress=False):
    with Section("a", result=suppress) as a, Section("b", fail_exit=fail == "b") as b:
        for it in items:
            if it.startswith("x"):
                return tag(f"{a}{b} {llm(f'count: {it}')}")
            log(f"saw {it}")
    return "after"


@poppy
def nested_loop_exits(items):
    out = []
    for it in items:
        with Section(f"outer {it}"):
            with Section(f"inner {it}") as name:
                reply = llm(f"count: {it}")
                if it == "stop":
                    break
                if it == "skip":
                    continue
                out.append(f"{name}:{reply}")
            log(f"between {it}")
    else:
        out.append("no break")
    return out


@poppy
def three_deep(n):
    total = 0
    while n > 0:
        n -= 1
        with Section("one"), Section("two"):
            with Section("three"):
                if n == 3:
                    continue
                total += n
                if n == 1:
                    return tag(total)
    return -total


@poppy
def inner_only(items):
    out = []
    with Section("outer") as o:
        for it in items:
            with Section(f"inner {it}"):
                if it == "c":
                    continue
                if it == "b":
                    break
                out.append(it)
        out.append(o)
    return out


@poppy
def inner_exit_fails(items, suppress):
    out = []
    try:
        for it in items:
            with Section("outer", result=suppress), Section("inner", fail_exit=it == "bad"):
                if it in ("bad", "b"):
                    break
                out.append(it)
            out.append("after with")
    except RuntimeError as e:
        out.append(f"caught {show(e)}")
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


attempt(pair_return, ["a", "x1", "c"])
attempt(pair_return, ["a"])
attempt(pair_return, ["x2"], "b")
attempt(pair_return, ["x2"], "b", True)
attempt(nested_loop_exits, ["a", "skip", "bb", "stop", "dd"])
attempt(nested_loop_exits, [f"item{i}" for i in range(6)])
attempt(three_deep, 6)
attempt(three_deep, 0)
attempt(inner_only, ["a", "c", "d", "b", "e"])
for items in (["a", "b"], ["a", "bad", "c"]):
    attempt(inner_exit_fails, items, False)
    attempt(inner_exit_fails, items, True)
