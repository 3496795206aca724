"""TRAQ-style retrieval-augmented QA (Li et al. 2024): embed the question and the documents,
retrieve the most similar documents, sample several answers per document, and cluster equal
answers into a prediction set with confidences. Parallelism: the embeddings, then the samples."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import aembed, allm, embed, llm

PARAMS = {"questions": ("Is the Danube longer than the Rhine?",
                        "Did the printing press precede the telescope?"),
          "docs": ("The Danube flows 2850 km through ten countries.",
                   "The Rhine is about 1230 km long.",
                   "Gutenberg's press dates from around 1440.",
                   "Lippershey applied for a telescope patent in 1608.",
                   "The Volga is Europe's longest river.",
                   "Movable type appeared in China in the 11th century.",
                   "Galileo improved the telescope in 1609.",
                   "The Elbe rises in the Czech Republic."),
          "top_k": 3, "samples": 3}


@poppy
def dot(a, b):
    total = 0.0
    for i in range(len(a)):
        total = total + a[i] * b[i]
    return total


@poppy
def retrieve(q_vec, doc_vecs, docs, top_k):
    chosen = []
    for _ in range(top_k):
        best = -1
        best_score = -1e9
        for i in range(len(docs)):
            if i not in chosen:
                score = dot(q_vec, doc_vecs[i])
                if score > best_score:
                    best = i
                    best_score = score
        chosen.append(best)
    return chosen


@poppy
def traq(questions, docs, top_k, samples):
    doc_vecs = []
    for d in docs:
        doc_vecs.append(embed(d))
    results = []
    for q in questions:
        chosen = retrieve(embed(q), doc_vecs, docs, top_k)
        answers = tuple()
        for i in chosen:
            for s in range(samples):
                answers += (llm(f"traq.answer: {docs[i]} | {q} | sample {s}").split(",")[0],)
        # Cluster equal answers: the prediction set with each cluster's share of the samples.
        pred = []
        for ans in sorted(set(answers)):
            pred.append(f"{ans}:{round(answers.count(ans) / len(answers), 3)}")
        print(f"{q} -> {pred}")
        results.append(pred)
    return results


def run(questions, docs, top_k, samples):
    return traq(questions, docs, top_k, samples)


def _retrieve(q_vec, doc_vecs, top_k):
    scores = [sum(a * b for a, b in zip(q_vec, v)) for v in doc_vecs]
    chosen = []
    for _ in range(top_k):
        best = max((i for i in range(len(scores)) if i not in chosen),
                   key=lambda i: (scores[i], -i))
        chosen.append(best)
    return chosen


async def run_manual(questions, docs, top_k, samples):
    vecs = await asyncio.gather(*(aembed(t) for t in list(docs) + list(questions)))
    doc_vecs, q_vecs = vecs[:len(docs)], vecs[len(docs):]

    async def one(q, q_vec):
        chosen = _retrieve(q_vec, doc_vecs, top_k)
        answers = await asyncio.gather(*(allm(f"traq.answer: {docs[i]} | {q} | sample {s}")
                                         for i in chosen for s in range(samples)))
        answers = [a.split(",")[0] for a in answers]
        return [f"{a}:{round(answers.count(a) / len(answers), 3)}" for a in sorted(set(answers))]

    results = await asyncio.gather(*(one(q, v) for q, v in zip(questions, q_vecs)))
    for q, pred in zip(questions, results):
        print(f"{q} -> {pred}")
    return results
