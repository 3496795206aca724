"""poppy_jit._loop: persistent per-thread loops and run_sync."""
import asyncio
import threading

import pytest

from poppy_jit import _loop


def test_get_loop_is_persistent_per_thread():
    loop = _loop.get_loop()
    assert _loop.get_loop() is loop and not loop.is_closed()
    other = []
    t = threading.Thread(target=lambda: other.append(_loop.get_loop()))
    t.start()
    t.join()
    assert other[0] is not loop


def test_run_sync_reuses_the_loop_so_loop_bound_objects_survive():
    # An object bound to the loop of the first call (like an AsyncOpenAI client's connection
    # pool) must still work in the second call: asyncio.run would have closed that loop.
    async def make_queue():
        q = asyncio.Queue()
        await q.put(1)  # binds q to the running loop
        return q, asyncio.get_running_loop()

    async def use(q):
        await q.put(2)
        return [await q.get(), await q.get()], asyncio.get_running_loop()

    q, loop1 = _loop.run_sync(make_queue())
    values, loop2 = _loop.run_sync(use(q))
    assert values == [1, 2] and loop1 is loop2 is _loop.get_loop()
    assert not loop1.is_closed()


def test_run_sync_returns_values_and_raises_exceptions():
    async def ok():
        await asyncio.sleep(0.001)
        return "done"

    async def bad():
        raise KeyError("k")

    assert _loop.run_sync(ok()) == "done"
    with pytest.raises(KeyError):
        _loop.run_sync(bad())
    with pytest.raises(TypeError, match="expects a coroutine"):
        _loop.run_sync(ok)


def test_run_sync_inside_a_running_loop_uses_a_worker_and_nests():
    async def where():
        return threading.get_ident(), asyncio.get_running_loop()

    async def nested(depth):
        # Each level blocks its loop's thread while a deeper level runs elsewhere.
        if depth == 0:
            return await where()
        return _loop.run_sync(nested(depth - 1))

    async def outer():
        return threading.get_ident(), asyncio.get_running_loop(), _loop.run_sync(nested(3))

    main_tid, main_loop, (inner_tid, inner_loop) = asyncio.run(outer())
    assert main_tid == threading.get_ident()
    assert inner_tid != main_tid and inner_loop is not main_loop


def test_worker_loops_are_reused():
    async def loop_of():
        return asyncio.get_running_loop()

    async def outer():
        return _loop.run_sync(loop_of()), _loop.run_sync(loop_of())

    first, second = asyncio.run(outer())
    assert first is second and not first.is_closed()
