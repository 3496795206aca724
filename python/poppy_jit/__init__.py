"""poppy_jit: run sequential Python orchestration code's slow external calls in parallel.

Annotate internal code with `@poppy` and external calls with `@unordered`, `@readonly` or
`@sequential`, then run with PYTHONPOPPY=1.  Without it the program is plain CPython.
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
    "write_trace", "start_trace", "register", "register_immutable", "unregister",
]

# Names whose modules only the on path or a caller that uses them needs (`run`: asyncio and a
# thread pool; the annotation library: most of the stdlib): imported on first access, so that
# `import poppy_jit` with PYTHONPOPPY unset costs almost nothing (tests/test_import_cost.py).
_LAZY = {"run": "_run", "register": "_annotations", "register_immutable": "_annotations",
         "unregister": "_annotations"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


_configure_from_env()

if __import__("os").environ.get("PYTHONPOPPY_CONFIG"):  # zero-edit mode (tomllib, an import hook)
    from ._config import configure_from_env as _configure_zero_edit

    _configure_zero_edit()
