"""`time.sleep` called from @poppy code runs as a timer task of the runtime's tokio executor
(src/host/pool.rs) instead of stalling the evaluator thread: completions of other calls are
processed and further calls dispatched while it sleeps; the call stays sequential; CPython's
errors for bad arguments; user functions named `sleep` untouched; cancellation (Ctrl-C,
`await poppy_jit.run` cancelled) leaves no timer or thread behind; interpreter exit does not wait
for pending timers. (The program-order side is also checked by tests/programs/p71_time_sleep.py.)

Each case runs a program in a fresh interpreter (PYTHONPOPPY is read at import time)."""
import signal
import subprocess
import sys
import textwrap

import pytest
from subproc import poppy_env, run_file

pytest.importorskip("poppy_jit._core")

PRELUDE = textwrap.dedent(
    """
    import asyncio, json, os, sys, threading, time
    import poppy_jit
    from poppy_jit import poppy, unordered, readonly, sequential, _core

    EVENTS = []

    @sequential
    def log(*xs):
        # one write (threads print too), then the event
        sys.stdout.write(" ".join(map(str, ("log",) + xs)) + "\\n")
        sys.stdout.flush()
        EVENTS.append(("log",) + xs)

    def stat(key, label=None):
        # STAT lines are compared only under poppy
        if poppy_jit.is_enabled():
            print("STAT", label or key, json.dumps(poppy_jit.stats()[key]), flush=True)

    def threads_left(expected=1, deadline_s=30):
        # OS threads of this process once the executor's idle ones have gone (polls; the
        # executor's threads exit after 2 s idle)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            info = _core.blocking_pool_info()
            if not info["timer_driver"] and info["live"] == 0 and len(os.listdir("/proc/self/task")) <= expected:
                break
            time.sleep(0.05)
        return len(os.listdir("/proc/self/task"))
    """
)


def _run(body, tmp_path, poppy=True, timeout=60):
    path = tmp_path / "prog.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return run_file(path, poppy, timeout)


def _same(body, tmp_path, timeout=60):
    """Run plainly and under poppy: same exit code, same stdout apart from STAT lines (returned
    from the poppy run)."""
    plain = _run(body, tmp_path, poppy=False, timeout=timeout)
    popped = _run(body, tmp_path, poppy=True, timeout=timeout)
    assert plain.returncode == popped.returncode == 0, (plain.stderr, popped.stderr)
    keep = [ln for ln in popped.stdout.splitlines() if not ln.startswith("STAT ")]
    assert plain.stdout.splitlines() == keep, (plain.stdout, popped.stdout)
    stats = {}
    for ln in popped.stdout.splitlines():
        if ln.startswith("STAT "):
            _, k, v = ln.split(" ", 2)
            stats[k] = eval(v)
    return keep, stats


def test_completions_are_processed_while_sleeping(tmp_path):
    # fetch and use come after the sleep in program order but are unordered, so they may start
    # during it (ordered calls after them still wait for them: log("after") comes last anyway).
    # Run inline, the sleep would stall the evaluator: fetch's completion could only be looked
    # at, and use dispatched, once the sleep returned. As a timer, fetch completes and use runs
    # while the sleep is still pending, which use checks itself (the executor's pending timers).
    body = """
    PENDING = []

    @unordered
    async def fetch(x):
        EVENTS.append(("fetch", x))
        await asyncio.sleep(0)
        return x + 1

    @unordered
    def use(y):
        EVENTS.append(("use", y))
        if poppy_jit.is_enabled():
            PENDING.append(_core.blocking_pool_info()["timers"])
        return y * 2

    @poppy
    def main():
        log("before")
        time.sleep(1.0)
        a = fetch(1)
        b = use(a)
        log("after")
        return b

    print("result", main())
    print("events", EVENTS)
    stat("timer_tasks")
    if poppy_jit.is_enabled():
        print("STAT pending_during_use", PENDING[0])
    """
    out, stats = _same(body, tmp_path)
    assert "events [('log', 'before'), ('fetch', 1), ('use', 2), ('log', 'after')]" in out
    assert "result 4" in out
    assert stats["timer_tasks"] == 1
    assert stats["pending_during_use"] == 1  # the sleep had not ended when use ran


