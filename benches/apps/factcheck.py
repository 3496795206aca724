"""FactCheck (OPAL §6): an LLM splits a text into claims; for each claim a tool-use loop lets the
LLM either search a wiki tool or give a verdict, for at most `max_steps` steps. Parallelism: the
claims' loops run side by side (each loop is sequential in itself)."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, awiki, llm, wiki

PARAMS = {"text": "The Eiffel Tower was finished in 1889 for a world fair, is repainted every "
                  "seven years, was once sold twice by a con man, and grows in summer.",
          "max_steps": 4}


@poppy
def check_claim(claim, max_steps):
    evidence = ""
    n = 0
    verdict = ""
    # A do-until tool loop written with a guard (the loop ends when the model gives a verdict).
    for step in range(max_steps):
        if verdict == "":
            action = llm(f"fact.step: {claim} {evidence} | evidence={n}")
            if action.startswith("SEARCH: "):
                evidence = evidence + " " + wiki(action.split(": ", 1)[1])
                n = n + 1
            else:
                verdict = action.split(": ", 1)[1]
    if verdict == "":
        verdict = "unverified"
    return verdict


@poppy
def factcheck(text, max_steps):
    verdicts = []
    for line in llm(f"fact.claims: {text}").split("\n"):
        claim = line.split(": ", 1)[1]
        verdict = check_claim(claim, max_steps)
        print(f"{claim}: {verdict}")
        verdicts.append(verdict)
    return verdicts


def run(text, max_steps):
    return factcheck(text, max_steps)


async def _check(claim, max_steps):
    evidence, n = "", 0
    for _ in range(max_steps):
        action = await allm(f"fact.step: {claim} {evidence} | evidence={n}")
        if not action.startswith("SEARCH: "):
            return action.split(": ", 1)[1]
        evidence = evidence + " " + await awiki(action.split(": ", 1)[1])
        n += 1
    return "unverified"


async def run_manual(text, max_steps):
    claims = [line.split(": ", 1)[1]
              for line in (await allm(f"fact.claims: {text}")).split("\n")]
    verdicts = await asyncio.gather(*(_check(c, max_steps) for c in claims))
    for claim, verdict in zip(claims, verdicts):
        print(f"{claim}: {verdict}")
    return list(verdicts)
