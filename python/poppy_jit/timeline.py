"""The PopPy Fig. 6 picture of a trace written with PYTHONPOPPY_TRACE.

One row per external call, top to bottom in sequential program order (run by run, then the call's
`position`); a dashed line from queueing to dispatch, a solid line from dispatch to resolution.
Colour gives the call's reordering class; a failed call ends with a cross.

    python -m poppy_jit timeline trace.json -o timeline.png [--run N] [--title TEXT]
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

    @property
    def label(self) -> str:
        pos = "?" if self.position is None else str(self.position)
        return f"{pos:>4} {self.callee}"


def load_rows(trace: dict | str | Path, run: int | None = None) -> list:
    """The external calls of a trace as `Row`s in sequential program order (times in ms from the
    first call's queueing)."""
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
        rows.append(Row(run=a["run"], position=a["position"],
                        callee=x["name"] if x else q["name"].removeprefix("queued "),
                        cls=a["class"], queued_ms=q["ts"] / 1e3,
                        dispatch_ms=x["ts"] / 1e3 if x else None,
                        end_ms=(x["ts"] + x["dur"]) / 1e3 if x else q_end / 1e3,
                        failed=a.get("status") == "failed"))
    if rows:
        t0 = min(r.queued_ms for r in rows)
        for r in rows:
            r.queued_ms -= t0
            r.end_ms -= t0
            if r.dispatch_ms is not None:
                r.dispatch_ms -= t0
    rows.sort(key=lambda r: (r.run, math.inf if r.position is None else r.position,
                             r.queued_ms))
    return rows


def render(trace: dict | str | Path, out: str | Path, run: int | None = None,
           title: str | None = None) -> int:
    """Draw the timeline of `trace` (a trace dict or a JSON file) into the PNG `out`; returns
    the number of calls drawn. Raises ValueError when the trace has no external calls."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = load_rows(trace, run)
    if not rows:
        raise ValueError("the trace has no external calls to draw"
                         + (f" in run {run}" if run is not None else ""))
    n = len(rows)
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
    ax.set_title(title or f"poppy_jit timeline: {n} external calls, "
                          f"{len(runs)} run{'s' if len(runs) != 1 else ''}")
    handles = [Line2D([], [], color="black", linestyle=(0, (3, 2)), label="queued → dispatched"),
               Line2D([], [], color="black", lw=3.5, label="dispatched → resolved")]
    handles += [Line2D([], [], color=c, lw=3.5, label=k) for k, c in CLASS_COLORS.items()
                if any(r.cls == k for r in rows)]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return n
