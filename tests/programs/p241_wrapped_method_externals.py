# A method annotated on its class (`@unordered(blocking=True) def fetch(self, …)`) and an object
# whose class's `__call__` is annotated run on the blocking pool like the function itself: calls
# on different receivers overlap; the receiver is an argument (a mutable one orders the call as a
# read of it: a write to the receiver between two calls is seen by the later one only).
# difftest: min_in_flight=3
from poppy_jit import poppy, unordered
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


class Client:
    def __init__(self, name):
        self.name = name

    @unordered(blocking=True)
    def fetch(self, key):
        return lookup(f"{self.name}/{key}")


class Scorer:
    def __init__(self, bias):
        self.bias = bias

    @unordered(blocking=True)
    def __call__(self, text):
        return lookup(f"score {self.bias} {text}")


@poppy
def fan_out(clients, key):
    return [c.fetch(key) for c in clients]


@poppy
def judges(scorers, text):
    return [s(text) for s in scorers]


@poppy
def rename_between(c):
    a = c.fetch("x")
    c.name = "renamed"
    b = c.fetch("x")
    return a, b


def main():
    clients = [Client(f"api{i}") for i in range(5)]
    print(fan_out(clients, "k"))
    print(judges([Scorer(i) for i in range(5)], "essay"))
    print(rename_between(Client("first")))


main()
