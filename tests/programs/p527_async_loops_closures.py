# Awaits in the shapes CPython 3.12 and 3.13 compile differently from 3.11 (their await loops
# end in END_SEND with a CLEANUP_THROW handler, normalised into 3.11's): in a while loop's body
# and test, a conditional expression, `and`/`or`, an f-string, a closure over a parameter that is
# a cell, a nested @poppy coroutine with a free variable, an await whose value is dropped. The
# annotated LLM calls of the loops still overlap.
# difftest: min_in_flight=3
# difftest: coroutine=1
import asyncio

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


def make_tagger(tag):
    @poppy
    async def tagged(text):
        return f"{tag}:{(await llm(f'tag {text}', n=1))[:10]}"
    return tagged


@poppy
async def digest(topics, limit):
    def short(s):
        return s[:limit]

    found = []
    for t in topics:
        found.append(short(await llm(f"find {t}", n=2)))
    i = 0
    while i < len(topics) and len(await llm(f"check {topics[i]}", n=1)) > 3:
        i += 1
    pick = (await llm("pick a", n=1)) if limit > 5 else await llm("pick b", n=1)
    both = limit and await llm("both", n=1)
    await asyncio.sleep(0)
    log(f"checked {i} {short(pick)} {both[:5]!r}")
    tag = await make_tagger("t")(topics[0])
    return found, tag


found, tag = asyncio.run(digest(["owls", "bats", "moths"], 8))
print(found)
print(tag)
