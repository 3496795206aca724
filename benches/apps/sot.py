"""Skeleton-of-Thought: an LLM writes an answer skeleton, then one LLM call per point expands it.
Parallelism: the skeletons of all questions, then every point of every question."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm

PARAMS = {"questions": ("How do vaccines train the immune system?",
                        "Why did the Roman Republic fall?",
                        "How should a small team adopt code review?")}


@poppy
def parse_points(skeleton):
    points = []
    for line in skeleton.split("\n"):
        line = line.strip()
        if line != "":
            points.append(line.split(". ", 1)[1])
    return points


@poppy
def answer(question):
    points = parse_points(llm(f"sot.skeleton: {question}"))
    expansions = []
    for point in points:
        expansions.append(llm(f"sot.expand: {question} | {point}"))
    text = f"Q: {question}\n"
    for i in range(len(points)):
        text = text + f"{i + 1}. {points[i]}: {expansions[i]}\n"
    return text


@poppy
def skeleton_of_thought(questions):
    out = []
    for q in questions:
        text = answer(q)
        print(text)
        out.append(len(text))
    return out


def run(questions):
    return skeleton_of_thought(questions)


async def _answer(question):
    skeleton = await allm(f"sot.skeleton: {question}")
    points = [ln.strip().split(". ", 1)[1] for ln in skeleton.split("\n") if ln.strip()]
    expansions = await asyncio.gather(*(allm(f"sot.expand: {question} | {p}") for p in points))
    text = f"Q: {question}\n"
    for i, (p, e) in enumerate(zip(points, expansions)):
        text += f"{i + 1}. {p}: {e}\n"
    return text


async def run_manual(questions):
    texts = await asyncio.gather(*(_answer(q) for q in questions))
    for t in texts:
        print(t)
    return [len(t) for t in texts]
