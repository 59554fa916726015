"""Per-user marginals and weekly arrival profile of a resampled workload against its original: Zakay &
Feitelson, *Workload resampling for performance evaluation of parallel job schedulers* (models.md §E
[RES], "Validation": per-user marginals — jobs, sessions, session length, CPU time, arrival/departure,
activity period — and the weekly arrival profile are "very similar").  The locality / Hurst half of
the validation is :mod:`batfeed.users.resample_metrics`.

models.md names the statistics but not these details; the choices made here (also in each docstring):

- user = the job's ``user`` (a resample's ``user`` is a fresh id per emitted copy, so a restart or a
  replica counts as a user of its own); a job without ``user`` is refused (one-line InputError);
- sessions: jobs of a user ordered by ``subtime`` (stable: ties keep input order); a new session starts
  when the inter-arrival (submit → submit) from the previous job exceeds ``session_gap_s`` (strict
  ``>``), default 1200 s = the 20-minute gap usual in Zakay & Feitelson's session work.  Submit gaps,
  not think times (end → submit), because a resample carries no simulated end times;
  ``session_jobs`` = jobs / sessions (the "session length" marginal, in jobs);
- CPU time = Σ runtime·res / 3600 [h], runtime = ``profiles[profile]["delay"]``; a job with no delay
  or no ``res`` is left out of the sum and counted in the extra column ``cpu_missing``;
- weeks are counted from the workload's origin: 0 for a resample (a top-level ``batfeed_resample``
  entry: output time 0 = the start of output week 0 = the original's first submit T0), else the first
  submit.  The grid is aligned to the log's first submit, not to a calendar Monday; resampling shifts
  by whole weeks of that same grid, so the time of week means the same in original and resample;
- a workload's length L in weeks: ``batfeed_resample["weeks"]`` for a resample, else
  ``⌊(last − origin)/WEEK⌋ + 1`` (calendar weeks of the log grid, as in classify.py);
- comparison: two-sample Kolmogorov–Smirnov statistic between the per-user distributions; arrival
  and departure weeks are compared as fractions of the span, ``week / L``, so that resamples of another
  length stay comparable (their medians too); the weekly profile by total-variation distance
  ½·Σ|p − q| and Pearson correlation of the per-hour shares.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from batfeed.adapters.resample import WEEK, _user_key
from batfeed.users.classify import job_times_users, load_jobs

from batfeed.errors import BatfeedError, InputError

__all__ = ["MARGINALS", "SESSION_GAP_S", "arrival_profile", "compare_marginals", "format_marginals",
           "ks_statistic", "total_variation", "user_marginals"]

SESSION_GAP_S = 1200.0  # 20 minutes (Zakay & Feitelson's usual session gap; models.md silent: chosen)
MARGINALS = ("jobs", "sessions", "session_jobs", "cpu_hours", "active_weeks", "arrival_week", "departure_week")
SPAN_NORMALISED = ("arrival_week", "departure_week")  # compared as week / L
COLUMNS = ("original_median", "resampled_median_mean", "resampled_median_sd", "ks_mean", "ks_sd",
           "profile_corr_mean", "n")
Workload = dict[str, Any] | str | Path


class _Log:
    """The columns used here of one workload, in input order, with its origin and length in weeks."""

    def __init__(self, workload: Workload):
        if isinstance(workload, dict):
            data, source = workload, "in-memory"
        else:
            from batfeed.adapters.workload import load_workload_json

            data, source = load_workload_json(workload), str(workload)
        try:
            jobs, _ = load_jobs(data)
        except InputError as err:
            raise InputError(err.reason, source) from None
        profiles = data.get("profiles") if isinstance(data.get("profiles"), dict) else {}
        self.subtime, self.users = job_times_users(jobs, source)
        self.cpu = np.empty(len(jobs))
        for i, job in enumerate(jobs):
            if self.users[i] is None:
                raise InputError(f"job {job.get('id', f'#{i}')}: no 'user' (per-user marginals need one per job)",
                                 source)
            profile = profiles.get(job.get("profile"))
            delay = profile.get("delay") if isinstance(profile, dict) else None
            res = job.get("res")
            ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (delay, res))
            self.cpu[i] = delay * res if ok else np.nan
        info = data.get("batfeed_resample")
        self.origin = 0.0 if isinstance(info, dict) else float(self.subtime.min())
        weeks = info.get("weeks") if isinstance(info, dict) else None
        self.weeks = int(weeks) if isinstance(weeks, int) and weeks > 0 else \
            int((self.subtime.max() - self.origin) // WEEK) + 1


def _marginals(log: _Log, session_gap_s: float) -> pd.DataFrame:
    """:func:`user_marginals` of a loaded log."""
    if isinstance(session_gap_s, bool) or not isinstance(session_gap_s, int | float) or not session_gap_s >= 0:
        raise BatfeedError(f"session_gap_s must be a number >= 0 (got {session_gap_s!r})")
    ordered = sorted(set(log.users), key=_user_key)
    rank = {u: r for r, u in enumerate(ordered)}
    code = np.fromiter((rank[u] for u in log.users), np.int64, len(log.users))
    order = np.lexsort((np.arange(len(code)), log.subtime, code))  # by user, subtime, input order
    c, t = code[order], log.subtime[order]
    first = np.r_[True, c[1:] != c[:-1]]
    new_session = first | np.r_[False, np.diff(t) > session_gap_s]
    frame = pd.DataFrame({"code": c, "t": t, "s": new_session, "cpu": log.cpu[order] / 3600.0,
                          "miss": np.isnan(log.cpu[order])})
    g = frame.groupby("code", sort=True).agg(jobs=("t", "size"), sessions=("s", "sum"), first=("t", "min"),
                                            last=("t", "max"), cpu_hours=("cpu", "sum"), cpu_missing=("miss", "sum"))
    out = pd.DataFrame(index=pd.Index(ordered, name="user", dtype=object))
    out["jobs"] = g["jobs"].to_numpy().astype(np.int64)
    out["sessions"] = g["sessions"].to_numpy().astype(np.int64)
    out["session_jobs"] = out["jobs"] / out["sessions"]
    out["cpu_hours"] = g["cpu_hours"].to_numpy()
    out["arrival_week"] = ((g["first"].to_numpy() - log.origin) // WEEK).astype(np.int64)
    out["departure_week"] = ((g["last"].to_numpy() - log.origin) // WEEK).astype(np.int64)
    out["active_weeks"] = out["departure_week"] - out["arrival_week"] + 1
    out["cpu_missing"] = g["cpu_missing"].to_numpy().astype(np.int64)
    return out


def user_marginals(workload: Workload, *, session_gap_s: float = SESSION_GAP_S) -> pd.DataFrame:
    """One row per user (index ``user``, sorted numbers then strings): ``jobs``, ``sessions`` (new one
    after a submit gap > ``session_gap_s``), ``session_jobs`` (mean jobs per session), ``cpu_hours``
    (Σ runtime·res / 3600), ``arrival_week`` / ``departure_week`` (week of the first / last submit from
    the origin: 0 for a resample, else the first submit), ``active_weeks`` (departure − arrival + 1) and
    ``cpu_missing`` (jobs left out of ``cpu_hours``: no delay or no res).  Module docstring: choices."""
    return _marginals(_Log(workload), session_gap_s)


def _profile(log: _Log, bin_hours: int) -> np.ndarray:
    """:func:`arrival_profile` of a loaded log."""
    if isinstance(bin_hours, bool) or not isinstance(bin_hours, int) or bin_hours < 1 or 168 % bin_hours:
        raise BatfeedError(f"bin_hours must be a positive divisor of 168 (got {bin_hours!r})")
    tow = np.mod(log.subtime - log.origin, WEEK)
    counts = np.bincount((tow // (bin_hours * 3600)).astype(np.int64), minlength=168 // bin_hours)
    return counts / counts.sum()


def arrival_profile(workload: Workload, *, bin_hours: int = 1) -> np.ndarray:
    """Share of jobs per ``bin_hours`` of the week (168 bins for 1 h; sums to 1); time of week =
    ``(subtime − origin) mod WEEK`` on the log's week grid (aligned to the first submit, not Monday)."""
    return _profile(_Log(workload), bin_hours)


