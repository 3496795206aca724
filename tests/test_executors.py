"""Externals run by an engine (python/poppy_jit/_executors.py): `executor="process"` (worker
processes of this machine) and `executor="ray"` (a local Ray instance with 2 CPUs, started by the
test; skipped only when Ray is not importable).

Each case runs a program in fresh interpreters, plain and PYTHONPOPPY=1: the same output, calls
overlapped under poppy, sequential ones in program order across processes, and the failures
(unpicklable argument or result, remote exception, a worker killed mid-call, Ctrl-C) visible,
with nothing made twice and nothing lost."""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from subproc import poppy_env, run_file

pytest.importorskip("poppy_jit._core")

PRELUDE = textwrap.dedent(
    """
    import json, os, sys, threading, time
    import poppy_jit
    from poppy_jit import poppy, unordered, readonly, sequential
    from poppy_jit._executors import RemoteCallError, RemoteTraceback

    MARKS = os.environ.get("MARKS", "")

    def mark(*xs):
        # One line per event, appended atomically (O_APPEND) by whichever process runs the call.
        if MARKS:
            with open(MARKS, "a") as f:
                f.write(json.dumps(list(xs)) + "\\n")

    def rendezvous(i, on):
        # Under poppy (`on`): wait until two calls have arrived, whatever the machine's load (a
        # worker may take a while to start): the overlap is then certain, not a timing accident.
        if not on:
            return
        d = MARKS + ".rv"
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, str(i)), "w").close()
        deadline = time.time() + 60
        while len(os.listdir(d)) < 2 and time.time() < deadline:
            time.sleep(0.01)

    POPPY = bool(os.environ.get("PYTHONPOPPY"))
    """
)


def _write(tmp_path, body, name="prog.py"):
    path = tmp_path / name
    path.write_text(PRELUDE + textwrap.dedent(body))
    return path


def _marks(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(tmp_path, body, poppy, timeout=120, marks_name="marks"):
    path = _write(tmp_path, body)
    marks = tmp_path / f"{marks_name}-{int(poppy)}"
    env = poppy_env(poppy)
    env["MARKS"] = str(marks)
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                       timeout=timeout, cwd=str(tmp_path))
    return r, _marks(marks)


def _both(tmp_path, body, rc=0, timeout=120):
    plain, pm = _run(tmp_path, body, False, timeout)
    popped, qm = _run(tmp_path, body, True, timeout)
    assert plain.returncode == rc, plain.stderr
    assert popped.returncode == rc, popped.stderr
    assert plain.stdout == popped.stdout, (plain.stdout, popped.stdout, popped.stderr)
    return (plain, pm), (popped, qm)


def _overlapped(marks, name):
    """Some two calls of `name` ran at the same time (in different worker processes)."""
    spans = [(m[2], m[3], m[4]) for m in marks if m[0] == name]
    return any(a[0] < b[1] and b[0] < a[1] and a[2] != b[2]
               for i, a in enumerate(spans) for b in spans[i + 1:])


# ---------------------------------------------------------------------------------------------
# The process pool


CORE = """
@unordered(executor="process")
def work(i, on):
    t0 = time.time()
    rendezvous(i, on)
    time.sleep(0.1)
    mark("work", i, t0, time.time(), os.getpid())
    return i * i, os.getpid() != PARENT

@sequential(executor="process")
def record(x):
    t0 = time.time()
    time.sleep(0.05)
    mark("record", x, t0, time.time(), os.getpid())
    return f"rec {x}"

@poppy
def main(n):
    out = []
    for i in range(n):
        out.append(work(i, POPPY))
        out.append(record(i))
    return out

PARENT = int(os.environ.get("PARENT_PID", "0"))

if __name__ == "__main__":
    os.environ["PARENT_PID"] = str(os.getpid())
    PARENT = os.getpid()
    print(main(4))
"""


