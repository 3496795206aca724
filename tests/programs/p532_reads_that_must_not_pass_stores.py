# Reads that must not run before an earlier pending store into a dict the run did not create
# (next to p493, where a look-up of another key and a plain attribute read pass such a store):
# the store releases an object whose `__del__` writes the dict; the dict is an object's own
# `__dict__` and the read is of the stored attribute; the read is a property that reads the
# whole dict; the read is of the key being stored. Each must see what CPython's order shows.
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


class Noisy:
    def __init__(self, memo):
        self.memo = memo

    def __del__(self):
        self.memo["late"] = "set by __del__"


class Holder:
    def __init__(self):
        self.memo = {}

    @property
    def size(self):
        return len(self.memo)


@poppy
def released(h, keys):
    out = []
    for k in keys:
        out.append(k in h.memo)
        h.memo[k] = lookup(k)
    return out


@poppy
def own_dict(b, d, keys):
    out = []
    for k in keys:
        out.append(b.mode)
        d[k] = lookup(k)
    return out


@poppy
def through_property(h, keys):
    out = []
    for k in keys:
        out.append(h.size)
        out.append(k in h.memo)
        h.memo[k] = lookup(k)
    return out


h = Holder()
h.memo["x"] = Noisy(h.memo)
print(released(h, ["x", "late", "y"]))
print(sorted(h.memo))

b = Holder()
b.mode = "start"
print(own_dict(b, b.__dict__, ["x", "mode", "y", "z"]))

h2 = Holder()
print(through_property(h2, ["a", "b", "a", "c"]))
print(list(h2.memo))
