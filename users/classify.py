"""User classification of Zakay & Feitelson, *Workload resampling for performance evaluation of parallel
job schedulers* (models.md §E [RES], "Classes", Table V): the pools that user-based resampling draws from.

A user's active span is first → last job.  **Long-term** if the span exceeds 12 weeks, else
**temporary**; temporary users whose whole activity lies within 4 weeks of the log start or end are
**discarded** (probably truncated).  Choices where the paper is silent (models.md "UNDEF → REC"):

- times are submit times (``subtime``): span = last − first submit of the user, in seconds;
  long-term iff ``span > long_term_weeks·WEEK`` (strict: exactly 12 weeks is temporary);
- log start/end ``T0``/``T1`` = first/last submit of the whole log (any origin: converted
  workloads start at 0);
- "whole activity within 4 weeks of the start": ``last ≤ T0 + edge_weeks·WEEK``; "of the end":
  ``first ≥ T1 − edge_weeks·WEEK`` (both bounds inclusive); only temporary users are discarded,
  a long-term user is never discarded.  ``edge_rule="touch"`` is the looser reading, for sensitivity
  (batfeed reproduce resampling): discard a temporary user *active* in the first or last 4 weeks,
  ``first < T0 + edge_weeks·WEEK`` or ``last > T1 − edge_weeks·WEEK``;
- weeks active = calendar-week span on the log's week grid (weeks ``[T0 + i·WEEK, T0 + (i+1)·WEEK)``,
  as in :mod:`batfeed.adapters.resample`): ``week(last) − week(first) + 1``;
- jobs without ``user`` (missing or null): refused by default (``anonymous="error"``), or counted
  as one anonymous user (``anonymous="user"``, as the weekly resampler does), whose key is None;
- user keys are kept as in the workload (SWF numbers, including −1, are ordinary users); the
  per-user table is sorted numbers, then strings, then the anonymous user.

Table V counts are users / jobs of the long-term and temporary pools; discarded users are in neither.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from batfeed.adapters.resample import WEEK, _user_key, job_time_user

from batfeed.errors import BatfeedError, InputError

__all__ = ["CLASSES", "AnonymousJobs", "Classification", "classify_users", "job_times_users", "load_jobs"]

CLASSES = ("long_term", "temporary", "discarded")


class AnonymousJobs(InputError):
    """Jobs without a ``user`` refused (``anonymous="error"``): how many, and the first one's id."""

    def __init__(self, count: int, first: Any, source: str, fix: str = "pass anonymous='user'"):
        self.count, self.first = count, first
        super().__init__(f"{count} job(s) have no 'user' (first: job {first!r}); {fix} to count them as one user",
                         source)


def load_jobs(workload: dict[str, Any] | str | Path, source: str | None = None) -> tuple[list[dict[str, Any]], str]:
    """The job list of a workload dict or Batsim workload JSON file (plain, gzip or xz), and its source
    (``source`` if given, else the file's path or ``in-memory``)."""
    if isinstance(workload, dict):
        data, source = workload, source or "in-memory"
    else:
        from batfeed.adapters.workload import load_workload_json

        data, source = load_workload_json(workload), source or str(workload)
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise InputError("not a Batsim workload (no 'jobs' array)", source)
    if not jobs:
        raise InputError("the workload has no job", source)
    return jobs, source


def job_times_users(jobs: list[Any], source: str) -> tuple[np.ndarray, list[Any]]:
    """Each job's ``subtime`` (checked finite) and ``user`` (None when missing; otherwise checked to be a
    finite number or a string), with one-line errors naming the job; the resampling modules share it."""
    n = len(jobs)
    subtime, users = np.empty(n), [None] * n
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise InputError(f"job #{i} is not an object", source)
        subtime[i], users[i] = job_time_user(job, i, source)
    return subtime, users


