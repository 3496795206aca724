"""The off switch is cheap: `import poppy_jit` with PYTHONPOPPY unset imports none of what only
the on path needs (the compiled runtime, asyncio, the annotation library, traces), and the
lazily imported names still work. Behaviour, not timing (the figures are in docs/benchmarks.md)."""
import os
import subprocess
import sys
from pathlib import Path

import poppy_jit

PKG_PARENT = str(Path(poppy_jit.__file__).resolve().parent.parent)

# Modules the off switch must not import (each costs milliseconds or megabytes).
HEAVY = ["asyncio", "concurrent.futures", "inspect", "tomllib", "json", "decimal", "dis",
         "poppy_jit._core", "poppy_jit._annotations", "poppy_jit._intrinsics", "poppy_jit._loop",
         "poppy_jit._prologue", "poppy_jit._rt", "poppy_jit._run", "poppy_jit._trace",
         "poppy_jit._config"]


def _run(code: str, **env: str) -> str:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}
    e.update(env)
    e["PYTHONPATH"] = PKG_PARENT + os.pathsep + e.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_plain_import_loads_nothing_heavy():
    out = _run(
        "import sys\n"
        "before = set(sys.modules)\n"
        "import poppy_jit\n"
        "from poppy_jit import poppy, unordered, readonly, sequential\n"
        "@unordered\n"
        "async def fetch(x):\n"
        "    return x\n"
        "@poppy\n"
        "def f(x):\n"
        "    return x + 1\n"
        "print(' '.join(sorted(set(sys.modules) - before)))\n")
    new = set(out.split())
    assert not new & set(HEAVY), sorted(new & set(HEAVY))


def test_plain_mode_still_works_and_lazy_names_resolve():
    out = _run(
        "import sys, poppy_jit\n"
        "from poppy_jit import unordered, poppy\n"
        "@unordered\n"
        "async def fetch(x):\n"
        "    return x * 2\n"
        "@poppy\n"
        "def f(x):\n"
        "    return fetch(x) + 1\n"
        "assert fetch.__poppy_external__.is_async\n"
        "print(f(20))\n"
        "from poppy_jit import run, register\n"
        "assert callable(run) and callable(poppy_jit.register_immutable) and callable(register)\n"
        "assert 'run' in dir(poppy_jit)\n"
        "print(poppy_jit.is_enabled())\n")
    assert out.split() == ["41", "False"]


def test_async_generators_are_still_rejected_without_inspect():
    out = _run(
        "import functools\n"
        "from poppy_jit import unordered\n"
        "async def gen():\n"
        "    yield 1\n"
        "try:\n"
        "    unordered(gen)\n"
        "except TypeError as e:\n"
        "    print('rejected')\n"
        "async def co(a, b):\n"
        "    return a\n"
        "print(unordered(functools.partial(co, 1)).__poppy_external__.is_async)\n")
    assert out.split() == ["rejected", "True"]
