# 40 blocking tools in parallel, each running a @poppy helper (on the pool's worker thread) that
# makes blocking lookups itself: more nested blocking calls than the runtime's 32 worker threads,
# which must neither deadlock nor change the results.
# difftest: min_in_flight=8
from poppy_jit import poppy, unordered
from _ext import lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def inner(x):
    parts = []
    for i in range(3):
        parts.append(lookup(f"{x}/{i}"))
    return "".join(parts)


@unordered(blocking=True)
def tool(x):
    return inner(x)[:12]


@poppy
def outer(n):
    out = []
    for i in range(n):
        out.append(tool(f"t{i}"))
    return out


print(outer(40))
