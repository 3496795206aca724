"""Event loops for async externals.

Every thread gets one persistent asyncio event loop (`get_loop`).  It is created on first use and
never closed while its thread lives (it is closed when the thread ends), so objects bound to a loop — an `openai.AsyncOpenAI` client,
an `httpx.AsyncClient` connection pool — keep working from one call to the next.  This is why
poppy_jit does not use `asyncio.run`, which creates and closes a fresh loop on every call.

`run_sync(coro)` runs a coroutine to completion and returns its value.  Normally it uses this
thread's loop.  If a loop is already *running* in this thread (the caller is itself inside async
code), blocking that loop with `run_until_complete` is impossible, so the coroutine is handed to a
worker thread with its own persistent loop and the caller blocks until the result is ready.  Workers
are taken from a pool of idle ones or created on demand; a busy worker is never reused, so nested
`run_sync` calls (a coroutine on a worker that itself calls `run_sync`) cannot deadlock.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
from typing import Any, Coroutine, TypeVar

__all__ = ["get_loop", "run_sync"]

T = TypeVar("T")

_local = threading.local()


class _ThreadLoop:
    """Holds a thread's loop in `_local`; closes it when the thread's locals are dropped."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        # λO runs on this thread using the loop for their externals (`runtime_loop`).
        self.runtime_users = 0

    def __del__(self) -> None:
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


def set_cancel(request) -> None:
    """Attach a cancellation request (an object with a `requested` flag) to this thread's runs."""
    _local.cancel = request


def take_cancel() -> bool:
    """Whether this thread's current run was asked to stop (called by the runtime when its loop
    wakes with nothing finished)."""
    request = getattr(_local, "cancel", None)
    return bool(request is not None and request.requested)


def get_loop() -> asyncio.AbstractEventLoop:
    """This thread's persistent event loop (created on first use, closed when the thread ends)."""
    holder = getattr(_local, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _local.holder = _ThreadLoop()
    return holder.loop


def runtime_loop() -> asyncio.AbstractEventLoop:
    """This thread's loop, for a λO run: marked in use until `release_runtime_loop`, so that an
    async external called plainly meanwhile (by a helper or generator the run calls) runs on a
    worker thread's loop instead of running, and being stopped by, the run's loop."""
    loop = get_loop()
    _local.holder.runtime_users += 1
    return loop


def release_runtime_loop() -> None:
    holder = getattr(_local, "holder", None)
    if holder is not None and holder.runtime_users > 0:
        holder.runtime_users -= 1


class _Worker:
    """A daemon thread running submitted coroutines one at a time on its own persistent loop."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="poppy-loop-worker", daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((coro, fut))
        return fut

    def _run(self) -> None:
        loop = get_loop()
        while True:
            coro, fut = self._jobs.get()
            try:
                fut.set_result(loop.run_until_complete(coro))
            except BaseException as exc:  # delivered to the waiting caller, re-raised there
                fut.set_exception(exc)
            finally:
                _release(self)


_pool_lock = threading.Lock()
_idle: list[_Worker] = []


def _acquire() -> _Worker:
    with _pool_lock:
        if _idle:
            return _idle.pop()
    return _Worker()


def _release(worker: _Worker) -> None:
    with _pool_lock:
        _idle.append(worker)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its result (or raise its exception).

    Uses this thread's persistent loop; if that thread already runs an event loop, or a λO run on
    this thread is using its loop (`runtime_loop`), runs the coroutine on an idle worker thread's
    loop instead and blocks for the result (never deadlocks).
    """
    if not asyncio.iscoroutine(coro):
        raise TypeError(f"run_sync expects a coroutine, got {type(coro).__name__}")
    # The check must not leave its RuntimeError as the context of the coroutine's own exception:
    # run the coroutine outside the `except` block, so a failure chains exactly as in CPython.
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    holder = getattr(_local, "holder", None)
    if not running and not (holder is not None and holder.runtime_users):
        return get_loop().run_until_complete(coro)
    return _acquire().submit(coro).result()
