# with statements whose body leaves by return, break or continue (issue 16): the manager's
# __exit__ is called once, with (None, None, None), after the returned value is computed and
# before the exit takes effect; a true result then suppresses nothing; an exception __exit__
# raises replaces the pending return or break (caught by an enclosing handler, or reaching the
# caller); a break or continue of a loop inside the body is no exit of it; a for loop's else
# clause runs after continues but not after a break through the with; an exception of the body
# still goes to __exit__ (suppressed or not) in the same statement; nested withs in loops.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p650", "_ext")


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
        self.exits = 0

    def __enter__(self):
        log(f"enter {self.name}")
        return self.name

    def __exit__(self, t, e, tb):
        self.exits += 1
        print("exit", self.name, t.__name__ if t else None, repr(e), tb is not None, "calls:", self.exits)
        log(f"exit {self.name} {t.__name__ if t else None}")
        if self.fail_exit:
            raise RuntimeError(f"exit of {self.name} failed")
        return self.result


@poppy
def return_value(items):
    with Section("ret"):
        for it in items:
            if it.startswith("x"):
                return tag(llm(f"count: {it}"))
            log(f"saw {it}")
    return "none"


@poppy
def return_constants(items):
    with Section("consts"):
        if not items:
            return 0
        if items[0] == "a":
            return None
        log("neither")
        return 2


@poppy
def loop_exits(items):
    out = []
    for it in items:
        with Section(f"s{len(out)}") as name:
            reply = llm(f"count: {it}")
            if it.startswith("stop"):
                break
            if it.startswith("skip"):
                continue
            out.append(f"{name}:{reply}")
        log(f"after {it}")
    else:
        log("no break")
    return out


@poppy
def loops_inside(items):
    with Section("outer") as n:
        for it in items:
            for c in it:
                if c == "b":
                    break
                if c == "c":
                    continue
                log(f"{n} {c}")
            if it == "r":
                return tag("r")
    return "end"


@poppy
def exit_raises(items):
    out = []
    try:
        for it in items:
            with Section(it, fail_exit=it.startswith("bad")):
                if it in ("bad", "b"):
                    break
                if it in ("ret", "badret"):
                    return tag(out)
                if it == "badc":
                    continue
                out.append(it)
    except RuntimeError as e:
        out.append(f"caught {show(e)}")
    return out


@poppy
def true_result(x):
    with Section("t", result=True):
        if x:
            return tag(llm(f"yesno: {x}"))
        log(f"dividing {1 // x}")
    return "suppressed"


@poppy
def nested_in_loop(items):
    out = []
    with Section("outer"):
        for it in items:
            with Section(f"inner {it}", result=it == "z"):
                if it == "z":
                    raise ValueError(it)
                if it == "c":
                    continue
                if it == "q":
                    break
                out.append(llm(f"count: {it}"))
            log(f"after inner {it}")
    return out


@poppy
def while_break(n):
    while True:
        with Section(f"w{n}"):
            n -= 1
            if n <= 0:
                break
    return n


@poppy
def exit_reaches_caller(x):
    with Section("u", fail_exit=True):
        if x:
            return tag(x)
        log("no return")
    return 0


@poppy
def suppressed_in_loop(items):
    out = []
    for it in items:
        with Section(it, result=it != "raise"):
            if it == "s":
                continue
            out.append(10 // len(it))
            if it == "last":
                break
    else:
        out.append("else")
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", show(e))


attempt(return_value, ["a", "b", "x1", "c"])
attempt(return_value, ["a"])
for items in ([], ["a"], ["b"]):
    attempt(return_constants, items)
attempt(loop_exits, ["a", "skip1", "bb", "stop", "dd"])
attempt(loop_exits, ["a", "skip", "cc"])
attempt(loop_exits, [f"item{i}" for i in range(6)])
attempt(loops_inside, ["abc", "cab", "r", "z"])
attempt(loops_inside, ["xc"])
for items in (["a", "b", "c"], ["a", "ret"], ["a", "bad"], ["a", "badret"], ["badc", "x"]):
    attempt(exit_raises, items)
for x in (0, 1):
    attempt(true_result, x)
attempt(nested_in_loop, ["a", "c", "z", "b", "q", "d"])
attempt(nested_in_loop, ["a", "z"])
attempt(while_break, 3)
for x in (0, 5):
    attempt(exit_reaches_caller, x)
attempt(suppressed_in_loop, ["ab", "s", "", "last", "x"])
attempt(suppressed_in_loop, ["ab", "", "cd"])
