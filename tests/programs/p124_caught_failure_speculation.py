# A compiled @poppy callee whose @unordered external raises, called from a caller that catches
# the exception and goes on. Were the callee's later, independent LLM calls dispatched in parallel
# with the failing one before it fails, a run that succeeds would make LLM requests CPython never
# makes (extra unordered calls in the trace). The caller compiles (try/except): the call in its
# try body is a catching call, never inlined, so the callee runs as plain CPython and makes
# exactly CPython's calls (docs/design-exceptions.md, I6). (Where the caller falls back, it runs
# plainly and the callee's compiled run makes the extra requests: it must compile on every version.)
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


@poppy
def step(x):
    a = llm(f"one {x}")
    b = llm(f"fail: {x}") if x == "bad" else llm(f"two {x}")
    c = llm(f"three {x}")
    d = llm(f"four {x}")
    return a[:5] + b[:5] + c[:5] + d[:5]


@poppy
def catcher(xs):
    out = []
    for x in xs:
        try:
            out.append(step(x))
        except ValueError as e:
            out.append(f"error {e}")
    return out


print(catcher(["ok", "bad", "fine"]))
