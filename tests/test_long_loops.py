"""A long `for` loop runs in bounded λO memory (issue 17: memory reclaimed during long loops).

A fold over a known sequence used to instantiate every iteration at once; when each iteration
waits for a sequential call (a loop writing line after line), all iterations' variables stayed
alive together: 28 per iteration here, 1.1M at 40,000 iterations. Now the fold parks past a bound
of 2^20 live variables and resumes as finished iterations free theirs (`stats()["fold_parks"]`).

Checked against plain CPython (the same output, the same calls in the same order), in a
blocking run and in a compiled `async def` (whose run is stepped from the event loop), and with
unordered calls that stay in flight while the fold is parked. Counts, not timings."""
import json
import subprocess
import sys
import textwrap

import pytest
from subproc import poppy_env

pytest.importorskip("poppy_jit._core")

N = 45_000
BOUND = 1 << 20

PROG = textwrap.dedent('''
    import asyncio, json, sys
    import poppy_jit
    from poppy_jit import poppy, unordered

    LOG = []

    def write(i, v):              # sequential (not annotated): the order of its calls is checked
        LOG.append((i, v))
        return len(LOG)

    @unordered
    def f(i):
        return i * 3 + 1

    @unordered
    async def later(i):
        await asyncio.sleep(0)
        return i + 7

    @poppy
    def lines(n):
        total = 0
        for i in range(n):
            total += write(i, f(i) % 97)
        return total

    @poppy
    async def lines_async(n):
        total = 0
        for i in range(n):
            total += write(i, await later(i))
        return total

    def counters():
        st = poppy_jit.stats() if poppy_jit.is_enabled() else {}
        poppy_jit.reset_stats()
        return [st.get("fold_parks"), st.get("peak_slots")]

    n = int(sys.argv[1])
    a = lines(n)
    sync = counters()
    b = asyncio.run(lines_async(n))
    print(json.dumps({"a": a, "b": b, "log_len": len(LOG), "log_sum": sum(i * 31 + v for i, v in LOG),
                      "first": LOG[:3], "last": LOG[-3:], "sync": sync, "async": counters()}))
''')


def _run(tmp_path, poppy):
    p = tmp_path / "long_loops.py"
    p.write_text(PROG)
    r = subprocess.run([sys.executable, str(p), str(N)], capture_output=True, text=True,
                       env=poppy_env(poppy), timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_long_loop_parks_and_matches_cpython(tmp_path):
    plain = _run(tmp_path, poppy=False)
    got = _run(tmp_path, poppy=True)
    for k in ("a", "b", "log_len", "log_sum", "first", "last"):
        assert got[k] == plain[k], k
    # Both loops passed the bound and parked, and the live variables stayed near it (one
    # iteration's worth past it at most) instead of growing with the iterations.
    for parks, peak in (got["sync"], got["async"]):
        assert parks >= 1, got
        assert peak <= BOUND + 1_000, got