def test_sleeps_keep_program_order_and_are_counted(tmp_path):
    body = """
    from time import sleep as nap

    @unordered
    async def ask(x):
        await asyncio.sleep(0.01 * (x % 3))
        return f"a{x}"

    @poppy
    def main(n):
        out = []
        for i in range(n):
            print("step", i)
            nap(0.005 * (i % 2))     # int 0 and floats, under another name
            out.append(ask(i))
            log("asked", i)
        time.sleep(0)
        print("done", out)
        return len(out)

    print("result", main(5))
    stat("timer_tasks")
    if poppy_jit.is_enabled():
        poppy_jit.reset_stats()
    stat("timer_tasks", "after_reset")
    """
    out, stats = _same(body, tmp_path)
    assert out[-1] == "result 5"
    # five loop sleeps and the final time.sleep(0); reset_stats clears the counter
    assert stats["timer_tasks"] == 6 and stats["after_reset"] == 0


def test_bad_sleep_arguments_raise_cpythons_errors(tmp_path):
    # Only a call of time.sleep with one non-negative int/float is a timer; anything else calls
    # time.sleep inline, so CPython raises its own error (or sleeps, for float()-able objects).
    body = """
    class Secs:
        def __float__(self):
            return 0.01

        def __repr__(self):
            return "Secs()"

    @poppy
    def one(x):
        log("one", repr(x))
        r = time.sleep(x)
        log("returned", r)

    @poppy
    def none():
        time.sleep()

    @poppy
    def two():
        time.sleep(0.01, 0.01)

    @poppy
    def keyword():
        time.sleep(secs=0.01)

    cases = [(one, x) for x in (-1, -0.5, "x", float("nan"), float("inf"), 10**30, None, Secs(),
                                False)]
    for f, *args in cases + [(none,), (two,), (keyword,)]:
        try:
            f(*args)
            print("ok", f.__name__, args)
        except BaseException as e:
            print("raised", type(e).__name__, str(e))
    stat("timer_tasks")
    """
    out, stats = _same(body, tmp_path)
    assert "raised ValueError sleep length must be non-negative" in out
    assert any(ln.startswith("raised TypeError") and "str" in ln for ln in out)
    assert not any(ln.startswith("log returned") and ln != "log returned None" for ln in out)
    assert "log returned None" in out  # Secs() and False sleep (inline)
    # nothing here is a timer
    assert stats["timer_tasks"] == 0


def test_a_function_named_sleep_is_not_a_timer(tmp_path):
    body = """
    def sleep(x):
        print("my sleep", x)
        return x * 2

    class Clock:
        @staticmethod
        def sleep(x):
            print("clock sleep", x)

    real = time.sleep

    def fake(x):
        print("fake time.sleep", x)

    @poppy
    def main():
        a = sleep(1)
        Clock.sleep(2)
        time.sleep(3)      # time.sleep replaced by fake below: a plain call of fake
        log("a", a)
        return a

    time.sleep = fake
    try:
        print("result", main())
    finally:
        time.sleep = real
    stat("timer_tasks")
    """
    out, stats = _same(body, tmp_path)
    assert out == ["my sleep 1", "clock sleep 2", "fake time.sleep 3", "log a 2", "result 2"]
    assert stats["timer_tasks"] == 0


def test_ctrl_c_during_a_long_sleep_interrupts_the_run_and_leaves_nothing(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PRELUDE + textwrap.dedent(
        """
        @poppy
        def main():
            log("sleeping")
            time.sleep(60)
            log("woke")

        def watch():
            # tell the test when the timer is pending (the run is waiting for it)
            while _core.blocking_pool_info()["timers"] == 0:
                time.sleep(0.01)
            print("timer pending", flush=True)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            main()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        watcher.join()
        info = _core.blocking_pool_info()
        print("timers", info["timers"], flush=True)
        print("tasks", threads_left(), flush=True)
        print("threads", threading.active_count(), flush=True)
        # the executor still works afterwards
        @poppy
        def again():
            time.sleep(0.01)
            log("again")
        again()
        stat("timer_tasks")
        """))
    p = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=poppy_env(True))
    assert p.stdout.readline().strip() == "log sleeping"
    assert p.stdout.readline().strip() == "timer pending"
    p.send_signal(signal.SIGINT)
    # (not waiting for the 60 s sleep: the communicate timeout would fail the test)
    out, err = p.communicate(timeout=40)
    assert p.returncode == 0, err
    assert out.splitlines() == ["interrupted", "timers 0", "tasks 1", "threads 1", "log again",
                                "STAT timer_tasks 2"], (out, err)


