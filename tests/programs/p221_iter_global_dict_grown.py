# A `for` loop over a global dict that a helper called in the body grows: CPython raises
# `RuntimeError: dictionary changed size during iteration` at the next step, after the
# helper's call and before any later item's calls (issue 14, class 2).
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

REG = {"a": 1, "b": 2}
SEEN = {"x": 0}


def register(key):
    log(f"register {key}")
    REG[key] = len(REG)


def touch(key):
    SEEN[key] = SEEN.get(key, 0) + 1   # changes a value, not the size: no error


@poppy
def visit_values():
    out = []
    for k, v in SEEN.items():
        touch(k)
        out.append(llm(f"{k}={v}"))
    return out


@poppy
def grow():
    out = []
    for k in REG:
        out.append(llm(f"key {k}"))
        register(k + "x")
    return out


print(visit_values())
print(grow())
