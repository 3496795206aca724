# More Python in orchestration code: the walrus operator in a while condition, a `match`
# statement dispatching commands (fallback), deep recursion, user objects whose __format__ calls
# an external, sorted() with an external as key, a long pure loop, print with sep/end, a global
# cache dict shared by calls, @poppy functions as callbacks of a helper and as values of a tool
# dict, a callee mutating the caller's list, a generator argument, while/else with
# continue/break, and a recursive search returning from inside a loop.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, note, set_latency_scale

set_latency_scale(0.1)
CACHE = {}


def apply(fn, x):
    return fn(x)


class Loud:
    def __init__(self, x):
        self.x = x

    def __format__(self, spec):
        note(f"format {self.x} {spec}")
        return format(self.x, spec)


@poppy
def walrus(q):
    n = 0
    while (r := llm(f"yesno: {q} {n}")) != "yes" and n < 5:
        n += 1
    return n, r


@poppy
def matcher(cmds):
    out = []
    for c in cmds:
        match c.split():
            case ["search", term]:
                out.append(lookup(term))
            case ["ask", *words]:
                out.append(llm(" ".join(words)))
            case _:
                log(f"unknown {c}")
    return out


@poppy
def deep(n):
    if n == 0:
        return 0
    return 1 + deep(n - 1)


@poppy
def user_dunders(items):
    out = []
    for it in items:
        obj = Loud(it)
        out.append(f"{obj} {obj:>5} " + llm(f"about {it}"))
    return out


@poppy
def sort_with_external_key(items):
    return sorted(items, key=lookup)


@poppy
def long_loop(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


@poppy
def print_kwargs(a):
    print(a, llm(a), sep=" | ", end=" <\n")
    print("x", "y", sep="")


@poppy
def cached_llm(k):
    if k in CACHE:
        return CACHE[k]
    v = llm(f"about {k}")
    CACHE[k] = v
    return v


@poppy
def use_cache(keys):
    out = []
    for k in keys:
        out.append(cached_llm(k)[:10])
    return out, len(CACHE)


@poppy
def double(x):
    return llm(f"double {x}")


@poppy
def callback_via_helper(xs):
    out = []
    for x in xs:
        out.append(apply(double, x))
    return out


TOOLS = {"d": double, "c": cached_llm}


@poppy
def poppy_tools(calls):
    out = []
    for name, arg in calls:
        out.append(TOOLS[name](arg)[:12])
    return out


@poppy
def callee_mutates(lst, n):
    for i in range(n):
        lst.append(lookup(f"m{i}"))
    return len(lst)


@poppy
def caller_reads(n):
    lst = []
    a = callee_mutates(lst, n)
    b = len(lst)
    lst.append("x")
    c = callee_mutates(lst, 1)
    return a, b, c, lst


@poppy
def gen_arg(xs):
    total = ""
    for x in xs:
        total += llm(f"g {x}")[:4]
    return total


@poppy
def while_else_combo(n):
    i = 0
    out = []
    while i < n:
        i += 1
        r = llm(f"yesno: w {i}")
        if r == "no":
            continue
        out.append(i)
        if len(out) == 2:
            break
    else:
        out.append("exhausted")
    return out


@poppy
def find_path(node, target, depth):
    if node == target:
        return [node]
    if depth == 0:
        return None
    for child in (node + "0", node + "1"):
        p = find_path(child, target, depth - 1)
        if p is not None:
            return [node] + p
    return None


print(walrus("go"))
print(matcher(["search owls", "ask why is it", "dance"]))
print(deep(300))
print(user_dunders([1, 2]))
print(sort_with_external_key(["b", "a", "c"]))
print(long_loop(20000))
print(print_kwargs("hi"))
print(use_cache(["x", "y", "x"]))
print(callback_via_helper([1, 2]))
print(poppy_tools([("d", 3), ("c", "x"), ("c", "z")]))
print(caller_reads(2))
print(gen_arg(str(i) for i in range(3)))
print(while_else_combo(5), while_else_combo(1))
print(find_path("r", "r10", 3))