def ks_statistic(a: Iterable[float] | np.ndarray, b: Iterable[float] | np.ndarray) -> float:
    """Two-sample Kolmogorov–Smirnov statistic ``sup_x |F_a(x) − F_b(x)|`` (exact: the empirical CDFs
    evaluated at every value of either sample); NaNs dropped; ``NaN`` if a sample is empty."""
    x = np.sort(np.asarray(list(a) if not isinstance(a, np.ndarray) else a, dtype=float).ravel())
    y = np.sort(np.asarray(list(b) if not isinstance(b, np.ndarray) else b, dtype=float).ravel())
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    if not len(x) or not len(y):
        return float("nan")
    grid = np.union1d(x, y)
    fa = np.searchsorted(x, grid, side="right") / len(x)
    fb = np.searchsorted(y, grid, side="right") / len(y)
    return float(np.max(np.abs(fa - fb)))


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance ½·Σ|p − q| of two distributions on the same bins."""
    return float(0.5 * np.abs(np.asarray(p, dtype=float) - np.asarray(q, dtype=float)).sum())


def _values(table: pd.DataFrame, log: _Log, name: str) -> np.ndarray:
    """A marginal's per-user values; arrival/departure weeks as fractions of the span (week / L)."""
    v = table[name].to_numpy(dtype=float)
    return v / log.weeks if name in SPAN_NORMALISED else v


