"""`with` statements (src/lift/with_stmt.rs; docs/design-exceptions.md, "Stage 3"): which shapes
compile, the reasons of those that fall back, and behaviour the differential programs p600-p603
and p630-p633 do not pin: how the manager's methods are looked up (on the type, bound through their
descriptors) and CPython's TypeError for an object that is no context manager.
"""
import textwrap

import pytest

pytest.importorskip("poppy_jit._core")

import poppy_jit._core as core  # noqa: E402
import difftest  # noqa: E402
from test_core_pipeline import same  # noqa: E402


def define(src: str, name: str = "f"):
    ns = {}
    exec(compile(textwrap.dedent(src).lstrip("\n"), "<case>", "exec"), ns)
    return ns[name]


COMPILED = {
    "as a name": """
        def f(path):
            with open(path) as fh:
                data = fh.read()
            return data
    """,
    "without as": """
        def f(lock, x):
            with lock:
                y = g(x)
            return y
    """,
    "as a tuple": """
        def f(m):
            with m as (a, b):
                g(a, b)
    """,
    "in a loop, the body branching": """
        def f(items):
            out = []
            for it in items:
                with section(it) as s:
                    if it:
                        out.append(g(s))
            return out
    """,
    "around a loop": """
        def f(items):
            out = []
            with section("classify"):
                for it in items:
                    out.append(g(it))
            return out
    """,
    "in an except handler and an else clause": """
        def f(x):
            try:
                y = g(x)
            except KeyError as e:
                with lock:
                    y = h(e)
            else:
                with lock:
                    y = h(y)
            return y
    """,
    "a body that always raises": """
        def f(m, x):
            with m:
                raise ValueError(x)
            return x
    """,
    "a body ending with a return": """
        def f(items, m):
            for it in items:
                with m as v:
                    return v + it
            return None
    """,
    "a body ending with a return of a constant, a break or a continue (after the exit call)": """
        def f(items, m):
            for it in items:
                with m:
                    g(it)
                    continue
            while items:
                with m:
                    g(items.pop())
                    break
            with m:
                return 1
    """,
    "a try statement in its body": """
        def f(items):
            out = []
            with section("classify") as name:
                for it in items:
                    try:
                        out.append(g(it))
                    except KeyError as e:
                        out.append(name)
                    else:
                        log(it)
                    finally:
                        log(name)
            return out
    """,
    "inside a try body, a try/finally body and a with body": """
        def f(m, n):
            try:
                with m as v:
                    g(v)
            except KeyError:
                pass
            try:
                with m:
                    with n:
                        g()
            finally:
                h()
    """,
    "ending with a return or a break in a while loop": """
        def f(n, m):
            while n:
                with m:
                    n -= 1
                    g()
                    break
            while n:
                with m:
                    return g(n)
            return n
    """,
    "several managers": """
        def f(a, b):
            with a as x, b as y:
                g(x, y)
    """,
    "in a while loop, one after another": """
        def f(n):
            while n:
                with a:
                    n -= 1
                with b:
                    g(n)
            return n
    """,
}


@pytest.mark.parametrize("case", sorted(COMPILED))
def test_compiles(case):
    # (On every version: 3.12 and 3.13 lay some of these out otherwise — a with's handler code
    # after the function, a while loop's test there too, reached only from the suppressed path —,
    # which `py312::handlers::place_with` puts back into 3.11's layout: docs/versions.md.)
    e = core.explain(define(COMPILED[case]))
    assert e["fallback"] is None, e["fallback"]
    assert "with_enter" in e["bezoar"] and "exc_traceback" in e["bezoar"]


# (A return, break or continue leaving the body: tests/test_with_exits.py.)
FALLBACKS = [
    ("""
     def f(m, xs):
         with m:
             try:
                 g(xs)
             except KeyError:
                 return 1
     """, "exception handling (with: a return, break, continue or statement with handlers in its body) at line 2"),
    ("""
     async def f(m, xs):
         async with m:
             async for x in xs:
                 g(x)
     """, "exception handling (async for) at line 3"),
]


