"""Which recorded waits can a scheduler of the trace's own jobs explain? (validation diagnostics, issue 6).

A trace records, for each job, its submit time, wait and run time.  Replaying every job at its
recorded start on a machine of ``nb_res`` resources gives the recorded occupancy over time.  A job
that waited while at least its request was free **during its whole wait** was not held back by
the other jobs of the trace: whatever kept it waiting (user holds, job dependencies, per-user
limits, jobs removed from a cleaned log, node properties or memory invisible in a processor count,
maintenance) is outside what a simulation of these jobs on ``nb_res`` interchangeable resources can
reproduce.  The validation report separates those jobs ("room" jobs) from the contention-bound
ones, so that the error of the scheduling model is not confused with the error of the trace model.

(Reservations of a real scheduler can still delay a job that fits, so "room" is an upper bound on
what the trace model cannot explain, not a proof for each job.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np


def _range_min(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """min(values[lo[i]..hi[i]]) for every i (inclusive bounds, lo <= hi), by a sparse table."""
    table = [values]
    span = 1
    while 2 * span <= len(values):
        prev = table[-1]
        table.append(np.minimum(prev[:-span], prev[span:]))
        span *= 2
    length = hi - lo + 1
    level = np.floor(np.log2(length)).astype(np.int64)
    out = np.empty(len(lo), dtype=values.dtype)
    for k in np.unique(level):
        m = level == k
        t = table[k]
        out[m] = np.minimum(t[lo[m]], t[hi[m] - (1 << k) + 1])
    return out


def recorded_room(submit: np.ndarray, wait: np.ndarray, run: np.ndarray, res: np.ndarray,
                  nb_res: int) -> np.ndarray:
    """Per job: True when the recorded schedule had >= res free resources during its whole wait.

    Jobs with a wait of 0 (or an unknown one: NaN) are False.  Arrays are aligned, one job each.
    """
    submit, wait, run, res = (np.asarray(x, dtype=float) for x in (submit, wait, run, res))
    known = np.isfinite(wait) & (wait >= 0) & np.isfinite(run) & (run >= 0)
    start = submit + np.where(known, wait, 0.0)
    end = start + np.where(known, run, 0.0)
    times = np.concatenate([start[known], end[known]])
    delta = np.concatenate([res[known], -res[known]])
    order = np.lexsort((delta, times))            # at equal times, ends (negative) before starts
    times, free = times[order], nb_res - np.cumsum(delta[order])
    room = np.zeros(len(submit), dtype=bool)
    waited = known & (wait > 0)
    if not waited.any() or len(times) == 0:
        return room
    # free resources on [submit, start): the state just after the last event <= submit, then
    # every state set by an event in (submit, start)
    lo = np.searchsorted(times, submit[waited], side="right") - 1
    hi = np.searchsorted(times, start[waited], side="left") - 1
    before = lo < 0                                # nothing had started yet at submit
    lo = np.maximum(lo, 0)
    hi = np.maximum(hi, lo)
    low = _range_min(free, lo, hi)
    low = np.where(before & (hi == 0) & (times[0] >= start[waited]), nb_res, low)
    room[waited] = low >= res[waited]
    return room


def room_by_job(jobs: Iterable[Mapping[str, Any]], profiles: Mapping[str, Mapping[str, Any]], nb_res: int,
                wait_of: Any) -> dict[Any, bool]:
    """:func:`recorded_room` over workload jobs (run time = their delay profile), keyed by job id.

    ``wait_of(job)`` gives the recorded wait or None.  Jobs without a delay profile or a recorded
    wait are left out.
    """
    ids, sub, wait, run, res = [], [], [], [], []
    for j in jobs:
        prof = profiles.get(j["profile"], {})
        w = wait_of(j)
        if w is None or prof.get("type") != "delay":
            continue
        ids.append(j["id"])
        sub.append(float(j["subtime"]))
        wait.append(float(w))
        run.append(float(prof["delay"]))
        res.append(float(j["res"]))
    if not ids or nb_res <= 0:
        return {}
    flags = recorded_room(np.array(sub), np.array(wait), np.array(run), np.array(res), nb_res)
    return dict(zip(ids, (bool(x) for x in flags), strict=True))


def summarise(errors: np.ndarray) -> tuple[float, float, float]:
    """(mean, median, population std) of an error array; NaNs when empty."""
    if len(errors) == 0:
        return math.nan, math.nan, math.nan
    return float(errors.mean()), float(np.median(errors)), float(errors.std())
