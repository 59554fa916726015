"""Saturation check of a run: does the backlog keep growing?

Zakay & Feitelson, *Workload Resampling for Performance Evaluation of Parallel Job Schedulers* [RES]
(shared/reference/models.md §E): count the outstanding (arrived, not finished) jobs at each week
start, replace each count by its suffix minimum (the minimum from that week to the end), drop the
last 20 % of the weeks, fit a least-squares line; a slope >= 1 job/week means the run is saturated
(the paper discards such runs with a warning).

Choices where the paper is silent (documented UNDEF -> REC):

- weeks start at the first submission t0 (rejected jobs included) and run while t0 + k*week <= the
  last submission: the arrival period only, so the drain after the last arrival is not measured;
- outstanding at t: submitted <= t and not finished by t (finish_time <= t); a job still waiting or
  running at t is outstanding; a killed / failed / walltime-reached job is finished at its
  finish_time; rejected jobs are never outstanding; an executed job without finish_time never
  finishes;
- the tail drop removes floor(tail_drop * weeks) weeks (never more than the fraction); the slope
  needs >= 2 kept weeks, else it is None and the run counts as not saturated.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from batfeed.errors import BatfeedError, InputError
from batfeed.read_jobs import REJECTED, read_jobs_csv

__all__ = ["WEEK", "SaturationError", "format_saturation", "outstanding_at", "saturation", "saturation_arrays",
           "suffix_minimum"]

WEEK = 604800.0
_COLUMNS = ("submission_time", "finish_time", "final_state")


class SaturationError(BatfeedError, ValueError):
    """Bad saturation parameter (tail_drop, threshold, week)."""


def suffix_minimum(values: np.ndarray) -> np.ndarray:
    """``out[i] = min(values[i:])`` [RES]: a transient backlog that later clears does not count."""
    values = np.asarray(values)
    return np.minimum.accumulate(values[::-1])[::-1] if len(values) else values.copy()


def outstanding_at(times: np.ndarray, submit: np.ndarray, finish: np.ndarray) -> np.ndarray:
    """Jobs with ``submit <= t`` and not ``finish <= t`` at each of ``times`` (NaN finish: never finishes).

    O((n + m) log n): two sorted arrays and ``searchsorted``; a finish before the submit is read as the submit.
    """
    times = np.asarray(times, dtype="float64")
    sub = np.sort(np.asarray(submit, dtype="float64"))
    fin = np.asarray(finish, dtype="float64")
    fin = np.sort(np.maximum(fin, np.asarray(submit, dtype="float64")))  # NaN stays NaN, sorted last
    arrived = np.searchsorted(sub, times, side="right")
    finished = np.searchsorted(fin, times, side="right")
    return (arrived - finished).astype("int64")


def _check(tail_drop: float, threshold: float, week: float) -> None:
    if not 0.0 <= tail_drop < 1.0:
        raise SaturationError(f"tail_drop must be in [0, 1), got {tail_drop}")
    if not math.isfinite(threshold):
        raise SaturationError(f"threshold must be finite, got {threshold}")
    if not (math.isfinite(week) and week > 0):
        raise SaturationError(f"week must be > 0 s, got {week}")


def saturation_arrays(submit: np.ndarray, finish: np.ndarray, rejected: np.ndarray, *, tail_drop: float = 0.2,
                      threshold: float = 1.0, week: float = WEEK) -> dict:
    """:func:`saturation` on arrays: submission and finish times (s) and a rejected mask, one entry per job."""
    _check(tail_drop, threshold, week)
    submit = np.asarray(submit, dtype="float64")
    finish = np.asarray(finish, dtype="float64")
    rejected = np.asarray(rejected, dtype=bool)
    known = ~np.isnan(submit)
    out: dict = {"tail_drop": float(tail_drop), "threshold": float(threshold), "week_s": float(week)}
    if not known.any():
        return {**out, "week_starts": [], "outstanding": [], "suffix_min": [], "nb_weeks": 0, "nb_dropped": 0,
                "nb_kept": 0, "kept": [], "slope_jobs_per_week": None, "saturated": False,
                "reason": "no submitted job: not saturated"}
    t0, t_last = float(submit[known].min()), float(submit[known].max())
    nb_weeks = int(math.floor((t_last - t0) / week)) + 1
    starts = t0 + week * np.arange(nb_weeks, dtype="float64")
    live = known & ~rejected
    counts = outstanding_at(starts, submit[live], finish[live])
    smin = suffix_minimum(counts)
    nb_dropped = int(math.floor(tail_drop * nb_weeks + 1e-9))
    kept = smin[: nb_weeks - nb_dropped]
    slope: float | None = None
    if len(kept) >= 2:
        x = np.arange(len(kept), dtype="float64")
        xc = x - x.mean()
        slope = float(np.dot(xc, kept - kept.mean()) / np.dot(xc, xc))
    saturated = slope is not None and slope >= threshold
    if slope is None:
        reason = (f"not saturated: {len(kept)} week(s) kept of {nb_weeks} after dropping {nb_dropped}, "
                  "a slope needs 2")
    else:
        reason = (f"{'saturated' if saturated else 'not saturated'}: suffix-minimum backlog slope {slope:.3f} "
                  f"jobs/week {'>=' if saturated else '<'} {threshold:g} over the first {len(kept)} of "
                  f"{nb_weeks} weeks")
    return {
        **out,
        "week_starts": starts.tolist(),
        "outstanding": counts.tolist(),
        "suffix_min": smin.tolist(),
        "nb_weeks": nb_weeks,
        "nb_dropped": nb_dropped,
        "nb_kept": len(kept),
        "kept": kept.tolist(),
        "slope_jobs_per_week": slope,
        "saturated": bool(saturated),
        "reason": reason,
    }


def saturation(jobs: pd.DataFrame | str | Path, *, tail_drop: float = 0.2, threshold: float = 1.0,
               week: float = WEEK) -> dict:
    """Saturation check of Zakay & Feitelson [RES] on a run's ``_jobs.csv`` (path) or jobs table.

    Returns ``week_starts`` (s), ``outstanding`` (jobs at each week start), ``suffix_min``, ``kept``
    (the suffix minima left after dropping the last ``tail_drop`` of the weeks), ``nb_weeks``,
    ``nb_dropped``, ``nb_kept``, ``slope_jobs_per_week`` (least squares, None under 2 kept weeks),
    ``saturated`` (slope >= ``threshold``), a one-line ``reason`` and the parameters. A table needs
    ``submission_time``, ``finish_time`` and ``final_state``. Weeks: see the module docstring.
    """
    _check(tail_drop, threshold, week)
    if isinstance(jobs, str | Path):
        jobs = read_jobs_csv(jobs)
    missing = [c for c in _COLUMNS if c not in jobs.columns]
    if missing:
        raise InputError("jobs table lacks columns: " + ", ".join(missing))
    submit = pd.to_numeric(jobs["submission_time"], errors="coerce").to_numpy(dtype="float64")
    finish = pd.to_numeric(jobs["finish_time"], errors="coerce").to_numpy(dtype="float64")
    rejected = jobs["final_state"].astype(str).eq(REJECTED).to_numpy()
    return saturation_arrays(submit, finish, rejected, tail_drop=tail_drop, threshold=threshold, week=week)


def format_saturation(result: dict) -> str:
    """Plain-text lines for ``batfeed metrics --saturation``."""
    slope = result["slope_jobs_per_week"]
    lines = [
        "saturation check (Zakay & Feitelson: suffix-minimum backlog at week starts, "
        f"last {100 * result['tail_drop']:g} % dropped, saturated if slope >= {result['threshold']:g} job/week)",
        f"  weeks {result['nb_weeks']} (kept {result['nb_kept']}, dropped {result['nb_dropped']}); slope "
        + ("n/a" if slope is None else f"{slope:.3f} jobs/week"),
        "  outstanding at week starts: " + " ".join(str(c) for c in result["outstanding"]),
        "  suffix minimum:             " + " ".join(str(c) for c in result["suffix_min"]),
        "  " + result["reason"],
    ]
    return "\n".join(lines)
