# Augmented assignment on locals, subscripts and attributes; unpacking (nested, starred, swap,
# from a call); chained comparisons; conditional expressions; boolean short-circuits; `in`/`is`.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


class Tally:
    def __init__(self):
        self.total = 0
        self.names = []


@poppy
def augmented(topics):
    n = 0
    text = ""
    counts = {"yes": 0, "no": 0}
    seq = [0, 0]
    for t in topics:
        v = llm(f"yesno: {t}")
        counts[v] += 1
        n += 1
        text += v[0]
        seq[n % 2] -= 1
    n *= 3
    n //= 2
    n **= 2
    n %= 1000
    n <<= 1
    n |= 1
    return n, text, counts, seq


@poppy
def attribute_aug(names):
    t = Tally()
    for name in names:
        t.total += int(llm(f"count: {name}"))
        t.names += [name]
    return t.total, t.names


@poppy
def starred_unpack(topic):
    first, *middle, last = llm(f"list: {topic}", n=5).split("\n")
    head, *rest = middle
    *init, tail = (1, 2, 3)
    return first, middle, last, head, rest, init, tail


@poppy
def nested_unpack(pairs):
    out = []
    for i, (name, (lo, hi)) in enumerate(pairs):
        out.append(f"{i}:{name}:{lookup(name)}:{hi - lo}")
    (a, b), c = (out[0], out[-1]), len(out)
    return a, b, c


@poppy
def swap_and_rotate(x, y, z):
    x, y = y, x
    x, y, z = y, z, x
    return llm(f"order {x} {y} {z}"), (x, y, z)


@poppy
def chained(values):
    out = []
    for v in values:
        n = int(llm(f"count: {v}"))
        if 0 <= n < 5:
            out.append("low")
        elif 5 <= n <= 12 != 13:
            out.append("mid")
        elif n > 12 > 0:
            out.append("high")
        else:
            out.append("?")
    return out


@poppy
def conditional_exprs(values):
    out = []
    for v in values:
        reply = llm(f"yesno: {v}")
        label = "accept" if reply == "yes" else ("reject" if v else "empty")
        out.append(label)
    return out, (out[0] if out else None)


@poppy
def short_circuit(a, b):
    x = a and llm(f"and {a}")
    y = b or llm("or default")
    z = (a or b) and not (a and b)
    return x, y, z


@poppy
def membership(keys, allowed):
    got = []
    for k in keys:
        if k in allowed and k not in got:
            got.append(lookup(k))
        elif k is None:
            log("none key")
    return got


@poppy
def unpack_from_call(topic):
    count, text = int(llm(f"count: {topic}")), llm(f"about {topic}")
    a, b, c = text.split()[:3]
    return count, a, b, c


@poppy
def tuple_accumulate(xs):
    acc = ()
    pairs = ()
    for x in xs:
        acc += (llm(f"count: t{x}"),)
        pairs = pairs + ((x, acc[-1]),)
    return acc, pairs, acc[1:], len(pairs) > 1 == True


print(augmented(["a", "b", "c", "d"]))
print(attribute_aug(["p", "q"]))
print(starred_unpack("planets"))
print(nested_unpack([("k", (1, 5)), ("j", (2, 3))]))
print(swap_and_rotate(1, 2, 3))
print(chained(["v1", "v2", "v3", "v4", "v5"]))
print(conditional_exprs(["x", "", "y"]))
print(short_circuit("s", ""), short_circuit("", "t"), short_circuit("s", "t"))
print(membership(["a", "b", "a", None, "c"], ("a", "c")))
print(unpack_from_call("tea"))
print(tuple_accumulate([1, 2, 3]))
