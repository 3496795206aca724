"""Calling @poppy code from inside a running event loop (Jupyter, async applications).

The λO runtime drives an event loop of its own while external calls are in flight, so it cannot
run on a thread whose loop is already running. `await poppy_jit.run(fn, *args)` runs the call on
a worker thread — where the runtime has that thread's own loop — and awaits the result, so the
caller's loop keeps serving other tasks meanwhile. A plain synchronous call of a @poppy function
inside a running loop is declined by the hook and runs as ordinary sequential Python (correct,
not parallel); it never deadlocks.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="poppy-run")
        return _pool


async def run(fn, /, *args, **kwargs):
    """Run `fn(*args, **kwargs)` (typically a @poppy function) without blocking the running loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_executor(), functools.partial(fn, *args, **kwargs))
