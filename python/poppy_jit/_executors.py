"""Engines that run heavy externals in other processes: `@unordered(executor="process")` (a pool of
worker processes on this machine, no dependency) and `@unordered(executor="ray")` (tasks on a Ray
cluster, optional dependency). See docs/annotations.md "Scale out".

For the runtime an executor external is an `async` external: its `ExternalSpec.fn` is a proxy
that pickles the arguments at once, at the call's place in program order (a failure names the
call), hands them to the engine and returns an awaitable of the engine's future, which the
runtime awaits on the evaluator's event loop like any `async def` external. Nothing runs a thread
per call in flight (the blocking pool's cap does not bound a cluster), the reordering classes
order the calls as for any other external (a sequential call is handed over only once the one
before it has returned), and a run that is aborted cancels what it left in flight: a call still
queued is never sent, a running one is interrupted (SIGINT in its worker; `ray.cancel`).

Plain mode (PYTHONPOPPY unset) and calls from ordinary code go to the same engine and wait for the
result, so both modes see the same pickled copies of arguments and results.

No call is made twice: the process pool never retries, and Ray tasks run with `max_retries=0`
unless the external is marked `idempotent=True`. A worker that dies mid-call fails that call
alone with `RemoteCallError` (the worker is replaced; other calls go on).

Depends on nothing of the runtime (`_core`); `subprocess` and `ray` are imported when an
engine is first used. Inside a worker, executor externals run in-process (no nested pools).
"""
from __future__ import annotations

import collections.abc
import concurrent.futures
import functools
import os
import pickle
import queue
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable

ENGINES = ("process", "ray")

#: True in a worker process of an engine: executor externals then run in-process.
_IN_WORKER = False


class RemoteCallError(RuntimeError):
    """An executor external could not be run remotely: its worker died, its result or exception
    could not be pickled, or the engine is not available."""


