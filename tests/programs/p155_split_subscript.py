# `line.split(": ", 1)[1]`: the list split builds is used by the subscript alone, so on a str the
# whole expression is a pure operation (passes::fuse_split_getitem) — it does not wait for the
# earlier prints (sequential), and the per-claim LLM calls overlap (FactCheck's pattern: it ran
# one claim at a time). An object with its own `split` returning a list it shares keeps its
# ordering: the subscript sees the list as CPython does.
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


class Splitter:
    def __init__(self):
        self.parts = ["a", "b"]

    def split(self, sep=None):
        self.parts.append(f"x{len(self.parts)}")
        return self.parts


@poppy
def claims(text):
    out = []
    for line in llm(f"lines: {text}").split("\n"):
        claim = line.split(": ", 1)[-1]
        log(f"claim {claim}")
        out.append(llm(f"check {claim}")[:12])
    return out


@poppy
def custom(sp, n):
    got = []
    for i in range(n):
        got.append(sp.split()[-1])
        log(i)
    return got, sp.parts


print(claims("one: alpha\ntwo: beta\nthree: gamma\nfour: delta\nfive: epsilon"))
print(custom(Splitter(), 3))
