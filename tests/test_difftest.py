"""Differential tests (plain CPython vs PYTHONPOPPY=1) and tests of the harness's own checks."""
import collections
import functools

import pytest
from hypothesis import given, strategies as st

import difftest
from difftest import Run, check_controller, check_fallbacks, compare_runs, compare_traces

PROGRAMS = difftest.programs()
IDS = [p.name for p in PROGRAMS]
# Programs exposing a known poppy_jit bug (`# difftest: xfail=1`): strict, so a fix is noticed.
DIFF_PARAMS = [pytest.param(p, id=p.name, marks=[pytest.mark.xfail(
    strict=True, reason="known poppy_jit bug (see the program's header)")]
    if difftest.directives(p).get("xfail") else []) for p in PROGRAMS]


@functools.lru_cache(maxsize=None)
def plain_run(path):
    """Each program's plain CPython run, made once for both tests below."""
    return difftest.run_program(path, poppy=False)


def test_enough_programs():
    assert len(PROGRAMS) >= 12


def test_corpus_has_150_distinct_poppy_functions():
    """The differential corpus exercises at least 150 distinct @poppy functions (counted by
    parsing the programs, not by running them)."""
    functions = {(p.name, q) for p in PROGRAMS for q in difftest.poppy_functions(p)}
    assert len(functions) >= 150, len(functions)


def test_poppy_functions_are_found_by_parsing(tmp_path):
    src = tmp_path / "prog.py"
    src.write_text("import poppy_jit\nfrom poppy_jit import poppy\n"
                   "@poppy\ndef a(): pass\n"
                   "@poppy_jit.poppy\ndef b():\n    @poppy\n    def c(): pass\n"
                   "def d(): pass\n"
                   "class K:\n    @poppy\n    def m(self): pass\n")
    assert difftest.poppy_functions(src) == ["a", "b", "b.<locals>.c", "K.m"]


@pytest.mark.parametrize("path", PROGRAMS, ids=IDS)
def test_program_plain_run(path):
    """Each program runs under plain CPython as its directives say, strictly one call at a time
    (unless it runs threads itself: `# difftest: threads=1`), and records a trace whose classes
    match _ext's annotations."""
    run = plain_run(path)
    expect = difftest.directives(path)
    assert run.rc == expect.get("expect_rc", 0), run.stderr
    assert run.stdout.strip()
    calls = run.trace["calls"]
    assert calls, "program made no traced external call"
    if not expect.get("threads"):  # a program running its own threads overlaps calls itself
        assert run.trace["max_in_flight"] == 1
        assert all(c["in_flight"] == [] for c in calls)
    kinds = {"llm": "unordered", "lookup": "unordered", "read": "readonly",
             "write": "sequential", "log": "sequential", "note": "sequential"}
    assert all(kinds[c["name"]] == c["kind"] for c in calls)
    if run.rc:
        # "Type: message", or a bare exception name (StopIteration)
        assert "Traceback" in run.stderr
        assert ":" in run.error_line or run.error_line.isidentifier()


@pytest.mark.parametrize("path", DIFF_PARAMS)
def test_program_differential(path):
    """Same stdout, exit code, error and trace (modulo allowed reorderings) under PYTHONPOPPY=1;
    every @poppy function that fell back names its reason and line."""
    pytest.importorskip("poppy_jit._core")
    problems, popped = difftest.difftest_runs(path, plain_run(path))
    assert not problems, "\n".join(problems)
    stats = popped.poppy_stats
    assert stats is not None, "the PYTHONPOPPY=1 run wrote no poppy_jit.stats()"
    summary = difftest.compile_summary(path, stats)
    assert summary["compiled"] + len(summary["fallbacks"]) >= 1
    # stats()["compile_times"]: one entry per translation, consistent with the counters.
    times = stats["compile_times"]
    assert sum(e["compiled"] for e in times) == stats["functions_compiled"]
    # Failed translations are fallbacks; so are functions that could not be intercepted at all
    # (recorded when decorated, without a translation).
    failed = collections.Counter(e["function"] for e in times if not e["compiled"])
    assert failed <= collections.Counter(fb["function"] for fb in stats["fallbacks"])
    assert all(e["ms"] > 0 for e in times)
    assert abs(sum(e["ms"] for e in times) - stats["compile_ms"]) < 1e-6 * len(times) + 1e-9


