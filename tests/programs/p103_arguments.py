# Default arguments, keyword arguments, keyword-only parameters, *args and **kwargs, calls of
# @poppy functions and externals with keywords, and defaults evaluated once (a shared default).
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def ask(question, style="plain", n=2):
    return llm(f"list: {question}", style=style, n=n)


@poppy
def ask_kwonly(question, *, style="plain", retries=1):
    out = []
    for i in range(retries):
        out.append(llm(f"{question} try {i}", style=style))
    return out


@poppy
def caller_with_keywords(topic):
    a = ask(topic)
    b = ask(topic, n=1)
    c = ask(question=topic, style="loud", n=3)
    d = ask_kwonly(topic, retries=2)
    return a, b, c, d


@poppy
def defaults_none(topic, cache=None, limit=3):
    if cache is None:
        cache = {}
    for i in range(limit):
        key = f"{topic}{i}"
        if key not in cache:
            cache[key] = lookup(key)
    return cache


@poppy
def star_args(*topics):
    out = []
    for t in topics:
        out.append(llm(f"summary of {t}"))
    return out


@poppy
def star_kwargs(prefix, **options):
    parts = []
    for key in sorted(options):
        parts.append(f"{key}={options[key]}")
    return llm(f"{prefix}: " + ", ".join(parts))


@poppy
def forward_kwargs(topic):
    return star_kwargs(topic, tone="dry", length=3), star_args(topic, topic + "!")


@poppy
def mixed(a, b=2, *rest, c, d=4, **kw):
    log(f"mixed {a} {b} {rest} {c} {d} {sorted(kw.items())}")
    return llm(f"count: {a + b + c + d}")


@poppy
def shared_default(item, bag=[]):
    bag.append(llm(f"item {item}"))
    return len(bag)


@poppy
def keyword_externals(q):
    x = llm(prompt=q)
    y = llm(q, n=1, style="loud")
    z = llm(q, style="plain")
    return x == z, y


@poppy
def positional_defaults(q, n=3, style="loud"):
    return len(llm(f"list: {q}", style, n).split("\n"))


print(caller_with_keywords("birds"))
print(defaults_none("k"))
print(defaults_none("j", {"j0": "cached"}, limit=2))
print(star_args("x", "y", "z"))
print(forward_kwargs("news"))
print(mixed(1, c=3))
print(mixed(1, 5, 6, 7, c=3, d=0, extra="e"))
print(shared_default("a"), shared_default("b"), shared_default("c", []))
print(keyword_externals("weather"))
print(positional_defaults("rivers"), positional_defaults("seas", 2))
