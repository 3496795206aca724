"""try/finally whose body leaves by return, break or continue (docs/design-exceptions.md, "Exits
through a finally"): which shapes compile, on which versions, and the reasons of those that fall
back; p634 checks that they behave as CPython does."""
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


# name -> (source, versions where it compiles)
CASES = {
    "break and continue in a loop": ("""
        def f(xs):
            out = []
            for x in xs:
                try:
                    if g(x):
                        break
                    if h(x):
                        continue
                    out.append(x)
                finally:
                    log(x)
            return out
    """, {(3, 11), (3, 12), (3, 13)}),
    "return of a value and of None": ("""
        def f(xs):
            for x in xs:
                try:
                    if x:
                        return g(x)
                    if x > 1:
                        return None
                    k(x)
                finally:
                    log(x)
            return 0
    """, {(3, 11), (3, 12), (3, 13)}),
}

FALLBACK = "exception handling (try/finally: a return, break or continue in its body)"


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiles(case):
    src, versions = CASES[case]
    e = core.explain(define(src))
    if sys.version_info[:2] in versions:
        assert e["fallback"] is None, e["fallback"]
        assert "finally:" in e["bezoar"]
    else:
        assert e["fallback"].startswith(FALLBACK), e["fallback"]


@pytest.mark.parametrize("src", [
    # A finally clause with a branch, one deleting a variable, a finally nested in another one's
    # body with an exit through both. (An exit from a handler of a try/except in the body compiles
    # on 3.11: tests/test_with_exits.py.)
    """
    def f(xs):
        for x in xs:
            try:
                if g(x):
                    break
            finally:
                del xs
    """,
    """
    def f(xs):
        for x in xs:
            try:
                try:
                    if g(x):
                        break
                finally:
                    h(x)
            finally:
                k(x)
    """,
])
def test_falls_back(src):
    assert core.explain(define(src))["fallback"].startswith(FALLBACK)


def test_p634_compiles():
    path = difftest.PROGRAMS_DIR / "p634_try_finally_exits.py"
    run = difftest.run_program(path, poppy=True)
    assert run.rc == 0, run.stderr
    fell = {f["function"] for f in run.trace["poppy_stats"]["fallbacks"]}
    # The same on every version: 3.12/3.13's layouts of the exits' copies of the finally clause,
    # their loops' jumps and the exceptional copy are normalised into 3.11's (docs/versions.md).
    assert fell == {"returned_value_kept", "nested_finally"}
