# @poppy functions run from a thread pool (several λO runs at once on different threads, each
# with its own event loop; only unordered externals inside, so the trace does not depend on
# thread scheduling), `next` with a default, and then a format spec that does not fit the LLM's
# reply (ValueError raised by an f-string in compiled code).
# difftest: expect_rc=1
# difftest: threads=1
from concurrent.futures import ThreadPoolExecutor

from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def work(topic):
    parts = []
    for i in range(3):
        parts.append(llm(f"{topic} part {i}")[:5])
    return topic, "".join(parts), lookup(topic)

@poppy
def fmt_error(x):
    n = llm(f"about {x}")
    return f"{n:05d}"


with ThreadPoolExecutor(max_workers=3) as ex:
    results = list(ex.map(work, [f"t{i}" for i in range(8)]))
for r in results:
    print(r)
print(next(iter([]), "default"))
print(fmt_error("z"))
