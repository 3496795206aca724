# A @sequential external (write with an empty key) raises inside a loop nested in a @poppy call
# chain. Before it: reads, logs and LLM calls; after it: nothing sequential or readonly may run.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, read, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def key_for(item):
    return "" if item == "bad" else f"item/{item}"


@poppy
def save_all(items):
    saved = 0
    for it in items:
        value = llm(f"value of {it}")
        write(key_for(it), value[:10])
        saved += 1
        log(f"saved {it}")
    return saved


@poppy
def report(items):
    limit = read("limit")
    print("limit", limit)
    n = save_all(items)
    print("saved", n, read("mode"))
    return n


print(save_all(["a", "b"]))
print(report(["c", "bad", "d"]))
print("not reached")