def test_cancelling_await_run_cancels_its_timer(tmp_path):
    body = """
    started = threading.Event()

    @sequential
    def mark():
        started.set()

    @poppy
    def main():
        mark()
        time.sleep(60)
        log("woke")

    async def app():
        task = asyncio.ensure_future(poppy_jit.run(main))
        while not started.is_set():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            print("caller cancelled", flush=True)
        print("timers", _core.blocking_pool_info()["timers"], flush=True)

    asyncio.run(app())
    print("tasks", threads_left(2) <= 2)  # (+ the idle poppy-run thread of poppy_jit.run)
    """
    p = _run(body, tmp_path, timeout=40)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["caller cancelled", "timers 0", "tasks True"], p.stderr


def test_exit_does_not_wait_for_a_daemon_threads_sleep_and_finishes_other_threads_sleeps(tmp_path):
    # At interpreter exit the executor closes. A daemon thread's run sleeping for a minute must
    # not hold up exit (plain CPython does not wait for it either); a non-daemon thread's run,
    # still sleeping when the main thread ends, sleeps the rest inline and completes (threading
    # joins it after the exit hooks).
    body = """
    @poppy
    def worker(name, secs):
        log(name, "sleeping")
        time.sleep(secs)
        log(name, "woke")
        time.sleep(0.01)   # after the executor closed: inline
        log(name, "done")

    hang = threading.Thread(target=worker, args=("daemon", 60), daemon=True)
    hang.start()
    short = threading.Thread(target=worker, args=("thread", 0.5))
    short.start()
    while len([e for e in EVENTS if e[-1] == "sleeping"]) < 2:
        time.sleep(0.01)
    print("main done", flush=True)
    """
    p = _run(body, tmp_path, timeout=40)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert sorted(lines[:2]) == ["log daemon sleeping", "log thread sleeping"]
    assert lines[2:] == ["main done", "log thread woke", "log thread done"], p.stdout


def test_sleep_in_a_run_on_a_blocking_thread(tmp_path):
    # A blocking external running @poppy code: its run's timers wake that thread's own loop.
    body = """
    @poppy
    def inner(x):
        time.sleep(0.02)
        return x + 1

    @unordered(blocking=True)
    def outer(x):
        return inner(x) * 2

    @poppy
    def main(n):
        total = 0
        for i in range(n):
            total = total + outer(i)
        return total

    print("result", main(4))
    stat("timer_tasks")
    stat("blocking_calls")
    """
    out, stats = _same(body, tmp_path)
    assert out == ["result 20"]
    assert stats["timer_tasks"] == 4 and stats["blocking_calls"] == 4


def test_a_failure_before_a_pending_sleep_cancels_its_timer(tmp_path):
    # check is unordered; the sequential sleep after it waits for it to succeed: when check
    # raises, CPython never sleeps, and the timer is never started (none pending, none
    # cancelled, no timer task) — the run raises at once and nothing after it ran.
    body = """
    @unordered
    async def check(x):
        await asyncio.sleep(0.2)
        raise ValueError(f"bad {x}")

    @poppy
    def main():
        r = check(1)
        time.sleep(60)
        log("woke", r)

    try:
        main()
    except ValueError as e:
        print("raised", e, flush=True)
    if poppy_jit.is_enabled():
        st = poppy_jit.stats()
        print("STAT timers", _core.blocking_pool_info()["timers"], flush=True)
        print("STAT cancelled", st["cancelled_calls"], flush=True)
        print("STAT timer_tasks", st["timer_tasks"], flush=True)
    """
    out, stats = _same(body, tmp_path, timeout=30)
    assert out == ["raised bad 1"]
    assert stats == {"timers": 0, "cancelled": 0, "timer_tasks": 0}
