# Per-key ordering of an owned dict (issue 15 item 5): `if k in cache: … cache[k] = llm(k)` does
# not chain distinct keys — operations on one key are ordered against the same key and against
# operations on the whole dict (len, iteration, keys(), clear, an escape), not against other keys.
# What must stay visible: a key written then read (the read sees the write: a repeated key is a
# cache hit, not a second call), a whole-dict operation between keyed ones (len and the items in
# insertion order as CPython has them), a helper (compiled or not) that mutates the dict, and
# `setdefault`/`pop`/`get` on keys written by earlier iterations.
# difftest: min_in_flight=4
from poppy_jit import poppy, unordered
from _ext import _traced, lookup, log, note, set_latency_scale

set_latency_scale(0.5)


@poppy
def cached(cache, key):
    if key in cache:
        return cache[key]
    value = lookup(key)
    cache[key] = value
    return value


@poppy
def fill(keys):
    cache = {}
    out = []
    for k in keys:
        out.append(cached(cache, k))
    return out, cache


@poppy
def fill_get(keys):
    cache = {}
    for k in keys:
        v = cache.get(k)
        if v is None:
            v = lookup(k)
            cache[k] = v
    return cache


@poppy
def with_len(keys):
    cache = {}
    sizes = []
    for k in keys:
        if k not in cache:
            cache[k] = lookup(k)
        sizes.append(len(cache))
    return sizes, list(cache)


@poppy
def setdefault_pop(keys):
    seen = {}
    for k in keys:
        seen.setdefault(k, lookup(k))
    first = seen.pop(keys[0], None)
    again = seen.pop(keys[0], "gone")
    return first, again, seen


def plain_helper(d, k):
    d[k] = d.get(k, "") + "!"


@poppy
def helper_mutates(keys):
    cache = {}
    for k in keys:
        cache[k] = lookup(k)
    plain_helper(cache, keys[0])
    log(f"after helper {cache[keys[0]]}")
    cache[keys[1]] = lookup("late")
    return cache


@poppy
def whole_between(keys):
    counts = {}
    for k in keys:
        counts[k] = lookup(k)
        note(f"{k}: {sorted(counts)}")
        counts.clear() if k == "reset" else None
    return counts


@poppy
def sets(keys):
    s = set()
    hits = []
    for k in keys:
        if k in s:
            hits.append(k)
        else:
            s.add(k)
            hits.append(lookup(k))
    s.discard(keys[0])
    return hits, sorted(s)


def main():
    keys = ["a", "b", "a", "c", "d", "b", "e", "f", "a"]
    print(fill(keys))
    print(fill_get(keys))
    print(with_len(keys))
    print(setdefault_pop(keys))
    print(helper_mutates(["p", "q", "r"]))
    print(whole_between(["x", "y", "reset", "z"]))
    print(sets(keys))


main()
