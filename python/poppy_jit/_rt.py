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
from ._intrinsics import INTRINSICS, bound_check, intrinsic  # noqa: F401 (used by the Rust host)
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
# Support for the Rust executor (src/host/): blocking externals on worker threads, cancellation.

_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _thread_pool():
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="poppy-blocking")
    return _pool


def submit_blocking(loop, fn, args, kwargs):
    """Run a blocking external on a worker thread; returns the loop's future for it."""
    return loop.run_in_executor(_thread_pool(), functools.partial(fn, *args, **kwargs))


def cancel_all(loop, pending):
    """Cancel what an aborted run left in flight and let the cancellations finish, so no task of
    the run outlives it."""
    for fut in pending:
        fut.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


# ---------------------------------------------------------------------------------------------
# Type hints for results that have not arrived (classification of calls waiting for them).

_STAND_INS = {str: "", int: 0, float: 0.0, bool: False, bytes: b"", type(None): None, None: None}
_INTRINSIC_IDS = {id(f) for f in INTRINSICS.values()}


class _StandIn:
    """A stand-in value (wrapped, since None is a valid stand-in)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def return_stand_in(fn):
    """A value of `fn`'s declared return type if it is an immutable atom, else None."""
    import typing

    try:
        ret = typing.get_type_hints(fn).get("return", NotImplemented)
    except Exception:
        return None
    if ret is NotImplemented or ret not in _STAND_INS:
        return None
    return _StandIn(_STAND_INS[ret])


def hint_apply(f, args):
    """The result of an intrinsic on stand-ins, when that is pure and an immutable atom."""
    if id(f) not in _INTRINSIC_IDS or classify(f, args, ()) != 0:
        return None
    try:
        r = f(*args)
    except Exception:
        return None
    return _StandIn(r) if type(r) in _STAND_INS else None
