# The iterations of a loop in a try or with body run speculatively (issue 16): an iteration's
# unordered calls start without waiting for the iterations before it to be known not to have
# raised, while its ordered effects — log and write (sequential), read (readonly), appends and
# stores into the run's own list and dict, a caller's list, an inlined @poppy callee's calls —
# wait for that and never happen after an iteration that raised. When an earlier iteration
# raises and the exception is suppressed by a with or caught by a try, nothing of the discarded
# iterations is visible: lists, dicts and the store hold what CPython's do, the handler sees the
# locals of the raising point, and the code after the statement goes on from there. (The
# discarded iterations' unordered lookups ran; the run counts them in `speculative_calls`.)
import contextlib

from poppy_jit import poppy
from _ext import log, lookup, read, set_latency_scale, write

set_latency_scale(0.2)


class Boom(Exception):
    pass


@poppy
def suppressed(items, sink):
    out = []
    seen = {}
    last = None
    with contextlib.suppress(Boom, KeyError):
        for i, it in enumerate(items):
            r = lookup(it)
            last = it
            out.append(r)
            seen[it] = len(r)
            sink.append(i)
            log(f"{i} {it}")
            if it.startswith("x"):
                raise Boom(it)
            write(it, r)
            if it == "k":
                seen["missing"]
    log(f"after {last} {len(out)}")
    return out, seen, last, read("a"), read("b"), read("k"), read("z")


@poppy
def helper(k):
    v = lookup(k)
    if k == "bad":
        raise ValueError(k)
    return v


@poppy
def caught(items):
    done = []
    total = 0
    try:
        for it in items:
            if it == "skip":
                continue
            v = helper(it)
            total += len(v)
            done.append(it)
            for j in range(2):
                done.append(f"{it}{j}")
    except ValueError as e:
        log(f"caught {e} after {done} total {total}")
    return done, total


@poppy
def nested_with(rows):
    acc = []
    for row in rows:
        with contextlib.suppress(ZeroDivisionError):
            for x in row:
                acc.append(100 // x)
                log(x)
        acc.append("|")
    return acc


@poppy
def retried(items):
    labels = {}
    try:
        for it in items:
            try:
                labels[it] = int(lookup(it)[-3:-1])
            except ValueError:
                labels[it] = -1
            if labels[it] > 90:
                raise Boom(it)
    except Boom as e:
        log(f"stopped at {e}: {sorted(labels.items())}")
    return labels


@poppy
def late_raise(items):
    # Iteration k+1's append has everything it needs at once, while iteration k raises only
    # after its slow lookup: the append must wait for that (per-object ordering's walk back
    # along program order never looks through an iteration's gate), and never run after it.
    out = []
    seen = set()
    with contextlib.suppress(Boom):
        for it in items:
            out.append(it)
            seen.add(it)
            r = lookup(it)
            if it.startswith("x"):
                raise Boom(r)
    return out, sorted(seen)


print(late_raise(["a", "x", "b", "c"]))
print(late_raise(["x", "b"]))
sink = []
print(suppressed(["a", "b", "c"], sink), sink)
sink = []
print(suppressed(["a", "x1", "c", "d", "e"], sink), sink)
sink = []
print(suppressed(["z", "k", "q", "r"], sink), sink)
print(caught(["p", "skip", "q", "bad", "s", "t"]))
print(caught(["p", "q"]))
print(nested_with([[1, 2], [5, 0, 4, 10], [0], [25]]))
print(retried(["a", "b", "c", "d", "e", "f", "g", "h"]))
