"""poppy_jit: run sequential Python orchestration code's slow external calls in parallel.

Mark your orchestration functions `@poppy` and the external functions they call with how they
may be reordered, then run with PYTHONPOPPY=1::

    from poppy_jit import poppy, unordered

    @unordered
    async def ask(prompt: str) -> str: ...      # an LLM call: any order, concurrently

    @poppy
    def report(topics):
        return [ask(f"Summarise {t}") for t in topics]   # all requests in flight at once

Without PYTHONPOPPY=1 the program is plain, sequential CPython (the decorators only attach
metadata). With it, every external call is issued as soon as its arguments are known and its
class allows, and the program's observable behaviour stays CPython's.

Annotations
    poppy         internal code, compiled and run by poppy_jit
    unordered     any order, concurrently with anything (LLM calls, GETs, pure functions)
    readonly      reordered among reads, never across a sequential call
    sequential    program order (the default for unannotated calls, e.g. print)
    register, register_immutable, unregister   annotate functions and types you do not own

Running and inspecting
    run(fn, *args)        `await` a @poppy call from inside a running event loop (Jupyter)
    stats(), reset_stats(), explain(fn), enable(), disable(), is_enabled()
    start_trace(path), write_trace(path)   Perfetto trace (also PYTHONPOPPY_TRACE=path)

Messages
    PoppyWarning and its subclasses (PoppyFallbackWarning, PoppySequentialWarning,
    PoppyEventLoopWarning, PoppyConfigWarning) say when code runs but not in parallel, once per
    function and reason; `python -W error` turns them into errors. The `poppy_jit` logger
    reports fallbacks, retries and rate-limit waits.

Environment: PYTHONPOPPY, PYTHONPOPPY_STATS, PYTHONPOPPY_TRACE(_ARGS), PYTHONPOPPY_CONFIG
(zero-edit annotation of third-party code), PYTHONPOPPY_OTEL (OpenTelemetry spans).
Submodules: `poppy_jit.ai` (LLM components on the openai SDK), `poppy_jit.sim` (a simulated
model server), `poppy_jit.timeline`; `python -m poppy_jit explain|timeline` on the command line.
"""
from ._decorators import (
    ExternalSpec,
    disable,
    enable,
    explain,
    is_enabled,
    poppy,
    readonly,
    reset_stats,
    start_trace,
    sequential,
    stats,
    unordered,
    write_trace,
)
from ._decorators import configure_from_env as _configure_from_env

__all__ = [
    "ExternalSpec", "poppy", "unordered", "readonly", "sequential",
    "enable", "disable", "is_enabled", "stats", "reset_stats", "explain", "run",
    "write_trace", "start_trace", "register", "register_immutable", "unregister", "set_internal",
    "PoppyWarning", "PoppyFallbackWarning", "PoppySequentialWarning", "PoppyEventLoopWarning",
    "PoppyConfigWarning",
]

_WARNINGS = frozenset(__all__[-5:])


# Names whose modules only the on path or a caller that uses them needs (`run`: asyncio and a
# thread pool; the annotation library: most of the stdlib; the warning classes): imported on
# first access, so that `import poppy_jit` with PYTHONPOPPY unset costs almost nothing
# (tests/test_import_cost.py).
_LAZY = {"run": "_run", "register": "_annotations", "register_immutable": "_annotations",
         "unregister": "_annotations", "set_internal": "_config",
         **{w: "_warnings" for w in _WARNINGS}}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'poppy_jit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))


_configure_from_env()

if __import__("os").environ.get("PYTHONPOPPY_CONFIG"):  # zero-edit mode (tomllib, an import hook)
    from ._config import configure_from_env as _configure_zero_edit

    _configure_zero_edit()
