# @poppy async functions called from plain asyncio code: gathered, awaited in a task, run with
# wait_for. Each compiled run is a coroutine on the caller's loop; gathered runs overlap with each
# other as plain asyncio would, and their own awaits overlap inside each.
# difftest: min_in_flight=4
# difftest: coroutine=1
# The plain run overlaps the gathered coroutines' calls itself (concurrent asyncio tasks):
# difftest: threads=1
# The gathered runs make no sequential call: the order in which concurrent tasks reach one is a
# race in plain asyncio too (it follows the calls' latencies), so only the runs awaited one at a
# time (`noted`) make them.
import asyncio

from poppy_jit import poppy
from _ext import llm, note, set_latency_scale

set_latency_scale(0.2)


@poppy
async def pair(topic):
    a = await llm(f"pros of {topic}")
    b = await llm(f"cons of {topic}")
    return f"{topic}: {len(a)}/{len(b)}"


@poppy
async def noted(topic):
    r = await pair(topic)
    note(f"pair {topic}")
    return r


async def main():
    results = await asyncio.gather(pair("tea"), pair("coffee"), pair("cocoa"))
    print(results)
    t = asyncio.create_task(noted("water"))
    print(await t)
    print(await asyncio.wait_for(noted("milk"), timeout=30))


asyncio.run(main())
