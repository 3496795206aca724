# The multi-agent debate's round (the shape of llm_multiagent_debate's gen_math.py): each agent
# keeps its own chat context (a list of message dicts), asks the model with it, appends the
# reply and prints the whole completion. The chat call is declared @unordered, so with a list
# argument it is a read of that list: it must wait for the earlier sequential calls — the
# previous agent's `print(completion)`, which waits for that agent's reply. But a print of plain
# data (the completion's declared type is json) to the process's stdout runs no code of the
# program and changes nothing the call reads, so the call may run before it
# (`objects::read_order`): every agent's request is in flight at once, and the prints come out
# in CPython's order.
# difftest: min_in_flight=3
import asyncio
import time

import poppy_jit
from poppy_jit import poppy, unordered
from _ext import _answer, _delay, _rendezvous_pending, _traced, set_latency_scale, _RENDEZVOUS_CAP

set_latency_scale(0.5)
poppy_jit.set_internal(["__main__"])  # `assistant_message` is compiled with the loop


@unordered(returns="json")
async def chat(messages):
    prompt = " | ".join(m["content"] for m in messages)
    with _traced("llm", "unordered", prompt):
        await asyncio.sleep(_delay(prompt, "plain"))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(0.002)
        return {"choices": [{"message": {"role": "assistant", "content": _answer(prompt, "plain", 2)}}]}


def assistant_message(completion):
    return {"role": "assistant", "content": completion["choices"][0]["message"]["content"]}


@poppy
def first_round(question, agents):
    contexts = [[{"role": "user", "content": f"{question} (agent {a})"}] for a in range(agents)]
    for i, context in enumerate(contexts):
        completion = chat(context)
        context.append(assistant_message(completion))
        print(completion)
    return [c[-1]["content"] for c in contexts]


print(first_round("What is 2+3*4?", 3))
