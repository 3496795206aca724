"""What poppy_jit tells its users instead of running silently: warning categories of its own and
the `poppy_jit` logger.

A program that runs but does not get parallel says why, once per function and reason, as a
`warnings` warning (filterable as usual; `-W error::poppy_jit.PoppyWarning` makes each one an
exception raised at the call):

* `PoppyFallbackWarning`  — a @poppy function runs as plain CPython (the compiler's reason);
* `PoppySequentialWarning` — a run made all its external calls one at a time (peak in flight 1)
  and its calls that could overlap sit in a try or with body (whose operations run one after
  another), or some of its callees are unannotated Python functions (so they count as
  @sequential);
* `PoppyEventLoopWarning` — a @poppy function was called inside a running event loop (a Jupyter
  cell, an async application), where it runs plainly: `await poppy_jit.run(fn, ...)` is the way;
* `PoppyConfigWarning`    — an environment variable with a value poppy_jit does not know.

The runtime (Rust, `hook.rs`) calls `fallback`, `declined_in_running_loop` and `one_at_a_time`;
each also logs on the `poppy_jit` logger, which `poppy_jit.ai` uses for retries and rate-limit
waits. Only the standard library is imported here.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
import warnings

log = logging.getLogger("poppy_jit")

__all__ = ["PoppyWarning", "PoppyFallbackWarning", "PoppySequentialWarning",
           "PoppyEventLoopWarning", "PoppyConfigWarning", "log"]


class PoppyWarning(UserWarning):
    """Base class of poppy_jit's warnings: code that runs correctly but not in parallel."""


class PoppyFallbackWarning(PoppyWarning):
    """A @poppy function runs as plain CPython (its calls one at a time) for the reason given."""


class PoppySequentialWarning(PoppyWarning):
    """A run made its external calls one at a time: a try or with body held its calls, or its
    callees are not annotated."""


class PoppyEventLoopWarning(PoppyWarning):
    """A @poppy function was called inside a running event loop and ran as plain CPython."""


class PoppyConfigWarning(PoppyWarning):
    """A poppy_jit environment variable has a value that is not understood (the default is used)."""


_seen: set = set()
_lock = threading.Lock()


def _first(key) -> bool:
    with _lock:
        if key in _seen:
            return False
        _seen.add(key)
        return True


def reset() -> None:
    """Forget which warnings were given (they are given again; for tests)."""
    with _lock:
        _seen.clear()


