"""The run-time side of a generated fuzz program: recording externals and the per-case driver.

A generated program (and every reproducer the minimiser prints) starts with
`from poppy_jit.fuzz.prelude import *`.  This module owns:

* the externals of every class (`u_*` @unordered, `r_*` @readonly, `s_*` @sequential, `n_*`
  unannotated; `*a_*` async def, `*b_*` blocking=True). Each RECORDS its call when it starts —
  (name, class, repr of the arguments, how many writes the case has made to stdout so far, the
  classes of the calls still in flight) — and returns a deterministic value of its arguments.
  Async and blocking ones sleep 0–3 ms (`set_sleep`), so that under PYTHONPOPPY=1 calls really
  overlap and finish out of order. Sequential and unannotated ones print a `[name args]` line,
  which puts them in the printed output too. `note(name, *args)` records and prints the same
  way from inside a generated helper (a function that rebinds a global or a free variable);
* `run_case(i, fn, *args)`: calls one generated @poppy function, catching any exception (its
  type, message and `__context__`/`__cause__` chain are the result), and reports what the call
  printed, returned and recorded, and which functions poppy_jit compiled or ran as a fallback.
  With POPPY_FUZZ_TRACE set it appends one JSON line per call to that file (the runner reads
  them; written at once, so a later crash loses nothing); otherwise — a standalone reproducer —
  it prints the result and the trace in canonical form (`compare.canonical`), so running the
  script plain and with PYTHONPOPPY=1 gives identical output exactly when there is no mismatch
  (up to the failure rule, see `compare`). POPPY_FUZZ_ONLY="3,7" runs only those cases;
  POPPY_FUZZ_CASE_TIMEOUT=s ends the process when one call takes longer than s seconds.

Importing it replaces `sys.stdout` (to keep each case's output): import it only in a generated
program or a reproducer, never in a test process. It depends on poppy_jit's public decorators and
`compare.canonical_text` only; never on Hypothesis.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import sys
import threading
import time

import poppy_jit
from poppy_jit import poppy, readonly, sequential, unordered

from .compare import canonical_text

__all__ = [
    "poppy", "readonly", "sequential", "unordered", "run_case", "note", "set_sleep", "STORE",
    "u_num", "u_str", "ub_num", "us_num", "u_len", "u_fail", "ub_fail", "sa_fail", "n_via",
    "r_get", "ra_get", "rb_get", "r_sum", "r_fail",
    "s_put", "sa_put", "sb_put", "s_log", "s_push", "s_grow", "s_tick", "s_fail", "s_consume",
    "n_put", "n_num", "n_push", "n_grow", "Managed",
]

_TRACE_PATH = os.environ.get("POPPY_FUZZ_TRACE")
_CASE_TIMEOUT = float(os.environ.get("POPPY_FUZZ_CASE_TIMEOUT", "0") or 0)
_ONLY = {int(x) for x in os.environ.get("POPPY_FUZZ_ONLY", "").split(",") if x.strip()}

STORE: dict = {}        # what r_* read and s_*/n_put write; cleared when a new case starts
_lock = threading.RLock()
_calls: list = []       # records of the current run_case call
_in_flight: dict = {}   # record index -> class, calls started and not finished
_nesting = [0]          # externals running that call other externals
_sleep_scale = 1.0
_tick = [0]


def set_sleep(scale: float) -> None:
    """Multiply every external's 0–3 ms sleep by `scale` (0: no sleeping)."""
    global _sleep_scale
    _sleep_scale = float(scale)


class _CountingStdout:
    """Wraps sys.stdout: keeps the current case's text and counts its writes (the position of
    every recorded call relative to the printed output)."""

    def __init__(self, real) -> None:
        self.real = real
        self.parts: list = []
        self.active = False   # inside run_case: keep the text; outside: pass it through

    def write(self, text: str) -> int:
        with _lock:
            if self.active:
                self.parts.append(text)
                return len(text)
        return self.real.write(text)

    def flush(self) -> None:
        pass

    def take(self) -> str:
        with _lock:
            text, self.parts = "".join(self.parts), []
        return text

    def __getattr__(self, name):
        return getattr(self.real, name)


