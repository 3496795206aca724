"""The PopPy Fig. 6 picture of a trace written with PYTHONPOPPY_TRACE.

One row per external call, top to bottom in sequential program order (run by run, then the call's
`position`); a dashed line from queueing to dispatch, a solid line from dispatch to resolution.
Colour gives the call's reordering class; a failed call ends with a cross. A row is labelled by
its call site (the @poppy function and the call's position) and a short preview of the
arguments (their types and lengths; their text only in traces written with
PYTHONPOPPY_TRACE_ARGS=1). Consecutive `print` calls of a run are folded into one row
("print ×N"); `function=` keeps the calls of one @poppy function, or of one callee.

    python -m poppy_jit timeline trace.json -o timeline.png [--run N] [--function NAME]
                                 [--no-fold] [--title TEXT]

Drawing needs matplotlib (the `[plot]` extra).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

CLASS_COLORS = {"unordered": "tab:blue", "readonly": "tab:green", "sequential": "tab:orange"}


@dataclass
class Row:
    run: int
    position: int | None
    callee: str
    cls: str
    queued_ms: float
    dispatch_ms: float | None  # None: never dispatched
    end_ms: float
    failed: bool
    function: str = ""  # the @poppy function of the run
    preview: str = ""  # the arguments, redacted unless the trace was written with them
    count: int = 1  # calls folded into this row

    @property
    def label(self) -> str:
        pos = "?" if self.position is None else str(self.position)
        site = f"{self.function} #{pos}" if self.function else f"#{pos}"
        if self.count > 1:
            return f"{site:>12} {self.callee} ×{self.count}"
        return f"{site:>12} {self.callee}({self.preview})"


def fold_prints(rows: list) -> list:
    """Rows with each run's consecutive `print` calls folded into one (spanning them all)."""
    out: list = []
    for r in rows:
        prev = out[-1] if out else None
        if (prev is not None and r.callee == prev.callee == "print" and r.run == prev.run
                and not r.failed and not prev.failed):
            prev.count += r.count
            prev.end_ms = max(prev.end_ms, r.end_ms)
            prev.queued_ms = min(prev.queued_ms, r.queued_ms)
            continue
        out.append(Row(**{**r.__dict__}))
    return out


def load_rows(trace: dict | str | Path, run: int | None = None, function: str | None = None,
              fold: bool = False) -> list:
    """The external calls of a trace as `Row`s in sequential program order (times in ms from the
    first call's queueing); only run `run`, only the calls made by or of `function` (a @poppy
    function's or a callee's name), prints folded if `fold`."""
    if not isinstance(trace, dict):
        trace = json.loads(Path(trace).read_text())
    queued: dict = {}
    executed: dict = {}
    for ev in trace.get("traceEvents", []):
        if ev.get("ph") != "X" or ev.get("cat") not in ("queue", "external"):
            continue
        call = ev["args"]["call"]
        (queued if ev["cat"] == "queue" else executed)[call] = ev
    rows = []
    for call, q in queued.items():
        a = q["args"]
        if run is not None and a["run"] != run:
            continue
        x = executed.get(call)
        q_end = q["ts"] + q["dur"]
        callee = x["name"] if x else q["name"].removeprefix("queued ")
        if function is not None and function not in (a.get("function"), callee):
            continue
        rows.append(Row(run=a["run"], position=a["position"], callee=callee,
                        cls=a["class"], queued_ms=q["ts"] / 1e3,
                        dispatch_ms=x["ts"] / 1e3 if x else None,
                        end_ms=(x["ts"] + x["dur"]) / 1e3 if x else q_end / 1e3,
                        failed=a.get("status") == "failed", function=a.get("function", ""),
                        preview=a.get("preview", "")))
    if rows:
        t0 = min(r.queued_ms for r in rows)
        for r in rows:
            r.queued_ms -= t0
            r.end_ms -= t0
            if r.dispatch_ms is not None:
                r.dispatch_ms -= t0
    rows.sort(key=lambda r: (r.run, math.inf if r.position is None else r.position,
                             r.queued_ms))
    return fold_prints(rows) if fold else rows


def render(trace: dict | str | Path, out: str | Path, run: int | None = None,
           title: str | None = None, function: str | None = None, fold: bool = True) -> int:
    """Draw the timeline of `trace` (a trace dict or a JSON file) into the PNG `out`; returns
    the number of calls drawn. Raises ValueError when the trace has no external calls."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("drawing a timeline needs matplotlib: pip install 'poppy_jit[plot]'") \
            from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = load_rows(trace, run, function, fold)
    if not rows:
        raise ValueError("the trace has no external calls to draw"
                         + (f" in run {run}" if run is not None else "")
                         + (f" of {function}" if function is not None else ""))
    n = len(rows)
    calls = sum(r.count for r in rows)
    height = min(2.0 + 0.28 * n, 60.0)
    fig, ax = plt.subplots(figsize=(10, height))
    for y, r in enumerate(rows):
        color = CLASS_COLORS.get(r.cls, "tab:gray")
        dispatch = r.dispatch_ms if r.dispatch_ms is not None else r.end_ms
        ax.plot([r.queued_ms, dispatch], [y, y], linestyle=(0, (3, 2)), color=color, lw=1.5)
        if r.dispatch_ms is not None:
            ax.plot([r.dispatch_ms, r.end_ms], [y, y], linestyle="-", color=color, lw=3.5,
                    solid_capstyle="butt")
        ax.plot([r.queued_ms], [y], marker="|", color=color, ms=7)
        if r.failed:
            ax.plot([r.end_ms], [y], marker="x", color="tab:red", ms=8, mew=2)
    step = max(1, math.ceil(n / 80))  # keep tick labels legible for long traces
    ax.set_yticks(range(0, n, step))
    ax.set_yticklabels([rows[i].label for i in range(0, n, step)], fontsize=8,
                       family="monospace")
    ax.set_ylim(n - 0.5, -0.5)  # first call in program order on top
    ax.set_xlabel("time since the first call was queued (ms)")
    ax.set_ylabel("external calls, in sequential program order")
    ax.grid(axis="x", alpha=0.3)
    runs = sorted({r.run for r in rows})
    ax.set_title(title or f"poppy_jit timeline: {calls} external calls, "
                          f"{len(runs)} run{'s' if len(runs) != 1 else ''}")
    handles = [Line2D([], [], color="black", linestyle=(0, (3, 2)), label="queued → dispatched"),
               Line2D([], [], color="black", lw=3.5, label="dispatched → resolved")]
    handles += [Line2D([], [], color=c, lw=3.5, label=k) for k, c in CLASS_COLORS.items()
                if any(r.cls == k for r in rows)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return calls