def test_process_same_output_overlapped_sequential_in_order(tmp_path):
    (plain, pm), (popped, qm) = _both(tmp_path, CORE)
    # Every call ran exactly once, in a worker process (the result's flag).
    assert "False" not in plain.stdout
    for marks in (pm, qm):
        assert sorted(m[1] for m in marks if m[0] == "work") == [0, 1, 2, 3]
        recs = [m for m in marks if m[0] == "record"]
        # Sequential calls in program order, one after the other, whichever process ran them.
        assert [m[1] for m in recs] == [0, 1, 2, 3]
        assert all(a[3] <= b[2] for a, b in zip(recs, recs[1:]))
    assert not _overlapped(pm, "work")  # plain: one call at a time
    assert _overlapped(qm, "work"), qm  # poppy: the pool's two workers at once


def test_process_remote_exception_with_traceback(tmp_path):
    body = """
    @readonly(executor="process")
    def check(x):
        if x == 2:
            raise ValueError(f"bad value {x}")
        return x

    @poppy
    def main():
        out = []
        for i in range(4):
            try:
                out.append(check(i))
            except ValueError as e:
                cause = e.__cause__
                out.append((type(e).__name__, str(e), type(cause).__name__,
                            'raise ValueError(f"bad value {x}")' in str(cause)))
        return out

    if __name__ == "__main__":
        print(main())
        check(2)
    """
    (plain, _), (popped, _) = _both(tmp_path, body, rc=1)
    assert "[0, 1, ('ValueError', 'bad value 2', 'RemoteTraceback', True), 3]" in plain.stdout
    for r in (plain, popped):
        assert r.stderr.strip().splitlines()[-1] == "ValueError: bad value 2"
        assert "RemoteTraceback" in r.stderr


def test_process_unpicklable_argument_names_the_call(tmp_path):
    body = """
    @unordered(executor="process")
    def use(x):
        mark("ran")
        return 1

    @poppy
    def main(lock):
        return use(lock)

    if __name__ == "__main__":
        import pickle
        try:
            main(threading.Lock())
        except pickle.PicklingError as e:
            print("PicklingError", "use()" in str(e), "prog.py:" in str(e), "_thread.lock" in str(e))
        use(threading.Lock())
    """
    (plain, pm), (popped, qm) = _both(tmp_path, body, rc=1)
    assert plain.stdout == "PicklingError True True True\n"
    assert pm == qm == []  # nothing was sent
    for r in (plain, popped):
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("_pickle.PicklingError: poppy_jit: the arguments of use() (defined at ")
    # Plain mode also names the line of the call.
    assert f"called at {tmp_path / 'prog.py'}:" in plain.stderr


def test_process_unpicklable_result(tmp_path):
    body = """
    @unordered(executor="process")
    def make():
        return threading.Lock()

    if __name__ == "__main__":
        try:
            make()
        except RemoteCallError as e:
            print("RemoteCallError", "cannot be pickled" in str(e))
    """
    _both(tmp_path, body)


def test_process_worker_killed_mid_call(tmp_path):
    # Call 2 kills its worker. Calls before it in program order complete and are used; call 2
    # fails with a clear error; no call is made twice; the pool works again afterwards.
    body = """
    @unordered(executor="process")
    def job(i):
        mark("start", i, os.getpid())
        time.sleep(0.2)
        if i == 2:
            os._exit(3)
        return i * 10

    @sequential
    def show(x):
        print("got", x, flush=True)

    @poppy
    def main():
        for i in range(4):
            show(job(i))

    if __name__ == "__main__":
        try:
            main()
        except RemoteCallError as e:
            print("error:", str(e).split(" (")[0], "exit code 3" in str(e), "not retried" in str(e))
        print("again", job(5))
    """
    (plain, pm), (popped, qm) = _both(tmp_path, body)
    assert plain.stdout == ("got 0\ngot 10\nerror: poppy_jit: the worker process running job() "
                            "died before returning True True\nagain 50\n")
    for marks in (pm, qm):
        started = [m[1] for m in marks]
        assert len(started) == len(set(started)), marks  # none twice
        assert 2 in started and 5 in started
    assert sorted(m[1] for m in pm) == [0, 1, 2, 5]


