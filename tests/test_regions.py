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
    import contextlib, json, os, sys
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
    def in_try(n):
        try:
            out = []
            for i in range(n):
                out.append(i * i)
        except ValueError:
            out = None
        return len(out)

    @poppy
    def in_with(n):
        xs = list(range(n))
        with contextlib.suppress(KeyError):
            xs.extend([q + 1 for q in xs])
        return len(xs)

    @poppy
    def given(xs):
        total = 0
        for x in xs:
            total += x
        return total

    out = {}
    small, big = map(int, os.environ["SIZES"].split(","))
    for f in (append, counting, building, comprehension, in_try, in_with):
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
    for name in ("append", "counting", "building", "comprehension", "in_try", "in_with"):
        small, big = out[f"{name}/small"], out[f"{name}/big"]
        # The whole loop is one step: the same reductions and slots at 1k and 100k iterations.
        assert small[1] == big[1], (name, small, big)
        assert small[2] == big[2], (name, small, big)
        # (A try statement's gates and handler chain and a with statement's enter and exit cost one to two hundred reductions.)
        assert big[1] < (100 if name in ("append", "counting", "building", "comprehension") else 300), (name, big)
    assert out["append/big"][0] == 100000
    assert out["building/big"][0] == 100000
    assert out["comprehension/big"][0] == 100000 * 99999
    # Inside a try body and a with body (a catching scope, where each operation reduced one by
    # one is a catching call gated on the one before: ~3 KB of evaluator state per iteration).
    # In the with body the method `xs.extend`, looked up before the comprehension, stays out of
    # the region, which may then read the list.
    assert out["in_try/big"][0] == 100000
    assert out["in_with/big"][0] == 200000
    # A list the caller passes in, of closed values, to a stretch that changes nothing it did not
    # make: the region runs on it (one step whatever its length) and gives CPython's result.
    assert out["given/100"][0] == 4950 and out["given/1000"][0] == 499500
    assert out["given/1000"][1] == out["given/100"][1]


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


READS = textwrap.dedent(
    """
    import json
    import poppy_jit
    from poppy_jit import poppy

    @poppy
    def appends_to_given(xs):
        for i in range(3):
            xs.append(i)
        return xs

    @poppy
    def changes_items(rows):
        for r in rows:
            r.append(1)
        return rows

    @poppy
    def accumulates(total, xs):
        for x in xs:
            total += x
        return total

    @poppy
    def builds_its_own(xs, d):
        out = []
        seen = {}
        for x in xs:
            out.append(x)
            seen[x] = d.get(x, 0)
        return out, seen

    @poppy
    def rebinds_to_given(xs, ys):
        acc = []
        for x in xs:
            acc = ys
            acc.append(x)
        return acc

    out = {}
    for f, args in ((appends_to_given, ([],)), (changes_items, ([[0]],)), (accumulates, (0, [1, 2])),
                    (builds_its_own, ([1, 2], {1: 5})), (rebinds_to_given, ([1], [0]))):
        out[f.__name__] = [f(*args), poppy_jit.explain(f)["regions"][0].splitlines()[0]]
    print(json.dumps(out))
    """
)


def test_which_live_ins_a_region_may_read_as_containers():
    """`reads [..]` (src/bezoar/passes/regions.rs `containers_read`): the live-ins a region may be
    given as containers of closed values because the stretch changes nothing it did not make."""
    r = subprocess.run([sys.executable, "-c", READS], env=dict(os.environ, PYTHONPOPPY="1"),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    # The stretch changes its live-in, or objects it reaches through one: none may be a container.
    assert out["appends_to_given"] == [[0, 1, 2], out["appends_to_given"][1]]
    assert out["appends_to_given"][1].endswith("reads []")
    assert out["changes_items"][0] == [[0, 1]] and out["changes_items"][1].endswith("reads []")
    # `total += x` on a live-in: that live-in must be closed, the list it iterates may be given.
    assert out["accumulates"][0] == 3 and out["accumulates"][1].endswith("reads [xs]")
    # It changes only what it made: both containers may be given.
    assert out["builds_its_own"][0] == [[1, 2], {"1": 5, "2": 0}]
    assert out["builds_its_own"][1].endswith("reads [xs, d]")
    # A variable it changes is rebound to a live-in: nothing may be a container.
    assert out["rebinds_to_given"][0] == [0, 1] and out["rebinds_to_given"][1].endswith("reads []")
