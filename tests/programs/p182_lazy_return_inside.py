# `return` from inside a loop over a generator stops pulling items there (also from a nested
# loop and from a while loop inside the for loop).
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def words():
    for w in ["alpha", "beta", "gamma", "delta", "epsilon"]:
        log(f"yield {w}")
        yield w
    print("words exhausted")


@poppy
def find(prefix):
    for w in words():
        reply = llm(f"yesno: {w}")
        print("checking", w, reply)
        if w.startswith(prefix):
            return w
    return None


@poppy
def find_nested():
    for w in words():
        for c in iter(w):
            if c == "m":
                return (w, c)
    return None


@poppy
def find_while():
    for w in words():
        i = 0
        while i < len(w):
            if w[i] == "t":
                return w, i
            i += 1
    return "none"


print(find("g"))
print(find("z"))
print(find_nested())
print(find_while())
