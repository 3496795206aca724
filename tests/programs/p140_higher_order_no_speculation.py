# Higher-order orchestration: externals passed as parameters and returned from @poppy
# functions, starred targets in a for, a range whose length comes from an LLM reply, a while
# condition that is a @poppy call, and branches/short-circuits whose untaken side has LLM calls
# that must never be made (no speculation across a pending condition).
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)



@poppy
def call_param(ask, items):
    out = []
    for it in items:
        out.append(ask(f"about {it}")[:8])
    return out


@poppy
def choose_tool(kind):
    if kind == "web":
        return lookup
    return llm


@poppy
def use_returned(kind, q):
    tool = choose_tool(kind)
    return tool(q)


@poppy
def star_for(rows):
    out = []
    for head, *rest in rows:
        out.append((head, len(rest), llm(f"about {head}")[:4]))
    return out


@poppy
def pending_range(q):
    n = int(llm(f"count: {q}")) % 4 + 1
    parts = []
    for i in range(n):
        parts.append(lookup(f"{q}{i}"))
    return n, parts


@poppy
def more_needed(acc, limit):
    return len(acc) < limit and int(llm(f"count: more {len(acc)}")) > 2


@poppy
def while_poppy_cond(limit):
    acc = []
    while more_needed(acc, limit):
        acc.append(lookup(f"a{len(acc)}"))
    return acc


@poppy
def no_speculation(xs):
    out = []
    for x in xs:
        cond = llm(f"yesno: {x}") == "yes"
        a = llm(f"then {x}") if cond else lookup(f"else {x}")
        b = cond or llm(f"or-branch {x}")
        c = (not cond) and llm(f"and-branch {x}")
        out.append((a[:6], b if b is True else b[:5], c if c is False else c[:5]))
    return out


print(call_param(llm, ["a", "b"]))
print(call_param(lookup, ["c"]))
print(call_param(lambda p: p.upper(), ["d"]))
print(use_returned("web", "k"), use_returned("ai", "q")[:10])
print(star_for([("h1", 1, 2), ("h2",)]))
print(pending_range("r"), pending_range("s"))
print(while_poppy_cond(5))
print(no_speculation(["u", "v", "w", "x"]))
