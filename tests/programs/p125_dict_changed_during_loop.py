# Same cause as p121: a `for` loop over a dict that a helper called in the loop body grows.
# CPython raises "RuntimeError: dictionary changed size during iteration" at the next iteration;
# the function falls back (the dict is passed to a helper in the body), so it does too.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import log, lookup, set_latency_scale

set_latency_scale(0.1)


def add(d, k):
    d[k] = 1


@poppy
def dict_grow(d):
    out = []
    for k in d:
        out.append(lookup(k))
        if len(d) < 5:
            add(d, k + "x")
    log(f"visited {len(out)}")
    return out


print(dict_grow({}))
print(dict_grow({"a": 0}))
