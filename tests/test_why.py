"""The diagnosis of waits (`run --why`, poppy_jit._why): the cause it gives each call, on
synthetic call records, and its report on programs made sequential on purpose."""
import subprocess
import sys
import textwrap

from poppy_jit import _why
from subproc import poppy_env


def model(x):
    return x


def other(x):
    return x


def rec(pos, callee, cls, queued, ready, dispatch, done, line=10, obj=False):
    return {"position": pos, "callee": callee, "class": cls, "t_queued": queued,
            "t_ready": ready, "t_dispatch": dispatch, "t_done": done, "ok": True, "line": line,
            "object": obj}


def causes(calls, **kw):
    return {c["position"]: c["cause"] for c in _why.diagnose(calls, kw.get("fallbacks", {}),
                                                              kw.get("cap", 32))}


def test_order_wait_names_the_call_and_both_classes():
    calls = [rec(1, model, "sequential", 0.0, 0.0, 0.0, 0.2, line=5),
             rec(2, model, "sequential", 0.0, 0.0, 0.2005, 0.4, line=5)]
    got = causes(calls)
    assert got[1] is None
    kind, text = got[2]
    assert kind == "order"
    assert "waited for #1 model (sequential, line 5)" in text
    assert "sequential call waits for earlier readonly and sequential calls" in text


def test_argument_object_cap_and_fallback():
    calls = [rec(1, model, "unordered", 0.0, 0.0, 0.0, 0.2),
             rec(2, other, "unordered", 0.0, 0.2003, 0.2003, 0.3),  # its argument is #1's result
             rec(3, other, "unordered", 0.0, 0.0, 0.1, 0.2, obj=True)]
    got = causes(calls)
    assert got[2][0] == "argument" and "#1 model" in got[2][1]
    assert got[3][0] == "object"
    got = causes(calls, fallbacks={"model": "exception handling at line 3"})
    assert got[1][0] == "fallback" and "exception handling" in got[1][1]


def test_thread_cap():
    from poppy_jit import unordered

    @unordered(blocking=True)
    def fetch(x):
        return x

    calls = [rec(1, fetch, "unordered", 0.0, 0.0, 0.0, 0.2),
             rec(2, fetch, "unordered", 0.0, 0.0, 0.0, 0.2),
             rec(3, fetch, "unordered", 0.0, 0.0, 0.2004, 0.4)]
    got = causes(calls, cap=2)
    assert got[3][0] == "thread cap" and "all 2 threads" in got[3][1]


SCRIPT = """\
    import time

    def ask(q):
        time.sleep(0.2)
        return q.upper()

    def main():
        return [ask(f"q{i}") for i in range(4)]

    if __name__ == "__main__":
        print(main())
"""


def _launch(tmp_path, config, *opts):
    (tmp_path / "prog.py").write_text(textwrap.dedent(SCRIPT))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent(config))
    return subprocess.run([sys.executable, "-m", "poppy_jit", "run", *opts, "prog.py"],
                          cwd=tmp_path, capture_output=True, text=True, env=poppy_env(False),
                          timeout=120)


def test_why_names_a_sequential_annotation(tmp_path):
    r = _launch(tmp_path, """\
        [poppy]
        functions = ["__main__:main"]
        [externals]
        "__main__:ask" = { kind = "sequential", blocking = true }
    """, "--why")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['Q0', 'Q1', 'Q2', 'Q3']\n"
    assert "why calls did not overlap" in r.stderr
    assert "ask (prog.py, line 8): 3 of 4 calls waited" in r.stderr
    assert 'return [ask(f"q{i}") for i in range(4)]' in r.stderr  # the source line
    assert "sequential, waited for ask (sequential, line 8) to finish" in r.stderr


def test_why_when_calls_overlap(tmp_path):
    r = _launch(tmp_path, """\
        [poppy]
        functions = ["__main__:main"]
        [externals]
        "__main__:ask" = { kind = "unordered", blocking = true }
    """, "--why")
    assert r.returncode == 0, r.stderr
    assert "ask (line" not in r.stderr  # no call of ask waited
    assert "could have overlapped" not in r.stderr


def test_why_reports_executor_calls_with_their_hand_over(tmp_path):
    r = _launch(tmp_path, """\
        [poppy]
        functions = ["__main__:main"]
        [externals]
        "__main__:ask" = { kind = "unordered", executor = "process" }
    """, "--why")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['Q0', 'Q1', 'Q2', 'Q3']\n"
    assert "calls run by executors" in r.stderr
    line = next(x for x in r.stderr.splitlines() if "ask on process" in x)
    assert "4 calls" in line and "failed" not in line
    queue, pickle, run, reply = (float(v) for v in line.rsplit(", ", 1)[1].split(" / "))
    assert run >= 150  # each call sleeps 0.2 s in its worker
    assert min(queue, pickle, reply) >= 0


def test_why_when_nothing_is_compiled(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(SCRIPT).replace(
        'if __name__ == "__main__":', "if True:"))  # no main block: module code only
    r = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "--why", "prog.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=poppy_env(False),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "no compiled run made external calls" in r.stderr


def test_why_names_fallbacks(tmp_path):
    r = _launch(tmp_path, """\
        [poppy]
        functions = ["__main__:main", "__main__:ask"]
    """, "--why")
    (tmp_path / "prog.py").write_text(textwrap.dedent(SCRIPT).replace(
        "    time.sleep(0.2)",
        "    try:\n        time.sleep(0.01)\n        return q\n    finally:\n        pass"))
    r = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "--why", "prog.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=poppy_env(False),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "functions that fell back run as plain CPython" in r.stderr
    assert "ask: exception handling" in r.stderr


