"""The public annotations in plain mode, PYTHONPOPPY / PYTHONPOPPY_STATS parsing."""
import asyncio
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import poppy_jit
from poppy_jit import poppy, readonly, sequential, unordered
from poppy_jit._decorators import ExternalSpec, format_stats

HAVE_CORE = importlib.util.find_spec("poppy_jit._core") is not None
PKG_PARENT = str(Path(poppy_jit.__file__).resolve().parent.parent)


@pytest.mark.parametrize("deco, kind", [(unordered, "unordered"), (readonly, "readonly"),
                                        (sequential, "sequential")])
def test_bare_and_configured_sync_externals(deco, kind):
    calls = []

    def add(a, b=1):
        """doc of add"""
        calls.append((a, b))
        return a + b

    for wrapped, blocking in [(deco(add), False), (deco()(add), False),
                              (deco(blocking=True)(add), True)]:
        spec = wrapped.__poppy_external__
        assert isinstance(spec, ExternalSpec)
        assert (spec.kind, spec.fn, spec.is_async, spec.blocking) == (kind, add, False, blocking)
        assert wrapped.__name__ == "add" and wrapped.__doc__ == "doc of add"
        assert wrapped.__wrapped__ is add
        assert wrapped(2, b=5) == 7
    assert calls == [(2, 5)] * 3


def test_async_external_runs_to_completion_when_called_plainly():
    @unordered
    async def slow_double(x):
        await asyncio.sleep(0.01)
        return 2 * x

    spec = slow_double.__poppy_external__
    assert spec.is_async and not spec.blocking and asyncio.iscoroutinefunction(spec.fn)
    assert not asyncio.iscoroutinefunction(slow_double)
    assert slow_double(21) == 42


def test_async_external_called_from_running_loop():
    @readonly
    async def ident(x):
        await asyncio.sleep(0)
        return x

    def helper():
        return ident("inside")  # ordinary code: blocks this loop's thread, runs on a worker loop

    async def main():
        # From a coroutine: the awaitable, as the undecorated async def returns (issue 16).
        pending = ident("awaited")
        assert asyncio.iscoroutine(pending)
        return helper(), await pending

    assert asyncio.run(main()) == ("inside", "awaited")


def test_async_external_propagates_exceptions():
    @unordered
    async def boom():
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope") as info:
        boom()
    # No trace of how the runtime looked for a running loop: the exception chains as in CPython.
    assert info.value.__context__ is None and info.value.__cause__ is None


_UNCAUGHT = """
from poppy_jit import poppy, unordered
@unordered
async def boom(x):
    raise ValueError("bad %s" % x)
@poppy
def run():
    return boom(1)
import sys
try:
    run()
except ValueError as e:
    print(repr(e), repr(e.__context__), repr(e.__cause__))
boom(2)
"""


@pytest.mark.parametrize("mode", ["0", "1"])
def test_uncaught_async_external_failure_prints_one_traceback(mode):
    p = _run(_UNCAUGHT, PYTHONPOPPY=mode)
    assert p.returncode == 1
    assert p.stdout == "ValueError('bad 1') None None\n"
    assert "During handling of the above exception" not in p.stderr, p.stderr
    assert p.stderr.count("Traceback (most recent call last)") == 1, p.stderr
    assert p.stderr.rstrip().endswith("ValueError: bad 2")


def test_reannotation_wraps_the_original_function():
    def f():
        return 1

    g = sequential(unordered(f))
    assert g.__poppy_external__.kind == "sequential" and g.__poppy_external__.fn is f


def test_option_validation():
    with pytest.raises(TypeError, match="unknown option.*parallel"):
        unordered(parallel=True)
    with pytest.raises(TypeError, match="True or False"):
        readonly(blocking="yes")
    with pytest.raises(TypeError, match="async def"):
        @unordered(blocking=True)
        async def f():
            pass
    with pytest.raises(TypeError, match="must decorate a function"):
        sequential(42)
    with pytest.raises(TypeError, match="async generator"):
        @unordered
        async def agen():
            yield 1


def test_poppy_returns_the_function_itself():
    def f(x):
        return x + 1

    assert poppy(f) is f and f.__poppy__ is True and f(1) == 2

    @poppy()
    def g():
        return "g"

    assert g.__poppy__ is True and g() == "g"
    assert f in poppy_jit._decorators._registry and g in poppy_jit._decorators._registry