def _warn_at(fn, message: str, category: type) -> None:
    """Warn with the location of `fn`'s `def` (so filters by module and the printed source line
    point at the user's function, not at poppy_jit)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        warnings.warn(message, category, stacklevel=3)
        return
    # (No module_globals: for code run with `python -c` its loader's get_source raises.)
    warnings.warn_explicit(message, category, code.co_filename, code.co_firstlineno,
                           module=getattr(fn, "__module__", None) or "<unknown>")


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def fallback(fn, reason: str) -> None:
    """The runtime could not compile `fn`: it runs as plain CPython."""
    if not _first((getattr(fn, "__code__", fn), "fallback", reason)):
        return
    module = getattr(fn, "__module__", None) or "?"
    if module == "__main__" and hasattr(fn, "__code__"):  # a script: explain imports it by name
        module = os.path.splitext(os.path.basename(fn.__code__.co_filename))[0]
    target = f"{module}:{_name(fn)}"
    log.info("fallback: %s runs as plain CPython: %s", target, reason)
    # A launched script's main block (`_mainblock`) has no name `explain` could import.
    hint = "run --why says which lines" if _name(fn) == "<module>" \
        else f"python -m poppy_jit explain {target}"
    _warn_at(fn, f"poppy_jit: {_name(fn)} runs as plain CPython, its external calls one at a "
                 f"time: {reason} ({hint})", PoppyFallbackWarning)


def wrong_annotation(fn, declared: str, got: str) -> None:
    """An external's return annotation names a plain data type its result does not have, and
    nothing was ordered on the strength of it: the actual value is used, as in CPython (once per
    external)."""
    if not _first((getattr(fn, "__code__", fn), "annotation")):
        return
    log.info("wrong return annotation: %s -> %s returned %s", _name(fn), declared, got)
    _warn_at(fn, f"poppy_jit: {_name(fn)} is annotated -> {declared} but returned {got}; the "
                 f"value is used as it is (nothing was ordered on the strength of the annotation "
                 f"yet), but while the annotation is wrong later operations on its results may "
                 f"not overlap, and one that relied on it would stop the run: correct the "
                 f"annotation", PoppyWarning)


def declined_in_running_loop(fn) -> None:
    """`fn` was called synchronously inside a running event loop: it runs as plain CPython."""
    if not _first((getattr(fn, "__code__", fn), "loop")):
        return
    log.info("%s called inside a running event loop: runs as plain CPython", _name(fn))
    _warn_at(fn, f"poppy_jit: {_name(fn)} was called inside a running event loop (a notebook "
                 "cell, an async application), so it runs as plain CPython, one call at a time; "
                 f"`await poppy_jit.run({getattr(fn, '__name__', 'fn')}, ...)` runs it in "
                 "parallel", PoppyEventLoopWarning)


def _sites(fn) -> list:
    """The call sites of `fn` as the static analysis sees them (no analysis: none)."""
    from . import _corelink

    try:
        return _corelink.load().overlaps(fn, pairs=False)["sites"]  # the classes alone
    except Exception:  # no analysis (e.g. a fallback): nothing to say
        return []


def unannotated_callees(fn, sites=None) -> list:
    """Names of the calls in `fn` whose callee is a Python function without an annotation (so the
    runtime treats it as @sequential), in the order they appear."""
    names = []
    for site in _sites(fn) if sites is None else sites:
        if site.get("class") != "sequential":
            continue
        callee = site.get("callee")
        obj = fn.__globals__.get(callee) if isinstance(callee, str) else None
        if obj is None or not callable(obj) or not hasattr(obj, "__code__"):
            continue  # builtins (print, ...) and unknown callees are sequential on purpose
        if getattr(obj, "__poppy_external__", None) is None and not getattr(obj, "__poppy__", False):
            if callee not in names:
                names.append(callee)
    return names


def gated_statements(fn, sites=None) -> list:
    """Lines of the try and with statements of `fn` around a loop whose calls could overlap
    (unordered or readonly) but whose iterations run one after another there. A try or with
    body's operations are gated: what follows an operation starts once it finished without
    raising, because an exception must reach the handler or `__exit__` before anything after it
    runs (docs/design-exceptions.md); a `while` loop, or a `for` loop that may break or return,
    inside such a body is gated iteration by iteration (a `for` loop that may only raise runs
    its iterations speculatively)."""
    return sorted({site["gated_loop_by"] for site in (_sites(fn) if sites is None else sites)
                   if site.get("gated_loop_by") is not None
                   and site.get("class") in ("unordered", "readonly")})


def one_at_a_time(fn, peak: int) -> None:
    """A run of `fn` finished with at most one external call in flight at any time."""
    if not _first((getattr(fn, "__code__", fn), "sequential")):
        return
    sites = _sites(fn)
    gated = gated_statements(fn, sites)
    names = unannotated_callees(fn, sites)
    if not gated and not names:
        return
    reasons = []
    if gated:
        where = ", ".join(str(line) for line in gated)
        log.info("%s: external calls ran one at a time; gated in try/with bodies at line(s) %s",
                 _name(fn), where)
        reasons.append(
            f"the loop in the body of the try or with statement at line{'s' if len(gated) > 1 else ''} "
            f"{where} runs its iterations one after another: in such a body each statement starts "
            "once the one before it finished without raising, as an exception must reach the "
            "handler or __exit__ before anything after it runs (a while loop, or a for loop that "
            "may break or return; a for loop that may only raise runs its iterations "
            "speculatively, and a try or with inside the loop's body keeps them overlapping)")
    if names:
        listed = ", ".join(names)
        log.info("%s: external calls ran one at a time; unannotated callees: %s", _name(fn), listed)
        reasons.append(
            f"{listed} {'is' if len(names) == 1 else 'are'} not annotated, so "
            f"{'it runs' if len(names) == 1 else 'they run'} as @sequential; mark what may be "
            "reordered @unordered or @readonly")
    _warn_at(fn, f"poppy_jit: {_name(fn)} made its external calls one at a time (peak in flight "
                 f"{peak}): " + "; and ".join(reasons), PoppySequentialWarning)


def config(message: str) -> None:
    """A configuration value that is not understood (the default is used instead). The warning
    points at the first frame outside poppy_jit and the import machinery (the user's import)."""
    log.debug("%s", message)
    here = os.path.dirname(__file__)
    frame, level = sys._getframe(0), 1
    while frame is not None and (frame.f_code.co_filename.startswith(here)
                                 or "importlib" in frame.f_code.co_filename):
        if frame.f_code.co_filename.startswith(here):
            level += 1  # (warn itself skips the import machinery's frames)
        frame = frame.f_back
    warnings.warn(message, PoppyConfigWarning, stacklevel=level)
