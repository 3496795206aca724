# Fetch then parse: each document arrives from an unordered async external and is counted by a
# region (the counting of one document overlaps the fetching of the others); a closure and a
# mutated dict the run owns stay on the operation-by-operation path.
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import llm, log


@poppy
def count(doc):
    counts = {}
    for w in doc.split():
        w = w.strip(".,").lower()
        if not w:
            continue
        counts[w] = counts.get(w, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return top


@poppy
def pipeline(topics):
    docs = [llm(f"write about {t}", n=20) for t in topics]
    stats = []
    for d in docs:
        words = 0
        longest = ""
        for w in d.split():
            words += 1
            if len(w) > len(longest):
                longest = w
        stats.append((words, longest))
    scale = 3

    def scaled(x):
        return x * scale

    tops = [count(d) for d in docs]
    total = 0
    for words, _ in stats:
        total += scaled(words)
    log(f"total {total}")
    return stats, tops, total


print(pipeline(["cats", "dogs", "owls", "bees"]))
