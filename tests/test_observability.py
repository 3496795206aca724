"""Observability: the Chrome trace writer, PYTHONPOPPY_TRACE(_ARGS), the timeline picture, the
overlap analysis and `python -m poppy_jit explain`, PYTHONPOPPY_STATS=1."""
import json
import os
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from poppy_jit import _trace, readonly, sequential, unordered
from poppy_jit._decorators import format_stats
from poppy_jit.timeline import load_rows, render

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
HAVE_CORE = True
try:
    import poppy_jit._core  # noqa: F401
except ImportError:
    HAVE_CORE = False
needs_core = pytest.mark.skipif(not HAVE_CORE, reason="the compiled runtime is not installed")


def _env(**extra):
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("PYTHONPOPPY")]:
        del env[k]
    # The poppy_jit these tests imported (an installed build, or the source tree with _core built
    # into it), not necessarily ROOT/python, which has no compiled module in a fresh clone.
    import poppy_jit
    pkg_parent = str(Path(poppy_jit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent, str(PROGRAMS), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _run(args, cwd=None, **extra):
    return subprocess.run([sys.executable, *args], env=_env(**extra), cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def recorder():
    """A clean, enabled recorder; restored to off afterwards."""
    _trace.clear()
    _trace.start(None, include_args=False)
    yield _trace
    _trace.stop()
    _trace.clear()


def _llm(prompt):  # a stand-in callee: only its name and module end up in the trace
    return prompt


def _write_synthetic(tmp_path, recorder, secret="sk-SECRET-KEY"):
    """One run: two overlapping unordered calls, a sequential one that waits in the queue, one
    never dispatched after a failure; one compile phase; intrinsic calls that must be hidden."""
    t = 100.0
    loader = type("Loader", (), {"__poppy_unordered_loader__": True})()
    recorder.record_phase("compile main", t, t + 0.002, {"fallback": None})
    recorder.record_run("main", t + 0.003, t + 0.200, [
        (0, loader, ("llm",), "unordered", t + 0.004, t + 0.004, t + 0.004, t + 0.004, True),
        (1, _llm, (f"ask {secret}",), "unordered", t + 0.005, t + 0.005, t + 0.005, t + 0.105, True),
        (2, _llm, ("second",), "unordered", t + 0.006, t + 0.006, t + 0.006, t + 0.150, False),
        (3, print, ("done",), "sequential", t + 0.007, t + 0.010, t + 0.150, t + 0.151, True),
        (4, print, ("never",), "sequential", t + 0.008, t + 0.008, None, None, False),
    ])
    return Path(recorder.write_trace(str(tmp_path / "trace.json")))


def _spans(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


# ---------------------------------------------------------------------------------------------
# The trace writer

def test_trace_is_chrome_trace_event_json(tmp_path, recorder):
    doc = json.loads(_write_synthetic(tmp_path, recorder).read_text())
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] == "ms"
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "M") and isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["name"], str) and isinstance(e["args"], dict)
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
    meta = {(e["name"], e["args"].get("name")) for e in doc["traceEvents"] if e["ph"] == "M"}
    assert ("thread_name", "runtime") in meta and ("thread_name", "externals 0") in meta
    assert any(name == "process_name" for name, _ in meta)

    spans = _spans(doc)
    by_name = {}
    for e in spans:
        by_name.setdefault(e["name"], []).append(e)
    # Phases and the run on the runtime track; ts/dur in µs relative to one origin.
    (compile_span,) = by_name["compile main"]
    (run_span,) = by_name["run main"]
    assert compile_span["cat"] == "compile" and compile_span["dur"] == pytest.approx(2000, abs=1)
    assert run_span["ts"] - compile_span["ts"] == pytest.approx(3000, abs=1)
    assert run_span["dur"] == pytest.approx(197000, abs=1)
    assert run_span["args"] == {"run": 0, "external_calls": 4, "intrinsic_calls": 1}
    # The intrinsic (a global load) is not drawn.
    assert not any("Loader" in e["name"] for e in spans)
    # Each executed call: a queue span then a span named by the callee, with its args.
    llm_runs = sorted(by_name["_llm"], key=lambda e: e["args"]["position"])
    assert [e["args"]["position"] for e in llm_runs] == [1, 2]
    assert llm_runs[0]["dur"] == pytest.approx(100000, abs=1)
    assert llm_runs[0]["args"]["class"] == "unordered" and llm_runs[0]["cat"] == "external"
    assert [e["args"]["status"] for e in llm_runs] == ["ok", "failed"]
    (printed,) = [e for e in by_name["print"]]
    assert printed["args"]["queue_wait_ms"] == pytest.approx(140, abs=0.01)
    assert printed["args"]["args_wait_ms"] == pytest.approx(3, abs=0.01)
    queued_print = [e for e in by_name["queued print"] if e["args"]["position"] == 3][0]
    assert queued_print["cat"] == "queue"
    assert queued_print["ts"] + queued_print["dur"] == pytest.approx(printed["ts"], abs=1)
    # Never dispatched: only queued, drawn to the end of its run.
    never = [e for e in by_name["queued print"] if e["args"]["position"] == 4][0]
    assert never["args"]["status"] == "never dispatched" and "print" not in [
        e["name"] for e in spans if e["args"].get("call") == never["args"]["call"] and e is not never]
    assert never["ts"] + never["dur"] == pytest.approx(run_span["ts"] + run_span["dur"], abs=1)


def _assert_tracks_do_not_overlap(doc):
    """Spans on one track must nest or follow each other (Perfetto draws them as a stack)."""
    by_tid = {}
    for e in _spans(doc):
        by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    for spans in by_tid.values():
        spans.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in spans:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-3:
                stack.pop()
            if stack:  # must lie inside its parent
                assert e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + 1e-3, (e, stack[-1])
            stack.append(e)


def test_overlapping_calls_go_to_different_tracks(tmp_path, recorder):
    doc = json.loads(_write_synthetic(tmp_path, recorder).read_text())
    _assert_tracks_do_not_overlap(doc)
    llm_tids = {e["tid"] for e in _spans(doc) if e["name"] == "_llm"}
    assert len(llm_tids) == 2  # they overlap in time


def test_arguments_are_redacted_by_default(tmp_path, recorder):
    path = _write_synthetic(tmp_path, recorder)
    text = path.read_text()
    assert "sk-SECRET-KEY" not in text and "second" not in text
    doc = json.loads(text)
    assert doc["otherData"]["args_redacted"] is True
    call = [e for e in _spans(doc) if e["name"] == "_llm"][0]
    assert "redacted" in call["args"]["args"]


def test_arguments_are_recorded_when_asked(tmp_path, recorder):
    recorder.start(None, include_args=True)
    doc = json.loads(_write_synthetic(tmp_path, recorder).read_text())
    assert doc["otherData"]["args_redacted"] is False
    first = [e for e in _spans(doc) if e["name"] == "_llm" and e["args"]["position"] == 1][0]
    assert first["args"]["args"] == ["'ask sk-SECRET-KEY'"]


def test_write_trace_needs_a_path(recorder):
    with pytest.raises(ValueError, match="PYTHONPOPPY_TRACE"):
        recorder.write_trace()


PROGRAM = textwrap.dedent("""
    import asyncio
    from poppy_jit import poppy, unordered, sequential

    @unordered
    async def ask(prompt):
        await asyncio.sleep(0.03)
        return prompt.upper()

    @sequential
    def show(x):
        print(x)

    @poppy
    def main(topic):
        for i in range(4):
            show(ask(f"secret prompt {i} about {topic}"))

    main("otters")
""")


@needs_core
@pytest.mark.parametrize("with_args", [False, True])
def test_real_run_under_pythonpoppy_trace(tmp_path, with_args):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "t.json"
    extra = {"PYTHONPOPPY_TRACE_ARGS": "1"} if with_args else {}
    p = _run([str(prog)], PYTHONPOPPY="1", PYTHONPOPPY_TRACE=str(out), **extra)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"SECRET PROMPT {i} ABOUT OTTERS" for i in range(4)]
    doc = json.loads(out.read_text())
    spans = _spans(doc)
    if not any(e["name"] == "run main" for e in spans):
        pytest.skip("poppy_jit._core does not report trace records")
    asks = sorted((e for e in spans if e["name"] == "ask"), key=lambda e: e["args"]["position"])
    shows = sorted((e for e in spans if e["name"] == "show"), key=lambda e: e["args"]["position"])
    assert len(asks) == 4 and len(shows) == 4
    assert {e["args"]["class"] for e in asks} == {"unordered"}
    assert {e["args"]["class"] for e in shows} == {"sequential"}
    # Program order: ask i before show i before ask i+1.
    order = sorted(asks + shows, key=lambda e: e["args"]["position"])
    assert [e["name"] for e in order] == ["ask", "show"] * 4
    # The asks ran in parallel: each lasts ≥ 30 ms and all four were in flight together.
    assert all(e["dur"] >= 29000 for e in asks)
    assert max(e["ts"] for e in asks) < min(e["ts"] + e["dur"] for e in asks)
    assert any(e["name"] == "compile main" and e["cat"] == "compile" for e in spans)
    _assert_tracks_do_not_overlap(doc)
    text = out.read_text()
    assert ("secret prompt 2 about otters" in text) == with_args
    assert doc["otherData"]["args_redacted"] is (not with_args)


