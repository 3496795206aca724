# Readonly blocking calls overlap in a comprehension (issue 15 item 5: "readonly with readonly").
# `lookup` is @unordered(blocking=True); given a list (inside its key) it is a read of that list.
# A comprehension appends each element with `_list_extend(lst, (x,))`: building the tuple and
# the append to the comprehension's own list are ordered on that list only, so they must not hold
# up the next element's call — but a call that writes what the reads see still orders them (each
# lookup after a `remember` sees its entry: the key's repr shows the list as the call saw it), and
# the comprehension's list holds the values in order.
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


def remember(history, x):
    """Unannotated, so sequential: a write of the list the lookups read."""
    history.append(x)
    return len(history)


@poppy
def fan(history, qs):
    return [lookup((q, history)) for q in qs]


@poppy
def interleaved(history, qs):
    # each lookup must see the entry remembered just before it
    return [(remember(history, q), lookup((q, history))) for q in qs]


@poppy
def owned_then_appended(qs):
    h = ["start"]
    first = [lookup((q, h)) for q in qs]
    h.append("more")
    second = [lookup((q, h)) for q in qs]
    return first, second, h


@poppy
def nested(history, qs):
    rows = [[lookup((q, history)), q] for q in qs]
    rows.append(rows[0])
    return rows, len(rows)


@poppy
def stores_itself(qs):
    out = []
    refs = [out for q in qs]
    out.append(lookup(("z", out)))
    return len(refs), refs[0] is out, out


@poppy
def then_mutated(history, qs):
    seen = [lookup((q, history)) for q in qs]
    remember(history, "last")
    return seen, lookup(("after", history))


def main():
    history = ["h0"]
    print(fan(history, ["a", "b", "c", "d", "e"]))
    print(interleaved(history, ["x", "y", "z"]))
    print(history)
    print(owned_then_appended(["p", "q", "r", "s"]))
    print(nested(history, ["m", "n", "o"]))
    print(stores_itself(["u", "v"]))
    print(then_mutated(history, ["i", "j", "k"]))


main()