def test_process_ctrl_c_cancels_remote_calls(tmp_path):
    # Six calls of 3 s on two workers; SIGINT to the parent alone after the first two started:
    # the running ones are interrupted in their workers and the queued ones never start.
    body = """
    @unordered(executor="process")
    def slow(i):
        mark("start", i)
        time.sleep(3)
        mark("done", i)
        return i

    @poppy
    def main():
        return [slow(i) for i in range(6)]

    if __name__ == "__main__":
        print("ready", flush=True)
        try:
            print(main() if os.environ.get("PYTHONPOPPY") else [slow(i) for i in range(6)])
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        time.sleep(4)  # time for cancelled calls to finish or queued ones to start, if they could
        print("end", flush=True)
    """
    for poppy in (False, True):
        path = _write(tmp_path, body)
        marks = tmp_path / f"ctrlc-{int(poppy)}"
        env = poppy_env(poppy)
        env["MARKS"] = str(marks)
        p = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        assert p.stdout.readline() == "ready\n"
        deadline = time.time() + 30
        while time.time() < deadline and len(_marks(marks)) < (2 if poppy else 1):
            time.sleep(0.05)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        assert out == "interrupted\nend\n", err
        got = _marks(marks)
        starts = [m[1] for m in got if m[0] == "start"]
        assert sorted(starts) == ([0, 1] if poppy else [0]), got
        assert [m for m in got if m[0] == "done"] == [], got


def test_process_abort_cancels_queued_calls_before_freeing_a_worker(tmp_path):
    # The engine itself, one worker, as an aborted run drives it: on the event loop's thread, the
    # running call is cancelled first and the queued one after, with the GIL let go in between
    # (what a loaded machine does to the runtime's cancel loop). The worker freed by the first
    # cancel must not take the queued call: it is cancelled, never started.
    body = """
    import asyncio
    from poppy_jit import _executors

    def slow(i):
        mark("start", i)
        time.sleep(3)
        mark("done", i)
        return i

    if __name__ == "__main__":
        eng = _executors.ProcessEngine(workers=1)
        calls = [_executors._Call(eng, "slow") for _ in range(2)]
        for i, c in enumerate(calls):
            eng.submit(slow, _executors._dumps(((i,), {})), c, False)
        deadline = time.time() + 60
        while not os.path.exists(MARKS) and time.time() < deadline:
            time.sleep(0.02)

        async def abort():
            calls[0].cancel()
            time.sleep(1.0)  # the GIL is free: the feeder could run now
            calls[1].cancel()
            await asyncio.sleep(0.5)

        asyncio.run(abort())
        for c in calls:
            try:
                status = c.future.result(timeout=10)[0]
            except BaseException as e:
                status = type(e).__name__
            print(status)
        time.sleep(1)
        eng.shutdown()
    """
    path = _write(tmp_path, body)
    marks = tmp_path / "abort"
    env = poppy_env(False)
    env["MARKS"] = str(marks)
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    # The running call was interrupted in its worker (a KeyboardInterrupt reply), the queued one
    # never ran.
    assert p.stdout.split() == ["raise", "CancelledError"], p.stdout + p.stderr
    assert _marks(marks) == [["start", 0]]


def test_process_trace_has_queue_and_transfer_times(tmp_path):
    body = """
    from poppy_jit import _trace

    @unordered(executor="process")
    def work(i):
        time.sleep(0.1)
        return "x" * 1000

    @poppy
    def main():
        return [len(work(i)) for i in range(4)]

    if __name__ == "__main__":
        poppy_jit.start_trace()
        print(main())
        calls = _trace.remote_calls()
        print(len(calls), sorted({c["engine"] for c in calls}), all(c["bytes_out"] > 1000 for c in calls))
        ok = all(c["t_submit"] <= c["t_start"] <= c["t_end"] <= c["t_recv"] + 0.05 for c in calls)
        print("ordered times", ok)
        names = {e["args"]["name"] for e in _trace.trace_events() if e["name"] == "thread_name"}
        print("worker tracks", sum(n.startswith("process pid ") for n in names) >= 1)
        spans = [e for e in _trace.trace_events() if e.get("cat") == "remote"]
        print(len(spans), all("queue_and_transfer_ms" in e["args"] for e in spans))
    """
    (plain, _), (popped, _) = _both(tmp_path, body)
    assert plain.stdout == ("[1000, 1000, 1000, 1000]\n4 ['process'] True\nordered times True\n"
                            "worker tracks True\n4 True\n")


