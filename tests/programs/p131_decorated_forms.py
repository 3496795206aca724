# Unusual @poppy targets: a generator function (fallback), a @poppy staticmethod and classmethod,
# lru_cache stacked on a @poppy function and called from compiled code.
import functools

from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def gen(n):
    for i in range(n):
        yield llm(f"gen {i}")[:5]

class K:
    @staticmethod
    @poppy
    def s(x):
        return lookup(x)
    @classmethod
    @poppy
    def c(cls, x):
        return cls.__name__ + llm(x)[:4]

@functools.lru_cache(maxsize=None)
@poppy
def cached(x):
    return llm(f"cached {x}")[:6]

@poppy
def use_cached(xs):
    out = []
    for x in xs:
        out.append(cached(x))
    return out

print(list(gen(3)))
print(K.s("k"), K.c("z"), K().c("y"))
print(use_cached(["a", "b", "a"]))
