# Closures, lambdas and comprehensions in orchestration code (sorting by an LLM score, building
# prompts with a formatter closure, filtering replies). The compiler may not translate these yet:
# then the function must run correctly as plain CPython (a fallback with a reason).
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def rank_by_score(items):
    scores = {}
    for it in items:
        scores[it] = int(llm(f"count: relevance of {it}"))
    return sorted(items, key=lambda it: (-scores[it], it))


@poppy
def summaries(topics):
    return [llm(f"summary of {t}") for t in topics]


@poppy
def keep_yes(questions):
    answers = {q: llm(f"yesno: {q}") for q in questions}
    return [q for q, a in answers.items() if a == "yes"]


@poppy
def prompt_factory(style):
    def make(topic):
        return f"[{style}] write about {topic}"
    first = llm(make("rivers"), style=style)
    second = llm(make("mountains"), style=style)
    return first, second


@poppy
def counter_closure(words):
    count = 0

    def bump(w):
        nonlocal count
        count += len(w)
        return count

    out = []
    for w in words:
        out.append(bump(llm(f"echo {w}")))
    return out, count


@poppy
def unique_words(texts):
    return sorted({w for t in texts for w in llm(f"list: words of {t}", n=2).split("\n")})


@poppy
def apply_all(funcs, arg):
    results = []
    for name, fn in funcs:
        results.append((name, fn(arg)))
    return results


@poppy
def lookup_table(keys):
    table = dict(map(lambda k: (k, lookup(k)), keys))
    log(f"looked up {len(table)}")
    return table


@poppy
def nested_comprehension(rows):
    grid = [[int(llm(f"count: {r}{c}")) for c in "xy"] for r in rows]
    return grid, sum(sum(row) for row in grid)


@poppy
def any_all(claims):
    verdicts = [llm(f"yesno: {c}") for c in claims]
    return any(v == "yes" for v in verdicts), all(v == "yes" for v in verdicts)


@poppy
def generator_consumer(n):
    def gen():
        for i in range(n):
            yield llm(f"part {i}")
    parts = []
    for p in gen():
        parts.append(p.split()[0])
    return "-".join(parts)


print(rank_by_score(["apples", "pears", "plums", "figs"]))
print(summaries(("cats", "dogs")))
print(keep_yes(["is water wet", "is fire cold", "is the sky blue", "is sand dry"]))
print(prompt_factory("loud"))
print(counter_closure(["a", "bb"]))
print(unique_words(["one", "two", "three"]))
print(apply_all([("upper", str.upper), ("len", len), ("rev", lambda s: s[::-1])], "poppy"))
print(lookup_table(["k1", "k2", "k3"]))
print(nested_comprehension("ab"))
print(any_all(["a", "b", "c"]))
print(generator_consumer(3))
