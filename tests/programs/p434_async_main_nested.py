# asyncio.run(main()) where main is itself @poppy async: it awaits other @poppy async functions
# (inlined into its run, so their awaits overlap with each other), calls a sync @poppy function,
# a blocking external and a plain coroutine, and hands a not-awaited coroutine to gather.
# difftest: min_in_flight=4
# difftest: coroutine=1
import asyncio

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.2)


@poppy
async def outline(topic, depth=2):
    parts = []
    for i in range(depth):
        parts.append((await llm(f"part {i} of {topic}", n=1)).strip())
    return parts


@poppy
def headline(parts):
    return " / ".join(p[:10] for p in parts)


async def plain_step(x):
    await asyncio.sleep(0)
    return x + 1


@poppy
async def main(topics):
    docs = {}
    for t in topics:
        parts = await outline(t)
        docs[t] = headline(parts)
        log(f"outlined {t}")
    extra = await asyncio.gather(outline("glaciers", depth=1), plain_step(41))
    k = lookup("key-1")
    print(k, await plain_step(1), extra[1], len(extra[0]))
    for t in topics:
        print(t, docs[t])
    return len(docs)


print(asyncio.run(main(["volcanoes", "reefs", "tundra"])))
