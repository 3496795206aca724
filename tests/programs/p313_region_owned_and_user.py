# Regions decline on live-ins they cannot prove closed: a list the run owns (appended to by an
# ordered call before and after), a user object with its own __add__/__eq__ that logs, a builtin
# shadowed by a module global, a module; the operation-by-operation path keeps the order.
# difftest: min_in_flight=2
import math

from poppy_jit import poppy
from _ext import llm, log


class Loud:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        log(f"add {self.v}+{other}")
        return Loud(self.v + other)

    def __eq__(self, other):
        log("eq")
        return isinstance(other, Loud) and self.v == other.v

    __hash__ = None

    def __repr__(self):
        return f"Loud({self.v})"


def shadow(x):
    log(f"shadow {x}")
    return 7


@poppy
def owned(n):
    xs = [llm(f"q{i}", n=1) for i in range(3)]
    total = 0
    for x in xs:
        total += len(x)
    log("between")
    xs.append("tail")
    count = 0
    for x in xs:
        count += 1
    return total, count


@poppy
def user(n):
    acc = Loud(0)
    for i in range(n):
        acc = acc + i
    same = 0
    for i in range(2):
        if acc == Loud(i):
            same += 1
    return acc, same


@poppy
def shadowed(n):
    s = 0
    for i in range(n):
        s += len(i)
    r = 0.0
    for i in range(n):
        r += math.sqrt(i)
    return s, round(r, 9)


len = shadow
print(owned(3))
print(user(3))
print(shadowed(3))