def test_process_externals_in_a_module_need_no_main_guard(tmp_path):
    # The worker runs the main script only for functions defined there: a script without the
    # `if __name__ == "__main__"` guard whose externals live in a module works.
    (tmp_path / "heavy.py").write_text(textwrap.dedent("""
        import os
        from poppy_jit import unordered, sequential

        @unordered(executor="process")
        def square(x):
            return x * x, os.getpid()

        @unordered(executor="process")
        def outer(x):
            # An executor external called inside a worker runs there (no nested pools).
            return square(x)[1] == os.getpid()
    """))
    body = """
    import heavy

    @poppy
    def main():
        return [heavy.square(i)[0] for i in range(5)], heavy.outer(3)

    print(main(), flush=True)
    print(heavy.square(7)[1] != os.getpid())
    """
    (plain, _), _ = _both(tmp_path, body)
    assert plain.stdout == "([0, 1, 4, 9, 16], True)\nTrue\n"


def test_process_config_key(tmp_path):
    (tmp_path / "lib.py").write_text(textwrap.dedent("""
        import os

        def where(x):
            return x, os.getpid()
    """))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent("""
        [externals]
        "lib:where" = { kind = "unordered", executor = "process" }
    """))
    prog = tmp_path / "cfg.py"
    prog.write_text(textwrap.dedent("""
        import os, lib, poppy_jit
        print(lib.where.__poppy_external__.executor, lib.where(1)[1] != os.getpid())
    """))
    for poppy in (False, True):
        env = poppy_env(poppy)
        env["PYTHONPOPPY_CONFIG"] = str(tmp_path / "poppy.toml")
        r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env,
                           cwd=str(tmp_path), timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "process True\n"
    bad = tmp_path / "bad.toml"
    bad.write_text('[externals]\n"lib:where" = { kind = "unordered", executor = "gpu" }\n')
    from poppy_jit import _config
    with pytest.raises(_config.ConfigError, match="executor must be one of"):
        _config.load(str(bad))


def test_decorator_option_errors():
    from poppy_jit import unordered, sequential

    with pytest.raises(TypeError, match="executor must be one of"):
        unordered(executor="gpu")
    with pytest.raises(TypeError, match="blocking=True does not apply"):
        unordered(executor="process", blocking=True)(lambda: 1)

    async def co():
        return 1

    with pytest.raises(TypeError, match="is async"):
        unordered(executor="process")(co)
    with pytest.raises(TypeError, match="idempotent"):
        sequential(executor="ray", idempotent=1)

    def local(x):
        return x

    ext = unordered(executor="process")(local)
    spec = ext.__poppy_external__
    assert spec.executor == "process" and spec.is_async and not spec.blocking
    assert "executor='process'" in repr(spec)
    # Re-annotating keeps the user's function, not the proxy.
    again = sequential(ext)
    assert again.__poppy_external__.fn is local
    with pytest.raises(TypeError, match=r"local\(\) \(defined at .*\) cannot run in a worker process: "
                                        "it is defined inside a function"):
        ext(1)


# ---------------------------------------------------------------------------------------------
# Ray

ray_missing = importlib.util.find_spec("ray") is None


