"""Public annotations (`@poppy`, `@unordered`, `@readonly`, `@sequential`) and the hook switch.

Plain mode (PYTHONPOPPY unset, "" or "0") never imports the compiled `poppy_jit._core`: the
decorators only attach metadata and an annotated program runs as ordinary sequential CPython.
With PYTHONPOPPY=1 the runtime is enabled at import time and `@poppy` functions are handed to it
(each gets a copy of its code with an interception prologue, `_prologue`); it reads the
`__poppy_external__` spec of every external it calls.
"""
from __future__ import annotations

import atexit
import functools
import os
import sys
import types
from typing import Any, Callable, ParamSpec, Protocol, TypeVar, overload

from . import _corelink, _declared
from ._contract import CLASS_NAMES as KINDS

# The off switch stays cheap: the event loops (`_loop`: asyncio), the interception prologue
# (`_prologue`), traces (`_trace`), `inspect` and the compiled runtime are imported only by
# the paths that need them (tests/test_import_cost.py).

_CO_COROUTINE = 0x80
_CO_ITERABLE_COROUTINE = 0x100
_CO_ASYNC_GENERATOR = 0x200


def _code_flags(fn: Any) -> int:
    """The code flags of a function as `inspect.iscoroutinefunction` reads them in 3.11
    (methods and functools.partial unwrapped), 0 for anything else."""
    while True:
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        else:
            break
    return fn.__code__.co_flags if isinstance(fn, types.FunctionType) else 0
_OPTIONS = ("blocking", "executor", "idempotent", "returns")

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

# Frames an annotated async def may be called from that stand for the function around them (a
# comprehension, a generator expression, a lambda): the caller is what surrounds them.
_TRANSPARENT = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>", "<lambda>"})
_ASYNC_FLAGS = _CO_COROUTINE | _CO_ITERABLE_COROUTINE | _CO_ASYNC_GENERATOR


def _called_from_async(frame) -> bool:
    """Whether the code calling an annotated async def is itself a coroutine (async def body,
    looking through comprehensions and lambdas), which expects an awaitable back."""
    while frame is not None and frame.f_code.co_name in _TRANSPARENT:
        frame = frame.f_back
    return frame is not None and bool(frame.f_code.co_flags & _ASYNC_FLAGS)


class ExternalSpec:
    """What the runtime needs to know about an external function (read by `_core`).

    kind:      "unordered" | "readonly" | "sequential" (reordering class)
    fn:        the original, undecorated function
    is_async:  `fn` is an `async def` (the runtime awaits it on `_loop.get_loop()`)
    blocking:  `fn` is synchronous but slow; the runtime calls it on a worker thread
    executor:  None, or "process" / "ray": the call runs in another process (`_executors`); `fn`
               is then the proxy that hands it over (async for the runtime), and
               `fn.__poppy_original__` the user's function
    returns:   None, or the declared result type given explicitly (`returns=list[str]`), in
               `_declared`'s normal form; otherwise the function's return annotation declares it
               when that is plain data (`_rt.declared_return`)
    """

    __slots__ = ("kind", "fn", "is_async", "blocking", "executor", "returns")

    def __init__(self, kind: str, fn: Callable, is_async: bool, blocking: bool,
                 executor: str | None = None, returns: Any = None) -> None:
        self.kind = kind
        self.fn = fn
        self.is_async = is_async
        self.blocking = blocking
        self.executor = executor
        self.returns = returns

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return (f"ExternalSpec(kind={self.kind!r}, fn={name}, is_async={self.is_async}, "
                f"blocking={self.blocking}"
                + (f", executor={self.executor!r}" if self.executor else "")
                + (f", returns={_declared.render(self.returns)}" if self.returns is not None else "")
                + ")")


