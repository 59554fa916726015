"""PNG figures of ``batfeed validate`` (:mod:`batfeed.validate`), drawn with matplotlib.

Figures are built on :class:`matplotlib.figure.Figure` with an Agg canvas, so pyplot's global state
and the process-wide backend are left alone.  Size 8 × 4.5 in at 100 dpi (800 × 450 px).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, NullFormatter, PercentFormatter

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from batfeed.validate_week import WeekResult

SIZE, DPI = (8.0, 4.5), 100
RECORDED, SIMULATED = "#1f77b4", "#d62728"
# log-axis ticks for durations, in human units
DURATION_TICKS = [(1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (36000, "10 h"),
                  (86400, "1 d"), (604800, "1 wk"), (2592000, "30 d")]


def _figure() -> tuple[Figure, Axes]:
    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, color="0.9", linewidth=0.8)
    ax.set_axisbelow(True)
    return fig, ax


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, format="png", metadata={"Software": None})
    return path


def sim_label(interval: float | None) -> str:
    return "simulated (Maui, event-driven)" if not interval else f"simulated (Maui, step {interval:g} s)"


def _cdf_axis(ax: Axes, curves: Sequence[tuple[str, str, np.ndarray]]) -> None:
    """Empirical CDFs of waits on a log axis (waits under 1 s drawn at 1 s)."""
    top = 10.0
    for label, colour, values in curves:
        v = np.sort(np.maximum(np.asarray(values, dtype=float), 1.0))
        if not len(v):
            continue
        frac = np.arange(1, len(v) + 1) / len(v)
        zero = float(np.mean(np.asarray(values) < 1.0))
        ax.step(np.r_[1.0, v], np.r_[0.0, frac], where="post", color=colour, linewidth=1.8,
                label=f"{label}: median {_duration(float(np.median(values)))}, {zero:.0%} under 1 s")
        top = max(top, float(v[-1]))
    ax.set_xscale("log")
    ax.set_xlim(1.0, top * 1.5)
    ticks = [(t, s) for t, s in DURATION_TICKS if t <= top * 1.5]
    ax.set_xticks([t for t, _ in ticks], [s for _, s in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(0, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("wait time (log scale; waits under 1 s shown at 1 s)")
    ax.set_ylabel("jobs that waited at most this long")
    ax.legend(loc="lower right", fontsize=9)


def _duration(s: float) -> str:
    if math.isnan(s):
        return "n/a"
    a = abs(s)
    if a < 120:
        return f"{s:.0f} s"
    if a < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def wait_cdf(path: Path, recorded: np.ndarray, simulated: np.ndarray, title: str,
             interval: float | None) -> Path:
    fig, ax = _figure()
    _cdf_axis(ax, [("recorded", RECORDED, recorded), (sim_label(interval), SIMULATED, simulated)])
    ax.set_title(title)
    return _save(fig, path)


def utilisation(path: Path, k: int, days: np.ndarray, recorded: np.ndarray, simulated: np.ndarray,
                split_days: float, nb_res: int, interval: float | None) -> Path:
    """Hourly utilisation of the window's jobs: warm-up shaded, target week after ``split_days``."""
    fig, ax = _figure()
    ax.axvspan(0, split_days, color="0.93", zorder=0)
    ax.text(split_days / 2, 1.075, f"warm-up (week {k - 1})", ha="center", va="center", fontsize=9,
            color="0.35")
    ax.text(split_days * 1.5, 1.075, f"target week {k} (scored)", ha="center", va="center", fontsize=9,
            color="0.35")
    ax.plot(days, recorded, color=RECORDED, linewidth=1.2, label="recorded (same jobs)")
    ax.plot(days, simulated, color=SIMULATED, linewidth=1.2, alpha=0.85, label=sim_label(interval))
    ax.set_xlim(0, 2 * split_days)
    ax.set_ylim(0, 1.12)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2]))
    ax.set_title(f"Week {k}: utilisation by the jobs submitted in weeks {k - 1} and {k}")
    ax.set_xlabel("time since the warm-up start (days)")
    ax.set_ylabel(f"busy processors (% of {nb_res}, hourly mean)")
    fig.legend(loc="outside lower center", ncols=2, fontsize=9, frameon=False)
    return _save(fig, path)


def errors_by_week(path: Path, results: Sequence[WeekResult]) -> Path:
    """Mean, median and standard deviation of the wait-time error per week (unit chosen from the data)."""
    fig, ax = _figure()
    weeks = [r.week for r in results]
    series: list[tuple[str, list[float], dict[str, Any]]] = [
        ("mean", [r.mean for r in results], {"marker": "o"}),
        ("median", [r.median for r in results], {"marker": "s"}),
        ("standard deviation", [r.std for r in results], {"marker": "^", "linestyle": "--"}),
    ]
    big = max((abs(v) for _, vs, _ in series for v in vs if not math.isnan(v)), default=0.0)
    unit, scale = ("h", 3600.0) if big >= 3 * 3600 else ("min", 60.0) if big >= 180 else ("s", 1.0)
    for label, values, style in series:
        ax.plot(weeks, np.asarray(values) / scale, label=label, linewidth=1.5, markersize=5, **style)
    ax.axhline(0, color="0.4", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if len(weeks) == 1:
        ax.set_xlim(weeks[0] - 1, weeks[0] + 1)
    ax.set_title(f"Wait-time error (simulated − recorded) per week, {sum(r.jobs for r in results)} jobs")
    ax.set_xlabel("week (since the first job)")
    ax.set_ylabel(f"error ({unit}); < 0: simulated waits shorter")
    ax.legend(fontsize=9)
    return _save(fig, path)
