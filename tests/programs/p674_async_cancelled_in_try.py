# Cancelling the task that awaits a compiled @poppy async def (asyncio.wait_for timing out) while
# it is suspended inside a try or async with body: CPython raises CancelledError at that await,
# so an `async with`'s `__aexit__` gets it (a lock released, a session closed), a finally clause
# runs, an `except CancelledError` handler runs and re-raises; outside any try the run just ends.
# The later state (the lock free again) is printed.
# difftest: coroutine=1
import asyncio

from poppy_jit import poppy, unordered
from _ext import log


@unordered
async def slow(x):
    await asyncio.sleep(2)
    return x


class Session:
    def __init__(self, name):
        self.name = name

    async def __aenter__(self):
        print("open", self.name)
        return self

    async def __aexit__(self, et, ev, tb):
        await asyncio.sleep(0)
        log(f"close {self.name} {et.__name__ if et else None}")
        return False


lock = asyncio.Lock()


@poppy
async def in_async_with(k):
    async with Session(k) as s:
        return await slow(s.name)


@poppy
async def holding_lock(k):
    async with lock:
        got = await slow(k)
    return got


@poppy
async def in_finally(k):
    got = None
    try:
        got = await slow(k)
    finally:
        print("cleanup", k, got)
    return got


@poppy
async def handler(k):
    try:
        return await slow(k)
    except asyncio.CancelledError:
        print("cancelled at the await", k)
        raise


@poppy
async def outside(k):
    return await slow(k)


async def main():
    for fn in (in_async_with, holding_lock, in_finally, handler, outside):
        try:
            await asyncio.wait_for(fn(fn.__name__), 0.2)
        except asyncio.TimeoutError:
            print(fn.__name__, "timed out; lock held:", lock.locked())


asyncio.run(main())
