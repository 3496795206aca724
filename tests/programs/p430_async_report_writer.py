# An async report writer written one `await` after another (issue 16): per item a summary, a
# title and a verdict from the LLM, then a printed line. Under PYTHONPOPPY=1 the compiled
# coroutine runs on asyncio.run's loop and the independent awaits overlap (all items at once);
# the prints and logs keep CPython's order.
# difftest: min_in_flight=6
# difftest: coroutine=1
import asyncio

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


@poppy
async def report(items):
    lines = []
    for it in items:
        summary = await llm(f"summarize {it}")
        title = await llm(f"title for {it}", style="short")
        verdict = await llm(f"grade {summary}", n=1)
        line = f"{title.splitlines()[0]} | {verdict.splitlines()[0]}"
        log(f"wrote {it}")
        print(line)
        lines.append(line)
    return lines


async def main():
    lines = await report(["rivers", "peaks", "caves", "dunes"])
    print(len(lines), "lines")


asyncio.run(main())
