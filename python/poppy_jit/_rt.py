"""Runtime support for the Rust λO runtime (src/host/): exit-status helpers of lowering,
cancellation of an aborted run's tasks, and stand-in values for type hints. Intrinsics live in
`_intrinsics`, classification in `_annotations`; the ones the Rust host looks up on this module
are re-exported here.
"""
from __future__ import annotations

import asyncio
import types

from ._annotations import classify  # noqa: F401 (used by the Rust host)
from ._intrinsics import INTRINSICS, bound_check, intrinsic, intrinsic_fresh  # noqa: F401 (used by the Rust host)
from ._decorators import unordered
from ._loop import take_cancel  # noqa: F401 (used by the Rust host)

# Exit-status helpers used by lowering (src/lower.rs): 0 normal, 1 break, 2 continue, 3 return.
HELPERS = {
    "loop_next": unordered(lambda s: 0 if s == 2 else s),
    "loop_exit": unordered(lambda s: 0 if s == 1 else s),
    "loop_again": unordered(lambda s: s == 0 or s == 2),
    "select_return": unordered(lambda s, v: v if s == 3 else None),
}


# ---------------------------------------------------------------------------------------------
# Support for the Rust executor (src/host/): cancellation. Blocking externals run on the
# runtime's own worker threads (src/host/pool.rs).

def cancel_all(loop, pending):
    """Cancel what an aborted run left in flight and let the cancellations finish, so no task of
    the run outlives it. Blocking calls (`_core.BlockingCall`) are only marked cancelled: their
    threads finish the call and the result is dropped."""
    for fut in pending:
        fut.cancel()
    tasks = [f for f in pending if asyncio.isfuture(f)]
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


# ---------------------------------------------------------------------------------------------
# Type hints for results that have not arrived (classification of calls waiting for them).

_STAND_INS = {str: "", int: 0, float: 0.0, bool: False, bytes: b"", type(None): None, None: None}
_INTRINSIC_IDS = {id(f) for f in INTRINSICS.values()}


class _StandIn:
    """A stand-in value (wrapped, since None is a valid stand-in)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _immutable_type(t) -> bool:
    """An immutable atom type, or tuple[...] / a union of such types."""
    import typing

    if t in _STAND_INS:
        return True
    origin = typing.get_origin(t)
    if origin is tuple or origin is typing.Union or origin is types.UnionType:
        return all(a is Ellipsis or _immutable_type(a) for a in typing.get_args(t))
    return False


def return_stand_in(fn):
    """A stand-in for `fn`'s result when its declared return type is immutable: an atom, a tuple
    of such, or a union of them (the annotation library classifies every deeply immutable value
    alike, so any member stands for all). None otherwise."""
    import typing

    try:
        ret = typing.get_type_hints(fn).get("return", NotImplemented)
    except Exception:
        return None
    if ret is NotImplemented or not _immutable_type(ret):
        return None
    if ret in _STAND_INS:
        return _StandIn(_STAND_INS[ret])
    atoms = [a for a in typing.get_args(ret) if a in _STAND_INS]
    return _StandIn(_STAND_INS[atoms[0]]) if atoms else _StandIn(())


def hint_apply(f, args):
    """The result of an intrinsic on stand-ins, when that is pure and an immutable atom."""
    if id(f) not in _INTRINSIC_IDS or classify(f, args, ()) != 0:
        return None
    try:
        r = f(*args)
    except Exception:
        return None
    return _StandIn(r) if type(r) in _STAND_INS else None
