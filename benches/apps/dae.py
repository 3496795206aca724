"""DiverseAgentEntropy-style multi-agent QA (Feng et al. 2025a): agents answer a question from
different perspectives, then revise for a few rounds after seeing each other's answers; the
entropy of the final answers quantifies uncertainty. Parallelism: the agents within a round."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, entropy, llm

PARAMS = {"question": "Which French city hosted the first modern Olympic congress venue?",
          "agents": ("historian", "geographer", "sports journalist", "tour guide", "student"),
          "rounds": 3}


@poppy
def dae(question, agents, rounds):
    answers = tuple()
    for agent in agents:
        answers += (llm(f"dae.answer: {agent} | {question} | round 0"),)
    for r in range(1, rounds):
        others = " / ".join(answers)
        revised = tuple()
        for agent in agents:
            revised += (llm(f"dae.answer: {agent} | {question} | seen {others} | round {r}"),)
        answers = revised
    labels = tuple()
    for a in answers:
        labels += (a.split(" -- ")[0],)
    h = entropy(labels)
    print(f"answers: {labels}")
    print(f"entropy: {h}")
    return h


def run(question, agents, rounds):
    return dae(question, agents, rounds)


async def run_manual(question, agents, rounds):
    answers = tuple(await asyncio.gather(
        *(allm(f"dae.answer: {a} | {question} | round 0") for a in agents)))
    for r in range(1, rounds):
        others = " / ".join(answers)
        answers = tuple(await asyncio.gather(
            *(allm(f"dae.answer: {a} | {question} | seen {others} | round {r}") for a in agents)))
    labels = tuple(a.split(" -- ")[0] for a in answers)
    h = entropy(labels)
    print(f"answers: {labels}")
    print(f"entropy: {h}")
    return h
