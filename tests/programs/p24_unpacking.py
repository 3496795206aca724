# Unpacking: pairs in for loops, enumerate, dict items, starred targets.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm


@poppy
def pairs(table):
    out = {}
    for name, topic in table:
        out[name] = llm(f"{topic} for {name}")
    for i, (name, answer) in enumerate(out.items()):
        print(i, name, answer)
    first, *middle, last = list(out)
    head, tail = middle[0], middle[1:]
    return first, head, tail, last


print(pairs([("ann", "poem"), ("bob", "joke"), ("cyd", "fact"), ("dee", "tip")]))
