# An external raising in the middle of a pipeline of @poppy calls: the output before it, the
# exception (type and message), and no external call after it must match plain CPython. The
# earlier functions run to completion first.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def gather(topics):
    out = []
    for t in topics:
        out.append(llm(f"summary of {t}"))
    return out


@poppy
def checkpoint(key, items):
    for i, item in enumerate(items):
        write(f"{key}{i}", item[:8])
    log(f"saved {len(items)}")
    return len(items)


@poppy
def risky_step(topic, fail_at):
    results = []
    for i in range(3):
        prompt = f"fail: {topic} {i}" if i == fail_at else f"step {i} of {topic}"
        results.append(llm(prompt))
        log(f"after step {i}")
    return results


@poppy
def pipeline(topics):
    summaries = gather(topics)
    checkpoint("s", summaries)
    extra = lookup("extra")
    print("extra", extra)
    risky = risky_step(topics[0], 1)
    print("unreachable", risky)
    write("never", "written")
    return risky


print(gather(["a", "b"]))
print(checkpoint("k", ["xxxxxxxxxx", "y"]))
print(risky_step("safe", 5))
print(pipeline(["p", "q", "r"]))
print("not reached")
