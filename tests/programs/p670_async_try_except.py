# try/except/else/finally in a @poppy async def (issue 16): an awaited annotated external that
# raises, caught (type, message, the traceback's lines in the user's code), re-raised (bare raise,
# `raise … from`), a handler that awaits, an else clause and a finally clause that await, a plain
# coroutine (one sequential external) raising inside a try, and an unmatched exception escaping
# with its traceback. Each result, and each escaping exception with its chain, is printed.
# difftest: coroutine=1
import asyncio
import os
import traceback

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


async def plain_fail(k):
    await asyncio.sleep(0.001)
    raise KeyError(f"plain {k}")


def frames(e):
    """The traceback's frames (file, function, line): the user's and the externals' own."""
    return [(os.path.basename(f.filename), f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)]


@poppy
async def caught(k):
    try:
        text = await llm(f"fail: caught {k}")
    except ValueError as e:
        log(f"caught {type(e).__name__}: {e} at {frames(e)}")
        text = await llm(f"retry {k}")
    else:
        log("no error")
    finally:
        log(f"finally {k}")
    return text


@poppy
async def reraised(k):
    try:
        await llm(f"fail: reraised {k}")
    except ValueError:
        log("reraising")
        raise


@poppy
async def raised_from(k):
    try:
        return await llm(f"fail: from {k}")
    except ValueError as e:
        raise RuntimeError(f"wrapped {k}") from e


@poppy
async def plain_awaitable(k):
    try:
        await plain_fail(k)
    except KeyError as e:
        log(f"plain caught {e!r} at {frames(e)}")
    try:
        v = await asyncio.sleep(0, result=f"slept {k}")
    except KeyError:
        v = "never"
    return v


@poppy
async def unmatched(k):
    try:
        v = await llm(f"fail: unmatched {k}")
    except KeyError:
        v = "never"
    return v


@poppy
async def no_error(topics):
    out = []
    for t in topics:
        try:
            a = await llm(f"about {t}")
        except ValueError:
            a = "?"
        else:
            a = a.upper()
        finally:
            await asyncio.sleep(0)
        out.append(a)
    return out


async def show(fn, *args):
    try:
        print(fn.__name__, "->", await fn(*args))
    except Exception as exc:
        print(fn.__name__, "raised", type(exc).__name__, exc)
        print("  cause:", repr(exc.__cause__), "context:", repr(exc.__context__))
        print("  frames:", [x for x in frames(exc) if x[1] != "show"])
        if exc.__cause__ is not None:
            print("  cause frames:", frames(exc.__cause__))
        if exc.__context__ is not None:
            print("  context frames:", frames(exc.__context__))


async def main():
    await show(caught, 1)
    await show(reraised, 2)
    await show(raised_from, 3)
    await show(plain_awaitable, 4)
    await show(unmatched, 5)
    await show(no_error, ["owls", "bats", "moths"])


asyncio.run(main())
