"""Calling @poppy code from inside a running event loop (Jupyter, async applications).

The λO runtime drives an event loop of its own while external calls are in flight, so it cannot
run on a thread whose loop is already running. `await poppy_jit.run(fn, *args)` runs the call on
a worker thread — where the runtime has that thread's own loop — and awaits the result, so the
caller's loop keeps serving other tasks meanwhile. A plain synchronous call of a @poppy function
inside a running loop is declined by the hook and runs as ordinary sequential Python (correct,
not parallel); it never deadlocks.

Cancelling the awaiting task cancels the run: the worker's runtime is woken, aborts with
CancelledError, cancels and reaps the externals it has in flight, and `run` re-raises the
cancellation only once the worker is done, so no task of the run outlives it. Without the runtime
(PYTHONPOPPY unset) the call runs plainly on the worker and cancelling cancels the await it is in. (Blocking externals
already running on worker threads finish on their own: threads cannot be cancelled.)
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


class _Cancel:
    """A run's cancellation request, set from the caller's thread, read by the worker's runtime
    (through `_loop.take_cancel`) when its event loop wakes."""

    def __init__(self) -> None:
        self.requested = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock = threading.Lock()

    def request(self) -> None:
        from ._decorators import is_enabled

        with self.lock:
            self.requested = True
            if self.loop is not None and not self.loop.is_closed():
                if is_enabled():  # the runtime reads the request when its loop wakes
                    self.loop.call_soon_threadsafe(self.loop.stop)
                else:  # plain code: cancel the awaits in progress, as asyncio would
                    self.loop.call_soon_threadsafe(_cancel_tasks, self.loop)


def _cancel_tasks(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


def _work(cancel: _Cancel, call):
    from . import _loop

    with cancel.lock:
        cancel.loop = _loop.get_loop()
    _loop.set_cancel(cancel)
    try:
        return call()
    finally:
        _loop.set_cancel(None)
        with cancel.lock:
            cancel.loop = None


async def run(fn, /, *args, **kwargs):
    """Run `fn(*args, **kwargs)` (typically a @poppy function) without blocking the running loop.
    Cancelling the awaiting task cancels the run's in-flight externals."""
    cancel = _Cancel()
    done = _executor().submit(_work, cancel, functools.partial(fn, *args, **kwargs))
    # One asyncio future for the worker's outcome, awaited (so retrieved) whatever happens: a
    # second wrapper, or none awaited after a cancellation, would be reported at garbage
    # collection as "Future exception was never retrieved".
    outcome = asyncio.wrap_future(done)
    try:
        return await asyncio.shield(outcome)
    except asyncio.CancelledError:
        cancel.request()
        # Wait (without blocking the loop) for the worker to abort and reap its externals.
        try:
            await outcome
        except BaseException:  # the run's own outcome (CancelledError) does not matter here
            pass
        raise
