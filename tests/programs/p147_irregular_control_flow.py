# Irregular control flow: a for loop with continue, break and return whose body holds a
# while/else with its own break and continue (and a break from the while's else), a deep if/elif
# chain with nested ifs and an early return, and the for/else/continue/break idiom for leaving
# two nested loops at once. (Every loop's continuation depends on the previous reply: no
# parallelism expected.)
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def many_exits(items, limit):
    n = 0
    for it in items:
        if it == "skip":
            continue
        if it == "stop":
            break
        if it == "ret":
            return "returned", n
        while n < limit:
            n += 1
            r = llm(f"yesno: {it} {n}")
            if r == "yes":
                break
            if n % 3 == 0:
                continue
            log(f"{it} {n}")
        else:
            log("limit hit")
            break
    else:
        return "exhausted", n
    return "broke", n


@poppy
def if_chain(x):
    r = llm(f"count: {x}")
    k = int(r)
    if k < 3:
        a = "tiny"
    elif k < 6:
        a = "small"
        if k == 4:
            a += "!"
    elif k < 10:
        if k % 2:
            a = "odd"
        else:
            a = "even"
            if k == 8:
                return "eight"
    else:
        a = "big"
    return a


@poppy
def nested_try_like(items):
    found = None
    for i, it in enumerate(items):
        for j in range(3):
            if lookup(f"{it}{j}").endswith("7>"):
                found = (i, j)
                break
        else:
            continue
        break
    return found


print(many_exits(["a", "skip", "b", "c"], 4))
print(many_exits(["a", "ret"], 2))
print(many_exits(["x", "stop", "y"], 9))
print(many_exits([], 3))
for x in "abcdefghij":
    print(if_chain(x), end=" ")
print()
print(nested_try_like(["p", "q", "r", "s", "t", "u"]))
