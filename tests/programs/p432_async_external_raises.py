# An awaited external raises: the exception is CPython's (type, message), raised at the await,
# after the sequential calls CPython made before it and none after.
# difftest: expect_rc=1
import asyncio

from poppy_jit import poppy, unordered
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


@unordered
async def parse(text):
    await asyncio.sleep(0.002)
    if "fjords" in text:
        raise ValueError(f"cannot parse {text[:20]!r}")
    return len(text)


@poppy
async def digest(topics):
    total = 0
    for t in topics:
        raw = await llm(f"describe {t}")
        n = await parse(f"{t}: {raw}")
        log(f"parsed {t}")
        total += n
    return total


async def main():
    try:
        await digest(["lakes", "bays"])
        print("first ok")
    except ValueError as e:
        print("unexpected", e)
    print(await digest(["lakes", "fjords", "bays"]))


asyncio.run(main())