def _mean_sd(x: list[float]) -> tuple[float, float]:
    """Mean and sd (ddof 1; NaN for fewer than 2 values)."""
    a = np.asarray(x, dtype=float)
    return float(a.mean()) if len(a) else float("nan"), float(a.std(ddof=1)) if len(a) > 1 else float("nan")


def compare_marginals(original: Workload, resamples: Iterable[Workload], *,
                      session_gap_s: float = SESSION_GAP_S) -> pd.DataFrame:
    """Original vs resamples (models.md §E "Validation"): one row per :data:`MARGINALS` and a row
    ``weekly_profile``; columns :data:`COLUMNS`.

    Marginal rows: the original's median, mean and sd (ddof 1) over the resamples of their medians, and
    mean / sd of the KS statistic between the original's per-user values and each resample's
    (arrival/departure as week / L).  ``weekly_profile``: medians NaN, ``ks_*`` = total-variation
    distance between 1-hour profiles, ``profile_corr_mean`` = mean Pearson correlation (NaN elsewhere).
    ``n`` = number of resamples.  Arguments: workload dicts or Batsim JSON files.
    """
    orig = _Log(original)
    table, prof = _marginals(orig, session_gap_s), _profile(orig, 1)
    meds: dict[str, list[float]] = {m: [] for m in MARGINALS}
    ks: dict[str, list[float]] = {m: [] for m in (*MARGINALS, "weekly_profile")}
    corr: list[float] = []
    for w in resamples:
        log = _Log(w)
        res_table, res_prof = _marginals(log, session_gap_s), _profile(log, 1)
        for m in MARGINALS:
            v = _values(res_table, log, m)
            meds[m].append(float(np.median(v)))
            ks[m].append(ks_statistic(_values(table, orig, m), v))
        ks["weekly_profile"].append(total_variation(prof, res_prof))
        corr.append(float(np.corrcoef(prof, res_prof)[0, 1]))
    n = len(corr)
    if not n:
        raise BatfeedError("compare_marginals needs at least one resample")
    rows = []
    for m in MARGINALS:
        rows.append((float(np.median(_values(table, orig, m))), *_mean_sd(meds[m]), *_mean_sd(ks[m]),
                     float("nan"), float(n)))
    rows.append((float("nan"),) * 3 + (*_mean_sd(ks["weekly_profile"]), _mean_sd(corr)[0], float(n)))
    return pd.DataFrame(rows, columns=list(COLUMNS), index=pd.Index([*MARGINALS, "weekly_profile"], name="marginal"))


def format_marginals(df: pd.DataFrame) -> str:
    """:func:`compare_marginals` as a plain-text table (medians, KS / TV mean ± sd, profile correlation)."""
    def num(x: float) -> str:
        return "-" if pd.isna(x) else f"{x:.4g}"

    head = ("marginal", "original median", "resampled median", "KS (profile: TV)", "profile corr", "n")
    lines = [head]
    for name, r in df.iterrows():
        lines.append((str(name), num(r["original_median"]),
                      f"{num(r['resampled_median_mean'])} ± {num(r['resampled_median_sd'])}",
                      f"{num(r['ks_mean'])} ± {num(r['ks_sd'])}", num(r["profile_corr_mean"]), f"{r['n']:g}"))
    widths = [max(len(line[k]) for line in lines) for k in range(len(head))]
    return "\n".join("  ".join(c.ljust(wd) if k == 0 else c.rjust(wd) for k, (c, wd) in enumerate(
        zip(line, widths, strict=True))).rstrip() for line in lines)
