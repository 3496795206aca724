"""Stress tests for the interposer (issue 5): threads, re-entrancy, recursion, interrupts,
tracers, the kinds of callables @poppy can decorate, and leaks.

Each scenario is a small program run in a fresh interpreter, plainly and with PYTHONPOPPY=1
(the hook is process-wide, so it is not installed in the pytest process). A program prints what
it checked; the test requires the same output in both modes (the contract) and, under poppy,
that the frames ran compiled where they should. Leak checks use behaviour bounds only:
refcounts of specific objects, weakrefs, thread counts, the loop's tasks, tracemalloc growth.
"""
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("poppy_jit._core")

PRELUDE = '''
import asyncio, gc, sys, threading, time, weakref
import poppy_jit
from poppy_jit import poppy, readonly, sequential, unordered

POPPY = poppy_jit.is_enabled()

def stat(key):
    return poppy_jit.stats()[key] if POPPY else None
'''


def run(body, poppy, timeout=120):
    env = dict(os.environ)
    env.pop("PYTHONPOPPY", None)
    if poppy:
        env["PYTHONPOPPY"] = "1"
    src = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                          timeout=timeout)


def both(body, timeout=120):
    """Run plainly and under poppy; both must succeed and print the same non-STAT lines."""
    plain, popped = run(body, False, timeout), run(body, True, timeout)
    assert plain.returncode == 0, plain.stderr
    assert popped.returncode == 0, popped.stderr
    keep = lambda out: [l for l in out.splitlines() if not l.startswith("STAT")]  # noqa: E731
    assert keep(plain.stdout) == keep(popped.stdout), (plain.stdout, popped.stdout)
    stats = {}
    for l in popped.stdout.splitlines():
        if l.startswith("STAT "):
            _, k, v = l.split(" ", 2)
            stats[k] = eval(v)
    return plain.stdout, stats


def test_threads_calling_poppy_functions_at_once():
    out, stats = both('''
    @unordered
    async def fetch(x):
        await asyncio.sleep(0.005)
        return x * 2

    @unordered(blocking=True)
    def lookup(x):
        time.sleep(0.001)
        return x % 7

    @poppy
    def work(i):
        a = fetch(i)
        b = fetch(i + 1)
        c = lookup(i)
        return a + b + c - c

    results = {}
    errors = []

    def worker(t):
        try:
            results[t] = [work(t * 100 + k) for k in range(25)]
        except BaseException as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    print("errors", errors)
    print("ok", all(results[t] == [2 * (t * 100 + k) + 2 * (t * 100 + k + 1) for k in range(25)]
                    for t in range(4)))
    gc.collect()
    # Worker threads of blocking externals are pooled and reused; the callers' threads are gone.
    print("callers gone", not any(th.is_alive() for th in threads))
    print("STAT runs", stat("runs"))
    print("STAT peak", stat("peak_in_flight"))
    ''')
    assert "errors []" in out and "ok True" in out and "callers gone True" in out
    assert stats["runs"] == 100 and stats["peak"] >= 2


def test_external_that_calls_back_into_poppy_code():
    out, stats = both('''
    @unordered
    async def fetch(x):
        await asyncio.sleep(0.005)
        return x + 1

    @poppy
    def inner(x):
        a = fetch(x)
        b = fetch(a)
        return a * b

    @sequential
    def callback(x):
        return inner(x) + 1      # @poppy code called from an external of a running run

    @poppy
    def outer(x):
        a = fetch(x)
        b = callback(a)
        return a + b

    print("result", [outer(i) for i in range(5)])
    print("direct", inner(3))
    print("STAT runs", stat("runs"))
    print("STAT nested", stat("nested_plain_runs"))

    # Callbacks from a blocking external (a worker thread: its own compiled run there) and from
    # an async one (inside the running loop: plain).
    @unordered(blocking=True)
    def on_thread(x):
        return inner(x) + 1

    @unordered
    async def on_loop(x):
        await asyncio.sleep(0)
        return inner(x) + 2

    @poppy
    def fan(x):
        a = on_thread(x)
        b = on_thread(x + 1)
        c = on_loop(x)
        return a + b + c

    print("fan", [fan(i) for i in range(3)])
    print("STAT runs_after_fan", stat("runs"))
    ''')
    assert "result [" in out and "fan [14, 28, 48]" in out
    # The callback's inner() ran plainly inside the outer run; inner(3) at top level compiled.
    assert stats["nested"] == 5 and stats["runs"] == 6
    # 3 fan runs + 6 compiled inner() runs on the worker threads.
    assert stats["runs_after_fan"] == 6 + 3 + 6


