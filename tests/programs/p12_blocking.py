# Blocking synchronous externals (@unordered(blocking=True)) run on worker threads.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, lookup


@poppy
def enrich(keys):
    for k in keys:
        v = lookup(k)
        print(k, v, llm(f"summarize {v}"))


enrich(["alpha", "beta", "gamma", "delta"])
