# `async with` in a @poppy async def (issue 16): `__aenter__`/`__aexit__` awaited as sequential
# awaits in CPython's order; a user `@contextlib.asynccontextmanager` manager and a class with
# `__aenter__`/`__aexit__` (suppressing and not); the exception passed to `__aexit__` (type,
# message, traceback); a return and a break inside the body; an `__aenter__` that raises; a plain
# `with` in an async def; the manager protocol's TypeErrors. Results, escaping exceptions and their
# frames are printed.
# difftest: coroutine=1
import asyncio
import contextlib
import os
import sys
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def frames(e):
    return [(os.path.basename(f.filename), f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)]


@contextlib.asynccontextmanager
async def section(name):
    log(f"start {name}")
    await asyncio.sleep(0.001)
    try:
        yield name.upper()
    except KeyError as e:
        log(f"section {name} swallowed {e!r}")
    except Exception as e:
        log(f"failed {name}: {type(e).__name__} {e} at {frames(e)[:1]}")
        raise
    else:
        log(f"end {name}")


class Session:
    def __init__(self, name, suppress=False, fail_enter=False):
        self.name, self.suppress, self.fail_enter = name, suppress, fail_enter

    async def __aenter__(self):
        await asyncio.sleep(0.001)
        log(f"open {self.name}")
        if self.fail_enter:
            raise ConnectionError(f"cannot open {self.name}")
        return self

    async def __aexit__(self, et, ev, tb):
        await asyncio.sleep(0.001)
        log(f"close {self.name} {et.__name__ if et else None} {ev!r} {tb is not None}")
        return self.suppress


class Odd:
    """`__aenter__` returning what is not awaitable, or `__aexit__` raising (seeing the handled
    exception in sys.exc_info())."""

    def __init__(self, how):
        self.how = how

    def __aenter__(self):
        if self.how == "enter":
            return 5
        return asyncio.sleep(0, result=self)

    async def __aexit__(self, et, ev, tb):
        log(f"odd exit sees {sys.exc_info()[0]}")
        if self.how == "exit":
            raise LookupError(f"exit failed after {ev!r}")
        return False


class Plain:
    def __enter__(self):
        log("plain enter")
        return 7

    def __exit__(self, *exc):
        log(f"plain exit {exc[0]}")


@poppy
async def in_section(topic, fail):
    async with section(topic) as title:
        text = await llm(f"{'fail: ' if fail == 'llm' else ''}about {title}")
        if fail == "key":
            raise KeyError(topic)
    return text


@poppy
async def in_session(topic, suppress, fail):
    text = "none"
    async with Session(topic, suppress) as s:
        text = await llm(f"{'fail: ' if fail else ''}session {s.name}")
        log(f"got {text[:12]}")
    return text


@poppy
async def returns_inside(topic):
    async with Session(topic) as s:
        return await llm(f"quick {s.name}")


@poppy
async def breaks_inside(topics):
    got = []
    for t in topics:
        async with Session(t) as s:
            if t == "stop":
                break
            got.append(await llm(f"loop {s.name}"))
    return got


@poppy
async def enter_fails(topic):
    # (Nothing unordered in the body: an unordered call after a failing one may be dispatched
    # in parallel with it, docs/annotations.md, "Known limitations".)
    async with Session(topic, fail_enter=True):
        log(f"never {topic}")
    return topic


@poppy
async def sync_with_in_async(topic):
    with Plain() as p:
        text = await llm(f"plain {topic} {p}")
    return text


@poppy
async def odd(how):
    async with Odd(how) as o:
        # (`how`, not `o.how`: on 3.12/3.13 an exception of a call whose value an operation of a
        # later try body uses gets an extra traceback entry at that operation, a known gap.)
        log(f"odd body {how}")
        if how == "exit":
            raise ValueError("body failed")
    return how


@poppy
async def nested(topic, fail):
    async with Session(f"outer {topic}") as a, Session(f"inner {topic}", suppress=fail == "inner") as b:
        text = await llm(f"{'fail: ' if fail else ''}{a.name} {b.name}")
    return text


@poppy
async def in_try(topics):
    out = []
    for t in topics:
        try:
            async with Session(t, suppress=False) as s:
                out.append(await llm(f"{'fail: ' if t == 'bad' else ''}try {s.name}"))
        except ValueError as e:
            out.append(f"caught {e}")
    return out


@poppy
async def sync_with_try(topic):
    with Plain() as p:
        try:
            text = await llm(f"{'fail: ' if topic == 'bad' else ''}plain try {topic} {p}")
        except ValueError:
            raise RuntimeError(f"missing {topic}") from None
    return text


@poppy
async def not_a_manager(m):
    async with m:
        log("never")


async def show(fn, *args):
    shown = [a if isinstance(a, (str, int, list, type(None))) else type(a).__name__ for a in args]
    try:
        print(fn.__name__, shown, "->", await fn(*args))
    except Exception as exc:
        print(fn.__name__, shown, "raised", type(exc).__name__, exc)
        print("  context:", repr(exc.__context__))
        print("  frames:", [x for x in frames(exc) if x[1] != "show"])


async def main():
    await show(in_section, "owls", None)
    await show(in_section, "bats", "llm")
    await show(in_section, "moths", "key")
    await show(in_session, "a", False, False)
    await show(in_session, "b", False, True)
    await show(in_session, "c", True, True)
    await show(returns_inside, "r")
    await show(breaks_inside, ["x", "y", "stop", "z"])
    await show(enter_fails, "e")
    await show(sync_with_in_async, "s")
    await show(odd, "enter")
    await show(odd, "exit")
    await show(odd, "fine")
    await show(nested, "n", None)
    await show(nested, "m", "inner")
    await show(nested, "k", "both")
    await show(in_try, ["p", "bad", "q"])
    await show(sync_with_try, "fine")
    await show(sync_with_try, "bad")
    await show(not_a_manager, 3)
    await show(not_a_manager, Plain())


asyncio.run(main())