@pytest.mark.skipif(ray_missing, reason="Ray is not installed (pip install 'poppy_jit[ray]')")
def test_ray_semantics(tmp_path):
    # One program per mode (a Ray start costs seconds): results, overlap, order, a remote
    # exception, an unpicklable argument, a worker killed mid-call (not retried), idempotent=True
    # (retried), the trace, an aborted run cancelling its calls in flight.
    body = """
    import pickle, ray
    from poppy_jit import _trace

    STATE = os.environ["STATE_DIR"]

    @unordered(executor="ray")
    def work(i, on=False):
        t0 = time.time()
        rendezvous(i, on)
        time.sleep(0.1)
        mark("work", i, t0, time.time(), os.getpid())
        return i * i

    @sequential(executor="ray")
    def record(x):
        t0 = time.time()
        mark("record", x, t0, time.time(), os.getpid())
        return f"rec {x}"

    @readonly(executor="ray")
    def check(x):
        if x == 2:
            raise ValueError(f"bad value {x}")
        return x

    @unordered(executor="ray")
    def die(tag):
        mark("die", tag)
        os._exit(5)

    @unordered(executor="ray", idempotent=True)
    def flaky(tag):
        # Dies on its first attempt only (a file records it): retried, since marked idempotent.
        path = os.path.join(STATE, tag)
        mark("flaky", tag)
        if not os.path.exists(path):
            open(path, "w").close()
            os._exit(5)
        return "ok " + tag

    @poppy
    def main():
        out = []
        for i in range(4):
            out.append(work(i, POPPY))
            out.append(record(i))
        return out

    @unordered(executor="ray")
    def slow(i):
        mark("slow-start", i)
        for _ in range(400):  # Ray interrupts a task between bytecodes, not inside a C sleep
            time.sleep(0.01)
        mark("slow-done", i)
        return i

    @unordered(executor="ray")
    def bad(on):
        # Under poppy the calls after this one in program order are already in flight: wait
        # until one runs, then fail the run, which must cancel them (plain CPython never makes
        # them).
        def started():
            with open(MARKS) as f:
                return '"slow-start"' in f.read()

        deadline = time.time() + 60
        while on and time.time() < deadline and not started():
            time.sleep(0.01)
        raise RuntimeError("boom")

    @poppy
    def aborted():
        x = bad(POPPY)
        a = slow(1)
        b = slow(2)
        return x, a, b

    @poppy
    def checks():
        out = []
        for i in range(4):
            try:
                out.append(check(i))
            except ValueError as e:
                out.append((str(e), type(e.__cause__).__name__))
        return out

    if __name__ == "__main__":
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        poppy_jit.start_trace()
        out = [main(), checks()]
        try:
            work(threading.Lock())
        except pickle.PicklingError as e:
            out.append(("PicklingError", "work()" in str(e)))
        try:
            die(os.environ.get("PYTHONPOPPY", "0"))
        except RemoteCallError as e:
            out.append(("died", "not retried" in str(e)))
        out.append(flaky("p" + os.environ.get("PYTHONPOPPY", "0")).startswith("ok p"))
        out.append(("remote calls traced", len([c for c in _trace.remote_calls() if c["engine"] == "ray"]) >= 12))
        try:
            aborted()
        except RuntimeError as e:
            out.append(str(e))
        time.sleep(5)  # a cancelled call would have finished by now
        # One write: Ray's driver prints ("(raylet) A worker died ...") come from another thread.
        sys.stdout.write("RESULT " + repr(out) + "\\n")
    """
    outs = []
    for poppy in (False, True):
        path = _write(tmp_path, body)
        marks = tmp_path / f"ray-{int(poppy)}"
        state = tmp_path / f"state-{int(poppy)}"
        state.mkdir()
        env = poppy_env(poppy)
        env.update(MARKS=str(marks), STATE_DIR=str(state), RAY_AUTH_MODE="disabled")
        env.pop("RAY_ADDRESS", None)
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                           timeout=300, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr[-3000:]
        # Ray's own driver messages (a worker died: "(raylet) ...") are not the program's output.
        outs.append([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")])
        got = _marks(marks)
        recs = [m for m in got if m[0] == "record"]
        assert [m[1] for m in recs] == [0, 1, 2, 3]
        assert sorted(m[1] for m in got if m[0] == "work") == [0, 1, 2, 3]
        assert len([m for m in got if m[0] == "die"]) == 1, got  # max_retries=0
        assert len([m for m in got if m[0] == "flaky"]) == 2, got  # idempotent: retried once
        assert [m for m in got if m[0] == "slow-done"] == [], got  # cancelled with the run
        started = [m for m in got if m[0] == "slow-start"]
        if poppy:
            assert _overlapped(got, "work"), got
            assert started, got  # a running call was cancelled, not only queued ones
        else:
            assert started == [], got
    assert outs[0] == outs[1]
    assert outs[0] == ["RESULT [[0, 'rec 0', 1, 'rec 1', 4, 'rec 2', 9, 'rec 3'], "
                       "[0, 1, ('bad value 2', 'RemoteTraceback'), 3], ('PicklingError', True), "
                       "('died', True), True, ('remote calls traced', True), 'boom']"]
