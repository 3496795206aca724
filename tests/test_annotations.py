"""The annotation library (poppy_jit._annotations): classes of operators, builtins, methods of
builtin and immutable types, stdlib functions, higher-order builtins, and the registration API.

classify(f, args, kwnames) -> 0 unordered, 1 readonly, 2 sequential.  The last tests run small
programs under PYTHONPOPPY=1 to show the classes in behaviour (runtime stats).

Cost (benches/classify_bench.py on the 2-core dev box): an operator on atoms ~0.2-0.3 µs, a
builtin method ~1-1.5 µs; the deep level of a 1000-element tuple ~65 µs uncached, ~0.2 µs cached.
"""
import asyncio
import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import json
import logging
import math
import operator
import os
import random
import re
import reprlib
import subprocess
import sys
import textwrap
import time
import typing

import pytest

import poppy_jit
from poppy_jit import _annotations as A
from poppy_jit import readonly, unordered
from poppy_jit._intrinsics import INTRINSICS

U, R, S = 0, 1, 2


def cls(f, *args, **kw):
    return A.classify(f, args + tuple(kw.values()), tuple(kw))


class Loud:
    """A user class whose operators have side effects."""

    def __add__(self, other):
        print("side effect")
        return self

    __eq__ = __add__

    def __hash__(self):
        return 0


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: int
    tags: tuple = ()


@dataclasses.dataclass(frozen=True)
class FrozenHolder:
    items: list


@dataclasses.dataclass(frozen=True)
class FrozenCustomEq:
    x: int

    def __eq__(self, other):
        print("compare")
        return True


@dataclasses.dataclass
class Mutable:
    x: int


Point = collections.namedtuple("Point", "x y")


class Point3(typing.NamedTuple):
    x: int
    y: int
    z: int = 0

    def norm1(self):  # a plain method is fine for operators, but calling it runs user code
        return abs(self.x) + abs(self.y) + abs(self.z)


class LoudPoint(Point):
    def __add__(self, other):
        print("side effect")
        return self


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class LoudColor(enum.Enum):
    A = 1

    def __str__(self):
        print("side effect")
        return "A"


class UserTz(datetime.tzinfo):
    def utcoffset(self, dt):
        return datetime.timedelta(0)


class MyStr(str):
    pass


BINARY = [INTRINSICS["binary_" + n] for n in A._BINARY]
COMPARE = [INTRINSICS[k] for k in ("lt", "le", "eq", "ne", "gt", "ge")]
UNARY = [INTRINSICS[k] for k in ("neg", "pos", "invert", "not", "truth")]
INPLACE = [INTRINSICS["inplace_" + n] for n in A._BINARY]


def test_twenty_eight_operators_and_thirteen_inplace():
    ops = BINARY + COMPARE + UNARY + [INTRINSICS[k] for k in ("is", "is_not", "in", "not_in")]
    assert len(ops) == 28 and len(INPLACE) == 13


@pytest.mark.parametrize("op", BINARY + COMPARE)
def test_binary_operators_follow_argument_mutability(op):
    assert cls(op, 3, 4) == U
    assert cls(op, (1, "a"), (2, "b")) == U
    assert cls(op, [1], [2]) == R  # a list may change: readonly
    assert cls(op, {1: 2}, 3) == R
    assert cls(op, Loud(), 1) == S  # may run arbitrary __add__
    assert cls(op, 1, ([Loud()],)) == S  # ...also when nested
    assert cls(op, Mutable(1), 1) == S


@pytest.mark.parametrize("op", UNARY)
def test_unary_operators(op):
    assert cls(op, 5) == U
    assert cls(op, [1]) == R
    assert cls(op, Loud()) == S


def test_identity_and_containment():
    assert cls(INTRINSICS["is"], Loud(), [1]) == U  # identity never runs code
    assert cls(INTRINSICS["in"], 1, (1, 2)) == U
    assert cls(INTRINSICS["in"], 1, [1, 2]) == R
    assert cls(INTRINSICS["in"], 1, [Loud()]) == S  # compares with a user __eq__


@pytest.mark.parametrize("op", INPLACE)
def test_inplace_operators(op):
    assert cls(op, 1, 2) == U  # both immutable
    assert cls(op, (1,), [2]) == R  # right side mutable
    assert cls(op, [1], (2,)) == S  # left side mutated in place
    assert cls(op, {1}, {2}) == S
    assert cls(op, Loud(), 1) == S


