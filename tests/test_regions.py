"""Internal regions (src/bezoar/passes/regions.rs, poppy_jit._regions): what explain shows, and
that loops inside a region cost the evaluator a constant number of reductions and slots whatever
their length (100k appends, dict counting, string building: linear, not quadratic). Counts, not
timings; results are compared with plain CPython by the differential programs p310-p319."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("poppy_jit._core")

PROGRAM = textwrap.dedent(
    """
    import json, os, sys
    import poppy_jit
    from poppy_jit import poppy

    @poppy
    def append(n):
        out = []
        for i in range(n):
            out.append(i * i)
        return len(out)

    @poppy
    def counting(n):
        counts = {}
        for i in range(n):
            k = i % 17
            counts[k] = counts.get(k, 0) + 1
        return sorted(counts.items())[:2]

    @poppy
    def building(n):
        s = ""
        for i in range(n):
            s += str(i % 10)
        return len(s)

    @poppy
    def comprehension(n):
        return sum([x * 2 for x in range(n)])

    @poppy
    def given(xs):
        total = 0
        for x in xs:
            total += x
        return total

    out = {}
    small, big = map(int, os.environ["SIZES"].split(","))
    for f in (append, counting, building, comprehension):
        for n in (small, big):
            poppy_jit.reset_stats()
            r = f(n)
            st = poppy_jit.stats()
            out[f"{f.__name__}/{'small' if n == small else 'big'}"] = [r, st["reductions"], st["peak_slots"]]
    for n in (100, 1000):
        poppy_jit.reset_stats()
        r = given(list(range(n)))
        out[f"given/{n}"] = [r, poppy_jit.stats()["reductions"]]
    out["explain"] = poppy_jit.explain(append)["regions"]
    print(json.dumps(out))
    """
)


def run(sizes="1000,100000", **env):
    e = dict(os.environ, PYTHONPOPPY="1", SIZES=sizes, **env)
    r = subprocess.run([sys.executable, "-c", PROGRAM], env=e, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_region_loops_cost_constant_reductions_and_slots():
    out = run()
    for name in ("append", "counting", "building", "comprehension"):
        small, big = out[f"{name}/small"], out[f"{name}/big"]
        # The whole loop is one step: the same reductions and slots at 1k and 100k iterations.
        assert small[1] == big[1], (name, small, big)
        assert small[2] == big[2], (name, small, big)
        assert big[1] < 100, (name, big)
    assert out["append/big"][0] == 100000
    assert out["building/big"][0] == 100000
    assert out["comprehension/big"][0] == 100000 * 99999
    # A list the caller passes in is not closed: the region declines, the loop runs operation by
    # operation (reductions grow with its length) and gives CPython's result.
    assert out["given/100"][0] == 4950 and out["given/1000"][0] == 499500
    assert out["given/1000"][1] > 5 * out["given/100"][1]


def test_explain_shows_the_region_and_its_live_values():
    (region,) = run()["explain"]
    assert region.startswith("# region.0 (line ")
    assert "in [n, global range] out [out]" in region
    assert "def region_0(" in region and "for " in region and ".append(" in region


def test_regions_can_be_switched_off():
    out = run("100,1000", PYTHONPOPPY_REGIONS="0")
    assert out["explain"] == []
    small, big = out["append/small"], out["append/big"]
    assert small[0] == 100 and big[0] == 1000
    assert big[1] > 5 * small[1]  # every iteration is reduced
