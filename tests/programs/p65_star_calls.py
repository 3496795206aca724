# Calls with *args/**kwargs unpacking: the externals get exactly the same arguments, and the
# errors of bad unpacking are CPython's.
from poppy_jit import poppy
from _ext import llm, log, write


@poppy
def fan(prompts, opts):
    first = llm(*prompts[:1])
    styled = llm(prompts[1], **opts)
    both = llm(*prompts[2:3], *(), **{"style": "loud"}, n=2)
    log(*[first[:5], styled[:5]], sep="|") if False else log(f"{first[:5]}|{styled[:5]}")
    write(*("k1", both))
    args = (f"list: {prompts[0]}",)
    kw = {"n": 2}
    listing = llm(*args, **kw)
    return first, styled, both, listing


@poppy
def bad_star(x):
    log("before")
    return llm(*x)


@poppy
def repeated(kw):
    log("before")
    return llm("p", style="a", **kw)


print(fan(["owls", "bees", "moths"], {"style": "loud"}))
for f, a in ((bad_star, 5), (repeated, {"style": "b"})):
    try:
        f(a)
    except TypeError as e:
        print("TypeError", e)
