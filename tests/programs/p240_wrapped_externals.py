# Callables that wrap an annotated external dispatch exactly like it (blocking ones on the pool,
# async ones on the loop): functools.partial (also a global rebound to a partial of itself, as
# real code does to fix model parameters), a bound method whose function is annotated on its
# class, an object whose class's __call__ is annotated. Their bound arguments count for the class
# like the call's own (a mutable one orders the call as a read).
# difftest: min_in_flight=4
import functools

from poppy_jit import poppy, unordered
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.5)

gpt = llm


def configure(style):
    global gpt
    gpt = functools.partial(gpt, style=style)


class Client:
    def __init__(self, name):
        self.name = name

    @unordered(blocking=True)
    def fetch(self, key):
        return lookup(f"{self.name}/{key}")


class Scorer:
    @unordered(blocking=True)
    def __call__(self, text):
        return lookup(f"score {text}")


@poppy
def with_partials(topics):
    out = [gpt(f"list: {t}") for t in topics]
    slow = functools.partial(lookup)
    keys = [slow(t) for t in topics]
    return out, keys


@poppy
def with_methods(c, topics):
    return [c.fetch(t) for t in topics]


@poppy
def with_callable(score, topics):
    return [score(t) for t in topics]


@poppy
def partial_with_mutable_arg(history):
    ask = functools.partial(lookup, history)
    first = ask()
    history.append("more")
    second = ask()
    return first, second, history


def main():
    topics = ["rivers", "mountains", "deserts", "forests", "oceans"]
    configure("loud")
    print(with_partials(topics))
    c = Client("api")
    print(with_methods(c, topics))
    print(with_callable(Scorer(), topics))
    print(partial_with_mutable_arg(["a", "b"]))
    print(gpt.keywords, isinstance(gpt, functools.partial))


main()
