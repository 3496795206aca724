# Awaiting what is not an annotated external: asyncio.sleep, a user coroutine (called then
# awaited, or created first and awaited later), a task. Each is one sequential external in program
# order; the annotated LLM calls around them still overlap.
# difftest: min_in_flight=2
# difftest: coroutine=1
import asyncio

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


async def shout(text):
    await asyncio.sleep(0.001)
    print("shout", text.upper()[:12])
    return text.upper()


@poppy
async def pipeline(topics):
    await asyncio.sleep(0.001)
    first = await llm(f"intro {topics[0]}")
    loud = await shout(first)
    later = shout("later")
    answers = []
    for t in topics:
        answers.append(await llm(f"facts {t}", n=2))
    log("between")
    got = await later
    task = asyncio.ensure_future(shout("task"))
    t2 = await task
    none = await asyncio.sleep(0)
    print(len(loud), got, t2, none, [a.splitlines()[0] for a in answers])
    return answers


print(len(asyncio.run(pipeline(["owls", "bats", "moths"]))))
