"""The CPython versions poppy_jit builds for (docs/versions.md): on each, the package installs and
imports; where the compiled path is not supported yet, every @poppy function runs in plain CPython
with a fallback reason naming the version and the function's line, and the program's result is
CPython's. Runs on every version scripts/test.sh tests."""
import sys
import textwrap

import pytest

from poppy_jit import _prologue
from subproc import run_file

_core = pytest.importorskip("poppy_jit._core")
VERSION = sys.version_info[:2]
COMPILED = VERSION in _prologue.COMPILED_VERSIONS

PROGRAM = textwrap.dedent("""\
    import poppy_jit
    from poppy_jit import poppy, unordered, sequential

    @unordered
    def llm(x):
        return x * 2

    @sequential
    def log(s):
        print("log", s)

    @poppy
    def main(n):
        out = [llm(i) for i in range(n)]
        total = 0
        for v in out:
            total += v
        log(total)
        return out, {k: v for k, v in zip("abc", out)}

    print(main(4))
    if poppy_jit.is_enabled():
        for fb in poppy_jit.stats()["fallbacks"]:
            print("fallback", fb["function"], fb["reason"])
    """)


def test_supported_version():
    assert (3, 11) <= VERSION <= (3, 13)
    assert (3, 11) in _prologue.COMPILED_VERSIONS


def test_program_runs_as_cpython_does(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    plain, popped = run_file(path, poppy=False), run_file(path, poppy=True)
    assert plain.returncode == 0 and popped.returncode == 0, popped.stderr
    expected = "log 12\n([0, 2, 4, 6], {'a': 0, 'b': 2, 'c': 4})\n"
    assert plain.stdout == expected
    if COMPILED:
        assert popped.stdout == expected
    else:
        reason = f"CPython {VERSION[0]}.{VERSION[1]}: compiled path not supported yet at line 12"
        assert popped.stdout == expected + f"fallback main {reason}\n"


def test_explain_names_the_version():
    def f(x):
        return x + 1

    explained = _core.explain(f)
    if COMPILED:
        assert explained["fallback"] is None and explained["bezoar"]
    else:
        assert explained["fallback"] == (f"CPython {VERSION[0]}.{VERSION[1]}: compiled path not "
                                         f"supported yet at line {f.__code__.co_firstlineno}")
        assert explained["bezoar"] is None


def test_no_prologue_where_not_compiled():
    def f():
        return 1

    why = _prologue.ineligible(f.__code__)
    if COMPILED:
        assert why is None
    else:
        assert why.startswith(f"CPython {VERSION[0]}.{VERSION[1]}: compiled path not supported yet")
