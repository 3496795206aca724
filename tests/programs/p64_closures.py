# Inner functions and lambdas: real function objects with real cells (late binding, nonlocal
# writes seen outside, defaults evaluated at definition), called by externals and by the body.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log


@poppy
def rank(topics, bonus):
    answers = [llm(t) for t in topics]
    weight = 1
    total = 0

    def score(a, scale=bonus):
        nonlocal total
        total += len(a) * scale * weight
        return len(a) * scale * weight

    weight = 3  # late binding: score sees 3
    ranked = sorted(answers, key=lambda a: (score(a), a))
    log(f"total {total}")
    fs = [lambda: t for t in topics]
    late = [f() for f in fs]
    firsts = list(map(lambda a: a.split()[0], answers))

    def fact(k):
        return 1 if k <= 1 else k * fact(k - 1)

    return ranked[0], total, late, firsts, fact(len(topics)), score("abc", 1)


print(rank(("wolves", "herons", "otters", "lynxes"), 2))
