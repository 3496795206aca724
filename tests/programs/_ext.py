"""Test externals for the differential programs, with a recorded trace of every call.

Each call is recorded when it starts: name, reordering class, arguments, and the classes of the
calls still in flight at that moment.  The maximum number of calls in flight is tracked too.  At
exit the trace is written as JSON to the path in env POPPY_TEST_TRACE (if set), for
tests/difftest.py to compare plain CPython with PYTHONPOPPY=1; under PYTHONPOPPY=1 it also holds
`poppy_jit.stats()` at exit (key "poppy_stats": functions compiled, fallbacks with reasons,
compile times), which the harness reports and checks.

Answers are deterministic functions of the arguments; async ones sleep a small deterministic time
so that, under poppy, calls overlap and may finish out of order.  A program may shrink every
sleep with `set_latency_scale(f)` (the corpus programs p100+ use 0.1: 1–4 ms) to keep test time
low; the relative order of delays stays the same.
"""
import asyncio
import atexit
import contextlib
import hashlib
import json
import os
import threading
import time

import poppy_jit
from poppy_jit import readonly, sequential, unordered

_lock = threading.Lock()
_calls = []
_in_flight = {}  # call index -> class
_max_in_flight = 0
_latency_scale = 1.0
_window_peak = 0  # most calls in flight since the last take_peak()

# Overlap checks that do not depend on the machine's speed: tests/difftest.py sets
# POPPY_TEST_RENDEZVOUS=N under PYTHONPOPPY=1 for a program requiring N calls in flight at once
# (`min_in_flight`). A slow external (llm, lookup) that finishes its sleep while other calls are
# in flight (an overlap has begun) then stays in flight until N calls have been in flight
# together, so a loaded machine that starts the rest of a burst late still shows its overlap. A
# call alone in flight never waits (nothing shows an overlap is coming: sequential phases keep
# their speed). A burst waits at most _RENDEZVOUS_CAP seconds (a burst ends when no call is in
# flight); after three bursts whose wait timed out (the program reaches N later, or never), no
# call waits any more. Values and the order of program output do not depend on how long a call
# takes.
_rendezvous = int(os.environ.get("POPPY_TEST_RENDEZVOUS", "0") or 0)
_RENDEZVOUS_CAP = 1.0
_rendezvous_timeouts = 3  # bursts whose wait may still time out before waiting stops
_burst_given_up = False  # the current burst's wait timed out
_RENDEZVOUS_STEP = 0.002


def _rendezvous_pending(deadline):
    """Whether a finished slow call should stay in flight a little longer (see above)."""
    global _rendezvous, _rendezvous_timeouts, _burst_given_up
    if not _rendezvous or _max_in_flight >= _rendezvous:
        return False
    if len(_in_flight) < 2:  # alone: no overlap under way
        return False
    if _burst_given_up:
        return False
    if time.monotonic() >= deadline:
        _burst_given_up = True  # the other waiters of this burst stop too
        _rendezvous_timeouts -= 1
        if _rendezvous_timeouts <= 0:
            _rendezvous = 0
        return False
    return True


def set_latency_scale(factor):
    """Multiply every external's sleep by `factor` (default 1.0)."""
    global _latency_scale
    _latency_scale = float(factor)


@contextlib.contextmanager
def _traced(name, kind, *args, **kwargs):
    global _max_in_flight, _window_peak, _burst_given_up
    with _lock:
        idx = len(_calls)
        _calls.append({"name": name, "kind": kind, "args": repr(args), "kwargs": repr(kwargs),
                       "in_flight": sorted(_in_flight.values())})
        _in_flight[idx] = kind
        _max_in_flight = max(_max_in_flight, len(_in_flight))
        _window_peak = max(_window_peak, len(_in_flight))
    try:
        yield
    finally:
        with _lock:
            del _in_flight[idx]
            if not _in_flight:
                _burst_given_up = False  # the burst is over


def take_peak():
    """The most calls in flight at once since the previous take_peak() (or the start); resets it.
    Lets a program check the parallelism of each function separately."""
    global _window_peak
    with _lock:
        peak, _window_peak = _window_peak, len(_in_flight)
    return peak


@atexit.register
def _write_trace():
    path = os.environ.get("POPPY_TEST_TRACE")
    if path:
        out = {"calls": _calls, "max_in_flight": _max_in_flight}
        if poppy_jit.is_enabled():
            out["poppy_stats"] = poppy_jit.stats()
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


def _h(*parts):
    return hashlib.sha256(repr(parts).encode()).digest()


def _delay(*parts):
    """A deterministic 10–40 ms sleep, different per call, so completions interleave."""
    return (0.010 + _h("delay", *parts)[0] % 31 / 1000) * _latency_scale


_WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "inlet",
          "juniper", "kelp", "larch", "maple", "nectar", "oak", "pine"]


def _answer(prompt, style, n):
    """Scripted replies: 'list: X' → n lines; 'yesno: X' → yes/no; 'count: X' → a number;
    'fail: X' → raises; anything else → a short sentence."""
    if not isinstance(prompt, str):  # a list or dict "prompt" (tests of mutable arguments)
        prompt = repr(prompt)
    h = _h(prompt, style)
    if prompt.startswith("list:"):
        return "\n".join(f"{_WORDS[h[i] % len(_WORDS)]}-{i}" for i in range(n))
    if prompt.startswith("yesno:"):
        return "yes" if h[0] % 2 else "no"
    if prompt.startswith("count:"):
        return str(h[0] % 20)
    if prompt.startswith("fail:"):
        raise ValueError(f"model refused: {prompt[5:].strip()}")
    text = f"{_WORDS[h[0] % 16]} {_WORDS[h[1] % 16]} about {prompt}"
    return text.upper() if style == "loud" else text


@unordered
async def llm(prompt, style="plain", n=3):
    """The fake LLM: async, unordered, sleeps 10–40 ms."""
    with _traced("llm", "unordered", prompt, style=style, n=n):
        await asyncio.sleep(_delay(prompt, style))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            await asyncio.sleep(_RENDEZVOUS_STEP)
        return _answer(prompt, style, n)


@unordered(blocking=True)
def lookup(key):
    """A blocking (synchronous) unordered lookup, e.g. a slow HTTP GET."""
    with _traced("lookup", "unordered", key):
        time.sleep(_delay("lookup", key))
        deadline = time.monotonic() + _RENDEZVOUS_CAP
        while _rendezvous_pending(deadline):
            time.sleep(_RENDEZVOUS_STEP)
        return f"<{key}:{_h('lookup', key)[0] % 100}>"


_store = {"greeting": "hello", "limit": 3, "mode": "draft"}


@readonly
def read(key):
    """Read the shared store (may be reordered with other reads, not with writes)."""
    with _traced("read", "readonly", key):
        return _store.get(key)


@sequential
def write(key, value):
    """Write the shared store (an empty key raises KeyError)."""
    with _traced("write", "sequential", key, value):
        if not key:
            raise KeyError("empty key")
        _store[key] = value


@sequential
def log(msg):
    """A traced print."""
    with _traced("log", "sequential", msg):
        print(f"[log] {msg}")


def note(msg):
    """Unannotated external: the runtime must treat it as sequential."""
    with _traced("note", "sequential", msg):
        print(f"[note] {msg}")
