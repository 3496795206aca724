"""BIRD-style Bayesian inference (Feng et al. 2025b): an LLM abducts the factors of a scenario,
describes each, and assesses each factor's probability `samples` times; the program averages the
samples, combines the factors (naive Bayes) and asks for a decision. Parallelism: the scenarios,
the factor descriptions, and every assessment sample."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm

PARAMS = {"scenarios": ("A patient has a fever and a rash after a hiking trip.",
                        "A startup doubles revenue but loses its lead engineer."),
          "samples": 3}


@poppy
def factors_of(scenario):
    factors = []
    for line in llm(f"bird.factors: {scenario}").split("\n"):
        factors.append(line.split(": ", 1)[1])
    return factors


@poppy
def assess(scenario, factor, description, samples):
    total = 0.0
    for i in range(samples):
        total = total + float(llm(f"bird.assess: {scenario} | {factor} | {description} | #{i}"))
    return total / samples


@poppy
def infer(scenario, samples):
    factors = factors_of(scenario)
    p_a = 1.0
    p_b = 1.0
    for factor in factors:
        description = llm(f"bird.describe: {scenario} | {factor}")
        p = assess(scenario, factor, description, samples)
        p_a = p_a * p
        p_b = p_b * (1 - p)
    posterior = round(p_a / (p_a + p_b), 4)
    decision = llm(f"bird.decide: {scenario} | {posterior}")
    print(f"{scenario} -> P(A)={posterior}: {decision}")
    return posterior


@poppy
def bird(scenarios, samples):
    posteriors = []
    for s in scenarios:
        posteriors.append(infer(s, samples))
    return posteriors


def run(scenarios, samples):
    return bird(scenarios, samples)


async def _assess(scenario, factor, samples):
    description = await allm(f"bird.describe: {scenario} | {factor}")
    ps = await asyncio.gather(*(allm(f"bird.assess: {scenario} | {factor} | {description} | #{i}")
                                for i in range(samples)))
    total = 0.0
    for p in ps:
        total = total + float(p)
    return total / samples


async def _infer(scenario, samples):
    reply = await allm(f"bird.factors: {scenario}")
    factors = [line.split(": ", 1)[1] for line in reply.split("\n")]
    p_a = p_b = 1.0
    for p in await asyncio.gather(*(_assess(scenario, f, samples) for f in factors)):
        p_a = p_a * p
        p_b = p_b * (1 - p)
    posterior = round(p_a / (p_a + p_b), 4)
    return posterior, await allm(f"bird.decide: {scenario} | {posterior}")


async def run_manual(scenarios, samples):
    out = []
    for scenario, (posterior, decision) in zip(
            scenarios, await asyncio.gather(*(_infer(s, samples) for s in scenarios))):
        print(f"{scenario} -> P(A)={posterior}: {decision}")
        out.append(posterior)
    return out
