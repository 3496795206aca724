# Found running an unmodified Tree-of-Thoughts program (issue 15): a dict the run created itself
# is checked per key and filled in one branch, and the value — a constant in one branch, a model
# call's result in the other — is used after the `if` (`out.append(v)`). Per-key ordering lets a
# look-up of one key pass a pending store into another, and a pending call's result cannot be the
# dict (the dict never reached it). The value out of the `if` is first the component of an
# undecided `ite` (whose branch captured the dict, so it may be the dict); once the branch is
# chosen it is the call's result or the constant. The look-ups of the next keys must be judged
# again when the branch binds the value (and when the store's own early decision becomes
# possible), not when the model call returns: the calls for distinct keys overlap (cf. p491).
# difftest: min_in_flight=2
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
