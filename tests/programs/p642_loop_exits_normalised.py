# Loop exits whose 3.12/3.13 layout differs from 3.11's and is normalised into it (issue 21): a
# with statement ending with `return` or `break` in a `while` loop, followed by a return or by
# another with (3.12 lays the loop's test out after the function, reached only from the with's
# suppressed path, its exit jumping back to the code after the loop); `break` and `continue`
# through a finally clause in a loop (3.12 gives each exit its own copy of the clause); a
# comparison whose result's truth test raises, in a try/finally and a try/except in a loop (3.13
# converts it to a bool in the comparison itself, which its exception table covers, not the jump).
# Each runs with the manager suppressing or not, the clause raising or not, and the trace,
# results and tracebacks are CPython's.
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__) if "p642" in f.filename]


class Section:
    def __init__(self, name, suppress=False):
        self.name, self.suppress = name, suppress

    def __enter__(self):
        log(f"enter {self.name}")
        return self.name

    def __exit__(self, kind, value, tb):
        log(f"exit {self.name} {kind and kind.__name__}")
        return self.suppress


@poppy
def while_with_return(n, suppress):
    while n:
        with Section(f"w{n}", suppress):
            n -= 1
            return llm(f"count: {n}") + str(10 // n)
    return "drained"


@poppy
def while_with_break(n, suppress):
    got = []
    while n:
        with Section(f"b{n}", suppress):
            n -= 1
            got.append(llm(f"yesno: {n}") + str(10 // n))
            break
    return n, got


@poppy
def while_with_break_then_with(n, suppress):
    got = []
    while n:
        with Section(f"c{n}", suppress):
            n -= 1
            got.append(10 // n)
            break
    with Section("after", suppress):
        got.append(llm(f"count: {n}"))
        return got, 10 // n


@poppy
def break_continue_finally(items):
    out = []
    for it in items:
        try:
            reply = llm(f"count: {it}")
            if it == "stop":
                break
            if it == "skip":
                continue
            out.append(len(reply) // len(it))
        finally:
            log(f"fin {it} {len(out)} {10 // len(it)}")
    return out


class Odd:
    """Its comparison gives an object whose truth test raises for "bad"."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return Truth(self.v)


class Truth:
    def __init__(self, v):
        self.v = v

    def __bool__(self):
        if self.v == "bad":
            raise ValueError(f"no truth for {self.v}")
        return self.v == "b"


@poppy
def truth_in_finally_loop(items):
    for it in items:
        try:
            for c in [Odd(it)]:
                if c == "b":
                    break
            log(f"scanned {it} {llm(f'yesno: {it}')}")
        finally:
            log(f"left {it}")
    return "end"


@poppy
def truth_in_handler_loop(items):
    out = []
    for it in items:
        try:
            for c in [Odd(it)]:
                if c == "b":
                    break
            out.append(llm(f"yesno: {it}"))
        except ValueError as e:
            out.append(f"caught {e}")
    return out


def attempt(f, *args):
    try:
        print(f.__name__, repr(f(*args)))
    except Exception as e:
        print(f.__name__, "caller caught", type(e).__name__, e, frames(e))


for n in (0, 1, 3):
    for suppress in (False, True):
        attempt(while_with_return, n, suppress)
        attempt(while_with_break, n, suppress)
        attempt(while_with_break_then_with, n, suppress)
attempt(break_continue_finally, ["a", "skip", "bb", "stop", "dd"])
attempt(break_continue_finally, ["a", "", "bb"])
attempt(break_continue_finally, ["a", "stop", ""])
attempt(break_continue_finally, [f"item{i}" for i in range(6)])
attempt(truth_in_finally_loop, ["a", "b", "c"])
attempt(truth_in_finally_loop, ["a", "bad", "c"])
attempt(truth_in_handler_loop, ["a", "bad", "b", "c"])