_out = _CountingStdout(sys.stdout)
sys.stdout = _out


def _h(*parts) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:4], "big")


def _pause(*parts) -> float:
    return (_h("sleep", *parts) % 4) * 0.001 * _sleep_scale


class _Record:
    """Records a call at its start; tracks it as in flight until it ends. A call made while an
    external that calls others runs (`s_consume`, `n_via`) is marked nested: the controller check
    leaves it out (it runs inside that external, by the external's own order)."""

    def __init__(self, name: str, kind: str, args: tuple, printed: bool) -> None:
        self.name, self.kind, self.args, self.printed = name, kind, args, printed

    def __enter__(self):
        with _lock:
            self.idx = len(_calls)
            _calls.append({"name": self.name, "kind": self.kind,
                           "args": _safe_repr(self.args), "pos": len(_out.parts),
                           "nested": _nesting[0] > 0, "busy": sorted(_in_flight.values())})
            _in_flight[self.idx] = self.kind
        if self.printed:
            print(f"[{self.name} {_safe_repr(self.args)}]")
        return self

    def __exit__(self, *exc):
        with _lock:
            _in_flight.pop(self.idx, None)
        return False


class _Nested:
    def __enter__(self):
        with _lock:
            _nesting[0] += 1

    def __exit__(self, *exc):
        with _lock:
            _nesting[0] -= 1
        return False


def note(name: str, *args) -> None:
    """Record a sequential call `name(*args)` and print it (for generated helpers)."""
    with _Record(name, "sequential", args, True):
        pass


class Managed:
    """A context manager for generated `with` statements: its entry and exit are recorded and
    printed as sequential calls (the exit with the exception it is given and the one being
    handled); it suppresses the exceptions of `suppress` (a class or a tuple)."""

    def __init__(self, tag, suppress=()):
        self.tag, self.suppress = tag, suppress

    def __enter__(self):
        note("m_enter", self.tag)
        return self.tag

    def __exit__(self, t, e, tb):
        note("m_exit", self.tag, t and t.__name__, type(sys.exc_info()[1]).__name__, tb is not None)
        return t is not None and issubclass(t, self.suppress)


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _safe_repr(value, limit: int = 400) -> str:
    """repr without memory addresses (they differ from run to run)."""
    try:
        text = _ADDRESS.sub("", repr(value))
    except Exception as exc:  # noqa: BLE001 - a generated value's repr may fail
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def _num(*parts) -> int:
    return _h(*parts) % 100


_WORDS = ["ash", "bay", "cove", "dune", "elm", "fern", "gale", "hill", "isle", "jade"]


# ---------------------------------------------------------------- unordered
@unordered
async def u_num(x):
    with _Record("u_num", "unordered", (x,), False):
        await asyncio.sleep(_pause("u_num", x))
        return _num("u_num", x)


@unordered
async def u_str(x):
    with _Record("u_str", "unordered", (x,), False):
        await asyncio.sleep(_pause("u_str", x))
        return _WORDS[_h("u_str", x) % len(_WORDS)]


@unordered(blocking=True)
def ub_num(x):
    with _Record("ub_num", "unordered", (x,), False):
        time.sleep(_pause("ub_num", x))
        return _num("ub_num", x)


@unordered
def us_num(x):
    with _Record("us_num", "unordered", (x,), False):
        return _num("us_num", x)


@unordered
async def u_len(c):
    """Reads a container argument (the caller may mutate it afterwards)."""
    with _Record("u_len", "unordered", (c,), False):
        size = len(c)
        await asyncio.sleep(_pause("u_len", size))
        return size * 10 + len(c)