def _make_external(kind: str, fn: Callable, blocking: bool, executor: str | None = None,
                   idempotent: bool = False, returns: Any = None) -> Callable:
    if not callable(fn):
        raise TypeError(f"@{kind} must decorate a function, got {type(fn).__name__}")
    # Re-annotating an external replaces its class; wrap the original function, not the wrapper.
    inner = getattr(fn, "__poppy_external__", None)
    if isinstance(inner, ExternalSpec):
        fn = getattr(inner.fn, "__poppy_original__", inner.fn)  # an executor= proxy's function
    if executor is not None:
        ext = _make_remote(kind, fn, blocking, executor, idempotent)
        ext.__poppy_external__.returns = returns
        return ext
    flags = _code_flags(fn)
    if flags & _CO_ASYNC_GENERATOR:
        raise TypeError(f"@{kind} cannot decorate an async generator ({fn.__qualname__}); "
                        "an external call must produce a single value")
    is_async = bool(flags & _CO_COROUTINE)
    if is_async and blocking:
        raise TypeError(f"@{kind}(blocking=True) is for synchronous functions; "
                        f"{fn.__qualname__} is an async def and never blocks the interpreter")
    spec = ExternalSpec(kind, fn, is_async, blocking, returns=returns)

    if is_async:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            # Called from a coroutine: the coroutine, to be awaited, as without the annotation.
            # Called from ordinary code (plain mode, or outside @poppy): run to completion.
            if _called_from_async(sys._getframe(1)):
                return fn(*args, **kwargs)
            from . import _loop
            return _loop.run_sync(fn(*args, **kwargs))
    else:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    wrapper.__poppy_external__ = spec
    return wrapper


def _make_remote(kind: str, fn: Callable, blocking: bool, executor: str,
                 idempotent: bool) -> Callable:
    """An external run by an engine of `_executors` (executor="process" | "ray")."""
    from . import _executors

    _executors.check_name(executor, f"@{kind}")
    name = getattr(fn, "__qualname__", repr(fn))
    if blocking:
        raise TypeError(f"@{kind}(executor={executor!r}) runs {name} in another process, never "
                        "on this one's threads: blocking=True does not apply")
    if _code_flags(fn) & (_CO_COROUTINE | _CO_ASYNC_GENERATOR):
        raise TypeError(f"@{kind}(executor={executor!r}) is for synchronous functions; {name} "
                        "is async")
    runtime_call, wrapper = _executors.external(fn, executor, idempotent)
    wrapper.__poppy_external__ = ExternalSpec(kind, runtime_call, True, False, executor)
    return wrapper


class ExternalDecorator(Protocol):
    """The type of `unordered`, `readonly` and `sequential`: used bare (`@unordered`) they return
    the function with its signature; with options (`@unordered(blocking=True)`) a decorator."""

    @overload
    def __call__(self, fn: Callable[P, R], /) -> Callable[P, R]: ...

    @overload
    def __call__(self, fn: None = None, /, **options: Any) -> Callable[[Callable[P, R]],
                                                                        Callable[P, R]]: ...

    def __call__(self, fn: Any = None, /, **options: Any) -> Any: ...


