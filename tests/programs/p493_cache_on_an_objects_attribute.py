# Found running an unmodified Tree-of-Thoughts program (issue 15): its value cache is a dict kept
# on an object the run did not create (`task.value_cache`), checked and filled around each model
# call. Each store `scorer.memo[key] = v` is sequential (any later call might read the dict) and
# waits for its value; the next look-up (`scorer.memo` then `key in ...`, readonly) may still run
# before it: the store changes one entry of an exact dict with atom keys and runs no code (the
# entry held no object whose release could), and the reads are a plain attribute read and a
# look-up of another key, which cannot see it (`control::objects::read_order`). So the calls
# for distinct keys overlap. What must stay: a repeated key is a cache hit (no second call),
# the dict's entries in insertion order as CPython has them.
# difftest: min_in_flight=2
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