@pytest.mark.parametrize("value", [
    None, True, 7, 2.5, 3j, "s", b"b", (1, ("x", b"y")), frozenset({1, "a"}), range(3), int,
    str, datetime.date(2024, 1, 1), datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),
    datetime.timedelta(days=1), fractions.Fraction(1, 3), Point(1, 2), Point3(1, 2),
    Frozen(1, ("a",)), Color.RED, re.compile("a+"), slice(1, 2),
])
def test_immutable_values_are_level_zero(value):
    assert A.level(value) == 0
    assert cls(operator.eq, value, value) == U


@pytest.mark.parametrize("value", [
    LoudPoint(1, 2), FrozenCustomEq(1), Mutable(1), LoudColor.A, MyStr("s"), Loud(),
    datetime.datetime(2024, 1, 1, tzinfo=UserTz()), (1, Mutable(2)), iter([1]),
    (x for x in ()), lambda: 1,
])
def test_user_objects_and_hooks_are_sequential(value):
    assert A.level(value) == S
    assert cls(operator.eq, value, 1) == S


def test_recursive_repr_is_trusted_only_for_what_it_wraps():
    # 3.13's dataclasses wrap the generated __repr__ in reprlib.recursive_repr; a user's own
    # __repr__ in the same wrapper is still user code.
    @dataclasses.dataclass(frozen=True)
    class OwnRepr:
        x: int

        @reprlib.recursive_repr()
        def __repr__(self):
            print("side effect")
            return "OwnRepr"

    assert A.level(Frozen(1, ())) == 0
    assert A.level(OwnRepr(1)) == S


def test_mutable_contents_make_immutable_types_readonly():
    assert A.level(FrozenHolder([1])) == R
    assert A.level(Frozen(1, ([],))) == R
    assert A.level(decimal.Decimal("1.5")) == R  # arithmetic reads the decimal context
    assert cls(operator.truediv, decimal.Decimal(1), 3) == R