def test_deep_recursion_and_recursion_error():
    out, stats = both('''
    sys.setrecursionlimit(2000)

    @sequential
    def note(x):
        return x

    @poppy
    def down(n):
        if n == 0:
            return note(0)
        return down(n - 1) + 1

    print("deep", down(500))

    @poppy
    def forever(n):
        return forever(n + 1) + 1

    try:
        forever(0)
        print("no error")
    except RecursionError as e:
        print("RecursionError")
    # The interpreter is still healthy afterwards.
    print("after", down(50))

    # Mutual recursion is bounded the same way.
    @poppy
    def ping(n):
        return pong(n + 1) + 1

    @poppy
    def pong(n):
        return ping(n + 1) + 1

    try:
        ping(0)
        print("no error")
    except RecursionError:
        print("mutual RecursionError")

    # A helper called from a loop more often than the recursion limit is not recursion: every
    # call is inlined.
    @poppy
    def helper(i):
        return note(i) + 1

    @poppy
    def loop(n):
        out = []
        for i in range(n):
            out.append(helper(i))
        return sum(out)

    before = stat("inlined_calls")
    print("loop", loop(2500))
    if POPPY:
        print("STAT loop_inlined", stat("inlined_calls") - before)
    ''', timeout=300)
    assert "deep 500" in out and "RecursionError" in out and "after 50" in out
    assert "mutual RecursionError" in out and "loop 3126250" in out
    assert stats["loop_inlined"] == 2500


def test_keyboard_interrupt_cancels_in_flight_externals():
    out, stats = both('''
    import signal
    from poppy_jit import _loop

    started, cancelled, finished = [], [], []

    @unordered
    async def slow(x):
        started.append(x)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(x)
            raise
        finished.append(x)
        return x

    @sequential
    def busy(x):
        t = time.monotonic()
        while time.monotonic() - t < 30 and not finished:
            pass
        return x

    @poppy
    def main():
        a = slow(1)
        b = slow(2)
        return a + b

    @poppy
    def main_sync():
        a = slow(3)      # in flight (under poppy) while busy() runs and gets the interrupt
        b = busy(4)
        return a + b

    @unordered
    async def quick(x):
        await asyncio.sleep(0.001)
        return x

    @poppy
    def again():
        return quick(1) + quick(2)

    def interrupt_soon():
        # A real SIGINT to the main thread (it wakes the loop's selector, as Ctrl-C does).
        t = threading.Timer(0.5, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
        t.start()
        return t

    before = threading.active_count()
    for fn in (main, main_sync):
        timer = interrupt_soon()
        try:
            fn()
            print("no interrupt")
        except KeyboardInterrupt:
            print("interrupted")
        timer.join()
        # Nothing waited for the 30 s sleeps: the interrupt ended the run at once.
        print("finished", finished)
        if POPPY:
            print("STAT started_" + fn.__name__, sorted(started))
            print("STAT cancelled_" + fn.__name__, sorted(cancelled))
        loop = _loop.get_loop()
        # Plain CPython leaves the interrupted run_until_complete's task pending; the runtime
        # cancels and reaps what it had in flight.
        print("STAT tasks_left_" + fn.__name__, len(asyncio.all_tasks(loop)))
        started.clear(); cancelled.clear()
    print("threads back", threading.active_count() == before)
    print("usable again", again())
    ''')
    assert out.count("interrupted") == 2 and out.count("finished []") == 2
    assert "threads back True" in out and "usable again 3" in out
    # Both calls of main were in flight together, and the interrupt cancelled both.
    assert stats["started_main"] == [1, 2] and stats["cancelled_main"] == [1, 2]
    assert stats["tasks_left_main"] == 0 and stats["tasks_left_main_sync"] == 0


