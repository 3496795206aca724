"""with statements whose body leaves by return, break or continue, and try/except/finally whose
handlers (or body, or else clause) do (docs/design-exceptions.md, "Exits through a with" and
"Exits through a finally"): which shapes compile, on which versions, and the reasons of those
that fall back; p650 and p651 check that they behave as CPython does."""
import sys
import textwrap

import pytest

pytest.importorskip("poppy_jit._core")

import poppy_jit._core as core  # noqa: E402
import difftest  # noqa: E402


def define(src: str, name: str = "f"):
    ns = {}
    exec(compile(textwrap.dedent(src).lstrip("\n"), "<case>", "exec"), ns)
    return ns[name]


ALL = {(3, 11), (3, 12), (3, 13)}

# name -> (source, versions where it compiles)
WITH_CASES = {
    "return of a value from a loop in the body": ("""
        def f(path):
            with open(path) as fh:
                if fh.readable():
                    return fh.read()
                log(path)
    """, ALL),
    "break and continue in a loop, with the loop's else": ("""
        def f(items):
            out = []
            for it in items:
                with lock as v:
                    if it:
                        continue
                    if v:
                        break
                    out.append(g(it))
                log(it)
            else:
                log(out)
            return out
    """, {(3, 11)}),
    "returns of constants, the last one final": ("""
        def f(m, xs):
            with m:
                if not xs:
                    return 0
                if xs[0]:
                    return None
                log(xs)
                return 2
    """, ALL),
    "a final if-break in a while loop": ("""
        def f(a, x):
            while True:
                with a:
                    x = g(x)
                    if x:
                        break
            return x
    """, {(3, 11)}),
    "an exit through two withs (with a, b:)": ("""
        def f(a, b, xs):
            with a, b:
                for x in xs:
                    if x:
                        return g(x)
            return 0
    """, ALL),
    "a with in a loop in a with": ("""
        def f(items):
            out = []
            with section("outer"):
                for it in items:
                    with section(it):
                        if it == "c":
                            continue
                        out.append(g(it))
            return out
    """, ALL),
}

FINALLY_CASES = {
    "return from a handler": ("""
        def f(x):
            try:
                raise ValueError(x)
            except ValueError:
                return llm("h")
            finally:
                log("fin")
    """, {(3, 11)}),
    "returns from the body and a handler": ("""
        def f(x):
            try:
                if x:
                    return g(x)
            except E:
                return 2
            finally:
                h(x)
            return 1
    """, ALL),
    "break and continue from a named handler, return from the else clause": ("""
        def f(xs):
            for x in xs:
                try:
                    y = g(x)
                except ValueError as e:
                    if e.args:
                        break
                    continue
                else:
                    if y:
                        return y
                finally:
                    log(x)
            else:
                h()
    """, {(3, 11)}),
    "inside a try/except": ("""
        def f(x):
            try:
                try:
                    return 10 // x
                except ZeroDivisionError:
                    return int("handler")
                finally:
                    log(x)
            except ValueError:
                return 1
    """, {(3, 11)}),
}

WITH_FALLBACK = "exception handling (with: a return, break, continue or statement with handlers in its body)"
FINALLY_FALLBACK = "exception handling (try/finally: a return, break or continue in its body)"


@pytest.mark.parametrize("case", sorted(WITH_CASES))
def test_with_compiles(case):
    src, versions = WITH_CASES[case]
    e = core.explain(define(src))
    if sys.version_info[:2] in versions:
        assert e["fallback"] is None, e["fallback"]
        assert "finally:" in e["bezoar"] and "with_exit" in e["bezoar"]
    else:
        assert e["fallback"] is not None


@pytest.mark.parametrize("case", sorted(FINALLY_CASES))
def test_finally_compiles(case):
    src, versions = FINALLY_CASES[case]
    e = core.explain(define(src))
    if sys.version_info[:2] in versions:
        assert e["fallback"] is None, e["fallback"]
        assert "finally:" in e["bezoar"]
    else:
        assert e["fallback"] is not None


@pytest.mark.parametrize("src,reason", [
    # An exit through a with from a handler of a try in its body, through a with and a finally.
    ("""
     def f(m, xs):
         with m:
             try:
                 g(xs)
             except KeyError:
                 return 1
     """, WITH_FALLBACK),
    ("""
     def f(a, x):
         try:
             with a:
                 if x:
                     return g(x)
                 h()
         finally:
             k()
     """, WITH_FALLBACK),
])
def test_falls_back(src, reason):
    assert core.explain(define(src))["fallback"].startswith(reason)


# The functions of p650/p651 that fall back, by version (docs/versions.md).
# On 3.12/3.13 the layouts of a with's or a finally's copies before a break or continue, and of
# a finally's copies in handlers, are not normalised into 3.11's yet.
_P650_LATER = {"loop_exits", "while_break", "suppressed_in_loop"}
_P651_LATER = {"handler_return", "body_and_handler_return", "loop_handlers", "finally_returns",
               "finally_logs_and_returns", "unbound_after", "handler_raises_then_finally", "typed_handlers"}
PROGRAM_FALLBACKS = {
    "p650": {(3, 11): set(), (3, 12): _P650_LATER, (3, 13): _P650_LATER},
    # `finally: return` after other statements, or with a return in the middle of the body: the
    # finally clause's copies are no straight-line code the recogniser takes.
    "p651": {(3, 11): {"finally_returns", "finally_logs_and_returns"}, (3, 12): _P651_LATER, (3, 13): _P651_LATER},
    "p652": {(3, 11): set(), (3, 12): {"nested_loop_exits", "three_deep"},
             (3, 13): {"nested_loop_exits", "three_deep"}},
}


@pytest.mark.parametrize("name", sorted(PROGRAM_FALLBACKS))
def test_programs_compile(name):
    [path] = [p for p in difftest.programs() if p.name.startswith(name)]
    run = difftest.run_program(path, poppy=True)
    assert run.rc == 0, run.stderr
    fell = {f["function"] for f in run.trace["poppy_stats"]["fallbacks"]}
    expected = PROGRAM_FALLBACKS[name].get(sys.version_info[:2])
    if expected is not None:
        assert fell == expected, run.trace["poppy_stats"]["fallbacks"]