@pytest.mark.parametrize("src,op", [
    ("""
     async def f(m):
         async with m as v:
             await g(v)
     """, "async_with_enter"),
    ("""
     async def f(m):
         with m:
             await g()
     """, "with_enter"),
])
def test_with_and_async_with_in_an_async_def_compile(src, op):
    e = core.explain(define(src))
    assert e["fallback"] is None, e["fallback"]
    assert f"op {op}(" in e["bezoar"]


@pytest.mark.parametrize("src,reason", FALLBACKS)
def test_fallback_reason(src, reason):
    assert core.explain(define(src))["fallback"] == reason


def test_methods_are_looked_up_on_the_type_like_cpython(tmp_path):
    """BEFORE_WITH's look-ups: on the type (an instance attribute is ignored), through the
    descriptor protocol (staticmethod, classmethod, a callable without __get__, a descriptor of
    the program's own), __enter__ before __exit__, both before __enter__ is called; and CPython's
    TypeError, naming the type as CPython does (tp_name: `re.Pattern`, a class of the program),
    for an object that lacks one of them."""
    body = """
    import re

    class Static:
        @staticmethod
        def __enter__():
            log("static enter")
            return "static"
        @classmethod
        def __exit__(cls, *exc):
            log("classmethod exit", cls.__name__, exc[0] and exc[0].__name__)
            return True

    class Callable:
        def __call__(self, *args):
            log("callable called with", len(args))
            return "callable"

    class Plain:
        __enter__ = Callable()
        __exit__ = Callable()

    class Shadowed:
        def __init__(self):
            self.__enter__ = lambda: "instance attribute"
        def __enter__(self):
            return "class attribute"
        def __exit__(self, *exc):
            return False

    class Loud:
        def __init__(self, name):
            self.name = name
        def __get__(self, obj, owner):
            log("binding", self.name, owner.__name__)
            return lambda *args: log("called", self.name, len(args))

    class Described:
        __enter__ = Loud("enter")
        __exit__ = Loud("exit")

    class NoExit:
        __enter__ = Loud("lonely enter")

    class NoEnter:
        __exit__ = Loud("lonely exit")

    @poppy
    def use(m, x):
        with m as v:
            log("body", v)
            1 // x
        return v

    for m in (Static(), Plain(), Shadowed(), Described(), NoExit(), NoEnter(), re.compile("a"), 42):
        for x in (1, 0):
            try:
                print(use(m, x))
            except Exception as e:
                print("caught", type(e).__name__, e)
    report(None)
    """
    _, popped, stats = same(body, tmp_path)
    assert stats["fallbacks"] == [], stats["fallbacks"]
    out = popped.stdout
    assert "caught TypeError 'NoExit' object does not support the context manager protocol (missed __exit__ method)" in out
    assert "caught TypeError 'NoEnter' object does not support the context manager protocol\n" in out
    assert "caught TypeError 're.Pattern' object does not support the context manager protocol" in out
    assert "log body class attribute" in out


@pytest.mark.parametrize("path", [p for p in difftest.programs() if p.name[:4] in ("p600", "p601", "p602", "p603", "p630", "p631", "p632", "p633")],
                         ids=lambda p: p.name)
def test_with_programs_compile(path):
    """The differential programs of `with` compile every @poppy function on every version (the
    differential test checks that they behave as CPython does). (On 3.12/3.13 p630's
    `try_in_nested_with` and, on 3.13, p630's `try_around_loop` and p631's `loop_try_with` fell
    back until their layouts were normalised into 3.11's: docs/versions.md.)"""
    run = difftest.run_program(path, poppy=True)
    assert run.rc == difftest.directives(path).get("expect_rc", 0), run.stderr
    stats = run.trace["poppy_stats"]
    assert stats["fallbacks"] == [], stats["fallbacks"]
    assert stats["functions_compiled"] == len(difftest.poppy_functions(path))