def test_summary_reports_compiled_and_fallbacks(capsys):
    """`difftest.py --summary` prints per program the @poppy functions defined, compiled and
    fallen back, and a total line with the fallback reasons grouped (without their lines)."""
    pytest.importorskip("poppy_jit._core")
    name = "p131_decorated_forms.py"
    assert difftest.main(["--summary", name]) == 0
    out = capsys.readouterr().out.splitlines()
    defined = len(difftest.poppy_functions(difftest.PROGRAMS_DIR / name))
    row = next(ln for ln in out if ln.startswith("ok") and name in ln).split()
    assert row[row.index("@poppy") + 1] == str(defined)
    compiled, fell_back = int(row[row.index("compiled") + 1]), int(row[row.index("fallback") + 1])
    assert compiled >= 1 and fell_back >= 1  # p131 has a @poppy generator function
    total = next(ln for ln in out if ln.startswith("summary:"))
    assert f"{defined} @poppy functions in 1 programs; {compiled} compiled, {fell_back} fell back" \
        in total
    reasons = out[out.index(total) + 1:]
    assert sum(int(r.split(" x ")[0]) for r in reasons) == fell_back
    assert all("line" not in r for r in reasons)


def test_reason_kind_groups_reasons_without_lines():
    assert difftest._reason_kind("exception handling (try/with) at line 12") == \
        "exception handling"
    assert difftest._reason_kind("closure: locals captured by an inner function (x) at line 3") \
        == "closure: locals captured by an inner function"
    assert difftest._reason_kind("") == "?"


def test_fallback_reasons_must_name_a_line():
    assert check_fallbacks(None) == [] and check_fallbacks({"fallbacks": []}) == []
    assert check_fallbacks({"fallbacks": [{"function": "f", "reason": "try at line 3"}]}) == []
    assert check_fallbacks({"fallbacks": [{"function": "f", "reason": ""}]})
    assert check_fallbacks({"fallbacks": [{"function": "f", "reason": "exception handling"}]})
    assert compare_runs(run(), Run("x\n", "", 0, {"calls": [U1, S1], "max_in_flight": 1,
                                                  "poppy_stats": {"fallbacks": [
                                                      {"function": "f", "reason": None}]}}))


# --- the harness's checks, on synthetic traces ---------------------------------------------------

def call(name, kind, arg, in_flight=()):
    return {"name": name, "kind": kind, "args": repr((arg,)), "kwargs": "{}",
            "in_flight": list(in_flight)}


U1, U2, U3 = (call("llm", "unordered", i) for i in range(3))
R1, R2 = call("read", "readonly", "a"), call("read", "readonly", "b")
S1, S2 = call("log", "sequential", 1), call("log", "sequential", 2)


def test_unordered_and_readonly_reordering_is_accepted():
    plain = [U1, R1, R2, S1, U2, U3, S2]
    popped = [U3, U1, R2, U2, R1, S1, S2]
    assert compare_traces(plain, popped) == []


def test_sequential_reordering_is_rejected():
    assert compare_traces([S1, S2], [S2, S1])


def test_readonly_moved_across_sequential_is_rejected():
    assert compare_traces([R1, S1, R2], [R1, R2, S1])


@pytest.mark.parametrize("popped", [[U1, S1], [U1, U2, U2, S1], [U1, U2, U3, S1]])
def test_missing_or_extra_calls_are_rejected(popped):
    assert compare_traces([U1, U2, S1], popped)


def test_extra_unordered_calls_are_accepted_only_in_a_failed_run():
    """After a failing call, poppy may already have dispatched later unordered calls."""
    assert compare_traces([U1, S1], [U1, U2, S1])
    assert compare_traces([U1, S1], [U1, U2, S1], failed=True) == []
    assert compare_traces([U1, U2, S1], [U1, S1], failed=True)
    failing = dict(stderr="E: x\n", rc=1)
    assert compare_runs(run(**failing), run(calls=(U1, U2, S1), **failing), {"expect_rc": 1}) == []
    assert compare_runs(run(), run(calls=(U1, U2, S1)))


