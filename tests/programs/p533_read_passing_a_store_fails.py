# A read that runs before an earlier pending store into a dict the run did not create (p493) and
# fails: the `KeyError` of `scorer.memo[key]` for a key nobody stored. CPython makes the model
# call and the store first, then raises; so must the run: the failure of a call that ran early
# is raised only once every call before it in program order has run (the stores' effects are
# there: the first handler prints the dict; the second failure ends the program).
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import log, lookup, set_latency_scale

set_latency_scale(0.5)


class Scorer:
    def __init__(self):
        self.memo = {}


@poppy
def fill_then_read(scorer, keys, missing):
    for k in keys:
        scorer.memo[k] = lookup(k)
    log("stored")
    return scorer.memo[missing]


@poppy
def read_between(scorer, keys):
    out = []
    for k in keys:
        scorer.memo[k] = lookup(k)
        out.append(scorer.memo["nope"] if k == "b" else k)
    return out


s = Scorer()
try:
    fill_then_read(s, ["a", "b"], "zzz")
except KeyError as e:
    print("KeyError", e, list(s.memo.items()))
s2 = Scorer()
print(read_between(s2, ["a", "b", "c"]))
