# @poppy functions calling @poppy functions, recursion (a recursive summariser over a tree of
# documents, divide-and-conquer over a list, mutual recursion), and call chains of helpers.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)

TREE = ("root", [("a", [("a1", []), ("a2", [])]), ("b", [("b1", [])])])


@poppy
def summarise_tree(node):
    name, children = node
    parts = []
    for child in children:
        parts.append(summarise_tree(child))
    reply = llm(f"summary of {name} with {len(parts)} parts")
    return f"{name}({', '.join(parts)})" if parts else reply.split()[0]


@poppy
def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


@poppy
def halve(items):
    if len(items) <= 1:
        return [lookup(x) for x in items] if False else (list(map(str, items)) if not items else [lookup(items[0])])
    mid = len(items) // 2
    return halve(items[:mid]) + halve(items[mid:])


@poppy
def merge_reduce(items):
    if len(items) == 1:
        return llm(f"count: leaf {items[0]}")
    mid = len(items) // 2
    left = merge_reduce(items[:mid])
    right = merge_reduce(items[mid:])
    return str(int(left) + int(right))


@poppy
def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


@poppy
def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


@poppy
def depth_first(node, depth=0):
    name, children = node
    log(f"{'  ' * depth}{name}")
    total = 1
    for c in children:
        total += depth_first(c, depth + 1)
    return total


@poppy
def layer_one(x):
    return layer_two(x + "1") + "|" + llm(f"l1 {x}")


@poppy
def layer_two(x):
    return layer_three(x + "2").upper()


@poppy
def layer_three(x):
    return lookup(x)


@poppy
def refine(draft, rounds):
    if rounds == 0:
        return draft
    better = llm(f"improve: {draft}").split(" about ")[0]
    return refine(better, rounds - 1)


print(summarise_tree(TREE))
print(fact(6))
print(halve(["w", "x", "y", "z", "v"]))
print(merge_reduce([1, 2, 3, 4, 5]))
print(is_even(5), is_odd(5))
print(depth_first(TREE))
print(layer_one("x"))
print(refine("start", 3))