def test_tracer_and_profiler_active():
    out, stats = both('''
    @sequential
    def note(x):
        return x * 3

    @poppy
    def f(x):
        a = note(x)
        b = note(a)
        return a + b

    events = []
    def tracer(frame, event, arg):
        if frame.f_code.co_name in ("f", "note"):
            events.append((frame.f_code.co_name, event))
        return tracer

    sys.settrace(tracer)
    r1 = f(2)
    sys.settrace(None)
    print("traced", r1, ("f", "call") in events, ("note", "call") in events)
    print("events", events)  # identical in both modes: the prologue adds no trace event

    calls = []
    every = []
    def profiler(frame, event, arg):
        if event == "call" and frame.f_code.co_name in ("f", "note"):
            calls.append(frame.f_code.co_name)
        if frame.f_code.co_name in ("f", "note"):
            every.append((frame.f_code.co_name, event, getattr(arg, "__name__", None)))
    sys.setprofile(profiler)
    r2 = f(3)
    sys.setprofile(None)
    print("profiled", r2, calls)
    print("profile events", every)  # no c_call for the prologue's runtime entry
    print("untraced", f(4))
    print("STAT runs", stat("runs"))
    ''')
    # Under a tracer or profiler the frame runs plainly (the tracer sees every frame); once they
    # are removed it runs compiled again.
    assert "traced 24 True True" in out and "profiled 36 ['f', 'note', 'note']" in out
    assert "untraced 48" in out and stats["runs"] == 1


def test_poppy_on_generators_coroutines_and_methods():
    out, stats = both('''
    @sequential
    def note(x):
        return x + 1

    @poppy
    def gen(n):
        yield note(n)
        yield note(n + 1)

    @poppy
    async def coro(n):
        await asyncio.sleep(0)
        return note(n)

    class C:
        def __init__(self, k):
            self.k = k

        @poppy
        def method(self, x):
            a = note(x)
            return a + self.k

        @staticmethod
        @poppy
        def static(x):
            return note(x) * 2

        @classmethod
        @poppy
        def klass(cls, x):
            return cls.__name__ + str(note(x))

    print("gen", list(gen(1)))
    print("coro", asyncio.run(coro(5)))
    c = C(10)
    print("method", c.method(1), C.method(c, 2))
    print("static", C.static(3), c.static(4))
    print("classmethod", C.klass(5), c.klass(6))
    print("STAT fallbacks", sorted(f["function"] for f in poppy_jit.stats()["fallbacks"]) if POPPY else None)
    print("STAT runs", stat("runs"))
    ''')
    assert "gen [2, 3]" in out and "coro 6" in out and "method 12 13" in out
    assert "static 8 10" in out and "classmethod C6 C7" in out
    # Generators are not translated (they fall back with a reason); coroutines (awaited by
    # asyncio.run's task), methods, staticmethods and classmethods run compiled.
    assert stats["fallbacks"] == ["gen"]
    assert stats["runs"] == 7


def test_no_leaks_through_the_runtime():
    out, stats = both('''
    import tracemalloc

    @unordered
    async def fetch(x):
        await asyncio.sleep(0)
        return x

    @sequential
    def keep(x):
        return len(x.items)

    @poppy
    def f(obj, n):
        a = fetch(obj)
        b = keep(a)
        return (a, b + n)

    class Payload:
        def __init__(self):
            self.items = list(range(10))

    # Arguments and results: refcounts return to where they were.
    p = Payload()
    marker = object()
    rc_p, rc_m = sys.getrefcount(p), sys.getrefcount(marker)
    for _ in range(50):
        r = f(p, 1)
        assert r[0] is p
    del r
    gc.collect()
    print("refcounts", sys.getrefcount(p) - rc_p, sys.getrefcount(marker) - rc_m)

    # An object passed through the runtime is freed once the call has returned.
    q = Payload()
    ref = weakref.ref(q)
    res = f(q, 2)
    del q, res
    gc.collect()
    print("freed", ref() is None)

    # An object passed to a failing run is freed too (once the exception is gone).
    @sequential
    def boom(x):
        raise ValueError("boom")

    @poppy
    def g(obj):
        a = fetch(obj)
        return boom(a)

    q = Payload()
    ref = weakref.ref(q)
    try:
        g(q)
    except ValueError:
        pass
    del q
    gc.collect()
    print("freed after error", ref() is None)

    # 1000 calls do not grow memory beyond a small bound.
    for _ in range(100):
        f(Payload(), 1)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(1000):
        f(Payload(), 1)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    print("bounded", grown < 200_000)
    print("STAT grown", grown)
    threads = threading.active_count()
    print("threads", threads)
    from poppy_jit import _loop
    print("tasks", len(asyncio.all_tasks(_loop.get_loop())))
    print("STAT runs", stat("runs"))
    ''', timeout=300)
    assert "refcounts 0 0" in out and "freed True" in out and "freed after error True" in out
    assert "bounded True" in out and "threads 1" in out and "tasks 0" in out
    assert stats["runs"] == 50 + 1 + 1 + 1100