def test_controller_violations_are_detected():
    ok = [call("llm", "unordered", 0, ["sequential"]), call("log", "sequential", 0, ["unordered"]),
          call("read", "readonly", 0, ["readonly", "unordered"])]
    assert check_controller(ok) == []
    assert check_controller([call("log", "sequential", 0, ["readonly"])])
    assert check_controller([call("write", "sequential", 0, ["sequential"])])
    assert check_controller([call("read", "readonly", 0, ["sequential"])])


def run(stdout="x\n", stderr="", rc=0, calls=(U1, S1), max_in_flight=1):
    return Run(stdout, stderr, rc, {"calls": list(calls), "max_in_flight": max_in_flight})


def test_compare_runs_checks_output_exit_code_error_and_parallelism():
    assert compare_runs(run(), run()) == []
    assert compare_runs(run(), run(stdout="y\n"))
    assert compare_runs(run(), run(rc=1))
    assert compare_runs(run(rc=1, stderr="E: a\n"), run(rc=1, stderr="E: b\n"), {"expect_rc": 1})
    assert compare_runs(run(rc=1, stderr="T\nE: a\n"), run(rc=1, stderr="U\nE: a\n"),
                        {"expect_rc": 1}) == []
    assert compare_runs(run(), run(max_in_flight=1), {"min_in_flight": 2})
    assert compare_runs(run(), run(max_in_flight=2), {"min_in_flight": 2}) == []
    assert compare_runs(run(), Run("x\n", "", 0, {}))


@given(st.lists(st.sampled_from(["unordered", "readonly", "sequential"]), max_size=12),
       st.randoms(use_true_random=False))
def test_allowed_permutations_are_accepted(kinds, rnd):
    """Shuffling unordered calls anywhere and readonly calls within their segment is equivalent;
    the harness must never reject such a trace."""
    plain = [call({"unordered": "llm", "readonly": "read", "sequential": "log"}[k], k, i)
             for i, k in enumerate(kinds)]
    seq_and_ro = [c for c in plain if c["kind"] != "unordered"]
    segments, cur = [], []
    for c in seq_and_ro:
        if c["kind"] == "sequential":
            segments.append(cur)
            segments.append([c])
            cur = []
        else:
            cur.append(c)
    segments.append(cur)
    popped = []
    for seg in segments:
        rnd.shuffle(seg)
        popped += seg
    for c in (c for c in plain if c["kind"] == "unordered"):
        popped.insert(rnd.randint(0, len(popped)), c)
    assert compare_traces(plain, popped) == []


@given(st.lists(st.integers(0, 5), min_size=2, max_size=8), st.randoms(use_true_random=False))
def test_any_change_of_sequential_order_is_rejected(args, rnd):
    plain = [call("log", "sequential", a) for a in args]
    popped = list(plain)
    rnd.shuffle(popped)
    assert (compare_traces(plain, popped) == []) == (popped == plain)


_RENDEZVOUS_PROGRAM = """
import asyncio, json, os, sys, time
import _ext

async def late(delay, key):
    await asyncio.sleep(delay)
    return await _ext.llm(key)

async def main():
    _ext.set_latency_scale(0.5)  # sleeps of 5-20 ms
    t = time.monotonic()
    await _ext.llm("alone")      # alone in flight: never waits
    alone = time.monotonic() - t
    await asyncio.gather(_ext.llm("a"), _ext.llm("b"), late(0.3, "c"))
    print(json.dumps({"alone": alone, "max": _ext._max_in_flight}))

asyncio.run(main())
"""


@pytest.mark.parametrize("rendezvous, expect_max", [(0, 2), (3, 3)])
def test_rendezvous_keeps_a_started_overlap_in_flight_until_its_size_is_reached(
        tmp_path, rendezvous, expect_max):
    """The load-independent overlap check (tests/programs/_ext.py): with POPPY_TEST_RENDEZVOUS=3,
    two calls that overlap stay in flight until a third, started 0.3 s later (long after their
    own 5-20 ms), joins them; without it they finish first. A call alone in flight never waits."""
    import json
    import os
    import subprocess
    import sys
    prog = tmp_path / "rendezvous.py"
    prog.write_text(_RENDEZVOUS_PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(difftest.PROGRAMS_DIR), difftest._package_parent()]),
               PYTHONPOPPY="0", POPPY_TEST_RENDEZVOUS=str(rendezvous))
    out = subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["max"] == expect_max
    assert got["alone"] < 0.5
