# f-string fields with a conversion and a computed format spec (`f"{x!r:>{w}}"`): CPython 3.13
# converts x (`__repr__`/`__str__`, `ascii`) before it evaluates the spec (`w.__format__`), 3.11
# and 3.12 after; the compiled function keeps the running version's order, and a conversion that
# returns a str subclass with its own `__format__` is formatted once, with the spec. An external
# call in the field, and an exception raised by the conversion (before the spec is evaluated on
# 3.13).
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)

events = []


class Loud(str):
    def __format__(self, spec):
        events.append(f"Loud.__format__({spec!r})")
        return f"<{str.__format__(self, spec)}>"


class X:
    def __init__(self, name, fail=False):
        self.name, self.fail = name, fail

    def __repr__(self):
        events.append(f"repr {self.name}")
        if self.fail:
            raise ValueError(f"no repr for {self.name}")
        return Loud(f"X({self.name})")

    def __str__(self):
        events.append(f"str {self.name}")
        return f"x-{self.name}"


class W:
    def __init__(self, n):
        self.n = n

    def __format__(self, spec):
        events.append(f"W.__format__({spec!r})")
        return str(self.n)


@poppy
def render(x, w, prompt):
    a = f"{x!r:>{w}}|"
    b = f"{x!s:^{w}.{W(3)}}|{x!a:{w}}"
    c = f"{llm(prompt)!r:<{w}}"
    return a + b + c


@poppy
def failing(x, w):
    try:
        return f"{x!r:{w}}"
    except ValueError as e:
        return f"caught {e}"


print(render(X("a"), W(9), "echo: hi"))
print(events)
events.clear()
print(failing(X("b", fail=True), W(4)))
print(events)
events.clear()
print(failing(X("c"), W(6)), events)