def _external_decorator(kind: str) -> ExternalDecorator:
    def decorator(fn: Callable | None = None, /, **options: Any) -> Callable:
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise TypeError(f"@{kind}() got unknown option(s) {', '.join(unknown)}; "
                            f"allowed: {', '.join(_OPTIONS)}")
        blocking = options.get("blocking", False)
        if not isinstance(blocking, bool):
            raise TypeError(f"@{kind}(blocking=...) must be True or False, got {blocking!r}")
        executor = options.get("executor")
        if executor is not None:
            from . import _executors

            _executors.check_name(executor, f"@{kind}")
        idempotent = options.get("idempotent", False)
        if not isinstance(idempotent, bool):
            raise TypeError(f"@{kind}(idempotent=...) must be True or False, got {idempotent!r}")
        returns = options.get("returns")
        if "returns" in options:
            # Checked now, so a declaration outside the plain data types fails where it is
            # written (in plain mode too).
            returns = _declared.normalise(returns, strict=True)
        if fn is None:  # used with options: @unordered(blocking=True)
            return lambda f: _make_external(kind, f, blocking, executor, idempotent, returns)
        return _make_external(kind, fn, blocking, executor, idempotent, returns)

    decorator.__name__ = decorator.__qualname__ = kind
    decorator.__doc__ = _KIND_DOCS[kind] + (
        f"\n\nUse bare (@{kind}) or with options (@{kind}(blocking=True) for a synchronous "
        "function that blocks: it runs on a worker thread; returns=list[str] to declare the type "
        "of its result, checked when it arrives, see docs/semantics.md). The function keeps its signature; "
        "called from ordinary code it simply runs (an async def one to completion, or, called "
        "from a coroutine, returns the awaitable as it would undecorated).")
    return decorator  # type: ignore[return-value]


_KIND_DOCS = {
    "unordered": "Mark an external call that may run in any order, concurrently with anything "
                 "(LLM calls, stateless HTTP GETs, pure functions).",
    "readonly": "Mark an external call that reads shared state: reordered among reads, never "
                "across a @sequential call.",
    "sequential": "Mark an external call that runs in program order (writes, printing, "
                  "mutation); the default for unannotated calls.",
}

unordered: ExternalDecorator = _external_decorator("unordered")
readonly: ExternalDecorator = _external_decorator("readonly")
sequential: ExternalDecorator = _external_decorator("sequential")

# ---------------------------------------------------------------------------------------------
# Internal functions and the hook

_registry: list = []  # every @poppy function, in decoration order
@overload
def poppy(fn: F, /) -> F: ...


@overload
def poppy(fn: None = None, /) -> Callable[[F], F]: ...


def poppy(fn: Any = None, /) -> Any:
    """Mark a function as internal: under PYTHONPOPPY=1 its body runs on the poppy runtime, its
    external calls issued as soon as their arguments are known and their classes allow.

    Returns `fn` itself (with `fn.__poppy__ = True`), so plain CPython runs it unchanged. A body
    the compiler cannot handle runs as plain CPython with a `PoppyFallbackWarning` saying why.
    """
    if fn is None:  # @poppy()
        return poppy
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"@poppy must decorate a Python function, got {type(fn).__name__}")
    fn.__poppy__ = True
    _registry.append(fn)
    if _corelink.core is not None and _corelink.core.is_enabled():
        from . import _prologue
        _prologue.intercept(fn, _corelink.core)
    return fn


def enable() -> None:
    """Hand all @poppy functions to the runtime (imports `_core`): each gets a copy of its code
    with an interception prologue (`_prologue`)."""
    core = _corelink.load()
    # The runtime's Python support (intrinsics, classification), loaded now rather than by the
    # first translation (whose compile time would otherwise include this one-time import).
    import importlib
    from . import _prologue
    importlib.import_module(__package__ + "._rt")
    core.enable()
    for fn in _registry:
        _prologue.intercept(fn, core)


def disable() -> None:
    """@poppy functions run as plain CPython again (their original code objects back)."""
    if _corelink.core is not None:
        _corelink.core.disable()
        for fn in _registry:
            from . import _prologue
            _prologue.release(fn)


def is_enabled() -> bool:
    """Whether @poppy functions currently run on the runtime (PYTHONPOPPY=1 or `enable()`)."""
    return _corelink.core is not None and _corelink.core.is_enabled()


def stats() -> dict:
    """Runtime counters (functions compiled, fallbacks, reductions, external calls, ...); with
    the diagnosis of waits on (`run --why`), "waits": per call site, why calls waited."""
    st = _corelink.load().stats()
    for name, section in _corelink.stats_sections.items():
        st[name] = section()
    return st


def reset_stats() -> None:
    """Zero the counters `stats()` reports."""
    _corelink.load().reset_stats()


