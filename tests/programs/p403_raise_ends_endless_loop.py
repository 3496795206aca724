# A `while True` loop whose only way out is an exception raised inside an inlined @poppy callee
# stops like CPython's: once a dispatched sequential call (the raise is one) has failed, every
# call before it has succeeded, so the run raises it and reduces nothing more (the loop used to
# go on unrolling). Still open: when the raise must first wait for a call in flight (a blocking
# lookup earlier in the loop), the unrolling starves the wait and the run hangs — as it does for
# any failing call there (not specific to raise).
import poppy_jit
from poppy_jit import _prologue, poppy
from _ext import log, set_latency_scale

set_latency_scale(0.1)


@poppy
def check(i, limit):
    if i > limit:
        raise OverflowError(f"step {i} past {limit}")


@poppy
def spin(limit):
    i = 0
    while True:
        i += 1
        check(i, limit)
        log(f"step {i}")


for f in (spin,):
    try:
        f(3)
    except OverflowError as e:
        print(f.__name__, "raised", e)
if poppy_jit.is_enabled() and _prologue.UNSUPPORTED is None:  # the compiled path runs here
    assert not poppy_jit.stats()["fallbacks"], poppy_jit.stats()["fallbacks"]
