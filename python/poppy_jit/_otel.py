"""OpenTelemetry spans of λO runs (PYTHONPOPPY_OTEL=1, the `[otel]` extra).

Every finished run of a @poppy function becomes a span "poppy_jit.run <qualname>" — a child of
whatever span is current where the function was called — and each external call it made a child
span named by the callee, from dispatch to completion, with these attributes:

    poppy_jit.class        unordered | readonly | sequential
    poppy_jit.call_site    "<qualname> #<position>" (position: index in program order)
    poppy_jit.queue_wait_ms  arguments known → dispatched (the concurrency controller's wait)
    poppy_jit.args_wait_ms   queued → arguments known
    poppy_jit.args         argument shapes (types and lengths), or their text only with
                           PYTHONPOPPY_TRACE_ARGS=1
    code.function, code.namespace   the callee

Spans go to the tracer provider the application configured (`opentelemetry.trace`), so they end
up next to its own spans; without one, the API's no-op provider drops them. Times are the
runtime's, put on the wall clock. Uses `_trace`'s run reports (a sink), so nothing is recorded
in memory for the Perfetto file unless PYTHONPOPPY_TRACE is also set.
"""
from __future__ import annotations

import time

_installed = None  # the sink, once installed

# perf_counter seconds -> epoch nanoseconds (one simultaneous reading)
_EPOCH_NS = time.time_ns()
_PERF_AT_EPOCH = time.perf_counter()


def _ns(t: float) -> int:
    return _EPOCH_NS + int((t - _PERF_AT_EPOCH) * 1e9)


def _ms(a, b):
    return None if a is None or b is None else round((b - a) * 1e3, 3)


class _Exporter:
    def __init__(self, tracer_provider=None) -> None:
        from opentelemetry import trace

        self.trace = trace
        self.tracer = trace.get_tracer("poppy_jit", tracer_provider=tracer_provider)

    def __call__(self, qualname: str, t_start: float, t_end: float, calls: list) -> None:
        from opentelemetry.trace import Status, StatusCode

        run = self.tracer.start_span(f"poppy_jit.run {qualname}", start_time=_ns(t_start),
                                     attributes={"poppy_jit.function": qualname,
                                                 "poppy_jit.external_calls": len(calls)})
        ctx = self.trace.set_span_in_context(run)
        for c in calls:
            start = c["t_dispatch"] if c["t_dispatch"] is not None else c["t_queued"]
            end = c["t_done"] if c["t_done"] is not None else t_end
            attributes = {
                "poppy_jit.class": c["class"],
                "poppy_jit.call_site": f"{qualname} #{c['position']}",
                "poppy_jit.position": c["position"] if c["position"] is not None else -1,
                "poppy_jit.args": c.get("preview", ""),
                "code.function": c["callee"],
            }
            if c.get("module"):
                attributes["code.namespace"] = c["module"]
            for key, value in (("poppy_jit.queue_wait_ms", _ms(c["t_ready"], c["t_dispatch"])),
                               ("poppy_jit.args_wait_ms", _ms(c["t_queued"], c["t_ready"]))):
                if value is not None:
                    attributes[key] = value
            span = self.tracer.start_span(c["callee"], context=ctx, start_time=_ns(start),
                                          attributes=attributes)
            if c["t_done"] is None:
                span.set_attribute("poppy_jit.status", "never dispatched"
                                   if c["t_dispatch"] is None else "unfinished")
            elif not c["ok"]:
                span.set_status(Status(StatusCode.ERROR))
            span.end(end_time=_ns(end))
        run.end(end_time=_ns(t_end))


def install(tracer_provider=None) -> None:
    """Export every run as OpenTelemetry spans (idempotent). `tracer_provider`: default the
    global one. Raises ImportError with the install hint when opentelemetry is missing."""
    global _installed
    from . import _trace

    if _installed is not None:
        return
    try:
        exporter = _Exporter(tracer_provider)
    except ImportError:
        raise ImportError("PYTHONPOPPY_OTEL=1 needs OpenTelemetry: "
                          "pip install 'poppy_jit[otel]'") from None
    _trace.add_sink(exporter)
    _installed = exporter


def uninstall() -> None:
    global _installed
    from . import _trace

    if _installed is not None:
        _trace.remove_sink(_installed)
        _installed = None