def explain(fn: Callable) -> dict:
    """The Bezoar and λO texts the compiler produced for `fn`, or why it falls back."""
    return _corelink.load().explain(fn)


# ---------------------------------------------------------------------------------------------
# Environment configuration

def _flag(name: str) -> bool:
    """An on/off environment variable: "1" is on; unset, "" and "0" off; anything else warns
    (PoppyConfigWarning) and is off, the documented default."""
    value = os.environ.get(name, "")
    if value in ("", "0"):
        return False
    if value == "1":
        return True
    from . import _warnings

    _warnings.config(f"poppy_jit: {name} must be 0 or 1 (got {value!r}); using the default, 0 "
                     "(off)")
    return False


def format_stats(st: dict) -> str:
    """A readable table of a `stats()` dict (used for PYTHONPOPPY_STATS=1)."""
    rows: list[tuple[str, str]] = []

    def add(key: str, value: Any) -> None:
        if isinstance(value, dict):  # nested counters (external_calls, jit): one row per entry
            order = [k for k in KINDS if k in value] + [k for k in value if k not in KINDS]
            for k in order:
                add(f"{key}.{k}", value[k])
        elif isinstance(value, float):
            rows.append((key, f"{value:.2f}"))
        else:
            rows.append((key, str(value)))

    for key, value in st.items():
        if key not in ("fallbacks", "compile_times", "waits"):  # one entry per function/site
            add(key, value)
    width = max((len(k) for k, _ in rows), default=0)
    lines = ["poppy_jit stats", "-" * 15]
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    fallbacks = st.get("fallbacks", [])
    lines.append(f"fallbacks ({len(fallbacks)})" + (":" if fallbacks else ""))
    lines += [f"  {fb.get('function', '?')}: {fb.get('reason', '?')}" for fb in fallbacks]
    return "\n".join(lines)


def _print_stats_at_exit() -> None:
    if _corelink.core is None:
        print("poppy_jit stats: hook not enabled (plain CPython), nothing to report",
              file=sys.stderr)
        return
    print(format_stats(_corelink.core.stats()), file=sys.stderr)


def write_trace(path: str | None = None) -> str:
    """Write the trace recorded so far (Chrome trace-event JSON, opens in Perfetto) to `path`,
    default PYTHONPOPPY_TRACE's. Recording is on only when PYTHONPOPPY_TRACE was set at import
    or `start_trace()` was called. Returns the path written."""
    from . import _trace
    return _trace.write_trace(path)


def start_trace(path: str | None = None, include_args: bool = False) -> None:
    """Start recording a trace (as PYTHONPOPPY_TRACE does); `path` is written at exit if given
    (and whenever `write_trace()` is called without a path)."""
    from . import _trace
    _trace.start(path, include_args)


def configure_from_env() -> None:
    """Apply PYTHONPOPPY / PYTHONPOPPY_STATS / PYTHONPOPPY_TRACE(_ARGS) / PYTHONPOPPY_OTEL
    (called once, when poppy_jit is imported)."""
    poppy_on = _flag("PYTHONPOPPY")
    if _flag("PYTHONPOPPY_STATS"):
        atexit.register(_print_stats_at_exit)
    trace_args = _flag("PYTHONPOPPY_TRACE_ARGS")
    trace_path = os.environ.get("PYTHONPOPPY_TRACE", "")
    if trace_path:
        from . import _trace
        _trace.start(trace_path, include_args=trace_args)
    elif trace_args:
        from . import _trace
        _trace._include_args = True  # for the OpenTelemetry spans' argument previews
    if _flag("PYTHONPOPPY_OTEL"):
        from . import _otel, _warnings

        try:
            _otel.install()
        except ImportError as exc:  # the program runs; only the spans are missing
            _warnings.config(f"poppy_jit: {exc}; PYTHONPOPPY_OTEL=1 ignored")
    if poppy_on:
        enable()
