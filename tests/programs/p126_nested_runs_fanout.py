# Externals that call back into @poppy code (a blocking tool on a worker thread and an async tool
# on the event loop, each running a @poppy helper: a nested run, plain), sorted() with a @poppy key
# function, breadth-first search with a while loop over a queue that grows, and a wide fan-out of
# 40 independent LLM calls.
# difftest: min_in_flight=10
import asyncio

from poppy_jit import poppy, unordered
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def inner(x):
    a = llm(f"inner a {x}")
    b = llm(f"inner b {x}")
    return a[:6] + b[:6]


@unordered(blocking=True)
def blocking_tool(x):
    return "B:" + inner(x)


@unordered
async def async_tool(x):
    await asyncio.sleep(0.001)
    return "A:" + inner(x)


@poppy
def outer(xs):
    out = []
    for x in xs:
        out.append(blocking_tool(x))
        out.append(async_tool(x + "!"))
    return out


@poppy
def keyfn(x):
    return len(llm(f"key {x}"))


@poppy
def sort_by_poppy(items):
    return sorted(items, key=keyfn)


@poppy
def bfs(root):
    queue = [root]
    order = []
    while queue:
        node = queue.pop(0)
        order.append(node)
        if len(node) < 4 and llm(f"yesno: expand {node}") == "yes":
            queue.append(node + "l")
            queue.append(node + "r")
    return order


@poppy
def fanout(n):
    out = []
    for i in range(n):
        out.append(llm(f"fan {i}")[:3])
    return "".join(out)


@poppy
def fanout_lookup(keys):
    found = {}
    for k in keys:
        found[k] = lookup(f"fan/{k}")
    return len(found), found[keys[-1]]


print(outer(["p", "q"]))
print(sort_by_poppy(["aa", "b", "ccc"]))
print(bfs("r"))
print(bfs("s"))
print(fanout(40))
print(fanout_lookup([f"k{i}" for i in range(12)]))
