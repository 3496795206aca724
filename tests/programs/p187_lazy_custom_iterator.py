# Custom iterables: a class with __iter__/__next__ whose methods print, and a class whose
# __iter__ is a generator; each item is pulled when CPython pulls it.
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


class Countdown:
    def __init__(self, start):
        self.n = start

    def __iter__(self):
        print("iter called")
        return self

    def __next__(self):
        if self.n <= 0:
            print("stop")
            raise StopIteration
        self.n -= 1
        print("next ->", self.n)
        return self.n


class Deck:
    def __init__(self, cards):
        self.cards = cards

    def __iter__(self):
        for c in self.cards:
            log(f"deal {c}")
            yield c


@poppy
def run_down(k):
    seen = []
    for v in Countdown(k):
        print("body", v)
        seen.append(v)
    return seen


@poppy
def deal_until(cards, stop):
    hand = []
    for c in Deck(cards):
        if c == stop:
            break
        hand.append(llm(f"count: {c}"))
    return hand


@poppy
def enumerate_custom(k):
    out = []
    for i, v in enumerate(Countdown(k)):
        print("pair", i, v)
        out.append(i * v)
    return out


print(run_down(3))
print(deal_until(["A", "K", "Q", "J"], "Q"))
print(enumerate_custom(2))
