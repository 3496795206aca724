# Known gap found running an unmodified Tree-of-Thoughts program (issue 15): a dict the run
# created itself is checked per key and filled in one branch, and the value — a constant in one
# branch, a model call's result in the other — is used after the `if` (`values.append(value)`).
# Per-key ordering lets a look-up of one key pass a pending store into another, and a pending
# call's result cannot be the dict (the dict never reached it); but a value coming out of an
# if/else has no such producer to look at, so the append is taken as a possible escape of the
# dict, every look-up waits for it, and the calls for distinct keys run one at a time. Without
# the use after the `if`, they overlap (p491).
# difftest: min_in_flight=2
# difftest: xfail=1
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


@poppy
def values(keys):
    seen = {}
    out = []
    for k in keys:
        if k in seen:
            v = "dup"
        else:
            v = lookup("value " + k)
            seen[k] = v
        out.append(v)
    return out, seen


print(values(["a", "b", "a", "c", "d"]))
