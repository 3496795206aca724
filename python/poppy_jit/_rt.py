"""Runtime support for the Rust λO runtime (src/host/): the executor for asynchronous and blocking
externals and the exit-status helpers of lowering. Intrinsics live in `_intrinsics`, classification in
`_annotations`; both are re-exported here because the Rust host looks them up on this module.
"""
from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import functools
import types

from ._annotations import classify, register  # noqa: F401 (used by the Rust host)
from ._intrinsics import bound_check, intrinsic  # noqa: F401 (used by the Rust host)
from ._decorators import unordered
from ._loop import get_loop

# Exit-status helpers used by lowering (src/lower.rs): 0 normal, 1 break, 2 continue, 3 return.
HELPERS = {
    "loop_next": unordered(lambda s: 0 if s == 2 else s),
    "loop_exit": unordered(lambda s: 0 if s == 1 else s),
    "loop_again": unordered(lambda s: s == 0 or s == 2),
    "select_return": unordered(lambda s, v: v if s == 3 else None),
}


# ---------------------------------------------------------------------------------------------
# Executor: runs async externals on this thread's event loop and blocking ones on worker threads.

_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _thread_pool():
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="poppy-blocking")
    return _pool


class Executor:
    """One per λO run. Completions are queued by done-callbacks, which stop the loop so that the
    Rust runtime regains control: no polling."""

    def __init__(self):
        self.loop = get_loop()
        if self.loop.is_running():
            raise RuntimeError("poppy_jit: event loop already running")
        self.done = []
        self.running = {}

    def _finished(self, task_id, fut):
        self.running.pop(task_id, None)
        self.done.append((task_id, fut))
        self.loop.stop()

    def submit_coro(self, task_id, coro):
        task = self.loop.create_task(coro)
        self.running[task_id] = task
        task.add_done_callback(functools.partial(self._finished, task_id))

    def submit_blocking(self, task_id, fn, args, kwargs):
        fut = self.loop.run_in_executor(_thread_pool(), functools.partial(fn, *args, **kwargs))
        self.running[task_id] = fut
        fut.add_done_callback(functools.partial(self._finished, task_id))

    def cancel_all(self):
        """Cancel whatever still runs (the run was aborted) and let the cancellations finish, so
        no task of this run outlives it."""
        pending = list(self.running.values())
        self.running.clear()
        for fut in pending:
            fut.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.done.clear()

    def wait(self):
        """Block until at least one submitted call finished; return [(task_id, ok, value)]."""
        if not self.done:
            self.loop.run_forever()
        out = []
        for task_id, fut in self.done:
            if fut.cancelled():
                out.append((task_id, False, asyncio.CancelledError()))
                continue
            exc = fut.exception()
            out.append((task_id, True, fut.result()) if exc is None else (task_id, False, exc))
        self.done.clear()
        return out
