# A `while True` loop whose only way out is an exception raised inside an inlined @poppy callee
# stops like CPython's. Compiled, it stopped only while nothing was in flight when the raise came
# (a failed dispatched sequential call settles the run); when the raise had to wait for a call in
# flight, the unrolling went on without bound (p499). Such a loop now falls back, naming it.
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
    reasons = [f["reason"] for f in poppy_jit.stats()["fallbacks"]]
    assert len(reasons) == 1 and reasons[0].startswith("a `while` loop that only an exception can leave"), reasons
