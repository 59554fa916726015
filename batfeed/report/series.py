"""Time series of a run for the report: utilisation, queue length and busy machines per time bin.

Every value is an exact time average over its bin, computed from the intervals of the jobs
(no sampling): for intervals [lo_j, hi_j) with weights w_j, bin k gets
Σ_j w_j · |[lo_j, hi_j) ∩ bin_k| / |bin_k|.  Utilisation uses [start, finish) weighted by the
allocated machines, divided by N (metrics.md §2); the queue length uses [submit, start) with weight 1
(rejected jobs never wait).  ``_machine_states.csv`` holds the same busy count (a row per start and
end), so it is not read.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from batfeed.read_jobs import REJECTED, allocation_intervals

__all__ = ["binned_mean", "busy_heatmap", "human_duration", "nice_bins", "time_unit", "utilisation_and_queue"]

UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("days", 86400.0))


def time_unit(span: float) -> tuple[str, float]:
    """A readable unit for an axis spanning ``span`` seconds: s, min, h or days."""
    if span <= 600:
        return UNITS[0]
    if span <= 6 * 3600:
        return UNITS[1]
    if span <= 4 * 86400:
        return UNITS[2]
    return UNITS[3]


def human_duration(seconds: float) -> str:
    """``2 days``, ``6 h``, ``15 min``, ``30 s`` (the largest unit that divides it, else the best fit)."""
    for name, size in (("day", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size and (seconds / size).is_integer():
            n = int(seconds / size)
            return f"{n} {name}{'s' if name == 'day' and n > 1 else ''}"
    unit, size = time_unit(seconds)
    return f"{seconds / size:.3g} {unit}"


_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
          2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400)


def nice_bins(t0: float, t1: float, target: int = 400) -> np.ndarray:
    """Bin edges from ``t0`` covering [t0, t1] with a round width (1 s … 4 weeks) near (t1 − t0) / target."""
    span = max(t1 - t0, 1e-9)
    raw = span / target
    width = next((s for s in _STEPS if s >= raw), raw)
    n = max(1, math.ceil(span / width))
    return t0 + width * np.arange(n + 1)


def _integral(x: np.ndarray, w: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """G(e) = Σ_j w_j · min(e, x_j) at every edge e."""
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    cum_wx = np.concatenate([[0.0], np.cumsum(ws * xs)])
    cum_w = np.concatenate([[0.0], np.cumsum(ws)])
    k = np.searchsorted(xs, edges, side="left")             # x_j < e for j < k
    return cum_wx[k] + edges * (cum_w[-1] - cum_w[k])


def binned_mean(lo: np.ndarray, hi: np.ndarray, weight: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Σ_j w_j · |[lo_j, hi_j) ∩ bin_k| / |bin_k| for the bins between consecutive ``edges``."""
    lo, hi, w = (np.asarray(a, dtype=float) for a in (lo, hi, weight))
    ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(w) & (hi > lo)
    lo, hi, w = lo[ok], hi[ok], w[ok]
    if not len(lo):
        return np.zeros(len(edges) - 1)
    # |[lo, hi) ∩ (-inf, e)| = min(e, hi) - min(e, lo)
    area = _integral(hi, w, edges) - _integral(lo, w, edges)
    return np.diff(area) / np.diff(edges)


def utilisation_and_queue(frame: pd.DataFrame, nb_resources: int | None, edges: np.ndarray
                          ) -> tuple[np.ndarray | None, np.ndarray]:
    """(utilisation in [0, 1] or None without N, mean number of waiting jobs) per bin."""
    executed = frame["final_state"].ne(REJECTED).to_numpy()
    sub = frame["submission_time"].to_numpy(dtype=float)
    start = frame["starting_time"].to_numpy(dtype=float)
    finish = frame["finish_time"].to_numpy(dtype=float)
    queue = binned_mean(sub[executed], start[executed], np.ones(int(executed.sum())), edges)
    if not nb_resources:
        return None, queue
    rows, mlo, mhi = allocation_intervals(frame["allocated_resources"])
    busy = binned_mean(start[rows], finish[rows], mhi - mlo + 1, edges)
    return busy / nb_resources, queue


def busy_heatmap(frame: pd.DataFrame, nb_resources: int, edges: np.ndarray, max_rows: int = 100
                 ) -> tuple[np.ndarray, int]:
    """(busy fraction per machine block × time bin, machines per block): machines are grouped in
    consecutive blocks so that there are at most ``max_rows`` rows."""
    per = max(1, math.ceil(nb_resources / max_rows))
    nrows = math.ceil(nb_resources / per)
    rows, mlo, mhi = allocation_intervals(frame["allocated_resources"])
    start = frame["starting_time"].to_numpy(dtype=float)[rows]
    finish = frame["finish_time"].to_numpy(dtype=float)[rows]
    out = np.zeros((nrows, len(edges) - 1))
    for r in range(nrows):
        b0, b1 = r * per, min(nb_resources, (r + 1) * per) - 1
        overlap = np.minimum(mhi, b1) - np.maximum(mlo, b0) + 1
        sel = overlap > 0
        if sel.any():
            out[r] = binned_mean(start[sel], finish[sel], overlap[sel], edges) / (b1 - b0 + 1)
    return out, per
