# Less common operations between LLM calls: del of list items, slices and attributes; slice
# assignment and extended slices; list item swap; chained assignment; unary ~ + -; set/list/tuple
# displays with unpacking; constant-key dict displays; `is None` / `is not None` jumps; and/or
# returning operands.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


class Rec:
    pass


@poppy
def list_surgery(xs):
    lst = list(xs)
    lst[0], lst[-1] = lst[-1], lst[0]
    lst[1:3] = [lookup("s1"), lookup("s2")]
    del lst[0]
    evens = lst[::2]
    lst[::2] = evens[::-1]
    del lst[1:2]
    return lst, evens


@poppy
def chained_assign(topic):
    a = b = llm(f"same {topic}")
    c = d = []
    c.append(a[:4])
    return a is b, c is d, d


@poppy
def unary_ops(topic):
    n = int(llm(f"count: {topic}"))
    return ~n, +n, -n, not n, -(-n) == n


@poppy
def displays(a, b):
    s = {*a, *b, llm("count: extra")}
    t = (*a, lookup("mid"), *b)
    l = [*b, *a]
    d = {"x": 1, "y": len(t), "z": llm("about z")[:3]}
    return sorted(s), t, l, d


@poppy
def none_checks(values):
    out = []
    for v in values:
        reply = llm(f"yesno: {v}") if v is not None else None
        if reply is None:
            out.append("none")
        elif reply is not None and reply == "yes":
            out.append(v)
        else:
            out.append(reply or "empty")
    return out


@poppy
def and_or_values(x, y):
    a = x and llm(f"about {x}")[:5]
    b = y or lookup("default")
    c = (x or y) and (y or x)
    d = x and y or "neither"
    return a, b, c, d


@poppy
def attributes(names):
    r = Rec()
    for n in names:
        setattr(r, n, llm(f"count: {n}"))
    r.extra = lookup("extra")
    del r.extra
    return sorted(vars(r).items()), hasattr(r, "extra")


print(list_surgery(["p", "q", "r", "s", "t"]))
print(chained_assign("twins"))
print(unary_ops("u"))
print(displays(("a1", "a2"), ["b1"]))
print(none_checks(["m", None, "n", "o"]))
print(and_or_values("x", ""), and_or_values("", "y"), and_or_values("", ""))
print(attributes(["k1", "k2"]))
