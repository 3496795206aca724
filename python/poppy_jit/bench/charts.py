"""PNG charts of a benchmark run (matplotlib, Agg backend), in the style of PopPy's figures:

* `PATH`: speed-up over sequential Python per application, grouped bars python / poppy / manual
  (Fig. 5); applications without LLM calls are left out (their times are microseconds);
* `PATH-scaling.png` (PATH without .png, plus "-scaling.png"): speed-up as a function of the swept
  parameter, poppy and manual, one panel per sweep (Fig. 8).
"""
from __future__ import annotations

import os


def _scaling_path(path: str) -> str:
    root, ext = os.path.splitext(path)
    return f"{root}-scaling{ext or '.png'}"


def plot(out: dict, path: str) -> list:
    """Write the charts of `out` (a harness result); returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    rows = [r for r in out["results"] if r["llm_calls"] and r["speedup"] and r["manual_speedup"]]
    if rows:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(rows) + 2), 4.0))
        width = 0.27
        xs = range(len(rows))
        for k, (label, key, color) in enumerate((("python", None, "#999999"),
                                                 ("poppy", "speedup", "#1f77b4"),
                                                 ("manual", "manual_speedup", "#ff7f0e"))):
            vals = [1.0 if key is None else r[key] for r in rows]
            ax.bar([x + (k - 1) * width for x in xs], vals, width, label=label, color=color)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["app"].replace("camel_", "C") [:18] for r in rows], rotation=45,
                           ha="right")
        ax.set_ylabel("speed-up over sequential Python")
        ax.axhline(1.0, color="black", linewidth=0.6)
        ax.set_title(f"poppy_jit vs hand-written asyncio (median of {out['reps']} runs, "
                     f"latency scale {out['time_scale']})", fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    sweeps = out.get("sweeps") or {}
    if sweeps:
        fig, axes = plt.subplots(1, len(sweeps), figsize=(5.0 * len(sweeps), 3.6), squeeze=False)
        for ax, (name, sw) in zip(axes[0], sweeps.items()):
            pts = [p for p in sw["points"] if p["speedup"]]
            ax.plot([p["x"] for p in pts], [p["speedup"] for p in pts], "o-", label="poppy")
            ax.plot([p["x"] for p in pts], [p["manual_speedup"] for p in pts], "s--",
                    label="manual")
            ax.set_xlabel(f"{sw['app']}: {sw['parameter']}")
            ax.set_ylabel("speed-up over Python")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        spath = _scaling_path(path)
        fig.savefig(spath, dpi=120)
        plt.close(fig)
        written.append(spath)
    return written
