"""Tree-of-Thoughts (PopPy Fig. 1): beam search where an LLM proposes successor states and
scores them. Parallelism: all proposals of a step, then all (uncached) scores of a step."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, llm, topk

PARAMS = {"task": "reach 24 with 4 7 8 8", "steps": 3, "beam_width": 5}
N_EVALUATE_SAMPLE = 3


@poppy
def tree_of_thoughts(task, steps, beam_width):
    states = ("",)
    for step in range(steps):
        new_states = tuple()
        for s in states:
            new_states += llm_get_proposals(task, s)
        values = get_values(task, new_states)
        states = topk(new_states, values, beam_width)
        print(states)
    return states


@poppy
def get_values(task, states):
    value_cache = frozenset()
    values = tuple()
    idx = 0
    for state in states:
        if state in value_cache:
            value = 0
            print(f"{idx}: duplicate")
        else:
            value = llm_get_value(task, state)
            value_cache = value_cache | frozenset((state,))
            print(f"{idx}: {value}")
        values += (value,)
        idx = idx + 1
    return values


@poppy
def llm_get_proposals(task, state):
    reply = llm(f"tot.propose: {task} | {state}")
    return tuple(reply.split("\n"))


@poppy
def llm_get_value(task, state):
    # As in the ToT authors' code: the value is the sum of N_EVALUATE_SAMPLE sampled scores.
    value = 0
    for i in range(N_EVALUATE_SAMPLE):
        value = value + int(llm(f"tot.value: {task} | {state} | sample {i}"))
    return value


def run(task, steps, beam_width):
    return tree_of_thoughts(task, steps, beam_width)


# --- hand-parallelised asyncio version (same calls, same output) ------------------------------

async def _proposals(task, state):
    return tuple((await allm(f"tot.propose: {task} | {state}")).split("\n"))


async def _value(task, state):
    samples = await asyncio.gather(*(allm(f"tot.value: {task} | {state} | sample {i}")
                                     for i in range(N_EVALUATE_SAMPLE)))
    value = 0
    for s in samples:
        value = value + int(s)
    return value


async def run_manual(task, steps, beam_width):
    states = ("",)
    for _ in range(steps):
        new_states = sum(await asyncio.gather(*(_proposals(task, s) for s in states)), ())
        first = {}
        for i, s in enumerate(new_states):
            first.setdefault(s, i)
        uncached = [i for i, s in enumerate(new_states) if first[s] == i]
        scored = dict(zip(uncached, await asyncio.gather(
            *(_value(task, new_states[i]) for i in uncached))))
        values = []
        for i in range(len(new_states)):
            if i in scored:
                values.append(scored[i])
                print(f"{i}: {scored[i]}")
            else:
                values.append(0)
                print(f"{i}: duplicate")
        states = topk(new_states, tuple(values), beam_width)
        print(states)
    return states