class RemoteTraceback(Exception):
    """The `__cause__` of an exception re-raised from a worker: the traceback it had there (as
    concurrent.futures does)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def check_name(executor: Any, where: str) -> None:
    if executor is not None and executor not in ENGINES:
        raise TypeError(f"{where}: executor must be one of {', '.join(map(repr, ENGINES))} "
                        f"(or None), got {executor!r}")


def _site(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else "?"


def _caller(depth: int) -> str | None:
    """file:line of the first frame outside poppy_jit, `depth` frames up."""
    try:
        f = sys._getframe(depth + 1)
    except ValueError:
        return None
    pkg = os.path.dirname(__file__)
    while f is not None and os.path.dirname(f.f_code.co_filename) == pkg:
        f = f.f_back
    return None if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


# ---------------------------------------------------------------------------------------------
# The worker side (any engine)

def _run_call(fn: Callable, payload: bytes, dumps: Callable) -> tuple:
    """Run one call in a worker: (status, data, traceback text, t_start, t_end, worker)."""
    t0 = time.time()
    where = f"pid {os.getpid()}"
    try:
        args, kwargs = pickle.loads(payload)
    except BaseException as e:  # noqa: BLE001 - reported to the caller
        return ("error", None, f"the arguments could not be unpickled in the worker: {e!r}\n"
                + "".join(traceback.format_exception(e)), t0, time.time(), where)
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - re-raised in the caller, KeyboardInterrupt too
        tb = "".join(traceback.format_exception(e))
        try:
            data = dumps(e)
        except BaseException:  # noqa: BLE001
            data = None
        return ("raise", data, tb, t0, time.time(), where)
    try:
        data = dumps(result)
    except BaseException as e:  # noqa: BLE001
        return ("error", None, f"its result ({type(result).__name__}) cannot be pickled: {e}",
                t0, time.time(), where)
    return ("ok", data, None, t0, time.time(), where)


def _resolve(ref: tuple) -> Callable:
    """The original function of an external, from (module, qualname) (in a worker)."""
    import importlib

    module, qualname = ref
    obj = importlib.import_module(module) if module not in sys.modules else sys.modules[module]
    for part in qualname.split("."):
        obj = getattr(obj, part)
    spec = getattr(obj, "__poppy_external__", None)
    if spec is not None:
        obj = original(spec)
    return obj


def original(spec: Any) -> Callable:
    """The user's function behind an ExternalSpec (an executor external's `fn` is the proxy)."""
    fn = spec.fn
    return getattr(fn, "__poppy_original__", fn)


_resolved: dict = {}
_main_info: dict = {}


def _import_main() -> None:
    """Run the parent's main script as `__mp_main__` (aliased `__main__`), as multiprocessing's
    spawn does: only when a call needs a function defined there, so a program whose externals
    live in modules needs no `if __name__ == "__main__":` guard."""
    import runpy
    import types

    if _main_info.get("imported"):
        return
    _main_info["imported"] = True
    path, name = _main_info.get("path"), _main_info.get("name")
    mod = types.ModuleType("__mp_main__")
    sys.modules["__main__"] = sys.modules["__mp_main__"] = mod
    if name and name != "__main__":
        mod.__dict__.update(runpy.run_module(name, run_name="__mp_main__", alter_sys=False))
    elif path:
        mod.__file__ = path
        mod.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))


def _worker_main(fd: int) -> None:
    """A process-pool worker (`python -c`, started by `ProcessEngine`): calls arrive on the
    connection `fd`, replies go back on it. SIGINT interrupts the call in progress (a cancelled
    call) and is ignored between calls."""
    global _IN_WORKER
    from multiprocessing.connection import Connection

    _IN_WORKER = True
    conn = Connection(fd)
    init = pickle.loads(conn.recv_bytes())
    sys.path[:] = init["sys_path"]
    _main_info.update(init["main"])
    in_call = [False]

    def on_sigint(signum: int, frame: Any) -> None:
        if in_call[0]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            # The pool closed. The program's exit hooks (atexit) are the parent's, not run here.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        in_call[0] = True
        try:
            ref, payload = pickle.loads(data)
            fn = _resolved.get(ref)
            if fn is None:
                try:
                    if ref[0] == "__main__":
                        _import_main()
                    fn = _resolved[ref] = _resolve(ref)
                except BaseException as e:  # noqa: BLE001
                    tb = "".join(traceback.format_exception(e))
                    reply = ("error", None, f"the worker cannot import {ref[0]}.{ref[1]}:\n{tb}",
                             time.time(), time.time(), f"pid {os.getpid()}")
                    fn = None
            if fn is not None:
                reply = _run_call(fn, payload, _dumps)
        except KeyboardInterrupt:
            reply = ("raise", _dumps(KeyboardInterrupt()), "KeyboardInterrupt\n",
                     time.time(), time.time(), f"pid {os.getpid()}")
        finally:
            in_call[0] = False
        conn.send_bytes(pickle.dumps(reply))


def _dumps(x: Any) -> bytes:
    return pickle.dumps(x, pickle.HIGHEST_PROTOCOL)


# ---------------------------------------------------------------------------------------------
# The process pool

def _worker_env() -> dict:
    """The parent's environment without poppy_jit's switches: a worker runs plain CPython (its
    calls are the user's functions) and must not write the parent's trace or stats at exit."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}


def _main_of_parent() -> dict:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return {"path": getattr(main, "__file__", None), "name": getattr(spec, "name", None)}


class _Call:
    """One call handed to an engine: its future (resolves to the worker's reply tuple), how to
    cancel it, and the times the trace reports."""

    __slots__ = ("engine", "name", "future", "handle", "t_submit", "pickle_s", "nbytes")

    def __init__(self, engine: Any, name: str) -> None:
        self.engine = engine
        self.name = name
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self.handle: Any = None
        self.t_submit = 0.0
        self.pickle_s = 0.0
        self.nbytes = 0

    def cancel(self) -> None:
        self.engine.cancel(self)


class ProcessEngine:
    """A pool of worker processes sized to the cores, created on first use. One feeder thread
    per worker hands it calls from a FIFO queue and waits (without the GIL) for each reply; a
    worker that dies fails its call with RemoteCallError and is replaced for the next one.

    Workers are fresh interpreters (`python -c`, like multiprocessing's spawn), never forks of
    this process: it runs threads (the runtime's blocking pool and timers, event loops, these
    feeders), and a forked child inherits every lock one of them held at that instant but not
    the thread that would release it. Started by us rather than by multiprocessing so that the
    parent's main script is run in a worker only when a call needs a function defined there."""

    name = "process"
    dumps = staticmethod(_dumps)

    def __init__(self, workers: int | None = None) -> None:
        if workers is None:
            try:
                workers = len(os.sched_getaffinity(0))
            except AttributeError:  # pragma: no cover - not Linux
                workers = os.cpu_count() or 1
        self.workers = max(1, workers)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: dict = {}  # _Call -> worker process
        self._procs: list = []
        self._threads: list = []
        self._closed = False
        self._refs: dict = {}

    def ref(self, fn: Callable) -> tuple:
        """(module, qualname) by which a worker imports `fn`; TypeError if it cannot."""
        ref = self._refs.get(fn)
        if ref is not None:
            return ref
        module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
        problem = None
        if "<locals>" in qualname or "<lambda>" in qualname:
            problem = "it is defined inside a function"
        elif module not in sys.modules:
            problem = f"its module {module!r} is not imported"
        elif module == "__main__" and not getattr(sys.modules[module], "__file__", None):
            problem = "it is defined in an interactive session or with -c"
        else:
            try:
                found = _resolve((module, qualname))
            except AttributeError:
                found = None
            if found is not fn:
                problem = f"{module}.{qualname} does not name it"
        if problem:
            raise TypeError(f"poppy_jit: external {qualname}() (defined at {_site(fn)}) cannot run "
                            f"in a worker process: {problem}. Define it at the top level of a "
                            "module (a worker imports it by name), or use executor='ray', "
                            "which pickles functions by value")
        ref = self._refs[fn] = (module, qualname)
        return ref

    def submit(self, fn: Callable, payload: bytes, call: _Call, idempotent: bool) -> None:
        data = pickle.dumps((self.ref(fn), payload), pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self._closed:
                raise RemoteCallError("poppy_jit: the process pool is shut down")
            if len(self._threads) < self.workers:
                t = threading.Thread(target=self._feed, name=f"poppy-process-{len(self._threads)}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
        self._queue.put((call, data))

    def _start_worker(self) -> tuple:
        import socket
        import subprocess
        from multiprocessing.connection import Connection

        mine, theirs = socket.socketpair()
        fd = theirs.fileno()
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from poppy_jit import _executors; _executors._worker_main({fd})"],
            pass_fds=(fd,), env=_worker_env(), stdin=subprocess.DEVNULL)
        theirs.close()
        conn = Connection(mine.detach())
        conn.send_bytes(pickle.dumps({"sys_path": list(sys.path), "main": _main_of_parent()}))
        with self._lock:
            self._procs.append(proc)
        return proc, conn

    def _feed(self) -> None:
        proc = conn = None
        while True:
            item = self._queue.get()
            if item is None:
                break
            call, data = item
            if not call.future.set_running_or_notify_cancel():
                continue  # cancelled while queued: never sent
            try:
                if proc is None:
                    proc, conn = self._start_worker()
                with self._lock:
                    self._running[call] = proc
                conn.send_bytes(data)
                reply = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError) as e:
                code = None
                if proc is not None:
                    try:
                        code = proc.wait(1.0)
                    except Exception:  # noqa: BLE001 - still running: the pipe broke
                        proc.kill()
                    conn.close()
                proc = conn = None
                call.future.set_exception(RemoteCallError(
                    f"poppy_jit: the worker process running {call.name}() died before "
                    f"returning (exit code {code}); the call was not retried"))
                del e
                continue
            except BaseException as e:  # noqa: BLE001 - never leave a future pending
                call.future.set_exception(e)
                continue
            finally:
                with self._lock:
                    self._running.pop(call, None)
            call.future.set_result(reply)
        if proc is not None:
            conn.close()

    def cancel(self, call: _Call) -> None:
        if call.future.cancel():
            return
        # A running call. An aborted run cancels its calls one after the other on the event
        # loop's thread; interrupting this one at once would free its worker, whose feeder could
        # take a call still queued before the abort reaches it (the feeder runs whenever this
        # thread lets go of the GIL, as a loaded machine makes it do mid-loop). So on a loop, the
        # signal goes on the loop's next turn: after every cancel of this abort has been made.
        aio = sys.modules.get("asyncio")
        loop = None
        if aio is not None:
            try:
                loop = aio.get_running_loop()
            except RuntimeError:
                loop = None
        if loop is not None:
            loop.call_soon(self._interrupt, call)
        else:
            self._interrupt(call)

    def _interrupt(self, call: _Call) -> None:
        # Under the lock: while `call` is in `_running` its feeder has not sent the worker another
        # call, so the signal cannot interrupt a call other than this one (a worker that already
        # finished it ignores SIGINT between calls).
        with self._lock:
            proc = self._running.get(call)
            if proc is not None and proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGINT)
                except OSError:
                    pass

    def shutdown(self) -> None:
        """Stop the feeders and the workers (at exit: calls still running are interrupted)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads, procs = list(self._threads), list(self._procs)
        for _ in threads:
            self._queue.put(None)
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(2.0)
            except Exception:  # noqa: BLE001
                p.kill()
        for t in threads:
            t.join(2.0)


# ---------------------------------------------------------------------------------------------
# Ray

def _ray_entry(fn: Callable, payload: bytes) -> tuple:
    """The Ray task every executor="ray" call runs (imported by reference in the worker)."""
    global _IN_WORKER
    _IN_WORKER = True
    from ray import cloudpickle

    return _run_call(fn, payload, cloudpickle.dumps)


class RayEngine:
    """Tasks on a Ray cluster: `ray.init()` unless already initialised (a local instance by
    default, RAY_ADDRESS for a cluster). Functions and arguments are pickled with Ray's
    cloudpickle (by value for functions of __main__); one object-store copy per function."""

    name = "ray"
    FORCE_AFTER = 1.0

    def __init__(self) -> None:
        try:
            import ray
        except ImportError as e:
            raise RemoteCallError("poppy_jit: executor='ray' needs Ray: "
                                  "pip install 'poppy_jit[ray]'") from e
        from ray import cloudpickle

        self.ray = ray
        self.dumps = cloudpickle.dumps
        if not ray.is_initialized():
            ray.init()
        self._task = ray.remote(_ray_entry)
        self._fns: dict = {}

    def submit(self, fn: Callable, payload: bytes, call: _Call, idempotent: bool) -> None:
        ray = self.ray
        fref = self._fns.get(fn)
        if fref is None:
            fref = self._fns[fn] = ray.put(fn)
        opts = {"num_cpus": 1, "retry_exceptions": False}
        if not idempotent:
            opts["max_retries"] = 0
        ref = self._task.options(**opts).remote(fref, payload)
        call.handle = ref
        fut = ref.future()

        def copy(f: concurrent.futures.Future) -> None:
            if f.cancelled():
                call.future.cancel()
                return
            e = f.exception()
            if e is None:
                call.future.set_result(f.result())
            else:
                call.future.set_exception(self._engine_error(call, e))

        call.future.set_running_or_notify_cancel()
        fut.add_done_callback(copy)

    def _engine_error(self, call: _Call, e: BaseException) -> BaseException:
        exc = self.ray.exceptions
        if isinstance(e, exc.TaskCancelledError):
            return concurrent.futures.CancelledError()
        if isinstance(e, (exc.WorkerCrashedError, exc.NodeDiedError, exc.ActorDiedError)) or \
                "died" in type(e).__name__.lower():
            err = RemoteCallError(f"poppy_jit: the Ray worker running {call.name}() died before "
                                  f"returning; the call was not retried ({type(e).__name__})")
        else:
            err = RemoteCallError(f"poppy_jit: Ray could not run {call.name}(): {e}")
        err.__cause__ = e
        return err

    def cancel(self, call: _Call) -> None:
        """KeyboardInterrupt in the task (at its next bytecode); if it has not finished
        `FORCE_AFTER` seconds later (blocked in C code, or a cancel Ray lost while handing the
        task to a worker), its worker is killed (`force=True`). Cancelled tasks are not retried."""
        ref = call.handle
        if ref is None or call.future.done():
            return
        try:
            self.ray.cancel(ref)
        except Exception:  # noqa: BLE001 - already finished
            return

        def force() -> None:
            try:
                ready, _ = self.ray.wait([ref], timeout=0)
                if not ready:
                    self.ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - finished, or Ray shut down
                pass

        t = threading.Timer(self.FORCE_AFTER, force)
        t.daemon = True
        t.start()

    def shutdown(self) -> None:
        pass  # the Ray instance is the user's (or ray's own atexit hook ends a local one)


# ---------------------------------------------------------------------------------------------
# Engines, created on first use

_engines: dict = {}
_engines_lock = threading.Lock()
_atexit_registered = False


def engine(name: str) -> Any:
    global _atexit_registered
    e = _engines.get(name)
    if e is not None:
        return e
    with _engines_lock:
        e = _engines.get(name)
        if e is None:
            e = _engines[name] = ProcessEngine() if name == "process" else RayEngine()
            if not _atexit_registered:
                # Before concurrent.futures' and the runtime's own exit hooks (threading's
                # exit hooks run in reverse order of registration, before atexit's).
                try:
                    threading._register_atexit(shutdown)
                except RuntimeError:  # interpreter shutdown already began
                    pass
                _atexit_registered = True
    return e


def shutdown() -> None:
    """Shut the engines down (a later call creates them again)."""
    with _engines_lock:
        engines = list(_engines.values())
        _engines.clear()
    for e in engines:
        e.shutdown()


def configure(name: str, engine_obj: Any) -> None:
    """Use `engine_obj` for `name` (tests and benchmarks: a ProcessEngine with N workers)."""
    with _engines_lock:
        old = _engines.pop(name, None)
        _engines[name] = engine_obj
    if old is not None:
        old.shutdown()


# ---------------------------------------------------------------------------------------------
# Making a call

def _submit(fn: Callable, executor: str, idempotent: bool, args: tuple, kwargs: dict,
            caller: str | None) -> _Call:
    eng = engine(executor)
    name = getattr(fn, "__qualname__", repr(fn))
    call = _Call(eng, name)
    t0 = time.perf_counter()
    try:
        payload = eng.dumps((args, kwargs))
    except Exception as e:  # noqa: BLE001 - TypeError, PicklingError, AttributeError ...
        at = f"; called at {caller}" if caller else ""
        raise pickle.PicklingError(
            f"poppy_jit: the arguments of {name}() (defined at {_site(fn)}{at}) cannot be "
            f"pickled to send them to the {executor!r} executor: {e}") from e
    call.pickle_s = time.perf_counter() - t0
    call.nbytes = len(payload)
    call.t_submit = time.perf_counter()
    eng.submit(fn, payload, call, idempotent)
    return call


def _finish(call: _Call, reply: tuple) -> Any:
    status, data, tb, t_start, t_end, where = reply
    t_recv = time.perf_counter()
    _record(call, t_start, t_end, t_recv, where, status == "ok", len(data or b""))
    if status == "ok":
        return pickle.loads(data)
    if status == "raise" and data is not None:
        try:
            exc = pickle.loads(data)
        except Exception:  # noqa: BLE001 - an exception class that does not unpickle
            exc = None
        if isinstance(exc, BaseException):
            exc.__cause__ = RemoteTraceback(f'\n"""\n{tb}"""')
            raise exc
    if status == "raise":
        raise RemoteCallError(f"poppy_jit: {call.name}() raised in its worker an exception that "
                              f"cannot be pickled:\n{tb}")
    raise RemoteCallError(f"poppy_jit: {call.name}() in the {call.engine.name!r} executor: {tb}")


def _record(call: _Call, t_start: float, t_end: float, t_recv: float, where: str, ok: bool,
            nbytes_out: int) -> None:
    from . import _trace

    if not _trace.enabled:
        return
    # Worker clocks are wall clocks (time.time): put them on this process's perf_counter.
    off = time.perf_counter() - time.time()
    _trace.record_remote({
        "engine": call.engine.name, "callee": call.name, "worker": where, "ok": ok,
        "t_submit": call.t_submit, "t_start": t_start + off, "t_end": t_end + off,
        "t_recv": t_recv, "pickle_ms": round(call.pickle_s * 1e3, 3),
        "bytes_in": call.nbytes, "bytes_out": nbytes_out})


_EngineFuture = None


def _engine_future_type() -> type:
    """An asyncio future whose `cancel()` cancels the engine call at once: the runtime cancels an
    aborted run's tasks one after the other (Task.cancel cancels the future the task awaits,
    synchronously), and a queued call must be cancelled before a worker freed by the cancel of a
    running one can take it (with asyncio.wrap_future the engine side is cancelled only by a
    callback on the loop's next turn)."""
    global _EngineFuture
    if _EngineFuture is None:
        import asyncio

        class EngineFuture(asyncio.Future):
            call: Any = None

            def cancel(self, msg: Any = None) -> bool:
                if not self.done() and self.call is not None:
                    self.call.cancel()
                return super().cancel(msg=msg)

        _EngineFuture = EngineFuture
    return _EngineFuture


class _Pending(collections.abc.Coroutine):
    """What the proxy returns to the runtime: a coroutine (for `loop.create_task`) awaiting the
    engine's future. Cancelling it (an aborted run) cancels the remote call, even if the task
    never started."""

    __slots__ = ("call", "_coro")

    def __init__(self, call: _Call) -> None:
        self.call = call
        self._coro = self._wait()

    async def _wait(self) -> Any:
        import asyncio

        loop = asyncio.get_running_loop()
        fut = _engine_future_type()(loop=loop)
        fut.call = self.call

        def copy(cf: concurrent.futures.Future) -> None:
            if fut.done():
                return
            if cf.cancelled():
                fut.cancel()
            elif cf.exception() is not None:
                fut.set_exception(cf.exception())
            else:
                fut.set_result(cf.result())

        self.call.future.add_done_callback(lambda cf: loop.call_soon_threadsafe(copy, cf))
        reply = await fut
        return _finish(self.call, reply)

    def send(self, value: Any) -> Any:
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        # The task is being cancelled (or torn down): the remote call goes too.
        if not self.call.future.done():
            self.call.cancel()
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)

    def close(self) -> None:
        if not self.call.future.done():
            self.call.cancel()
        self._coro.close()

    def __await__(self) -> Any:
        return self._coro.__await__()


def external(fn: Callable, executor: str, idempotent: bool) -> tuple:
    """(the function the runtime calls, the function plain code calls) for an executor
    external; both carry `__poppy_original__ = fn`."""

    @functools.wraps(fn)
    def runtime_call(*args: Any, **kwargs: Any) -> Any:
        if _IN_WORKER:
            return _done(fn(*args, **kwargs))
        return _Pending(_submit(fn, executor, idempotent, args, kwargs, None))

    @functools.wraps(fn)
    def plain_call(*args: Any, **kwargs: Any) -> Any:
        if _IN_WORKER:
            return fn(*args, **kwargs)
        call = _submit(fn, executor, idempotent, args, kwargs, _caller(1))
        try:
            reply = call.future.result()
        except BaseException:
            call.cancel()  # KeyboardInterrupt while waiting: the remote call is cancelled too
            raise
        return _finish(call, reply)

    runtime_call.__poppy_original__ = plain_call.__poppy_original__ = fn
    return runtime_call, plain_call


async def _done(value: Any) -> Any:
    return value