def test_trace_file_written_in_plain_mode_too(tmp_path):
    out = tmp_path / "t.json"
    p = _run(["-c", "import poppy_jit; print('ok')"], PYTHONPOPPY_TRACE=str(out))
    assert p.returncode == 0 and p.stdout == "ok\n", p.stderr
    doc = json.loads(out.read_text())
    assert _spans(doc) == []  # nothing ran on the runtime, but the file is valid


def test_bad_pythonpoppy_trace_args_is_a_clear_error(tmp_path):
    p = _run(["-c", "import poppy_jit"], PYTHONPOPPY_TRACE=str(tmp_path / "t.json"),
             PYTHONPOPPY_TRACE_ARGS="yes")
    assert "PYTHONPOPPY_TRACE_ARGS must be 0 or 1" in p.stderr


# ---------------------------------------------------------------------------------------------
# Timeline

def _png_size(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_timeline_rows_are_in_program_order(tmp_path, recorder):
    rows = load_rows(_write_synthetic(tmp_path, recorder))
    assert [(r.position, r.callee, r.cls) for r in rows] == [
        (1, "_llm", "unordered"), (2, "_llm", "unordered"), (3, "print", "sequential"),
        (4, "print", "sequential")]
    assert rows[0].queued_ms == 0 and rows[0].end_ms == pytest.approx(100, abs=0.01)
    assert rows[2].dispatch_ms == pytest.approx(145, abs=0.01)
    assert rows[3].dispatch_ms is None and rows[1].failed and not rows[0].failed


def test_timeline_png(tmp_path, recorder):
    trace = _write_synthetic(tmp_path, recorder)
    out = tmp_path / "tl.png"
    p = _run(["-m", "poppy_jit", "timeline", str(trace), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    assert "4 external calls" in p.stdout
    w, h = _png_size(out)
    assert 600 <= w <= 3000 and 200 <= h <= 3000
    assert out.stat().st_size > 5000  # something was drawn


def test_timeline_of_an_empty_trace_is_an_error(tmp_path, recorder):
    trace = recorder.write_trace(str(tmp_path / "empty.json"))
    with pytest.raises(ValueError, match="no external calls"):
        render(trace, tmp_path / "x.png")
    p = _run(["-m", "poppy_jit", "timeline", trace, "-o", str(tmp_path / "x.png")])
    assert p.returncode == 1 and "no external calls" in p.stderr


# ---------------------------------------------------------------------------------------------
# Overlap analysis (on Bezoar text, computed by the compiled runtime: poppy_jit._core.overlaps)

BEZOAR = textwrap.dedent("""\
    def f(q):  # qualname "f" file "x.py" line 1 nregs 30
      const 0 = "k"
      r0 := global ask  @2
      r1 := load q  @2
      r2 := r0(r1)  @2
      store a r2  @2
      r3 := global look  @3
      r4 := r3(r1)  @3
      if r4:  @4
        r5 := global ask  @5
        r6 := load a  @5
        r7 := r5(r6)  @5
      else:
        r8 := global ask  @7
        r9 := r8(r1)  @7
      r10 := global show  @8
      r11 := r10(r1)  @8
      r12 := load items  @9
      for r13 in r12:  @9
        r14 := global ask  @10
        r15 := r14(r13)  @10
        store acc r15  @10
        r16 := global ask  @11
        r17 := load acc  @11
        r18 := r16(r17)  @11
      r19 := load acc  @12
      r20 := r10(r19)  @12
      return r20  @12
""")


@unordered
async def _ask(prompt):
    return prompt


@readonly
async def _look(x):
    return x


@sequential
async def _show(x):
    return None


_EXTERNALS = {"unordered": _ask, "readonly": _look, "sequential": _show}


def _Ext(kind):
    """An async external of this class (classified by the runtime's own code)."""
    return _EXTERNALS[kind]


def _analyse(text, globals_):
    """The call sites (index, line, callee, kind, waits_for) and the pairs that may overlap."""
    from poppy_jit._core import overlaps
    res = overlaps(text, globals_)
    sites = [SimpleNamespace(index=s["index"], line=s["line"], callee=s["callee"], kind=s["class"],
                             waits_for=set(s["waits_for"])) for s in res["sites"]]
    return sites, [(a, b) for a, b, _ in res["pairs"]]


def _pairs(text, globals_):
    """The claimed pairs with where they overlap: "same" iteration, "across" iterations, "itself"."""
    from poppy_jit._core import overlaps
    return overlaps(text, globals_)["pairs"]


@needs_core
def test_overlap_analysis():
    g = {"ask": _Ext("unordered"), "look": _Ext("readonly"), "show": _Ext("sequential")}
    sites, claimed = _analyse(BEZOAR, g)
    info = {s.index: (s.line, s.callee, s.kind, s.waits_for) for s in sites}
    assert info == {
        1: (2, "ask", "unordered", set()),
        2: (3, "look", "readonly", set()),
        3: (5, "ask", "unordered", {1, 2}),  # data (a) and control (if r4)
        4: (7, "ask", "unordered", {2}),
        5: (8, "show", "sequential", set()),
        6: (10, "ask", "unordered", set()),
        7: (11, "ask", "unordered", {6}),
        8: (12, "show", "sequential", {6}),
    }
    pairs = set(claimed)
    # Pairs of different call sites are claimed per iteration ("same") or across iterations of a
    # loop ("across": #6 of the next iteration runs while #7 of this one waits for its own #6,
    # which a trace of the same shape shows); the dependence below is within one iteration.
    across = {(a, b) for a, b, where in _pairs(BEZOAR, g) if where == "across"}
    assert across == {(6, 7)}
    pairs -= across
    assert (3, 4) not in pairs  # exclusive branches, no loop
    assert (5, 8) not in pairs  # two sequential calls never overlap
    assert (2, 5) not in pairs  # readonly and sequential never overlap
    assert (1, 2) in pairs and (4, 6) in pairs
    # A sequential call waits for every earlier call to succeed, unordered ones included.
    assert (1, 5) not in pairs and (4, 5) not in pairs
    assert (6, 6) in pairs and (7, 7) in pairs  # loop iterations are independent
    assert (6, 7) not in pairs and (1, 3) not in pairs  # a dependence orders them
    assert (5, 5) not in pairs  # not in a loop


@needs_core
def test_overlap_escape_controls_the_rest():
    text = textwrap.dedent("""\
        def f(q):  # qualname "f" file "x.py" line 1 nregs 4
          r0 := global ask  @2
          r1 := load q  @2
          r2 := r0(r1)  @2
          if r2:  @3
            return r2  @3
          r3 := r0(r1)  @4
          return r3  @4
    """)
    sites, _ = _analyse(text, {"ask": _Ext("unordered")})
    assert [s.waits_for for s in sites] == [set(), {1}]  # the early return decides #2 runs


@needs_core
def test_loop_carried_dependence_serialises_iterations():
    text = textwrap.dedent("""\
        def f(xs):  # qualname "f" file "x.py" line 1 nregs 5
          r0 := global ask  @2
          r1 := load xs  @2
          for r2 in r1:  @2
            r3 := load acc  @3
            r4 := r0(r3)  @3
            store acc r4  @3
          return r0  @4
    """)
    sites, claimed = _analyse(text, {"ask": _Ext("unordered")})
    assert sites[0].waits_for == {1}
    assert claimed == []


# ---------------------------------------------------------------------------------------------
# explain CLI

EXPLAINED = textwrap.dedent("""
    from poppy_jit import poppy, unordered, sequential

    @unordered
    async def ask(prompt):   # async: two calls really run at the same time (a plain def runs inline)
        return prompt

    @unordered
    def tag(x):
        return x

    @sequential
    def show(x):
        print(x)

    @poppy
    def helper(x):
        return ask(x)

    @poppy
    def compiled(topic):
        a = ask(topic)
        b = ask("other")
        show(a + b)
        return helper(b)

    @poppy
    def falls_back(x):
        try:
            return ask(x)
        finally:
            pass
""")


@needs_core
def test_explain_cli_on_a_compiled_function(tmp_path):
    (tmp_path / "explained_mod.py").write_text(EXPLAINED)
    concise = _run(["-m", "poppy_jit", "explain", "explained_mod:compiled"], cwd=tmp_path)
    assert concise.returncode == 0, concise.stderr
    assert "status: compiled" in concise.stdout and "-- Bezoar --" not in concise.stdout
    assert "#1 ask  ∥  #2 ask" in concise.stdout
    p = _run(["-m", "poppy_jit", "explain", "--ir", "explained_mod:compiled"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "status: compiled" in out and "-- Bezoar --" in out and "-- λO --" in out
    assert "xcall" in out  # the λO text
    table = {ln.split()[0]: ln.split() for ln in out.splitlines() if re.match(r"  #\d+ +line", ln)}
    assert table["#1"][4:] == ["unordered;", "waits", "for", "nothing"]
    assert table["#3"][4:] == ["sequential;", "waits", "for", "#1,", "#2"]  # show(a + b)
    assert table["#4"][3:5] == ["helper", "internal;"]
    assert "#1 ask  ∥  #2 ask" in out  # independent unordered calls
    assert "#1 ask  ∥  #3 show" not in out
    assert "#4 helper: compiled, inlined at the call" in out


@needs_core
def test_explain_cli_on_a_function_that_falls_back(tmp_path):
    (tmp_path / "explained_mod.py").write_text(EXPLAINED)
    p = _run(["-m", "poppy_jit", "explain", "explained_mod:falls_back"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "status: FALLS BACK, runs as plain CPython:" in p.stdout
    assert "exception handling" in p.stdout
    assert "-- Bezoar --" not in p.stdout


def test_explain_cli_on_an_external(tmp_path):
    (tmp_path / "explained_mod.py").write_text(EXPLAINED)
    p = _run(["-m", "poppy_jit", "explain", "explained_mod:tag"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "is an external (unordered)" in p.stdout


# ---------------------------------------------------------------------------------------------
# PYTHONPOPPY_STATS=1

@needs_core
def test_pythonpoppy_stats_prints_the_table_at_exit(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    p = _run([str(prog)], PYTHONPOPPY="1", PYTHONPOPPY_STATS="1")
    assert p.returncode == 0, p.stderr
    rows = {}
    lines = p.stderr.splitlines()
    start = lines.index("poppy_jit stats")
    for ln in lines[start + 2:]:
        parts = ln.split()
        if len(parts) == 2:
            rows[parts[0]] = parts[1]
    assert rows["functions_compiled"] == "1" and rows["runs"] == "1"
    assert int(rows["external_calls.sequential"]) >= 4  # the four show() calls
    assert int(rows["external_calls.unordered"]) >= 4  # the four ask() calls
    assert int(rows["peak_in_flight"]) >= 4
    assert float(rows["runtime_wall_ms"]) >= 30.0  # at least one ask's sleep
    assert 0 < float(rows["runtime_ms"]) <= float(rows["runtime_wall_ms"])  # CPU ≤ wall
    assert rows["gil_wait_ms"] == "0.00" and rows["blocking_calls"] == "0"  # no blocking externals
    assert rows["jit.tier"] == "none" and rows["jit.functions"] == "0"
    assert "fallbacks (0)" in lines


def test_format_stats_flattens_nested_counters():
    text = format_stats({"runtime_ms": 12.3456, "jit": {"templates": 3, "enabled": False},
                         "external_calls": {"sequential": 2, "unordered": 1}, "fallbacks": []})
    lines = text.splitlines()
    assert any(ln.split() == ["runtime_ms", "12.35"] for ln in lines)
    assert any(ln.split() == ["jit.templates", "3"] for ln in lines)
    ext = [ln.split()[0] for ln in lines if ln.startswith("external_calls.")]
    assert ext == ["external_calls.unordered", "external_calls.sequential"]


# ---------------------------------------------------------------------------------------------
# poppy_jit.stats(): every counter, and that each follows what the program did

STATS_KEYS = {"functions_compiled", "compile_ms", "fallbacks", "runs", "runtime_ms", "runtime_wall_ms",
              "reductions", "inlined_calls", "external_calls", "peak_in_flight",
              "queue_wait_ms", "nested_plain_runs", "blocking_calls", "gil_wait_ms",
              "blocking_handoff_ms", "jit", "peak_slots", "term_resolutions", "runtime_layout",
              "cancelled_calls"}


def _stats_of(tmp_path, body):
    """Run `body` under PYTHONPOPPY=1; it prints JSON lines, returned parsed."""
    prog = tmp_path / "stats_prog.py"
    prog.write_text(textwrap.dedent("""
        import asyncio, json, sys, threading, time
        import poppy_jit
        from poppy_jit import poppy, unordered, readonly, sequential

        def dump(**extra):
            print(json.dumps(dict(poppy_jit.stats(), **extra)), flush=True)
        """) + textwrap.dedent(body))
    p = _run([str(prog)], PYTHONPOPPY="1")
    assert p.returncode == 0, p.stderr
    return [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]


@needs_core
def test_stats_counters_follow_the_program(tmp_path):
    runs = _stats_of(tmp_path, """
        @unordered
        async def ask(x):
            await asyncio.sleep(0.02)
            return x

        @readonly
        def peek(x):
            return x

        @sequential
        def show(x):
            pass

        @poppy
        def main(n):
            total = 0
            for i in range(n):
                total = total + ask(i) + peek(i)
                show(i)
            return total

        for n in (3, 8):
            poppy_jit.reset_stats()
            main(n)
            dump(n=n)
        """)
    a, b = runs
    for st in runs:
        assert STATS_KEYS <= set(st), STATS_KEYS - set(st)
        assert st["runs"] == 1 and st["functions_compiled"] == (1 if st["n"] == 3 else 0)
        # 3 or 8 asks at once (their peeks and shows run as they come back)
        assert st["peak_in_flight"] >= st["n"]
        # show(i)'s argument is known at once, but it is ordered after ask(i), which sleeps 20 ms:
        # the controller holds it back at least that long
        assert st["queue_wait_ms"] >= 20
        assert 0 < st["runtime_ms"] <= st["runtime_wall_ms"]
        assert st["gil_wait_ms"] == st["blocking_handoff_ms"] == st["blocking_calls"] == 0
        assert st["jit"] == {"tier": "none", "functions": 0, "ms": 0.0}
    # five more iterations: exactly five more of each ordered call, more work everywhere else
    ea, eb = a["external_calls"], b["external_calls"]
    assert eb["readonly"] - ea["readonly"] == 5
    assert eb["sequential"] - ea["sequential"] == 5
    assert eb["unordered"] - ea["unordered"] >= 5
    assert b["reductions"] > a["reductions"] > 0
    assert a["peak_slots"] > 0 and b["peak_slots"] > 0
    assert a["compile_ms"] > 0 and b["compile_ms"] == 0


@needs_core
def test_gil_wait_counts_blocking_workers_contending_with_a_cpu_bound_thread(tmp_path):
    runs = _stats_of(tmp_path, """
        sys.setswitchinterval(0.02)  # a CPU-bound thread keeps the GIL up to 20 ms at a time

        @unordered(blocking=True)
        def step(x):
            time.sleep(0.005)
            return x + 1

        @poppy
        def chain(n):
            x = 0
            for i in range(n):
                x = step(x)     # one blocking call at a time: each waits for the GIL alone
            return x

        def measured(label):
            poppy_jit.reset_stats()
            t = time.perf_counter()
            chain(5)
            dump(label=label, wall_ms=(time.perf_counter() - t) * 1000)

        measured("alone")
        stop = False
        def spin():
            while not stop:
                pass
        spinner = threading.Thread(target=spin)
        spinner.start()
        try:
            measured("contended")
        finally:
            stop = True
            spinner.join()
        """)
    alone, contended = runs
    for st in runs:
        assert st["blocking_calls"] == 5
        # one call at a time, so the waits are disjoint stretches of the run
        assert 0 < st["gil_wait_ms"] + st["blocking_handoff_ms"] <= st["wall_ms"]
        assert st["gil_wait_ms"] > 0 and st["blocking_handoff_ms"] > 0
    # (How much each acquisition waits under contention depends on which waiting thread the OS
    # wakes first when the GIL is released: the worker, or the spinner.)
    for st in runs:
        print(f"5 blocking calls {st['label']}: gil_wait_ms {st['gil_wait_ms']:.3f}, "
              f"blocking_handoff_ms {st['blocking_handoff_ms']:.3f}, wall {st['wall_ms']:.1f} ms")


@needs_core
def test_gil_wait_covers_a_gil_held_through_a_long_c_call(tmp_path):
    (st,) = _stats_of(tmp_path, """
        @unordered(blocking=True)
        def quick(x):
            return x + 1

        @unordered
        def hog(n):
            # A synchronous external: runs inline on the evaluator thread, and sum() over a range
            # is one C loop that never lets the GIL go, whatever other threads ask.
            t = time.perf_counter()
            sum(range(n))
            return (time.perf_counter() - t) * 1000

        @poppy
        def main(n):
            a = quick(1)   # dispatched first: its worker wakes up and asks for the GIL ...
            ms = hog(n)    # ... which the evaluator holds through this call
            return a, ms

        poppy_jit.reset_stats()
        t = time.perf_counter()
        a, hog_ms = main(10_000_000)
        dump(a=a, hog_ms=hog_ms, wall_ms=(time.perf_counter() - t) * 1000)
        """)
    assert st["a"] == 2 and st["blocking_calls"] == 1
    # The worker's wait started within its wake-up latency of hog's start and ended after hog.
    assert st["hog_ms"] / 2 <= st["gil_wait_ms"] <= st["wall_ms"]
    print(f"hog held the GIL {st['hog_ms']:.1f} ms; the worker waited {st['gil_wait_ms']:.1f} ms")
