# Nested comprehensions, conditions, set and dict comprehensions, no leaking of loop variables.
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import llm, log, read


@poppy
def grid(rows, cols):
    x = "outer x"
    table = [[llm(f"{r}x{c}") for c in cols] for r in rows]
    pairs = [(r, c) for r in rows for c in cols if r != c]
    sizes = {r: len(llm(f"size {r}")) for r in rows}
    initials = {w[0] for line in table for w in line}
    log(f"{x} {len(pairs)}")
    limit = read("limit")
    kept = [p for p in pairs if len(p[0]) > limit]
    print(sorted(initials), sorted(sizes.items()), kept)
    return table, x


t, x = grid(("ab", "cdef", "g"), ("ab", "h"))
print(t, x)