@unordered
async def u_fail(x):
    with _Record("u_fail", "unordered", (x,), False):
        await asyncio.sleep(_pause("u_fail", x))
        if _h("u_fail", x) % 3 == 0:
            raise ValueError(f"u_fail refused {x!r}")
        return _num("u_fail", x)


@unordered(blocking=True)
def ub_fail(x):
    with _Record("ub_fail", "unordered", (x,), False):
        time.sleep(_pause("ub_fail", x))
        if _h("ub_fail", x) % 3 == 0:
            raise ValueError(f"ub_fail refused {x!r}")
        return _num("ub_fail", x)


# ---------------------------------------------------------------- readonly
@readonly
def r_get(k):
    with _Record("r_get", "readonly", (k,), False):
        return STORE.get(k, 0)


@readonly
async def ra_get(k):
    with _Record("ra_get", "readonly", (k,), False):
        await asyncio.sleep(_pause("ra_get", k))
        return STORE.get(k, 0)


@readonly(blocking=True)
def rb_get(k):
    with _Record("rb_get", "readonly", (k,), False):
        time.sleep(_pause("rb_get", k))
        return STORE.get(k, 0)


@readonly
def r_sum(c):
    """Reads a container argument."""
    with _Record("r_sum", "readonly", (c,), False):
        return sum(v if isinstance(v, int) else len(str(v)) for v in c)


@readonly
def r_fail(k):
    with _Record("r_fail", "readonly", (k,), False):
        if _h("r_fail", k, STORE.get(k, 0)) % 3 == 0:
            raise KeyError(f"r_fail {k!r}")
        return STORE.get(k, 0) + 1


# ---------------------------------------------------------------- sequential
@sequential
def s_put(k, v):
    with _Record("s_put", "sequential", (k, v), True):
        STORE[k] = v


@sequential
async def sa_put(k, v):
    with _Record("sa_put", "sequential", (k, v), True):
        await asyncio.sleep(_pause("sa_put", k, v))
        STORE[k] = v


@sequential(blocking=True)
def sb_put(k, v):
    with _Record("sb_put", "sequential", (k, v), True):
        time.sleep(_pause("sb_put", k, v))
        STORE[k] = v


@sequential
def s_log(*xs):
    with _Record("s_log", "sequential", xs, True):
        pass


@sequential
def s_push(c, x):
    """Mutates its list argument."""
    with _Record("s_push", "sequential", (c, x), True):
        c.append(x)
        return len(c)


@sequential
def s_grow(c, x):
    """Appends to its list argument while it has fewer than 6 items (a bounded worklist)."""
    with _Record("s_grow", "sequential", (c, x), True):
        if len(c) < 6:
            c.append(x)


@sequential
def s_tick():
    """Hidden state: 1, 2, 3, ... within a case."""
    with _Record("s_tick", "sequential", (), True):
        _tick[0] += 1
        return _tick[0]


@sequential
def s_fail(x):
    with _Record("s_fail", "sequential", (x,), True):
        if _h("s_fail", x) % 3 == 0:
            raise RuntimeError(f"s_fail rejected {x!r}")
        return _num("s_fail", x)


@sequential
async def sa_fail(x):
    with _Record("sa_fail", "sequential", (x,), True):
        await asyncio.sleep(_pause("sa_fail", x))
        if _h("sa_fail", x) % 3 == 0:
            raise LookupError(f"sa_fail rejected {x!r}")
        return _num("sa_fail", x)


@sequential
def s_consume(items):
    """Consumes any iterable (a generator expression is run by CPython inside this call)."""
    with _Record("s_consume", "sequential", (type(items).__name__,), True), _Nested():
        return [v for v in items][:8]


# ---------------------------------------------------------------- unannotated
def n_put(k, v):
    with _Record("n_put", "sequential", (k, v), True):
        STORE[k] = v


def n_num(x):
    with _Record("n_num", "sequential", (x,), True):
        return _num("n_num", x)


def n_grow(c, x):
    """Appends to its list argument while it has fewer than 6 items."""
    with _Record("n_grow", "sequential", (c, x), True):
        if len(c) < 6:
            c.append(x)


