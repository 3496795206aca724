# Generator expressions passed straight to consumers that take them in whole.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log


@poppy
def summary(topics, sep):
    text = sep.join(llm(t) for t in topics)
    total = sum(len(llm(f"count: {t}")) for t in topics)
    top = sorted((llm(t, "loud") for t in topics if t), reverse=True)
    longest = max((len(w) for w in text.split()), default=0)
    uniq = set(w[0] for w in text.split())
    as_tuple = tuple(t.upper() for t in topics)
    log(f"{total} {longest} {len(uniq)}")
    return text, top, as_tuple, "".join(t[0] for t in topics)


print(summary(["kites", "owls", "ferns", "moss"], " | "))
print(summary([], "-"))
