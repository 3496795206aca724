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
from ._run import run
from ._config import set_internal
from ._annotations import register, register_immutable, unregister

__all__ = [
    "ExternalSpec", "poppy", "unordered", "readonly", "sequential",
    "enable", "disable", "is_enabled", "stats", "reset_stats", "explain", "run",
    "write_trace", "start_trace", "register", "register_immutable", "unregister", "set_internal",
]

_configure_from_env()

from ._config import configure_from_env as _configure_zero_edit  # noqa: E402

_configure_zero_edit()
