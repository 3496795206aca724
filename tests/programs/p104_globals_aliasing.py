# Globals read by @poppy code (configuration, tables, a function registry), and aliasing of
# mutable objects: two names for one list, a list passed to a helper that mutates it, dicts of
# lists, a list inside a tuple, a mutation seen through every alias.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, read, set_latency_scale, write

set_latency_scale(0.1)

MODEL_STYLE = "loud"
MAX_ITEMS = 3
PREFIXES = ("alpha", "beta", "gamma", "delta")
TABLE = {"a": 1, "b": 2, "c": 3}


def add_tag(lst, tag):
    """Unannotated helper that mutates its argument."""
    lst.append(tag)
    return len(lst)


def grow(d, key, value):
    d.setdefault(key, []).append(value)


@poppy
def use_globals(topic):
    out = []
    for p in PREFIXES[:MAX_ITEMS]:
        out.append(llm(f"{p} {topic}", style=MODEL_STYLE))
    return out


@poppy
def table_sum(keys):
    total = 0
    for k in keys:
        total += TABLE.get(k, 0)
    return total, lookup(f"sum{total}")


@poppy
def two_names(topic):
    a = []
    b = a
    a.append(llm(f"first {topic}"))
    b.append(llm(f"second {topic}"))
    return a, len(b), a is b


@poppy
def helper_mutates(topics):
    tags = []
    n = 0
    for t in topics:
        n = add_tag(tags, llm(f"tag {t}"))
    tags.append("end")
    return tags, n


@poppy
def dict_of_lists(pairs):
    groups = {}
    for key, topic in pairs:
        grow(groups, key, llm(f"summary of {topic}"))
    first = groups[pairs[0][0]]
    first.append("extra")
    return groups


@poppy
def list_in_tuple(x):
    box = ([], x)
    inner = box[0]
    inner.append(lookup(x))
    inner.append(lookup(x + "2"))
    return box


@poppy
def mutate_after_call(words):
    buf = list(words)
    answer = llm(f"echo {buf}")
    buf.append("later")
    return answer, buf


@poppy
def mutate_arg_in_place(items):
    for i in range(len(items)):
        items[i] = llm(f"rewrite {items[i]}")
    return len(items)


@poppy
def store_roundtrip(key):
    before = read(key)
    write(key, f"{before}!")
    after = read(key)
    log(f"{key}: {before} -> {after}")
    return before, after


@poppy
def shared_default_table(k):
    row = TABLE
    return row[k] * 10 + len(llm(f"letter {k}"))


data = ["x", "y"]
print(use_globals("oceans"))
print(table_sum("abcz"))
print(two_names("cats"))
print(helper_mutates(["p", "q", "r"]))
print(dict_of_lists([("k1", "a"), ("k2", "b"), ("k1", "c")]))
print(list_in_tuple("key"))
print(mutate_after_call(["u", "v"]))
print(mutate_arg_in_place(data), data)
print(store_roundtrip("greeting"))
print(store_roundtrip("greeting"))
print(shared_default_table("b"))
