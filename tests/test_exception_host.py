"""The host's side of compiled try/except (docs/design-exceptions.md, stage 1 (c)): the
`exc_match` and `reraise` helpers lowering emits, and the handled exception set around the calls
an `except` handler makes (`_core._with_handled` for a call, `_core.Handling` for a coroutine).
Each is compared with what CPython itself does for the same statement."""
import asyncio
import sys
import traceback

import pytest

from poppy_jit import _core, _rt

exc_match = _rt.HELPERS["exc_match"].__poppy_external__.fn
reraise = _rt.HELPERS["reraise"].__poppy_external__.fn


def cpython_match(exc, cls):
    """What `except cls:` does with `exc` in CPython: True/False, or the exception it raises."""
    try:
        try:
            raise exc
        except cls:
            return True
    except BaseException as e:
        if e is exc:
            return False
        return type(e), str(e)


class Meta(type):
    def __instancecheck__(cls, obj):
        return True

    def __subclasscheck__(cls, sub):
        return True


class Hooked(Exception, metaclass=Meta):
    pass


class Sub(KeyError):
    pass


@pytest.mark.parametrize("exc", [KeyError("k"), Sub("s"), ValueError(3), KeyboardInterrupt(), Hooked()])
@pytest.mark.parametrize("cls", [
    KeyError, LookupError, Exception, BaseException, ValueError, Sub, Hooked,
    (KeyError, ValueError), (), (TypeError,), (Hooked, OSError),
    3, "KeyError", (KeyError, 3), (KeyError, (ValueError,)), int, (int,), object,
])
def test_exc_match_is_check_exc_match(exc, cls):
    want = cpython_match(exc, cls)
    try:
        got = exc_match(exc, cls)
    except TypeError as e:
        got = (TypeError, str(e))
    assert got == want


def test_reraise_fails_with_the_same_object_unchanged():
    def inner():
        raise ValueError("original")

    try:
        inner()
    except ValueError as e:
        caught = e
    tb = caught.__traceback__
    context = caught.__context__
    # Re-raised while another exception is handled: a `raise` statement would set __context__.
    try:
        raise KeyError("elsewhere")
    except KeyError:
        with pytest.raises(ValueError) as info:
            reraise(_rt.Caught(caught, 7))
    assert info.value is caught
    assert caught.__context__ is context is None
    # The traceback is the original one with only the entries of the frames it passed through
    # on the way out (reraise's own, which the host drops, and this test's).
    entries = traceback.extract_tb(caught.__traceback__)
    assert [e.name for e in entries][-2:] == ["test_reraise_fails_with_the_same_object_unchanged", "inner"]
    assert any(e.name == "reraise" for e in entries)
    t = caught.__traceback__
    while t is not None and t.tb_frame.f_code is not _rt.RERAISE_CODE:
        t = t.tb_next
    assert t is not None and t.tb_next is tb


def test_with_handled_sets_the_handled_exception_and_restores_it():
    caught = ValueError("handled")
    seen = []

    def call(x):
        seen.append((sys.exc_info()[1], sys.exception(), _core._handled()))
        if x:
            raise RuntimeError("in the handler")
        return "ok"

    assert sys.exception() is None
    assert _core._with_handled(caught, call, 0) == "ok"
    assert seen == [(caught, caught, caught)]
    assert sys.exception() is None and _core._handled() is None
    with pytest.raises(RuntimeError) as info:
        _core._with_handled(caught, call, 1)
    assert info.value.__context__ is caught and not info.value.__suppress_context__
    # Inside an outer handler: that one is back after the call.
    try:
        raise KeyError("outer")
    except KeyError as outer:
        _core._with_handled(caught, call, 0)
        assert sys.exception() is outer
    assert sys.exception() is None


def test_logging_exception_in_a_handled_call(caplog):
    import logging

    def inner():
        raise ValueError("logged")

    try:
        inner()
    except ValueError as e:
        caught = e
    caplog.set_level(logging.ERROR)
    _core._with_handled(caught, logging.getLogger("t").exception, "failed")
    assert "ValueError: logged" in caplog.text and "in inner" in caplog.text


def test_a_coroutine_is_stepped_with_the_handled_exception():
    caught = ValueError("handled")
    seen = []

    async def helper():
        seen.append(sys.exception())
        await asyncio.sleep(0)
        seen.append(sys.exception())
        try:
            raise KeyError("inside")
        except KeyError:
            seen.append(sys.exception())
        seen.append(sys.exception())
        await asyncio.sleep(0.001)
        raise RuntimeError("from the coroutine")

    async def other():
        for _ in range(3):
            seen.append(("other", sys.exception()))
            await asyncio.sleep(0)

    async def main():
        t = asyncio.get_running_loop().create_task(_core.Handling(helper(), caught))
        o = asyncio.get_running_loop().create_task(other())
        await o
        with pytest.raises(RuntimeError) as info:
            await t
        assert sys.exception() is None
        return info.value

    err = asyncio.run(main())
    assert err.__context__ is caught
    mine = [s for s in seen if type(s) is not tuple]
    assert mine[0] is caught and mine[1] is caught and mine[3] is caught
    assert type(mine[2]) is KeyError and mine[2].__context__ is caught
    assert [s for s in seen if type(s) is tuple] == [("other", None)] * 3


def test_a_handled_coroutine_returns_its_value():
    async def f(x):
        await asyncio.sleep(0)
        return x * 2

    async def main():
        return await asyncio.get_running_loop().create_task(_core.Handling(f(21), ValueError()))

    assert asyncio.run(main()) == 42


@pytest.mark.parametrize("key,args,statement", [
    ("load_global", ({}, "no_such_name"), "no_such_name"),
    ("unpack_sequence", (5, 2), "a, b = 5"),
    ("list_extend", ([], 5), "[*5]"),
])
def test_intrinsic_errors_take_the_handled_exception_as_context(key, args, statement):
    """An intrinsic failing while a handler runs: `__context__` is the handled exception, shown
    (not suppressed), as for the statement CPython runs."""
    from poppy_jit._intrinsics import INTRINSICS

    caught = ValueError("handled")
    try:
        raise caught
    except ValueError:
        try:
            exec(statement, {})
        except Exception as e:
            want = e
    with pytest.raises(type(want)) as info:
        _core._with_handled(caught, INTRINSICS[key], *args)
    got = info.value
    assert str(got) == str(want)
    assert got.__context__ is caught is want.__context__
    assert got.__suppress_context__ == want.__suppress_context__ is False


def test_helpers_take_the_caught_value():
    """Lowering passes the catching call's value (`_rt.Caught`) to `exc_match`, `reraise` and
    as the `handling` slot; each uses the exception it holds."""
    err = KeyError("k")
    caught = _rt.Caught(err, 3)
    assert exc_match(caught, LookupError) is True and exc_match(caught, (ValueError,)) is False
    assert _core._with_handled(caught, sys.exception) is err
    with pytest.raises(KeyError) as info:
        reraise(caught)
    assert info.value is err
    is_raised = _rt.HELPERS["is_raised"].__poppy_external__.fn
    assert [is_raised(s) for s in range(5)] == [False] * 4 + [True]
