# Transitive compilation keeps CPython's failures: an exception raised inside an inlined helper
# (a method two calls deep, with defaults) reaches the caller with its type and message, and the
# calls made before it in program order have run; helpers that cannot be compiled (a generator,
# a closure, *args) run as plain calls with a recorded reason.
# difftest: expect_rc=1
import poppy_jit
from poppy_jit import poppy
from _ext import llm, lookup, log, set_latency_scale

set_latency_scale(0.2)
poppy_jit.set_internal(["__main__"])


def numbered(text):
    for i, line in enumerate(text.split("\n")):
        yield f"{i}. {line}"


def make_scaler(k):
    def scale(x):
        return x * k
    return scale


def total(*xs):
    return sum(xs)


class Parser:
    def __init__(self, strict=True):
        self.strict = strict

    def number(self, text, base=10):
        return int(text, base)

    def score(self, prompt, weight=1):
        return self.number(llm(f"count: {prompt}")) * weight


@poppy
def fine(prompts):
    p = Parser()
    scores = [p.score(q, weight=2) for q in prompts]
    lines = list(numbered(llm("list: items")))
    double = make_scaler(2)
    return scores, lines, double(total(*scores)), lookup("done")


@poppy
def failing(prompts):
    p = Parser(strict=False)
    log("start")
    good = p.score(prompts[0])
    bad = p.number(llm(prompts[1]))
    log("never")
    return good, bad


print(fine(["a", "b", "c"]))
print(failing(["x", "y"]))