def test_pydantic_frozen_models():
    pydantic = pytest.importorskip("pydantic")

    class FrozenModel(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(frozen=True)
        name: str
        tags: tuple = ()

    class OpenModel(pydantic.BaseModel):
        name: str

    class WithList(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(frozen=True)
        items: list

    assert A.level(FrozenModel(name="a", tags=("x",))) == U
    assert cls(operator.eq, FrozenModel(name="a"), FrozenModel(name="b")) == U
    assert A.level(OpenModel(name="a")) == S
    assert A.level(WithList(items=[1])) == R


def test_methods_of_immutable_types():
    assert cls("a,b".split, ",") == U
    assert cls(", ".join, ("a", "b")) == U
    assert cls(", ".join, ["a", "b"]) == R  # reads a list
    assert cls("{}".format, Loud()) == S  # calls Loud.__format__
    assert cls(str.upper, "x") == U  # unbound descriptor
    assert cls(b"ab".hex) == U
    assert cls((1, 2, 1).count, 1) == U
    assert cls(frozenset({1}).union, {2}) == R
    assert cls(datetime.date(2024, 1, 1).isoformat) == U
    assert cls(datetime.datetime(2024, 1, 1).replace, 2023) == U
    assert cls(fractions.Fraction(7, 3).limit_denominator, 2) == U  # Python code, stdlib
    assert cls(Point(1, 2)._replace, x=3) == U
    assert cls(Point(1, 2)._asdict) == U
    assert cls(Point3(1, 2).norm1) == S  # a user method runs user code
    assert cls(Point, 1, 2) == U  # namedtuple constructor
    assert cls(Frozen, 1) == S  # a dataclass constructor may run __post_init__/factories
    assert cls(datetime.datetime.now) == S  # reads the clock
    assert cls(datetime.date.today) == S


def test_builtins():
    assert cls(print, "x") == S
    assert cls(input) == S
    assert cls(open, "f") == S
    assert cls(len, "abc") == U
    assert cls(len, [Loud()]) == R  # len moves no element: shallow
    assert cls(sorted, [3, 1]) == R
    assert cls(sorted, (3, 1)) == U
    assert cls(sorted, [Loud()]) == S  # compares elements
    assert cls(min, 1, 2) == U and cls(max, [1, 2]) == R and cls(sum, (1, 2)) == U
    assert cls(any, (True,)) == U and cls(all, [1]) == R
    assert cls(isinstance, Loud(), Loud) == U
    assert cls(isinstance, 1, collections.abc.Sequence) == R  # ABC registry may change
    assert cls(repr, 1) == U and cls(str, 1) == U and cls(int, "3") == U
    assert cls(format, 1.5, ".2f") == U
    assert cls(zip, (1,), [2]) == R and cls(enumerate, (1,)) == U
    assert cls(range, 3) == U
    assert cls(next, iter([1])) == S
    assert cls(list, iter([1])) == S  # consumes a shared iterator
    assert cls(getattr, [], "append") == U
    assert cls(getattr, math, "pi") == R  # module attributes may be reassigned
    assert cls(getattr, Frozen(1), "x") == U
    assert cls(hash, (1, 2)) == U


def test_higher_order_builtins_depend_on_the_function():
    @unordered
    def pure_key(x):
        return x

    @readonly
    def read_key(x):
        return x

    assert cls(sorted, (3, 1), key=len) == U
    assert cls(sorted, (3, 1), key=pure_key) == U
    assert cls(sorted, (3, 1), key=read_key) == R
    assert cls(sorted, (3, 1), key=lambda x: x) == S  # unannotated user code
    assert cls(map, str.upper, ("a",)) == U
    assert cls(map, print, ("a",)) == S
    assert cls(max, (1, 2), key=operator.itemgetter(0)) == U
    assert cls(sorted, ("a",), key=__import__("functools").partial(pure_key)) == U


def test_stdlib():
    assert cls(json.dumps, {"a": [1]}) == R
    assert cls(json.dumps, ("a", 1)) == U
    assert cls(json.dumps, Mutable(1)) == S
    assert cls(json.loads, "[1]") == U
    assert cls(json.dump, {}, sys.stdout) == S
    assert cls(math.sqrt, 2) == U and cls(math.fsum, [1.0]) == R
    assert cls(re.sub, "a", "b", "aa") == U
    assert cls(re.sub, "a", lambda m: "b", "aa") == S  # the replacement runs user code
    assert cls(re.compile("a").findall, "aa") == U
    assert cls(__import__("itertools").chain, (1,), (2,)) == U
    assert cls(textwrap.dedent, "  x") == U
    for f in (random.random, random.randint, random.choice, random.seed, random.shuffle,
              time.time, time.sleep, time.perf_counter, logging.info, logging.getLogger,
              os.getcwd, subprocess.run):
        assert cls(f, 1) == S, f


def test_container_methods():
    lst, d, s = [1, 2], {"a": 1}, {1}
    for m in (lst.append, lst.extend, lst.pop, lst.sort, lst.insert, d.update, d.setdefault,
              d.pop, s.add, s.discard, lst.__setitem__):
        assert cls(m, 1) == S, m
    for m, args in ((lst.count, (1,)), (lst.index, (1,)), (lst.copy, ()), (d.get, ("a",)),
                    (d.keys, ()), (d.items, ()), (s.issubset, ({1},)), (s.union, ((2,),))):
        assert cls(m, *args) == R, m
    assert cls(d.get, Loud()) == S  # hashing/comparing a user key


def test_iteration_snapshot():
    snap = INTRINSICS["iter"]
    assert cls(snap, (1, 2)) == U
    assert cls(snap, [Loud()]) == R  # iterating a list calls nothing on its elements
    assert cls(snap, {"a": 1}.items()) == R
    assert cls(snap, Color) == U  # an enum class's members are fixed
    assert cls(snap, (x for x in ())) == S
    assert cls(INTRINSICS["getitem"], [Loud()], 0) == R
    assert cls(INTRINSICS["getitem"], {"k": Loud()}, "k") == R  # values are not compared
    assert cls(INTRINSICS["getitem"], {Loud(): 1}, 1) == S  # keys may be compared


def test_deep_cache_is_identity_safe_and_bounded():
    A._deep_cache.clear()
    t = tuple(range(100))
    assert A.level(t) == 0 and A._deep_cache[id(t)][0] is t  # the entry keeps t alive
    holder = tuple([[]] + list(range(100)))
    assert A.level(holder) == R
    for i in range(A._CACHE_MAX + 10):
        A.level(tuple(range(i, i + A._CACHE_MIN)))
    assert len(A._deep_cache) <= A._CACHE_MAX
    assert A.level(tuple(range(A._BUDGET + 5)) + ([],)) == S  # too big to check: sound


def test_unknown_is_sequential():
    def f():
        return 1

    assert cls(f) == S
    assert cls(Loud) == S
    assert cls(object().__str__) == S


# ---------------------------------------------------------------------------------------------
# Registration


@pytest.fixture
def clean_registry():
    yield
    A._registered.clear()
    A._registered_names.clear()


def test_register_object_method_and_errors(clean_registry):
    class Client:
        def get(self, url):
            return url

    def helper(x):
        return x

    assert cls(helper, 1) == S
    poppy_jit.register(helper, "unordered")
    assert cls(helper, 1) == U
    poppy_jit.register(Client.get, "readonly")
    assert cls(Client().get, "u") == R and cls(Client().get, "v") == R  # every instance
    poppy_jit.unregister(helper)
    assert cls(helper, 1) == S
    with pytest.raises(ValueError, match="kind"):
        poppy_jit.register(helper, "fast")
    with pytest.raises(TypeError, match="async"):
        async def a():
            pass
        poppy_jit.register(a, "unordered")
    with pytest.raises(TypeError, match="callable"):
        poppy_jit.register(42, "unordered")


def test_register_dotted_names(clean_registry, tmp_path, monkeypatch):
    poppy_jit.register("json.dumps", "sequential")  # module imported: resolved now
    assert cls(json.dumps, (1,)) == S
    (tmp_path / "thirdparty_mod.py").write_text(textwrap.dedent("""
        class Client:
            def get(self, key):
                return key
        def ping():
            return 1
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    poppy_jit.register("thirdparty_mod.Client.get", "unordered")  # not imported yet
    poppy_jit.register("thirdparty_mod.ping", "readonly")
    import thirdparty_mod
    assert cls(thirdparty_mod.Client().get, "k") == U
    assert cls(thirdparty_mod.ping) == R
    poppy_jit.unregister("thirdparty_mod.ping")
    assert cls(thirdparty_mod.ping) == S
    with pytest.raises(ValueError):
        poppy_jit.register("a..b", "unordered")
    monkeypatch.delitem(sys.modules, "thirdparty_mod")


def test_register_immutable():
    class Vec:
        def __init__(self, x):
            self.x = x

        def __add__(self, o):
            return Vec(self.x + o.x)

    assert cls(operator.add, Vec(1), Vec(2)) == S
    poppy_jit.register_immutable(Vec)
    try:
        assert cls(operator.add, Vec(1), Vec(2)) == U
    finally:
        A._registered_immutable.discard(Vec)
        A._TYPE_KIND.pop(Vec, None)


# ---------------------------------------------------------------------------------------------
# Behaviour under the runtime

PROGRAM = textwrap.dedent("""
    import asyncio, json, sys
    import poppy_jit
    from poppy_jit import poppy, unordered

    @unordered
    async def fetch(x):
        await asyncio.sleep(0.05)
        return f"<{x}>"

    def slow_double(x):
        return x * 2

    poppy_jit.register("__main__.slow_double", "unordered")

    @poppy
    def with_tuple(n):
        acc = ()
        for i in range(n):
            acc += (fetch(i),)
        return acc

    @poppy
    def with_list(n):
        acc = []
        for i in range(n):
            acc.append(fetch(i))
        return acc

    @poppy
    def registered(n):
        t = 0
        for i in range(n):
            t += slow_double(i)
        return t

    fn = {"tuple": with_tuple, "list": with_list, "registered": registered}[sys.argv[1]]
    print(fn(5))
    if poppy_jit.is_enabled():
        print(json.dumps(poppy_jit.stats()), file=sys.stderr)
""")


def _run(tmp_path, mode, poppy):
    pytest.importorskip("poppy_jit._core")
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPOPPY="1" if poppy else "0")
    p = subprocess.run([sys.executable, str(path), mode], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stderr.strip().splitlines()[-1]) if poppy else None
    return p.stdout, stats


def test_tuple_accumulation_is_not_serialised_list_append_is_ordered_on_its_list(tmp_path):
    out, st = _run(tmp_path, "tuple", True)
    assert out == _run(tmp_path, "tuple", False)[0]
    assert st["external_calls"]["sequential"] == 0  # tuple += never orders anything
    assert st["peak_in_flight"] >= 3
    out, st = _run(tmp_path, "list", True)
    assert out == _run(tmp_path, "list", False)[0]
    # The list is the run's own and never given away: its appends (one per element, in order)
    # are ordered against each other, not against the global order.
    assert st["object_local_calls"] >= 5 and st["object_escapes"] == 0
    assert st["external_calls"]["sequential"] == 0


def test_registered_function_runs_unordered(tmp_path):
    out, st = _run(tmp_path, "registered", True)
    assert out == _run(tmp_path, "registered", False)[0] == "20\n"
    assert st["external_calls"]["unordered"] >= 5 and st["external_calls"]["sequential"] == 0


def test_unordered_external_with_a_mutable_argument_reads_it_in_program_order():
    """A declared-unordered external given a list must see the list as it is at its place in
    program order: it is readonly then (later mutations wait for it), unordered with atoms."""
    from poppy_jit import unordered
    from poppy_jit._annotations import READONLY, UNORDERED, classify

    @unordered
    def ask(x, y=None):
        return x

    assert classify(ask, ("a prompt",), ()) == UNORDERED
    assert classify(ask, (("a", 1), None), ()) == UNORDERED
    assert classify(ask, (["history"],), ()) == READONLY
    assert classify(ask, ("p", {"k": 1}), ("y",)) == READONLY
