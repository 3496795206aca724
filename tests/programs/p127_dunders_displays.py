# User objects whose dunders call an external (property getter, __add__, __eq__ in `in`,
# __len__, __bool__, __getattr__), an external reached as a module attribute and through an
# alias, locals shadowing builtins, starred displays and dict merges, integer/float corner cases,
# memoised recursion with a dict passed down, return from for/else, continue in while/else.
# difftest: min_in_flight=2
import _ext
from poppy_jit import poppy
from _ext import llm as ask, log, lookup, note, set_latency_scale

set_latency_scale(0.1)

class Box:
    def __init__(self, v):
        self._v = v
    @property
    def v(self):
        note(f"get v {self._v}")
        return self._v
    def __add__(self, other):
        note(f"add {self._v}")
        return Box(self._v + other._v)
    def __eq__(self, other):
        note(f"eq {self._v}")
        return isinstance(other, Box) and self._v == other._v
    def __hash__(self):
        return hash(self._v)
    def __len__(self):
        note("len")
        return len(str(self._v))
    def __bool__(self):
        note("bool")
        return bool(self._v)
    def __repr__(self):
        return f"Box({self._v!r})"

class Dyn:
    def __getattr__(self, name):
        note(f"getattr {name}")
        return name.upper()

@poppy
def module_attr(x):
    a = _ext.llm(f"via module {x}")
    b = ask(f"via alias {x}")
    return a[:8], b[:8]

@poppy
def shadow_builtin(xs):
    len = 0
    for x in xs:
        len += 1
    max = ask(f"count: {len}")
    return len, max

@poppy
def dunders(a, b):
    s = Box(a) + Box(b)
    same = Box(a) == Box(a)
    inlist = Box(b) in [Box(a), Box(b)]
    n = len(s)
    t = "t" if Box(0) else "f"
    return s.v, same, inlist, n, t, ask(f"box {s!r}")[:5]

@poppy
def dynamic(d):
    return d.foo + ask(d.bar)[:4]

@poppy
def unpack_displays(a, b):
    t = (*a, *b)
    l = [*a, ask("mid")[:3], *b]
    d1 = {"x": 1}
    d2 = {**d1, "y": lookup("y")}
    d3 = d1 | {"z": 3}
    s = {1, 2, 2}
    return t, l, d2, d3, s, frozenset(s)

@poppy
def numbers(n):
    k = int(ask(f"count: n{n}"))
    return divmod(k + 7, 3), pow(k + 2, 3, 5), -k // 4, k / 8, f"{k / 3:.4e}", round(k / 3, 2), 2 ** 70 + k

@poppy
def memo_fib(n, memo):
    if n in memo:
        return memo[n]
    if n < 2:
        r = n
    else:
        r = memo_fib(n - 1, memo) + memo_fib(n - 2, memo)
    memo[n] = r
    return r

@poppy
def for_else_return(xs):
    for x in xs:
        if ask(f"yesno: {x}") == "yes":
            return x
    else:
        log("none matched")
        return None

@poppy
def while_else_continue(n):
    i = 0
    hits = []
    while i < n:
        i += 1
        if i % 2:
            continue
        hits.append(lookup(f"w{i}"))
    else:
        hits.append("end")
    return hits

print(module_attr("m"))
print(shadow_builtin(["a", "b"]))
print(dunders(2, 3))
print(dynamic(Dyn()))
print(unpack_displays((1, 2), [3]))
print(numbers(4))
print(memo_fib(15, {}))
print(for_else_return(["p", "q", "r"]), for_else_return([]))
print(while_else_continue(5))
