"""The PEP 523 hook with another eval-frame user installed before or after it (chaining), and
zero-edit mode (PYTHONPOPPY_CONFIG)."""
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("poppy_jit._core")

SUPPORT = Path(__file__).parent / "support"


@pytest.fixture(scope="module")
def chainer(tmp_path_factory):
    """Build the test-only PEP 523 extension (tests/support/chainer.c) with the system compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("chainer")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", f"-I{sysconfig.get_paths()['include']}",
                    str(SUPPORT / "chainer.c"), "-o", str(out / f"chainer{suffix}")], check=True)
    return out


PROGRAM = """
import asyncio, sys
sys.path.insert(0, {chainer_dir!r})
import chainer
{before}
import poppy_jit
from poppy_jit import poppy, unordered
{after}

@unordered
async def fetch(x):
    await asyncio.sleep(0.05)
    return x * 2

def plain(n):
    return sum(range(n))

@poppy
def main():
    a = fetch(1)
    b = fetch(2)
    print(a + b, plain(10))

main()
print("poppy runs", poppy_jit.stats()["runs"], "peak", poppy_jit.stats()["peak_in_flight"])
print("chained frames seen", chainer.count() > 0)
{tail}
"""


def run(chainer_dir, before="", after="", tail=""):
    src = PROGRAM.format(chainer_dir=str(chainer_dir), before=before, after=after, tail=tail)
    env = dict(os.environ, PYTHONPOPPY="1")
    return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                          timeout=60)


def test_poppy_installed_after_another_evaluator_chains_to_it(chainer):
    p = run(chainer, before="chainer.install()")
    assert p.returncode == 0, p.stderr
    assert "6 45" in p.stdout
    assert "poppy runs 1 peak 2" in p.stdout
    assert "chained frames seen True" in p.stdout


def test_another_evaluator_on_top_of_poppy_still_reaches_it(chainer):
    tail = textwrap.dedent("""
        try:
            poppy_jit.disable()
        except RuntimeError as e:
            print("disable refused:", "another PEP 523" in str(e))
        chainer.uninstall()
        poppy_jit.disable()
        print("disabled", not poppy_jit.is_enabled())
    """)
    p = run(chainer, after="chainer.install()", tail=tail)
    assert p.returncode == 0, p.stderr
    assert "6 45" in p.stdout
    assert "poppy runs 1 peak 2" in p.stdout
    assert "disable refused: True" in p.stdout
    assert "disabled True" in p.stdout


ZERO_EDIT_MODULE = '''
import time

def ask(x):
    time.sleep(0.05)  # a blocking client call
    return f"<{x}>"

def shout(s):
    print(s.upper())

def pipeline(items):
    out = []
    for it in items:
        shout(it)
        out.append(ask(it))
    return out
'''

ZERO_EDIT_MAIN = '''
import asyncio, hashlib, sys
import zeromod
res = zeromod.pipeline(["a", "b", "c"])
print(res)
'''


def test_zero_edit_config_parallelises_an_unmodified_module(tmp_path):
    (tmp_path / "zeromod.py").write_text(ZERO_EDIT_MODULE)
    before = (tmp_path / "zeromod.py").read_bytes()
    cfg = tmp_path / "poppy.toml"
    cfg.write_text(textwrap.dedent('''
        [poppy]
        functions = ["zeromod:pipeline"]

        [externals]
        "zeromod:ask" = { kind = "unordered", blocking = true }
        "zeromod:shout" = "sequential"
    '''))
    main = tmp_path / "main.py"
    main.write_text(ZERO_EDIT_MAIN)
    # The unmodified program, without poppy_jit at all.
    original = subprocess.run([sys.executable, str(main)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=60)
    runner = ("import poppy_jit, runpy, sys; sys.path.insert(0, sys.argv[1]); "
              "runpy.run_path(sys.argv[2], run_name='__main__'); "
              "s = poppy_jit.stats() if poppy_jit.is_enabled() else None; "
              "print('stats', s and (s['functions_compiled'], s['peak_in_flight']))")
    env = dict(os.environ, PYTHONPOPPY_CONFIG=str(cfg))
    plain = subprocess.run([sys.executable, "-c", runner, str(tmp_path), str(main)],
                           capture_output=True, text=True, env=env, timeout=60)
    env["PYTHONPOPPY"] = "1"
    popped = subprocess.run([sys.executable, "-c", runner, str(tmp_path), str(main)],
                            capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 0 and popped.returncode == 0, (plain.stderr, popped.stderr)
    body = lambda out: [l for l in out.splitlines() if not l.startswith("stats")]  # noqa: E731
    assert body(plain.stdout) == body(popped.stdout) == original.stdout.splitlines()
    assert original.stdout.splitlines() == ["A", "B", "C", "['<a>', '<b>', '<c>']"]
    assert "stats None" in plain.stdout
    assert "stats (1, 3)" in popped.stdout  # compiled, and the three asks overlapped
    assert (tmp_path / "zeromod.py").read_bytes() == before


def test_zero_edit_config_errors_are_clear(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[externals]\n"zeromod:ask" = "sometimes"\n')
    env = dict(os.environ, PYTHONPOPPY_CONFIG=str(cfg))
    p = subprocess.run([sys.executable, "-c", "import poppy_jit"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode != 0
    assert "PYTHONPOPPY_CONFIG" in p.stderr and "sometimes" in p.stderr