@dataclass
class Classification:
    """Result of :func:`classify_users`: one row per user in :attr:`users` (index ``user``; columns
    first, last, span [s], jobs, weeks_active, class), the log bounds and the parameters."""

    users: pd.DataFrame
    log_start: float
    log_end: float
    long_term_weeks: float
    edge_weeks: float
    anonymous_jobs: int = 0
    source: str = "in-memory"
    params: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.params = {"long_term_weeks": self.long_term_weeks, "edge_weeks": self.edge_weeks,
                       "week_seconds": WEEK, "times": "subtime"}

    def counts(self) -> pd.DataFrame:
        """Users and jobs per class (index: :data:`CLASSES`, columns ``users``, ``jobs``)."""
        grouped = self.users.groupby("class", observed=False)["jobs"].agg(users="size", jobs="sum")
        return grouped.reindex(list(CLASSES), fill_value=0).astype(np.int64)

    def users_of(self, cls: str) -> list[Any]:
        """The users of class ``cls`` in table order."""
        if cls not in CLASSES:
            raise BatfeedError(f"unknown class {cls!r} (expected one of {', '.join(CLASSES)})")
        return list(self.users.index[self.users["class"] == cls])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: parameters, log bounds, counts per class and each user's row."""
        counts = self.counts()
        u = self.users
        rows = [{"user": _plain(user), "first": float(first), "last": float(last), "span": float(span),
                 "jobs": int(jobs), "weeks_active": int(weeks), "class": str(cls)}
                for user, first, last, span, jobs, weeks, cls in zip(
                    u.index, u["first"], u["last"], u["span"], u["jobs"], u["weeks_active"], u["class"], strict=True)]
        return {
            "method": "user classification (Zakay & Feitelson, workload resampling, Table V)",
            "source": self.source,
            "params": dict(self.params),
            "log_start": self.log_start,
            "log_end": self.log_end,
            "anonymous_jobs": self.anonymous_jobs,
            "total": {"users": len(self.users), "jobs": int(self.users["jobs"].sum())},
            "counts": {c: {"users": int(counts.at[c, "users"]), "jobs": int(counts.at[c, "jobs"])} for c in CLASSES},
            "users": rows,
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """:meth:`to_dict` as JSON text, also written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text


def _plain(user: Any) -> Any:
    """A user key as a JSON value (numpy scalars to Python)."""
    return user.item() if isinstance(user, np.generic) else user


def classify_users(workload: dict[str, Any] | str | Path, *, long_term_weeks: float = 12, edge_weeks: float = 4,
                   anonymous: Literal["error", "user"] = "error",
                   edge_rule: Literal["within", "touch"] = "within", source: str | None = None) -> Classification:
    """Classify the users of a workload (dict or Batsim JSON file; ``source`` names it in errors) as
    long-term / temporary / discarded; jobs without a user raise :class:`AnonymousJobs` unless ``anonymous="user"``.

    Zakay & Feitelson (models.md §E, "Classes"): long-term iff span > ``long_term_weeks``; temporary
    users with ``last ≤ T0 + edge_weeks`` or ``first ≥ T1 − edge_weeks`` are discarded ("within";
    "touch": ``first < T0 + edge_weeks`` or ``last > T1 − edge_weeks``; module docstring).
    """
    for name, value in (("long_term_weeks", long_term_weeks), ("edge_weeks", edge_weeks)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
            raise BatfeedError(f"{name} must be a finite number >= 0 (got {value!r})")
    if edge_rule not in ("within", "touch"):
        raise BatfeedError(f"edge_rule must be 'within' or 'touch' (got {edge_rule!r})")
    if anonymous not in ("error", "user"):
        raise BatfeedError(f"anonymous must be 'error' or 'user' (got {anonymous!r})")
    jobs, source = load_jobs(workload, source)
    n = len(jobs)
    subtime, users = job_times_users(jobs, source)
    anonymous_jobs = users.count(None)
    if anonymous_jobs and anonymous == "error":
        raise AnonymousJobs(anonymous_jobs, jobs[users.index(None)].get("id"), source)
    ordered = sorted(set(users), key=_user_key)
    rank = {u: r for r, u in enumerate(ordered)}
    code = np.fromiter((rank[u] for u in users), np.int64, n)
    t0, t1 = float(subtime.min()), float(subtime.max())
    frame = pd.DataFrame({"code": code, "t": subtime})
    g = frame.groupby("code", sort=True)["t"].agg(first="min", last="max", jobs="size")
    per = pd.DataFrame(index=pd.Index(ordered, name="user", dtype=object))
    per["first"] = g["first"].to_numpy()
    per["last"] = g["last"].to_numpy()
    per["span"] = per["last"] - per["first"]
    per["jobs"] = g["jobs"].to_numpy().astype(np.int64)
    per["weeks_active"] = ((per["last"] - t0) // WEEK - (per["first"] - t0) // WEEK + 1).astype(np.int64)
    long_term = per["span"].to_numpy() > long_term_weeks * WEEK
    first, last = per["first"].to_numpy(), per["last"].to_numpy()
    if edge_rule == "within":
        edge = (last <= t0 + edge_weeks * WEEK) | (first >= t1 - edge_weeks * WEEK)
    else:
        edge = (first < t0 + edge_weeks * WEEK) | (last > t1 - edge_weeks * WEEK)
    label = np.where(long_term, "long_term", np.where(edge, "discarded", "temporary"))
    per["class"] = pd.Categorical(label, categories=list(CLASSES))
    return Classification(per, t0, t1, long_term_weeks, edge_weeks, anonymous_jobs, source)