def test_poppy_marks_async_and_generators_but_rejects_non_functions():
    async def a():
        pass

    def gen():
        yield 1

    assert poppy(a).__poppy__ and poppy(gen).__poppy__
    for bad in (len, 3, type("C", (), {}), (lambda: 0).__code__):
        with pytest.raises(TypeError, match="@poppy must decorate a Python function"):
            poppy(bad)


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=PKG_PARENT)
    for k in ("PYTHONPOPPY", "PYTHONPOPPY_STATS"):
        full.pop(k, None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True)


@pytest.mark.parametrize("value", [None, "", "0"])
def test_plain_mode_never_imports_core(value):
    env = {} if value is None else {"PYTHONPOPPY": value}
    p = _run("import sys, poppy_jit; print('poppy_jit._core' in sys.modules, "
             "poppy_jit.is_enabled())", **env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("value", ["2", "yes", "true", " 1", "1 "])
def test_bad_pythonpoppy_is_a_clear_warning_and_the_default(value):
    p = _run("import sys, poppy_jit; print('poppy_jit._core' in sys.modules, "
             "poppy_jit.is_enabled())", PYTHONPOPPY=value)
    assert p.returncode == 0 and p.stdout.split() == ["False", "False"]
    assert f"PoppyConfigWarning: poppy_jit: PYTHONPOPPY must be 0 or 1 (got {value!r})" \
        in p.stderr


def test_bad_pythonpoppy_stats_is_a_clear_warning():
    p = _run("import poppy_jit", PYTHONPOPPY_STATS="on")
    assert p.returncode == 0
    assert "PoppyConfigWarning: poppy_jit: PYTHONPOPPY_STATS must be 0 or 1 (got 'on')" in p.stderr


def test_stats_at_exit_in_plain_mode():
    p = _run("import poppy_jit; print('hi')", PYTHONPOPPY_STATS="1")
    assert p.returncode == 0 and p.stdout == "hi\n"
    assert "hook not enabled" in p.stderr


@pytest.mark.skipif(HAVE_CORE, reason="the compiled runtime is installed")
def test_pythonpoppy_1_without_core_says_how_to_build_it():
    p = _run("import poppy_jit", PYTHONPOPPY="1")
    assert p.returncode != 0
    assert "poppy_jit._core (the compiled runtime) is not available" in p.stderr
    assert "pip install ." in p.stderr


def test_format_stats():
    text = format_stats({"functions_compiled": 2, "reductions": 1234, "compile_ms": 1.23456,
                         "peak_in_flight": 8,
                         "external_calls": {"unordered": 9, "readonly": 0, "sequential": 17},
                         "fallbacks": [{"function": "f", "reason": "uses try"}]})
    lines = text.splitlines()
    assert lines[0] == "poppy_jit stats"
    assert any(ln.split() == ["functions_compiled", "2"] for ln in lines)
    assert any(ln.split() == ["compile_ms", "1.23"] for ln in lines)
    assert any(ln.split() == ["external_calls.sequential", "17"] for ln in lines)
    assert "fallbacks (1):" in lines and "  f: uses try" in lines
    assert "fallbacks (0)" in format_stats({"fallbacks": []})


def test_with_core_enable_marks_and_stats_work():
    pytest.importorskip("poppy_jit._core")
    p = _run("import poppy_jit\n"
             "@poppy_jit.poppy\n"
             "def f(x):\n    return x + 1\n"
             "print(poppy_jit.is_enabled(), f(1))\n"
             "s = poppy_jit.stats()\n"
             "print(sorted(k for k in ('functions_compiled','fallbacks','reductions',"
             "'external_calls','peak_in_flight','compile_ms') if k in s))\n"
             "poppy_jit.disable(); print(poppy_jit.is_enabled())\n",
             PYTHONPOPPY="1", PYTHONPOPPY_STATS="1")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "True 2" and lines[2] == "False"
    assert len(eval(lines[1])) == 6
    assert "poppy_jit stats" in p.stderr


def test_threads_get_their_own_wrappers_results():
    @unordered
    async def tid(x):
        await asyncio.sleep(0.005)
        return (x, threading.get_ident())

    results = []
    # Keep every thread alive until all have their result: a finished thread's ident can be
    # reused by the next one started.
    barrier = threading.Barrier(4)

    def work(i):
        results.append(tid(i))
        barrier.wait()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r[0] for r in results) == [0, 1, 2, 3]
    assert len({r[1] for r in results}) == 4
