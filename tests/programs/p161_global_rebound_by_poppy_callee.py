# A @poppy callee (inlined into the caller's run) that rebinds a global with `global X; X = ...`:
# the caller reads X after the call in program order.
from poppy_jit import poppy
from _ext import log

STATE = "idle"
SEEN = []


@poppy
def advance(to):
    global STATE
    log(f"{STATE} -> {to}")
    STATE = to


@poppy
def run():
    out = [STATE]
    for step in ("loading", "running", "done"):
        advance(step)
        out.append(STATE)
    return out


print(run())
print(STATE)
