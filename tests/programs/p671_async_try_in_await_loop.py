# A try statement inside a loop of awaits in a @poppy async def (issue 16): each iteration's try
# body is gated (no call after one that may raise starts before that one is known not to have),
# but the iterations are independent, so the annotated LLM requests of all items are in flight
# together; a failing item's handler retries (awaits again), its finally clause logs in CPython's
# order. A second function re-raises wrapped (`raise … from`) from inside the loop.
# difftest: min_in_flight=6
# difftest: coroutine=1
import asyncio

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@poppy
async def classify_all(items):
    labels = []
    for it in items:
        try:
            label = (await llm(f"{'fail: ' if it % 3 == 0 else ''}classify {it}")).split()[0]
        except ValueError as e:
            label = (await llm(f"classify strictly {it} after {e}")).split()[0]
        else:
            label = label.upper()
        finally:
            log(f"done {it}")
        labels.append(label)
    return labels


@poppy
async def first_failure(items):
    out = []
    for it in items:
        try:
            out.append(await llm(f"{'fail: ' if it == 4 else ''}item {it}"))
        except ValueError as e:
            raise RuntimeError(f"item {it} failed") from e
    return out


async def main():
    print(await classify_all(list(range(1, 9))))
    try:
        print(await first_failure(list(range(1, 7))))
    except RuntimeError as e:
        print("raised", e, "from", repr(e.__cause__))


asyncio.run(main())
