# Generator expressions passed to other callables are real generators (they run in CPython,
# interleaved with the callee exactly as without poppy); builtins that take them whole are loops.
from poppy_jit import poppy
from _ext import llm, log, note


def consume(items):
    out = []
    for v in items:
        note(f"got {v[:10]}")
        out.append(v)
    return out


@poppy
def run(topics):
    firsts = consume(llm(t) for t in topics)
    numbered = [f"{i}:{a[:6]}" for i, a in enumerate(x.upper() for x in firsts)]
    pairs = dict(zip((t for t in topics), (len(a) for a in firsts)))
    biggest = max((t for t in topics), key=len)
    log(f"{len(firsts)} {biggest}")
    return numbered, pairs, "-".join(t[:2] for t in topics)


print(run(("moss", "lichen", "fern")))
