# Known gap found running an unmodified Tree-of-Thoughts program (issue 15): its value cache is a
# dict kept on an object the run did not create (`task.value_cache`), checked and filled around
# each model call. Per-key ordering holds only for dicts the run created itself, so each store
# `scorer.memo[key] = v` (sequential: any later call might read the dict) holds up the next
# look-up `key in scorer.memo` (readonly), and the calls for distinct keys run one at a time.
# What must stay: a repeated key is a cache hit (no second call), the dict's entries in insertion
# order as CPython has them.
# difftest: min_in_flight=2
# difftest: xfail=1
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


class Scorer:
    def __init__(self):
        self.memo = {}


@poppy
def score_all(scorer, states):
    out = []
    for s in states:
        key = "score " + s
        if key in scorer.memo:
            v = scorer.memo[key]
        else:
            v = lookup(key)
            scorer.memo[key] = v
        out.append(v)
    return out


scorer = Scorer()
print(score_all(scorer, ["a", "b", "c", "a", "d", "b"]))
print(list(scorer.memo.items()))
