# A finally clause runs when a Ctrl-C (SIGINT) arrives while the body's blocking external runs,
# as CPython's does, and the KeyboardInterrupt then ends the program (killed by SIGINT); a
# SystemExit from a synchronous tool runs it too, and reaches the caller unchanged.
# difftest: expect_rc=-2
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
            sys.exit(4)
        return f"ran {cmd}"


@unordered(blocking=True)
def fetch(key):
    with _traced("lookup", "unordered", "fetch", key):
        if key.startswith("ctrl-c"):
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        return f"<{key}>"


@poppy
def tools(cmds):
    out = []
    for c in cmds:
        try:
            out.append(tool(c))
        finally:
            log(f"after {c}")
    return out


@poppy
def fetch_all(keys):
    got = []
    for k in keys:
        try:
            got.append(fetch(k))
        finally:
            log(f"fetched {k}")
    return got


print(tools(["ls", "pwd"]))
try:
    tools(["ls", "exit", "pwd"])
except SystemExit as e:
    print("exit", e.code)
print(fetch_all(["a", "b"]))
sys.stdout.flush()
print(fetch_all(["a", "ctrl-c", "b"]))
