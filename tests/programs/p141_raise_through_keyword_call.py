# A @poppy callee called with keyword arguments (not inlined: it runs as one call of the caller)
# raises from an LLM call in its second invocation; the caller's later sequential and readonly
# calls must not run, its earlier output must be complete, and the exception is CPython's.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, read, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def summarise(topic, *, strict=False):
    prefix = "fail: " if strict else ""
    return llm(f"{prefix}summary of {topic}")


@poppy
def caller(topics):
    out = []
    for i, t in enumerate(topics):
        out.append(summarise(t, strict=(i == 1)))
        log(f"summarised {t}")
        print(read("mode"))
    write("summaries", len(out))
    return out


print(summarise("warm-up", strict=False))
print(caller(["a", "b", "c"]))
print("not reached")
