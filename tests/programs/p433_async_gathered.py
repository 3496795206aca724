# @poppy async functions called from plain asyncio code: gathered, awaited in a task, run with
# wait_for. Each compiled run is a coroutine on the caller's loop; gathered runs overlap with each
# other as plain asyncio would, and their own awaits overlap inside each.
# difftest: min_in_flight=4
# The plain run overlaps the gathered coroutines' calls itself (concurrent asyncio tasks):
# difftest: threads=1
import asyncio

from poppy_jit import poppy
from _ext import llm, note, set_latency_scale

set_latency_scale(0.2)


@poppy
async def pair(topic):
    a = await llm(f"pros of {topic}")
    b = await llm(f"cons of {topic}")
    note(f"pair {topic}")
    return f"{topic}: {len(a)}/{len(b)}"


async def main():
    results = await asyncio.gather(pair("tea"), pair("coffee"), pair("cocoa"))
    print(results)
    t = asyncio.create_task(pair("water"))
    print(await t)
    print(await asyncio.wait_for(pair("milk"), timeout=30))


asyncio.run(main())
