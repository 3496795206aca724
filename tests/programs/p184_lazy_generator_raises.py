# A generator that raises midway: the body runs for the items before the failure (its prints and
# calls happen), then CPython's exception propagates out of the loop.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def flaky(n, bad):
    for i in range(n):
        if i == bad:
            raise ValueError(f"generator failed at {i}")
        print("flaky yields", i)
        yield i


@poppy
def collect(n, bad):
    out = []
    for x in flaky(n, bad):
        log(f"body {x}")
        out.append(llm(f"count: {x}"))
        print("body done", x)
    return out


print(collect(3, 10))
print(collect(6, 3))
print("not reached")
