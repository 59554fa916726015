"""Flurry (rare-behaviour) detection for Zakay & Feitelson's user-based resampling (models.md §E [RES]).

The paper removes "rare behaviours" (RB) — (user, begin, end) windows of flurries such as SDSC-SP2 user 374
(up to 11,740 jobs in < 25 days) — from the regular pools, but does not give the windows, so they are
re-derived here with a deliberately simple detector.  Times are trace seconds; bins are counted from the
log start ``T0`` (first submit), not from calendar midnight.

Definition (per user ``u``; anonymous jobs, ``user`` missing, are never flagged but count in the log totals):

1. *baseline* ``b_u`` = median of ``u``'s job counts over its **active** ``window_days``-bins (bins with >= 1
   job; default one week), expressed per day: ``b_u / window_days``;
2. a day ``d`` (bin ``[T0 + d·86400, T0 + (d+1)·86400)``) is *hot* iff ``count_u(d) > factor · b_u / window_days``;
3. hot days separated by at most ``merge_gap_days`` cold days are merged into one run ``[d0, d1]`` (the cold
   days inside count too);
4. a run is a **flurry** iff its jobs ``n >= min_jobs``, ``n / N >= share`` and ``N >= surge · r · days``, where
   ``N`` = all jobs of the log (all users) submitted in the run's days, ``r`` = the log's mean jobs per day
   (all jobs over ``(last − first subtime) / 86400``) and ``days`` = the run's length.

Rule 1 makes the test relative to the user's own usual rate (a heavy but steady user is never hot); rules 4
keep only bursts that are large in absolute terms, that dominate the machine while they last and that lift
the whole log's arrival rate well above its mean — what makes a flurry distort the workload.

Calibration of the defaults (factor 10, min_jobs 1,000, share 0.5, surge 3; docs/resample.md "Flurries"):
PWA's ``-cln`` logs already had their flurries removed, so the detector should find (almost) nothing there,
and the largest bursts of the uncleaned logs.  On ../shared/data/swf it flags 0 windows in KTH-SP2,
SDSC-BLUE (4.1, 4.2), LLNL-Atlas, LLNL-Thunder, NASA-iPSC and LCG; in the uncleaned logs UniLu-Gaia user 8
(20,260 jobs in 8 days), METACENTRUM users 17 and 37 (3 windows, 16,481 jobs) and RICC user 27 (4 windows,
73,518 jobs); in the large cleaned logs HPC2N 7 windows (12,076 jobs, 6 %) and CEA-Curie 4 (16,756, 5 %),
bursts the PWA cleaning kept.  The previous defaults (factor 5, 200 jobs, share 0.2, no surge) flagged 88
windows (57,271 jobs) in HPC2N and 4 in KTH-SP2.

A user whose whole activity is one burst has the burst as its median and is not flagged (it is its own
usual rate), which matches the paper's examples of users with a regular activity plus flurries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from batfeed.users.classify import job_times_users, load_jobs

from batfeed.errors import BatfeedError

DAY = 86_400


@dataclass(frozen=True)
class Flurry:
    """One RB window: ``user``'s jobs with ``begin <= subtime < end`` (trace seconds, whole days from T0);
    ``jobs`` = that user's jobs in the window, ``share`` = their fraction of all the log's jobs in it."""

    user: Any
    begin: float
    end: float
    jobs: int
    share: float


def detect_flurries(workload: dict[str, Any] | str | Path, *, window_days: float = 7, factor: float = 10,
                    min_jobs: int = 1000, share: float = 0.5, surge: float = 3,
                    merge_gap_days: int = 1) -> list[Flurry]:
    """Flurries of a workload (dict or Batsim JSON), sorted by (begin, user) — module docstring definition.

    Defaults (calibrated, module docstring): weekly baseline, ``factor`` 10 (a day above ten times the
    user's usual daily rate), ``min_jobs`` 1,000, ``share`` 0.5 of the log's jobs in the window, the log's
    rate in the window at least ``surge`` 3 times its mean, runs merged across one cold day.
    """
    for name, value, low in (("window_days", window_days, 1), ("factor", factor, 1), ("min_jobs", min_jobs, 1),
                             ("share", share, 0), ("surge", surge, 0), ("merge_gap_days", merge_gap_days, 0)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < low:
            raise BatfeedError(f"{name} must be a finite number >= {low} (got {value!r})")
    if share > 1:
        raise BatfeedError(f"share must be <= 1 (got {share!r})")
    jobs, source = load_jobs(workload)
    t, users = job_times_users(jobs, source)
    t0 = float(t.min())
    day = ((t - t0) // DAY).astype(np.int64)
    per_day_all = np.bincount(day)
    cum = np.concatenate(([0], np.cumsum(per_day_all)))  # log jobs in days [a, b] = cum[b+1] - cum[a]
    span_days = (float(t.max()) - t0) / DAY
    rate = len(t) / span_days if span_days > 0 else float("inf")  # the log's mean jobs per day
    frame = pd.DataFrame({"user": pd.Series(users, dtype=object), "day": day,
                          "bin": ((t - t0) // (window_days * DAY)).astype(np.int64)})
    frame = frame[frame["user"].notna()]
    out: list[Flurry] = []
    for user, g in frame.groupby("user", sort=False):
        baseline = float(g.groupby("bin").size().median()) / window_days
        daily = g.groupby("day").size()
        hot = daily.index[daily.to_numpy() > factor * baseline].to_numpy()
        if hot.size == 0:
            continue
        breaks = np.flatnonzero(np.diff(hot) > merge_gap_days + 1)
        starts = np.concatenate(([hot[0]], hot[breaks + 1]))
        ends = np.concatenate((hot[breaks], [hot[-1]]))
        for d0, d1 in zip(starts.tolist(), ends.tolist(), strict=True):
            n = int(daily.loc[d0:d1].sum())
            total = int(cum[d1 + 1] - cum[d0])
            if n >= min_jobs and n / total >= share and total >= surge * rate * (d1 + 1 - d0):
                out.append(Flurry(user, t0 + d0 * DAY, t0 + (d1 + 1) * DAY, n, n / total))
    out.sort(key=lambda f: (f.begin, str(f.user)))
    return out


def split_rb(workload: dict[str, Any] | str | Path,
             flurries: list[Flurry]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split the jobs into (regular, rb): a job is RB iff some flurry has its user and ``begin <= subtime < end``.

    Every job lands in exactly one list, in the original order (the RB pool of models.md §E).
    """
    jobs, source = load_jobs(workload)
    t, users = job_times_users(jobs, source)
    is_rb = np.zeros(len(jobs), bool)
    for hit in window_jobs(t, users, flurries):
        is_rb[hit] = True
    regular = [j for j, r in zip(jobs, is_rb.tolist(), strict=True) if not r]
    return regular, [j for j, r in zip(jobs, is_rb.tolist(), strict=True) if r]


def window_jobs(times: np.ndarray, users: list[Any], flurries: list[Flurry]) -> list[np.ndarray]:
    """Per flurry, the indices of its jobs (its user's, ``begin <= subtime < end``) not already in an earlier
    window: the RB units of :func:`batfeed.users.zf_resample.build_pools` and :func:`split_rb`."""
    taken = np.zeros(len(times), bool)
    out = []
    for f in flurries:
        hit = np.fromiter((u == f.user for u in users), bool, len(times)) & (times >= f.begin) & (times < f.end)
        out.append(np.flatnonzero(hit & ~taken))
        taken |= hit
    return out
