# Map-reduce over documents: chunking, mapping an LLM over chunks, reducing partial summaries
# pairwise and in one go, counting words, grouping by key, and a two-level map.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)

DOC = ("the river bends past the mill where the old miller keeps bees and the bees keep "
       "the miller busy while the river keeps the wheel turning all summer long")


@poppy
def chunk(text, size):
    words = text.split()
    chunks = []
    for i in range(0, len(words), size):
        chunks.append(" ".join(words[i:i + size]))
    return chunks


@poppy
def map_summaries(chunks):
    partial = []
    for c in chunks:
        partial.append(llm(f"summary of {c}"))
    return partial


@poppy
def reduce_all(partials):
    joined = " || ".join(partials)
    return llm(f"combine {len(partials)}: {joined[:40]}")


@poppy
def reduce_pairwise(items):
    while len(items) > 1:
        merged = []
        for i in range(0, len(items) - 1, 2):
            merged.append(llm(f"merge {items[i][:12]} + {items[i + 1][:12]}"))
        if len(items) % 2:
            merged.append(items[-1])
        items = merged
    return items[0]


@poppy
def map_reduce(text, size):
    return reduce_all(map_summaries(chunk(text, size)))


@poppy
def word_count(chunks):
    counts = {}
    for c in chunks:
        for w in c.split():
            counts[w] = counts.get(w, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return top


@poppy
def count_per_chunk(chunks):
    total = 0
    per = []
    for c in chunks:
        n = int(llm(f"count: nouns in {c}"))
        per.append(n)
        total += n
    return per, total


@poppy
def group_by_label(items):
    groups = {}
    for it in items:
        label = llm(f"yesno: is {it} alive")
        if label not in groups:
            groups[label] = []
        groups[label].append(it)
    return groups


@poppy
def two_level(sections):
    out = {}
    for name, text in sections:
        parts = map_summaries(chunk(text, 4))
        out[name] = (len(parts), lookup(name))
    return out


@poppy
def max_reduce(items):
    best_item, best = None, -1
    for it in items:
        v = int(llm(f"count: size of {it}"))
        best_item, best = (it, v) if v > best else (best_item, best)
    return best_item, best


@poppy
def filter_map(items):
    kept = []
    for it in items:
        if llm(f"yesno: keep {it}") == "yes":
            kept.append(it)
    mapped = map_summaries(kept)
    log(f"kept {len(kept)} of {len(items)}")
    return mapped


print(chunk(DOC, 7))
print(map_reduce(DOC, 6))
print(reduce_pairwise(map_summaries(chunk(DOC, 5))))
print(word_count(chunk(DOC, 8)))
print(count_per_chunk(chunk(DOC, 9)))
print(group_by_label(["cat", "rock", "tree", "lamp"]))
print(two_level([("intro", DOC[:60]), ("body", DOC[60:])]))
print(max_reduce(["ant", "bee", "cow"]))
print(filter_map(["f1", "f2", "f3", "f4"]))
