# More try shapes in a @poppy async def (issue 16): an else clause and a finally clause that
# await while an exception propagates through them, a try nested in a handler and in a body, an
# awaited external in a handler that looks at the handled exception (sys.exc_info()), `return
# await` in a try body, an exception raised in the finally clause replacing the body's (its
# __context__), and an async with inside a try/finally.
# difftest: coroutine=1
import asyncio
import sys

from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@sequential
async def handled():
    """An async external that reads the exception being handled."""
    await asyncio.sleep(0.001)
    return repr(sys.exc_info()[1])


class Res:
    async def __aenter__(self):
        log("res open")
        return self

    async def __aexit__(self, *exc):
        log(f"res close {exc[0]}")


@poppy
async def else_and_finally(k):
    try:
        a = await llm(f"{'fail: ' if k == 'body' else ''}first {k}")
    except KeyError:
        a = "never"
    else:
        a = await llm(f"{'fail: ' if k == 'else' else ''}second {a[:8]}")
    finally:
        log(f"finally {k} sees {sys.exc_info()[0]}")
        await asyncio.sleep(0)
    return a


@poppy
async def nested(k):
    try:
        try:
            return await llm(f"fail: inner {k}")
        except ValueError as e:
            log(f"inner caught, handled: {await handled()}")
            try:
                await llm(f"{'fail: ' if k == 'again' else ''}retry {k}")
            except ValueError:
                log("retry failed")
                raise
            return "retried"
    except ValueError as outer:
        return f"outer {outer} context {outer.__context__!r}"


@poppy
async def finally_raises(k):
    try:
        await llm(f"fail: body {k}")
    finally:
        await asyncio.sleep(0)
        raise RuntimeError(f"cleanup {k}")


@poppy
async def with_in_finally(k):
    try:
        async with Res() as r:
            text = await llm(f"{'fail: ' if k == 'bad' else ''}res {k}")
    finally:
        log("after res")
    return text


async def show(fn, *args):
    try:
        print(fn.__name__, args, "->", await fn(*args))
    except Exception as exc:
        print(fn.__name__, args, "raised", type(exc).__name__, exc, "context", repr(exc.__context__))


async def main():
    for k in ["ok", "body", "else"]:
        await show(else_and_finally, k)
    for k in ["once", "again"]:
        await show(nested, k)
    await show(finally_raises, "f")
    for k in ["good", "bad"]:
        await show(with_in_finally, k)


asyncio.run(main())
