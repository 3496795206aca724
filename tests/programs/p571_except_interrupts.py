# Handlers that catch what is not an Exception: SystemExit from a synchronous external (sys.exit
# in a tool), a KeyboardInterrupt raised by one, and a Ctrl-C (SIGINT) arriving while a blocking
# external and while an async external run — CPython raises it inside the call, where a bare
# `except:`, `except BaseException` or `except KeyboardInterrupt` around it catches it and the
# loop goes on; the compiled run delivers it to the call in flight (the earliest in program
# order) instead of aborting. Last, a SIGINT that an `except Exception` does not catch ends the
# program as CPython's does (killed by SIGINT).
# difftest: expect_rc=-2
import asyncio
import os
import signal
import sys
import time

from poppy_jit import poppy, sequential, unordered
from _ext import _traced, log, set_latency_scale

set_latency_scale(0.1)


@sequential
def tool(cmd):
    with _traced("note", "sequential", "tool", cmd):
        if cmd == "exit":
            sys.exit(3)
        if cmd == "interrupt":
            raise KeyboardInterrupt("tool interrupted")
        return f"ran {cmd}"


@unordered(blocking=True)
def fetch(key):
    with _traced("lookup", "unordered", "fetch", key):
        if key.startswith("ctrl-c"):
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        return f"<{key}>"


@unordered
async def agen(key):
    with _traced("llm", "unordered", "agen", key):
        if key.startswith("ctrl-c"):
            os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(0.05)
        return f"[{key}]"


@poppy
def tools(cmds):
    out = []
    for c in cmds:
        try:
            out.append(tool(c))
        except SystemExit as e:
            out.append(f"exit {e.code}")
        except KeyboardInterrupt as e:
            out.append(f"interrupt {e}")
    try:
        tool("exit")
    except:
        out.append("bare caught " + type(sys.exc_info()[1]).__name__)
    return out


@poppy
def fetch_all(keys):
    got = []
    for k in keys:
        try:
            got.append(fetch(k))
        except:
            log(f"interrupted at {k}")
            got.append(None)
    return got


@poppy
def agen_all(keys):
    got = []
    for k in keys:
        try:
            got.append(agen(k))
        except BaseException as e:
            log(f"{type(e).__name__} at {k}")
            got.append(None)
    return got


@poppy
def not_caught(keys):
    got = []
    for k in keys:
        try:
            got.append(fetch(k))
        except Exception:
            got.append("exception")
    return got


print(tools(["ls", "exit", "interrupt", "pwd"]))
print(fetch_all(["a", "ctrl-c 1", "b"]))
print(agen_all(["x", "ctrl-c 2", "y"]))
sys.stdout.flush()
print(not_caught(["p", "ctrl-c 3", "q"]))
