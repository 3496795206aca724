"""Trace recorder: Chrome trace-event JSON of λO runs, for Perfetto (ui.perfetto.dev).

Set PYTHONPOPPY_TRACE=path.json: `enabled` becomes True when poppy_jit is imported, the Rust
runtime then reports every finished λO run to `record_run` and every compilation to
`record_phase`, and the file is written at exit (or by `poppy_jit.write_trace(path)`).

Layout of the written trace (one process, the Python process):

* the "runtime" thread track of each Python thread that ran λO code: one "run <qualname>" span
  per run, and "compile <qualname>" spans;
* "externals N" tracks: every external call is a "queued <callee>" span (queued → dispatched,
  category "queue") followed by a span named by the callee (dispatched → resolved, category
  "external"). Calls are packed onto as few tracks as possible without overlapping, so a track
  is not a thread: the call's `position` arg (its index in sequential program order within the
  run) says where it sits in the program.

Calls of the runtime's own intrinsics (global loads, f-string pieces, attribute loads on builtin
data, ...) are counted on the
run span (`intrinsic_calls`) but not drawn. Call arguments are redacted unless
PYTHONPOPPY_TRACE_ARGS=1, because prompts and API keys must not end up in a trace by accident.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from typing import Any

#: Report runs and phases (the Rust runtime checks it after every run): on while recording
#: (`start`) or while a sink (`add_sink`, e.g. the OpenTelemetry exporter) listens.
enabled = False
_recording = False
_sinks: list = []  # callables (qualname, t_start, t_end, calls) for every finished run

_path: str | None = None
_include_args = False
_lock = threading.Lock()
_origin = time.perf_counter()  # trace time 0 (timestamps are µs since this)
_runs: list = []  # (run_id, thread ident, qualname, t_start, t_end, [call dicts], n intrinsics)
_phases: list = []  # (thread ident, name, t_start, t_end, args)
_next_call_id = 0

_ARG_REPR_LIMIT = 200


_exit_writer_registered = False


def start(path: str | None, include_args: bool = False) -> None:
    """Begin recording; `path` (if any) is written at exit."""
    global enabled, _recording, _path, _include_args, _exit_writer_registered
    enabled = _recording = True
    _path = path or None
    _include_args = include_args
    if _path and not _exit_writer_registered:
        atexit.register(_write_at_exit)
        _exit_writer_registered = True


def stop() -> None:
    """Stop recording (what was recorded is kept until `clear`)."""
    global enabled, _recording
    _recording = False
    enabled = bool(_sinks)


def add_sink(sink) -> None:
    """Call `sink(qualname, t_start, t_end, calls)` after every run (`calls`: the dicts
    `record_run` makes, arguments redacted unless recording with include_args)."""
    global enabled
    _sinks.append(sink)
    enabled = True


def remove_sink(sink) -> None:
    global enabled
    _sinks.remove(sink)
    enabled = _recording or bool(_sinks)


def clear() -> None:
    global _next_call_id
    with _lock:
        _runs.clear()
        _phases.clear()
        _next_call_id = 0


def _callee_name(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if isinstance(name, str):
        return name
    return type(func).__qualname__


def _is_intrinsic(func: Any, cls: str) -> bool:
    """The runtime's own helpers, not calls the program spells out: global loads, the helpers of
    `_intrinsics`, and attribute loads without side effects (`getattr` classified unordered,
    i.e. on builtin data; one that may run user code stays visible)."""
    if getattr(type(func), "__poppy_unordered_loader__", False):
        return True
    if func is getattr:
        return cls == "unordered"
    return getattr(func, "__module__", None) == __package__ + "._intrinsics"


def _short_repr(x: Any) -> str:
    try:
        s = repr(x)
    except Exception as exc:  # a broken __repr__ must not break tracing
        s = f"<repr failed: {type(exc).__name__}>"
    return s if len(s) <= _ARG_REPR_LIMIT else s[:_ARG_REPR_LIMIT - 1] + "…"


_PREVIEW_LIMIT = 40


def _shape(x: Any) -> str:
    """What an argument is without what it says: its type, and its length when it has one."""
    name = type(x).__name__
    if isinstance(x, (bool, int, float, type(None))):
        return name
    try:
        return f"{name}[{len(x)}]"
    except Exception:
        return name


def preview(args: tuple, include_args: bool) -> str:
    """A short label of a call's arguments: their shapes (redacted, the default), or the start
    of their reprs when arguments are shown (PYTHONPOPPY_TRACE_ARGS=1)."""
    if not include_args:
        return ", ".join(_shape(a) for a in args)
    text = ", ".join(_short_repr(a) for a in args)
    return text if len(text) <= _PREVIEW_LIMIT else text[:_PREVIEW_LIMIT - 1] + "…"


def record_run(qualname: str, t_start: float, t_end: float, records: list) -> None:
    """Called by the runtime after each λO run. `records`: tuples
    (position, func, args, cls, t_queued, t_ready, t_dispatch, t_done, ok), times in
    `time.perf_counter()` seconds; t_ready/t_dispatch/t_done are None when not reached."""
    global _next_call_id
    calls = []
    intrinsics = 0
    for (position, func, args, cls, t_queued, t_ready, t_dispatch, t_done, ok) in records:
        if _is_intrinsic(func, cls):
            intrinsics += 1
            continue
        call = {"position": position, "callee": _callee_name(func),
                "module": getattr(func, "__module__", None), "class": cls,
                "t_queued": t_queued, "t_ready": t_ready, "t_dispatch": t_dispatch,
                "t_done": t_done, "ok": ok, "nargs": len(args),
                "preview": preview(args, _include_args)}
        if _include_args:
            call["args"] = [_short_repr(a) for a in args]
        calls.append(call)
    if _recording:
        with _lock:
            for call in calls:
                call["id"] = _next_call_id
                _next_call_id += 1
            _runs.append((len(_runs), threading.get_ident(), qualname, t_start, t_end, calls,
                          intrinsics))
    for sink in list(_sinks):
        try:
            sink(qualname, t_start, t_end, calls)
        except Exception as exc:  # an exporter's failure must not fail the program
            print(f"poppy_jit: trace sink {sink!r} failed: {exc!r}", file=sys.stderr)


def record_phase(name: str, t_start: float, t_end: float, args: dict) -> None:
    """Called by the runtime for a compile (or other) phase, e.g. name "compile f"."""
    if not _recording:
        return
    with _lock:
        _phases.append((threading.get_ident(), name, t_start, t_end, dict(args)))


# ---------------------------------------------------------------------------------------------
# Chrome trace-event JSON

_RUNTIME_TID_BASE = 1
_LANE_TID_BASE = 1000


def _us(t: float) -> float:
    return round((t - _origin) * 1e6, 3)


def _span(name: str, cat: str, tid: int, t0: float, t1: float, args: dict) -> dict:
    return {"name": name, "cat": cat, "ph": "X", "pid": os.getpid(), "tid": tid,
            "ts": _us(t0), "dur": round(max(t1 - t0, 0.0) * 1e6, 3), "args": args}


def _meta(name: str, tid: int, args: dict) -> dict:
    return {"name": name, "ph": "M", "pid": os.getpid(), "tid": tid, "args": args}


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 1e3, 3)


def _pack_lanes(intervals: list) -> list:
    """Greedy interval packing: lane index per (start, end) so that no two in a lane overlap."""
    lane_end: list = []
    lanes = [0] * len(intervals)
    for i in sorted(range(len(intervals)), key=lambda i: intervals[i][0]):
        start, end = intervals[i]
        for lane, last in enumerate(lane_end):
            if last <= start:
                break
        else:
            lane = len(lane_end)
            lane_end.append(start)
        lane_end[lane] = end
        lanes[i] = lane
    return lanes


def trace_events() -> list:
    """The recorded runs and phases as a list of trace events."""
    with _lock:
        runs = list(_runs)
        phases = list(_phases)
    events = [_meta("process_name", 0, {"name": f"poppy_jit: {os.path.basename(sys.argv[0] or 'python')}"})]
    runtime_tid: dict = {}

    def tid_of(ident: int) -> int:
        if ident not in runtime_tid:
            tid = _RUNTIME_TID_BASE + len(runtime_tid)
            runtime_tid[ident] = tid
            label = "runtime" if tid == _RUNTIME_TID_BASE else f"runtime (thread {ident})"
            events.append(_meta("thread_name", tid, {"name": label}))
            events.append(_meta("thread_sort_index", tid, {"sort_index": tid}))
        return runtime_tid[ident]

    for ident, name, t0, t1, args in phases:
        events.append(_span(name, "compile" if name.startswith("compile") else "phase",
                            tid_of(ident), t0, t1, args))
    calls = []
    for run_id, ident, qualname, t0, t1, run_calls, intrinsics in runs:
        events.append(_span(f"run {qualname}", "run", tid_of(ident), t0, t1,
                            {"run": run_id, "external_calls": len(run_calls),
                             "intrinsic_calls": intrinsics}))
        calls += [(run_id, t1, dict(c, function=qualname)) for c in run_calls]
    # A call that never finished (its run failed first) is drawn up to the end of its run.
    intervals = [(c["t_queued"], c["t_done"] if c["t_done"] is not None else t1)
                 for _, t1, c in calls]
    lanes = _pack_lanes(intervals)
    for lane in range(max(lanes, default=-1) + 1):
        tid = _LANE_TID_BASE + lane
        events.append(_meta("thread_name", tid, {"name": f"externals {lane}"}))
        events.append(_meta("thread_sort_index", tid, {"sort_index": tid}))
    for (run_id, _, c), (_, end), lane in zip(calls, intervals, lanes):
        tid = _LANE_TID_BASE + lane
        status = ("ok" if c["ok"] else "failed") if c["t_done"] is not None else (
            "never dispatched" if c["t_dispatch"] is None else "unfinished")
        args = {"call": c["id"], "run": run_id, "position": c["position"], "class": c["class"],
                "callee": c["callee"] if not c["module"] else f'{c["module"]}.{c["callee"]}',
                "status": status, "function": c["function"],
                "site": f'{c["function"]} #{c["position"]}', "preview": c.get("preview", ""),
                "args_wait_ms": _ms(c["t_queued"], c["t_ready"]),
                "queue_wait_ms": _ms(c["t_ready"], c["t_dispatch"]),
                "run_ms": _ms(c["t_dispatch"], c["t_done"]),
                "args": c["args"] if "args" in c else f"<{c['nargs']} redacted; "
                                                      "PYTHONPOPPY_TRACE_ARGS=1 shows them>"}
        dispatched = c["t_dispatch"] if c["t_dispatch"] is not None else end
        events.append(_span(f"queued {c['callee']}", "queue", tid, c["t_queued"], dispatched,
                            args))
        if c["t_dispatch"] is not None:
            events.append(_span(c["callee"], "external", tid, c["t_dispatch"], end, args))
    return events


def write_trace(path: str | None = None) -> str:
    """Write what was recorded so far as Chrome trace-event JSON (default: PYTHONPOPPY_TRACE's
    path). Returns the path written."""
    path = path or _path
    if not path:
        raise ValueError("write_trace: no path given and PYTHONPOPPY_TRACE is not set")
    doc = {"traceEvents": trace_events(), "displayTimeUnit": "ms",
           "otherData": {"producer": "poppy_jit", "args_redacted": not _include_args}}
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
    return path


def _write_at_exit() -> None:
    if _path:
        try:
            write_trace(_path)
        except OSError as exc:
            print(f"poppy_jit: could not write the trace to {_path}: {exc}", file=sys.stderr)
