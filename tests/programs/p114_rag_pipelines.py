# Retrieval-augmented pipelines: query rewriting, retrieval per query (blocking lookups),
# deduplication, reranking by an LLM score, answer with citations, fact checking of claims,
# and a cache dict shared across calls.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, lookup, read, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def rewrite(question, n):
    return llm(f"list: rewrites of {question}", n=n).split("\n")


@poppy
def retrieve(queries):
    docs = []
    for q in queries:
        docs.append(lookup(f"doc/{q}"))
        docs.append(lookup(f"doc/{q[:3]}"))
    return docs


@poppy
def dedupe(docs):
    seen = set()
    out = []
    for d in docs:
        if d in seen:
            continue
        seen.add(d)
        out.append(d)
    return out


@poppy
def rerank(question, docs, k):
    scored = []
    for d in docs:
        scored.append((int(llm(f"count: relevance of {d} to {question}")), d))
    scored.sort(key=lambda p: (-p[0], p[1]))
    top = []
    for s, d in scored[:k]:
        top.append(d)
    return top


@poppy
def answer(question, docs):
    context = "; ".join(docs)
    reply = llm(f"answer {question} using {context}")
    cites = ""
    for i, d in enumerate(docs):
        cites += f"[{i + 1}]{d} "
    return reply, cites.strip()


@poppy
def rag(question):
    queries = rewrite(question, 3)
    docs = dedupe(retrieve(queries))
    top = rerank(question, docs, 2)
    log(f"{question}: {len(docs)} docs, top {len(top)}")
    return answer(question, top)


@poppy
def fact_check(claims):
    report = {}
    for c in claims:
        evidence = lookup(f"evidence/{c}")
        verdict = llm(f"yesno: does {evidence} support {c}")
        report[c] = (verdict, evidence)
    return report


@poppy
def cached_answers(questions, cache):
    hits = 0
    for q in questions:
        if q in cache:
            hits += 1
        else:
            cache[q] = llm(f"short answer to {q}")
    return hits, len(cache)


@poppy
def store_results(question):
    reply, cites = rag(question)
    write(f"answer/{question}", reply)
    stored = read(f"answer/{question}")
    return stored == reply, cites.count("[")


@poppy
def multi_hop(question, hops):
    q = question
    trail = []
    for h in range(hops):
        doc = lookup(f"hop{h}/{q}")
        q = llm(f"next question from {doc}").split(" about ")[0]
        trail.append(q)
    return trail


@poppy
def compare_sources(topic, sources):
    views = {}
    for s in sources:
        views[s] = llm(f"{s} view on {topic}")
    agree = llm(f"yesno: do {len(views)} views agree")
    return sorted(views), agree


print(rag("why is the sky blue"))
print(fact_check(["water boils at 100C", "cats bark"]))
shared = {}
print(cached_answers(["a", "b", "a"], shared))
print(cached_answers(["b", "c"], shared), sorted(shared))
print(store_results("tides"))
print(multi_hop("who built it", 3))
print(compare_sources("tax", ["blog", "paper", "news"]))
print(dedupe(["x", "y", "x", "z", "y"]))
