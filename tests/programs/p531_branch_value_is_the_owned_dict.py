# A value out of an if/else that is, on one path, the run's own dict (issue 15, next to p497):
# the walk of a later look-up judges the branch's value again once the branch is chosen. Where
# the chosen branch's value *is* the dict, storing it into the list is an escape: from then on
# the dict follows the global order, so the traced `log` of its contents sees exactly the
# entries CPython has at that point, and the stores of the later keys come after it.
from poppy_jit import poppy
from _ext import log, lookup, set_latency_scale

set_latency_scale(0.5)


@poppy
def values(keys):
    seen = {}
    out = []
    for k in keys:
        if k == "show":
            v = seen
        elif k in seen:
            v = "dup"
        else:
            v = lookup("value " + k)
            seen[k] = v
        out.append(v)
        if k == "show":
            log(repr(out[-1]))
    return [x if isinstance(x, str) else sorted(x) for x in out], seen


print(values(["a", "b", "a", "show", "c", "b", "d", "show"]))
