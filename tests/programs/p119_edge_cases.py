# Edge cases around control flow and data: empty inputs, implicit None returns, a loop variable
# used after its loop, return from inside nested loops inside a while, `del`, `assert`, an internal
# `raise` caught by the caller's code path, `global` stores (not supported: fallback), iteration
# over strings, dicts, zips and reversed ranges.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)
COUNTER = 0


@poppy
def empty_inputs(items):
    out = []
    for it in items:
        out.append(llm(it))
    total = 0
    while total < len(items):
        total += 1
    return out, total


@poppy
def implicit_none(flag):
    if flag:
        log("flag set")


@poppy
def loop_var_after(items):
    last = None
    for last in items:
        lookup(last)
    for i in range(3):
        pass
    return last, i


@poppy
def nested_return(grid, target):
    row = 0
    while row < len(grid):
        for col, cell in enumerate(grid[row]):
            if int(llm(f"count: {cell}")) == target:
                return row, col
        row += 1
    return None


@poppy
def uses_del(keys):
    d = {}
    for k in keys:
        d[k] = lookup(k)
    del d[keys[0]]
    x = d
    del x
    return sorted(d)


@poppy
def uses_assert(n):
    reply = llm(f"count: {n}")
    assert int(reply) >= 0, "negative count"
    return int(reply) + 1


@poppy
def internal_raise(x):
    if x < 0:
        raise ValueError(f"bad {x}")
    return llm(f"count: {x}")


@poppy
def global_store(n):
    global COUNTER
    for i in range(n):
        COUNTER += len(llm(f"tick {i}"))
    return COUNTER


@poppy
def iterate_kinds(text, mapping):
    out = []
    for ch in text:
        out.append(ch.upper())
    for k in mapping:
        out.append(lookup(k))
    for a, b in zip(text, sorted(mapping)):
        out.append(a + b)
    for i in reversed(range(2)):
        out.append(str(i))
    return "".join(out)


@poppy
def none_handling(values):
    out = []
    for v in values:
        reply = llm(f"yesno: {v}") if v is not None else None
        out.append(reply or "missing")
    return out


@poppy
def early_exit_guard(items, limit):
    if not items:
        return "nothing to do"
    if len(items) > limit:
        log("too many")
        return f"skipped {len(items)}"
    return [llm(f"do {items[0]}")] + [lookup(items[-1])]


print(empty_inputs([]))
print(empty_inputs(["a"]))
print(implicit_none(True), implicit_none(False))
print(loop_var_after(["p", "q"]))
print(nested_return([["a", "b"], ["c", "d"], ["e"]], 3))
print(uses_del(["k1", "k2", "k3"]))
print(uses_assert(4))
print(internal_raise(2))
print(global_store(2), COUNTER)
print(iterate_kinds("ab", {"x": 1, "y": 2}))
print(none_handling(["a", None, "b"]))
print(early_exit_guard([], 2), early_exit_guard(["a", "b", "c"], 2), early_exit_guard(["a"], 2))
