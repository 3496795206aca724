# Program-defined externals of every kind: an async @sequential save, an async @readonly load, a
# blocking @readonly load and a blocking @sequential save around LLM replies (saves must keep
# program order, loads must see the saves before them), then a blocking @unordered tool that
# raises: its RuntimeError ends the program as in CPython.
# difftest: expect_rc=1
import asyncio
import time
from collections import Counter

from poppy_jit import poppy, readonly, sequential, unordered
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)
STORE = {}
SAVES = []
LOADS = Counter()


@sequential
async def asave(k, v):
    await asyncio.sleep(0.001)
    SAVES.append(("save", k))
    STORE[k] = v


@readonly
async def aload(k):
    await asyncio.sleep(0.0005)
    LOADS["load", k] += 1
    return STORE.get(k)


@readonly(blocking=True)
def bload(k):
    time.sleep(0.001)
    LOADS["bload", k] += 1
    return STORE.get(k)


@sequential(blocking=True)
def bsave(k, v):
    time.sleep(0.001)
    SAVES.append(("bsave", k))
    STORE[k] = v


@unordered(blocking=True)
def bfail(x):
    time.sleep(0.001)
    raise RuntimeError(f"tool broke on {x}")


@poppy
def pipeline(keys):
    for k in keys:
        asave(k, llm(f"about {k}")[:5])
        print(k, aload(k), bload(k))
        bsave(k + "!", aload(k))
    return sorted(STORE.items())


@poppy
def risky(items):
    out = []
    for it in items:
        out.append(llm(f"about {it}")[:4])
        log(f"asked {it}")
    print(out)
    return bfail(out[0])


print(pipeline(["a", "b", "c"]))
print(SAVES)
print(sorted(LOADS.items()))
print(risky(["x", "y"]))
print("not reached")
