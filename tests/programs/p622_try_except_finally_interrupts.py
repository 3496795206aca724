# try/except/finally and Ctrl-C (SIGINT) arriving while a blocking external runs: caught by an
# `except KeyboardInterrupt` in the body's statement (the finally clause runs after the handler,
# the loop goes on), arriving while a handler's call runs (the finally clause runs with the
# KeyboardInterrupt handled, then it leaves the function), and one that `except ValueError` does
# not match: the finally clause runs, then the program ends killed by SIGINT, as CPython's does.
# difftest: expect_rc=-2
import os
import signal
import sys
import time

from poppy_jit import poppy, unordered
from _ext import _traced, log, set_latency_scale

set_latency_scale(0.1)


@unordered(blocking=True)
def fetch(key):
    with _traced("lookup", "unordered", "fetch", key):
        if key.startswith("ctrl-c"):
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        if key.startswith("bad"):
            raise ValueError(f"bad key {key}")
        return f"<{key}>"


def pending():
    return repr(sys.exc_info()[1])


@poppy
def caught(keys):
    got = []
    for k in keys:
        try:
            got.append(fetch(k))
        except KeyboardInterrupt:
            got.append(f"interrupted at {k}")
        finally:
            log(f"fetched {k} with {pending()}")
    return got


@poppy
def in_handler(keys):
    got = []
    for k in keys:
        try:
            got.append(fetch(k))
        except ValueError as e:
            got.append(fetch(f"ctrl-c after {e}"))
        finally:
            log(f"handled {k} with {pending()}")
    return got


@poppy
def unmatched(keys):
    got = []
    for k in keys:
        try:
            got.append(fetch(k))
        except ValueError:
            got.append("bad")
        finally:
            log(f"finally {k} with {pending()}")
    return got


print(caught(["a", "ctrl-c", "b"]))
sys.stdout.flush()
try:
    in_handler(["a", "bad", "b"])
except KeyboardInterrupt:
    print("caller caught KeyboardInterrupt")
sys.stdout.flush()
print(unmatched(["a", "bad", "ctrl-c", "b"]))
