"""The lifter's structure recovery on shapes it goes round in, and on very deep nesting: a visible
fallback, never a crash.

Fuzz seed 1652 on 3.12 found a function (a `while 0` loop holding an inlined comprehension and a
`continue`, in a `for` loop) whose 3.12/3.13 layout sent the recovery round one cycle of regions
until the thread's stack overflowed: a segmentation fault at the first call under PYTHONPOPPY=1.
Regions are now bounded in depth (600: an `if`/`elif` chain counts one level per `elif`), which
made it a fallback ("statements nested too deeply"); since the normaliser gives that while loop's
test 3.11's forward jump to its exit (`py312::normalise`, `while_top_exit`: 3.12 threads it
straight back to the `for` loop's head), it compiles on every version. p643 has its variants."""
import json
import subprocess
import sys
import textwrap

import pytest
from subproc import poppy_env

pytest.importorskip("poppy_jit._core")
from poppy_jit._prologue import COMPILED_VERSIONS  # noqa: E402

COMPILED = sys.version_info[:2] in COMPILED_VERSIONS

CYCLE = textwrap.dedent('''
    import json
    import poppy_jit
    from poppy_jit import poppy

    work = [3]

    @poppy
    def f0(n, s, xs):
        for x6 in work:
            w7 = 0
            while w7:
                l1 = [q8 for q8 in xs]
                if undefined_global:
                    continue
        return n

    print(json.dumps({"result": f0(0, "bay", 2),
                      "fallbacks": [fb["reason"] for fb in poppy_jit.stats()["fallbacks"]]
                                   if poppy_jit.is_enabled() else []}))
''')


def _elifs(n: int) -> str:
    lines = ["import json, poppy_jit", "from poppy_jit import poppy", "@poppy", "def f(x):",
             "    if x == 0:", "        return 0"]
    for i in range(1, n):
        lines += [f"    elif x == {i}:", f"        return {i * 2}"]
    lines += ["    return -1",
              "print(json.dumps({'result': [f(0), f(5), f(%d), f(-3)]," % (n - 1),
              "  'fallbacks': [fb['reason'] for fb in poppy_jit.stats()['fallbacks']]"
              " if poppy_jit.is_enabled() else []}))"]
    return "\n".join(lines) + "\n"


def _run(tmp_path, source, poppy):
    p = tmp_path / "prog.py"
    p.write_text(source)
    r = subprocess.run([sys.executable, str(p)], capture_output=True, text=True,
                       env=poppy_env(poppy), timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_structure_the_recovery_went_round_in_compiles(tmp_path):
    plain = _run(tmp_path, CYCLE, poppy=False)
    got = _run(tmp_path, CYCLE, poppy=True)
    assert got["result"] == plain["result"] == 0
    # 3.11 compiles it; so do 3.12/3.13 (they crashed, then fell back "too irregular").
    if COMPILED:
        assert got["fallbacks"] == [], got


@pytest.mark.parametrize("n, compiles", [(400, True), (700, False)])
def test_long_elif_chains(tmp_path, n, compiles):
    src = _elifs(n)
    plain = _run(tmp_path, src, poppy=False)
    got = _run(tmp_path, src, poppy=True)
    assert got["result"] == plain["result"] == [0, 10, 2 * (n - 1), -1]
    if compiles:
        assert got["fallbacks"] == []
    else:
        assert len(got["fallbacks"]) == 1 and "nested too deeply" in got["fallbacks"][0], got
