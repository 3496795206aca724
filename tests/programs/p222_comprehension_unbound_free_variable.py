# A comprehension (or generator expression) reading an enclosing local that is unbound when it
# runs: CPython raises NameError ("cannot access free variable ... in enclosing scope"), not
# UnboundLocalError. The function falls back (with its reason) rather than raise the wrong
# error; when the local is bound on every path that reaches the comprehension it compiles.
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def total(n):
    log(f"total {n}")
    x = sum(x for q in range(n))
    return x


@poppy
def tagged(words, tag_it):
    if tag_it:
        tag = llm("a tag")
    return [f"{w}:{tag}" for w in words]


@poppy
def bound_on_every_path(words, c):
    if c:
        sep = "-"
    else:
        return [llm(w) for w in words]
    return [sep.join((w, llm(w))) for w in words]


for f, args in [(total, (0,)), (total, (2,)), (tagged, (["a", "b"], True)), (tagged, (["a"], False)),
                 (tagged, ([], False)), (bound_on_every_path, (["x", "y"], True)),
                 (bound_on_every_path, (["z"], False))]:
    try:
        print(f.__name__, f(*args))
    except Exception as e:
        print(f.__name__, type(e).__name__, e)
