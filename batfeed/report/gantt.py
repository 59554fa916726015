"""Gantt panels: machines × time, one rectangle per job and machine interval, or, above ``max_jobs``
jobs in the window, a heat map of the busy fraction per machine block × time bin (readable for any
number of jobs; a detail of a window comes from ``batfeed report --gantt-window T0:T1``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from batfeed.metrics import parse_replay_metadata
from batfeed.read_jobs import REJECTED, allocation_intervals
from batfeed.report.series import busy_heatmap, human_duration, nice_bins

__all__ = ["draw_gantt"]

MAX_LEGEND_USERS = 12


def _palette() -> np.ndarray:
    from matplotlib import colormaps

    return np.asarray(colormaps["tab20"].colors)


def _levels() -> Any:
    """Blues in 10 steps of 10 %: easier to read (and to compress) than a continuous scale."""
    from matplotlib import colormaps

    return colormaps["Blues"].resampled(10)


def draw_gantt(fig: Any, ax: Any, frame: pd.DataFrame, nb_resources: int | None, window: tuple[float, float],
               scale: float, max_jobs: int, colour_by: str = "auto") -> str:
    """Draw one run's Gantt panel on ``ax``; returns ``"N jobs…: what is drawn."``."""
    t0, t1 = window
    ex = frame[frame["final_state"].ne(REJECTED)]
    start = ex["starting_time"].to_numpy(dtype=float)
    finish = ex["finish_time"].to_numpy(dtype=float)
    inside = (start < t1) & (finish > t0) & (finish > start)
    jobs = ex[inside]
    rows, lo, hi = allocation_intervals(jobs["allocated_resources"])
    n_machines = int(nb_resources or (int(hi.max()) + 1 if len(hi) else 1))
    ax.set_xlim(t0 / scale, t1 / scale)
    ax.set_ylim(0, n_machines)
    ax.set_ylabel("machine")
    if len(jobs) > max_jobs:
        edges = nice_bins(t0, t1, 200)
        heat, per = busy_heatmap(jobs, n_machines, edges, max_rows=50)
        im = ax.imshow(heat, aspect="auto", origin="lower", interpolation="nearest", cmap=_levels(), vmin=0, vmax=1,
                       extent=(edges[0] / scale, edges[-1] / scale, 0, n_machines))
        fig.colorbar(im, ax=ax, label="busy fraction", pad=0.01, fraction=0.04)
        ax.set_xlim(t0 / scale, t1 / scale)
        block = "machine" if per == 1 else f"block of {per} machines"
        return (f"{len(jobs):,} jobs (more than {max_jobs:,}): aggregated, the fraction of time each {block} is busy "
                f"per bin of {human_duration(float(edges[1] - edges[0]))} (10 shades of 10 %: white idle, dark blue "
                "always busy).")
    s = np.maximum(jobs["starting_time"].to_numpy(dtype=float), t0)[rows] / scale
    f = np.minimum(jobs["finish_time"].to_numpy(dtype=float), t1)[rows] / scale
    y0, y1 = lo, hi + 1
    verts = np.stack([np.column_stack([s, y0]), np.column_stack([f, y0]), np.column_stack([f, y1]),
                      np.column_stack([s, y1])], axis=1)
    palette = _palette()
    users = None
    if colour_by in ("auto", "user") and "metadata" in jobs.columns:
        _, users = parse_replay_metadata(jobs["metadata"])
        if any(u is None for u in users):
            users = None
    if users is not None:
        codes, names = pd.factorize(pd.Series(users, dtype=str), sort=True)
        colours = palette[codes % len(palette)][rows]
        shared = ", 20 colours: some users share one" if len(names) > len(palette) else ""
        what = f"colour per user ({len(names)} users{shared})"
        if len(names) <= MAX_LEGEND_USERS:
            handles = [Patch(color=palette[k % len(palette)], label=f"user {u}") for k, u in enumerate(names)]
            ax.legend(handles=handles, fontsize=7, loc="upper right", ncols=math.ceil(len(names) / 4))
    else:
        order = np.argsort(np.argsort(jobs["submission_time"].to_numpy(dtype=float), kind="stable"), kind="stable")
        colours = palette[order % len(palette)][rows]
        what = "colour per job (20 colours, by submission order)"
    edge = "white" if len(jobs) <= 300 else "none"
    ax.add_collection(PolyCollection(verts, facecolors=colours, edgecolors=edge, linewidths=0.4))
    ax.set_facecolor("#f4f4f4")
    return f"{len(jobs):,} jobs: one rectangle per job and machine interval, {what}; grey: idle."
