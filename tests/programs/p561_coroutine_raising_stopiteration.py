# A StopIteration escaping the body of a compiled `async def` (a `next` on an exhausted
# iterator) is CPython's `RuntimeError: coroutine raised StopIteration`, the StopIteration as its
# __cause__ and __context__. The compiled run raised the StopIteration itself from the awaited
# run, and the prologue's await took it for the run's return value: the coroutine returned None
# silently (found while compiling async def on 3.12/3.13; the same on 3.11).
# difftest: expect_rc=1
import asyncio

from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.2)


@poppy
async def first_line(prompt):
    answer = await llm(prompt)
    lines = iter([ln for ln in answer.split("\n") if ln.startswith("#")])
    return next(lines)


@poppy
async def first_value(prompt):
    answer = await llm(prompt)
    return next(iter([answer]))


async def main():
    print(await first_value("a question"))
    try:
        print(await first_line("another question"))
    except RuntimeError as e:
        print("RuntimeError:", e, type(e.__cause__).__name__, type(e.__context__).__name__,
              e.__suppress_context__)
    await first_line("a last question")


asyncio.run(main())