def n_via(x):
    """A helper that calls externals itself: an async unordered one and a readonly one."""
    with _Record("n_via", "sequential", (x,), True), _Nested():
        return u_num(x) + r_get("k0")


def n_push(c, x):
    with _Record("n_push", "sequential", (c, x), True):
        c.append(x)


# ---------------------------------------------------------------- the driver
def _exc_line(exc: BaseException) -> str:
    parts = [f"{type(exc).__name__}: {exc}"]
    seen = {id(exc)}
    link = exc
    for _ in range(3):
        nxt, how = (link.__cause__, "cause") if link.__cause__ is not None else (
            (link.__context__, "context") if not link.__suppress_context__ else (None, ""))
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        parts.append(f"[{how} {type(nxt).__name__}: {nxt}]")
        link = nxt
    return " ".join(parts)


_last_case = [None]


class _Watchdog:
    """With POPPY_FUZZ_CASE_TIMEOUT=s, ends the process (exit 124, after a stderr line) when one
    run_case call takes longer than s seconds: the runner then knows which case hung without
    waiting for its whole-file timeout."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = None
        self.cond = threading.Condition()
        threading.Thread(target=self._watch, name="poppy-fuzz-watchdog", daemon=True).start()

    def arm(self, on: bool) -> None:
        with self.cond:
            self.deadline = time.monotonic() + self.seconds if on else None
            self.cond.notify()

    def _watch(self) -> None:
        with self.cond:
            while True:
                if self.deadline is None:
                    self.cond.wait()
                    continue
                left = self.deadline - time.monotonic()
                if left <= 0:
                    print(f"@@fuzz case timeout {self.seconds} s", file=sys.stderr, flush=True)
                    os._exit(124)
                self.cond.wait(left)


_watchdog = _Watchdog(_CASE_TIMEOUT) if _CASE_TIMEOUT > 0 else None


def run_case(i: int, fn, *args):
    """Call generated case `i`'s function `fn(*args)` and report it (see the module doc)."""
    if _ONLY and i not in _ONLY:
        return
    if _last_case[0] != i:
        _last_case[0] = i
        STORE.clear()
        _tick[0] = 0
    print(f"@@fuzz begin {i}", file=sys.stderr, flush=True)
    enabled = poppy_jit.is_enabled()
    before = poppy_jit.stats() if enabled else {}
    _out.take()
    with _lock:
        _calls.clear()
        _out.active = True
    if _watchdog:
        _watchdog.arm(True)
    try:
        result = "=> " + _safe_repr(fn(*args), 2000)
    except BaseException as exc:  # noqa: BLE001 - every exception is an outcome to compare
        if isinstance(exc, KeyboardInterrupt):
            raise
        result = "!! " + _exc_line(exc)
    if _watchdog:
        _watchdog.arm(False)
    with _lock:
        _out.active = False
        calls = list(_calls)
    text = _out.take()
    fallbacks, compiled, speculative = [], 0, 0
    if enabled:
        after = poppy_jit.stats()
        fallbacks = after.get("fallbacks", [])[len(before.get("fallbacks", [])):]
        compiled = after.get("functions_compiled", 0) - before.get("functions_compiled", 0)
        speculative = after.get("speculative_calls", 0) - before.get("speculative_calls", 0)
    entry = {"i": i, "out": text, "result": result, "calls": calls, "speculative": speculative,
             "fallbacks": [{"function": fb.get("function"), "reason": fb.get("reason")}
                           for fb in fallbacks],
             "compiled": compiled, "function": getattr(fn, "__qualname__", "?")}
    if _TRACE_PATH:
        with open(_TRACE_PATH, "a") as f:
            f.write(json.dumps(entry) + "\n")
    else:
        real = _out.real
        real.write(text)
        real.write(result + "\n")
        real.write(canonical_text(calls))
        real.flush()
    print(f"@@fuzz end {i}", file=sys.stderr, flush=True)
