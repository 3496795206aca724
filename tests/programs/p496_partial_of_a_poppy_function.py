# A functools.partial of a @poppy function (or of the program's own function, compiled
# transitively) is inlined like the function itself (issue 15: `gpt = partial(gpt, model=...)`
# rebinds the model helper at run time), binding as CPython does: the partial's arguments
# first, its keywords unless the call gives the same ones, keyword-only parameters and defaults.
# A call CPython rejects (a parameter given twice) is not inlined: CPython raises its TypeError.
# difftest: min_in_flight=3
from functools import partial

from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


@poppy
def ask(prompt, style="plain", *, suffix=""):
    return lookup(f"{style}:{prompt}{suffix}")


@poppy
def fan(items):
    loud = partial(ask, style="loud")
    tail = partial(ask, suffix="!")
    fixed = partial(ask, "fixed")
    out = []
    for x in items:
        out.append(loud(x))
        out.append(tail(x, "quiet"))
        out.append(loud(x, style="soft"))
    out.append(fixed(style="b"))
    out.append(fixed(suffix="?"))
    return out


@poppy
def twice(x):
    return partial(ask, style="x")(x, "y")


print(fan(["a", "b", "c"]))
try:
    twice("p")
except TypeError as e:
    print("TypeError:", e)
