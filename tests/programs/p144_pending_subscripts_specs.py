# Subscripts, slices and format specs whose keys/bounds/widths are pending LLM replies,
# augmented assignment on an attribute of an object returned by a helper, multiple assignment
# targets, a chained comparison around a reply, a grid filled through row aliases, a while-True
# retry nested in a for/else that returns from its else, and a compound while condition.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, note, set_latency_scale

set_latency_scale(0.1)


class Obj:
    def __init__(self):
        self.x = 0


HOLDER = Obj()


def get_obj():
    note("get_obj")
    return HOLDER


@poppy
def pending_subscripts(items):
    counts = {"yes": 0, "no": 0}
    for it in items:
        counts[llm(f"yesno: {it}")] += 1
        get_obj().x += len(it)
    text = llm("about slicing")
    cut = text[:int(llm("count: cut")) % 7 + 1]
    width = int(llm("count: width")) % 9 + 3
    return counts, HOLDER.x, cut, f"[{cut:>{width}}]", f"[{cut:^{width}.2}]"


@poppy
def multi_target(pair):
    a, b = c, d = pair
    x = y = llm(f"about {a}")[:4]
    mid = 0 < int(llm(f"count: {b}")) < 10
    return a, b, c, d, x, y, mid


@poppy
def grid_fill(n):
    grid = []
    for i in range(n):
        grid.append([None] * n)
    for i in range(n):
        row = grid[i]
        for j in range(n):
            if (i + j) % 2:
                continue
            row[j] = lookup(f"g{i}{j}")[1:3]
    return grid


@poppy
def for_else_while(items):
    for it in items:
        k = 0
        while True:
            k += 1
            r = llm(f"yesno: {it} {k}")
            if r == "yes" or k >= 3:
                break
        if k == 1:
            log(f"{it} quick")
            break
    else:
        log("none quick")
        return "slow", late_helper(items[-1])
    return "quick", it


@poppy
def complex_while(limit):
    a, b = 0, limit
    out = []
    while a < b and (a % 3 != 2 or len(out) < 2):
        out.append(llm(f"count: cw {a}"))
        a += 1
    return out


def late_helper(x):
    return x.upper()


print(pending_subscripts(["p", "qq", "rrr"]))
print(multi_target(("m", "n")))
print(grid_fill(3))
print(for_else_while(["u", "v", "w"]), for_else_while(["z"]))
print(complex_while(6))