def test_stats_has_the_waits_per_call_site(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(SCRIPT).replace(
        "    print(main())", "    print(main())\n    import poppy_jit\n"
        "    w = poppy_jit.stats()['waits']\n    print([(x['callee'], x['calls'], "
        "x['waited'], sorted(x['causes'])) for x in w if x['callee'] == 'ask'])"))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent("""\
        [poppy]
        functions = ["__main__:main"]
        [externals]
        "__main__:ask" = { kind = "sequential", blocking = true }
    """))
    r = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "prog.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env=dict(poppy_env(False), PYTHONPOPPY_WHY="1"))
    assert r.returncode == 0, r.stderr
    assert "[('ask', 4, 3, ['order'])]" in r.stdout


def test_why_names_an_unannotated_slow_call_run_inline(tmp_path):
    """A model call left unannotated (sequential by default) runs synchronously on the runtime's
    thread: no call ever waits, so the causes above say nothing; the report names the slow
    callee — also through functools.partial — with its file, line and source, and the config
    entry that would let its calls overlap."""
    (tmp_path / "slowlib.py").write_text(textwrap.dedent("""\
        import time

        def ask(q, suffix=""):
            time.sleep(0.05)
            return q.upper() + suffix
    """))
    (tmp_path / "prog.py").write_text(textwrap.dedent("""\
        import functools
        import slowlib

        shout = functools.partial(slowlib.ask, suffix="!")

        def main():
            a = [slowlib.ask(f"q{i}") for i in range(3)]
            b = [shout(f"p{i}") for i in range(3)]
            return a + b

        if __name__ == "__main__":
            print(main())
    """))
    (tmp_path / "poppy.toml").write_text('[poppy]\nfunctions = ["__main__:main"]\n')
    r = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "--why", "prog.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=poppy_env(False),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['Q0', 'Q1', 'Q2', 'P0!', 'P1!', 'P2!']\n"
    assert "slow calls ran one at a time on the runtime's own thread" in r.stderr
    assert "ask (prog.py, line 7): 3 calls" in r.stderr
    assert 'a = [slowlib.ask(f"q{i}") for i in range(3)]' in r.stderr
    assert "ask (slowlib:ask through functools.partial) (prog.py, line 8): 3 calls" in r.stderr
    assert '"slowlib:ask" = { kind = "unordered", blocking = true }' in r.stderr


def test_why_says_an_own_function_that_fell_back_ran_as_one_call(tmp_path):
    """A slow call of the program's own function that fell back is not an unannotated external:
    the report gives the fallback's reason instead of suggesting an annotation."""
    (tmp_path / "prog.py").write_text(textwrap.dedent("""\
        import time

        def slow_helper(q):
            try:
                time.sleep(0.05)
                if q:
                    return q
            finally:
                pass
            return q

        if __name__ == "__main__":
            print([slow_helper(str(i)) for i in range(3)])
    """))
    r = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "--why", "prog.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=poppy_env(False),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['0', '1', '2']\n"
    assert "slow_helper (prog.py, line 13): 3 calls" in r.stderr
    assert "__main__:slow_helper is the program's own function and fell back (" in r.stderr
    assert "annotate it" not in r.stderr


def test_container_statements_are_reported_by_their_names():
    """`x in c`, `c[k] = v` and `del c[k]` run as the runtime's helpers but are operations the
    program wrote (a cache's look-up and store): reported as such, other helpers not at all."""
    from poppy_jit import _intrinsics

    assert _why._name(_intrinsics._contains) == "in"
    assert _why._name(_intrinsics._not_contains) == "not in"
    assert _why._name(_intrinsics._setitem) == "setitem"
    assert not _why._is_intrinsic(_intrinsics._contains)
    assert not _why._is_intrinsic(_intrinsics._setitem)
    assert _why._is_intrinsic(_intrinsics._build_list)


GATED_SCRIPT = """\
    import time

    class Section:
        def __enter__(self):
            return self

        def __exit__(self, t, e, tb):
            return False

    def ask(q):
        time.sleep(0.05)
        return q.upper()

    def main():
        out = []
        with Section():
            i = 0
            while i < 3:  # a while loop in a with body runs its iterations one after another
                out.append(ask(f"q{i}"))
                i += 1
        return out

    print(main())  # module code: not compiled, so main runs as its own compiled run
"""


def test_why_names_a_loop_gated_by_a_with_body(tmp_path):
    """No call waited (what follows a statement in a with body is not reached before it
    finished), yet one ran at a time: the report names the with statement around the loop."""
    (tmp_path / "prog.py").write_text(textwrap.dedent(GATED_SCRIPT))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent("""\
        [poppy]
        functions = ["__main__:main"]
        [externals]
        "__main__:ask" = { kind = "unordered", blocking = true }
    """))
    r = subprocess.run([sys.executable, "-m", "poppy_jit", "run", "--why", "prog.py"],
                       cwd=tmp_path, capture_output=True, text=True, env=poppy_env(False),
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['Q0', 'Q1', 'Q2']\n"
    assert r.stderr.count("main: at most 1 call at a time: the loop in the body of the try or "
                          "with statement at line(s) 16 runs its iterations one after another") == 1, r.stderr
