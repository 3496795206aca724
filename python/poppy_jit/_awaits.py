"""`await` in a compiled `@poppy async def` (src/lift/awaits.rs): the two intrinsics it lowers to.

`await x` of any awaitable is `await_value(x)`: one sequential external, awaited as a task on the
running loop of the caller (the host makes a task of every `async def` external). `await f(...)`
is a call of `await_call_of(f)` (cheap and unobservable: made by the statement itself as soon as
`f` is known, like a global load, so that the call's callee is known when it is reached):

- an annotated `async def` external (or a method, partial or callable object wrapping one): `f`
  itself, so the call keeps its reordering class and overlaps as its class allows;
- an annotated synchronous external (it returns an awaitable): an `async def` external of the
  same class that calls it and awaits what it returns;
- a @poppy `async def`: `AwaitedPoppy(f)`, which the host inlines like a call of a sync @poppy
  function (host/inline.rs); called instead (when it is not inlined) it awaits `f(...)`;
- anything else (a plain coroutine function, `asyncio.sleep`, …): one sequential external that
  calls `f(...)` and awaits the result.

`async with m` (src/lift/with_stmt.rs) calls `aenter_awaited(m.__aenter__)` and
`aexit_awaited(m.__aexit__, …)` (bound by `_intrinsics`' `async_with_enter`/`async_with_exit`):
each one sequential external that calls the method and awaits its result, with GET_AWAITABLE's
TypeError for a result that is not awaitable.
"""
from __future__ import annotations

import functools
import types

from ._decorators import readonly, sequential, unordered

_CO_COROUTINE = 0x80


@sequential
async def await_value(x):
    return await x


@sequential
async def _await_sequential(f, *args, **kwargs):
    return await f(*args, **kwargs)


@unordered
async def _await_unordered(f, *args, **kwargs):
    return await f(*args, **kwargs)


@readonly
async def _await_readonly(f, *args, **kwargs):
    return await f(*args, **kwargs)


_CO_ITERABLE_COROUTINE = 0x100


def _awaitable(x):
    """Whether `GET_AWAITABLE` takes `x` without its "does not implement __await__" error: a
    coroutine, a generator-based coroutine (`types.coroutine`), or an object whose type has
    `__await__` (the `am_await` slot: the method in the dict of a class of its MRO)."""
    t = type(x)
    if t is types.CoroutineType:
        return True
    if t is types.GeneratorType and x.gi_code.co_flags & _CO_ITERABLE_COROUTINE:
        return True
    return any("__await__" in k.__dict__ for k in t.__mro__)


def _not_awaitable(method, x):
    from ._intrinsics import _tp_name
    return TypeError(f"'async with' received an object from {method} that does not implement __await__: "
                     f"{_tp_name(x)[:100]}")


@sequential
async def aenter_awaited(aenter):
    """`async with`'s entry: `await m.__aenter__()` (BEFORE_ASYNC_WITH's call, GET_AWAITABLE 1)."""
    aw = aenter()
    if not _awaitable(aw):
        raise _not_awaitable("__aenter__", aw)
    return await aw


@sequential
async def aexit_awaited(aexit, exc_type, exc, tb):
    """`async with`'s exit: `await m.__aexit__(…)` (GET_AWAITABLE 2)."""
    aw = aexit(exc_type, exc, tb)
    if not _awaitable(aw):
        raise _not_awaitable("__aexit__", aw)
    return await aw


_BY_KIND = {"sequential": _await_sequential, "unordered": _await_unordered, "readonly": _await_readonly}


class AwaitedPoppy:
    """`await f(...)` of a @poppy `async def` f: the host inlines f's translation for it."""

    __slots__ = ("fn",)
    __poppy_awaited__ = True

    def __init__(self, fn):
        self.fn = fn

    @sequential
    async def __call__(self, *args, **kwargs):
        return await self.fn(*args, **kwargs)

    def __repr__(self):
        return f"<await {getattr(self.fn, '__qualname__', self.fn)}>"


def _spec(f):
    """The `__poppy_external__` spec of `f` or of the external it wraps (as host/callee.rs
    reads it), or None."""
    if isinstance(f, types.MethodType):
        f = f.__func__
    elif isinstance(f, functools.partial):
        return _spec(f.func)
    elif not isinstance(f, types.FunctionType):
        f = getattr(type(f), "__call__", None)
    return getattr(f, "__dict__", {}).get("__poppy_external__") if isinstance(f, types.FunctionType) else None


def await_call_of(f):
    spec = _spec(f)
    if spec is not None:
        if spec.is_async:
            return f
        return functools.partial(_BY_KIND.get(spec.kind, _await_sequential), f)
    if (isinstance(f, types.FunctionType) and getattr(f, "__poppy__", False)
            and f.__code__.co_flags & _CO_COROUTINE):
        return AwaitedPoppy(f)
    return functools.partial(_await_sequential, f)


# Made by the statement itself as soon as `f` is known, like a global load (host/callee.rs).
await_call_of.__poppy_eager__ = True
