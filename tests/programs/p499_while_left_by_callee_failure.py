# A `while True:` loop whose only way out is an exception raised inside an inlined @poppy callee,
# after a slow call: its iterations do not wait for one another, so compiled it unrolled without
# bound while the call was in flight (the run never ended). Such a loop falls back, with a
# reason; a loop with a break, a return or its own raise still compiles.
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


@poppy
def check(reply, n):
    if n > 2 and len(reply) > 0:
        raise ValueError(f"gave up after {n}")
    return n


@poppy
def keep_asking(topic):
    n = 0
    while True:
        n += 1
        check(llm(f"about {topic} #{n}"), n)


@poppy
def ask_until(topic):
    n = 0
    while True:
        n += 1
        if check(llm(f"about {topic} #{n}"), n - 1) >= 2:
            break
    return n


try:
    keep_asking("tides")
except ValueError as e:
    print("ValueError:", e)
print(ask_until("dunes"))
