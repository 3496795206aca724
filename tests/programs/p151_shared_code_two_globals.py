# One code object, two globals dicts: poppy() applied (as a call, not a decorator) to a function
# and to a copy of it built with types.FunctionType over other globals. Each must read its own
# PREFIX, also after the module rebinds the global between calls. (The translation cache keeps
# one globals dict per code object, so alternating calls recompile: stats show 6 translations.)
import types

from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)
PREFIX = "main"


def ask(topic):
    return llm(f"{PREFIX}: {topic}")[:10] + "|" + PREFIX


f1 = poppy(ask)
g2 = dict(globals(), PREFIX="other")
f2 = poppy(types.FunctionType(ask.__code__, g2, "ask2"))
print(f1("x"), f2("x"), f1("y"), f2("y"))
PREFIX = "changed"
print(f1("z"), f2("z"))
