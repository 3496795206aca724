# Module attributes that are functions, classes or modules (`json.loads`, `tools.fmt`) are read
# out of program order under a guard, as globals are: the read does not wait for the sequential
# calls before it. A sequential call that rebinds such an attribute before the read in program
# order is seen by the guard when it returns: the run fails with a RuntimeError naming the
# attribute (never a silently stale function), and from then on the attribute is read in program
# order, so the next run gives CPython's result. A module attribute holding data (`tools.MODE`) is
# always read in program order. The program prints the same lines either way.
import os
import sys
import types

from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

tools = types.ModuleType("tools")
tools.MODE = "plain"
exec("def fmt(x):\n    return 'fmt:' + x\n", tools.__dict__)
sys.modules["tools"] = tools


def loud(x):
    return "LOUD:" + x.upper()


@sequential
def set_mode(m):
    tools.MODE = m


@sequential
def swap_fmt(f):
    tools.fmt = f


@poppy
def data_attribute(items):
    out = []
    for i, it in enumerate(items):
        if i == 1:
            set_mode("strict")
        out.append(f"{tools.MODE}:{llm(it)}")
    return out


@poppy
def function_attribute(items):
    out = []
    for it in items:
        log(f"item {it}")
        out.append(tools.fmt(llm(it)))
    swap_fmt(loud)
    out.append(tools.fmt("after"))
    return out


print(data_attribute(["a", "b", "c"]))
poppy_on = os.environ.get("PYTHONPOPPY") == "1"
original = tools.fmt
try:
    first = function_attribute(["x", "y"])
except RuntimeError as e:
    assert poppy_on, e
    assert "module attribute 'tools.fmt' was rebound by " in str(e), e
    assert "swap_fmt" in str(e), e
    first = None
print("first run:", "ok" if first is None or first[-1] == "LOUD:AFTER" else first)
tools.fmt = original
print(function_attribute(["z", "w"]))
