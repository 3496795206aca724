# random has hidden state: its functions are sequential, so a seeded sequence interleaved with
# parallel LLM calls is exactly CPython's.
# difftest: min_in_flight=2
import random

from poppy_jit import poppy
from _ext import llm


@poppy
def sample(n):
    random.seed(1234)
    picks = ()
    for i in range(n):
        k = random.randint(1, 100)
        coin = "-"
        if random.random() < 0.5:
            coin = random.choice(["heads", "tails"])
        picks += (f"{k}:{coin}:{llm(f'pick {i}')}",)
    rng = random.Random(7)
    return picks + (rng.randrange(1000),)


for p in sample(5):
    print(p)
