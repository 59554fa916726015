"""Weekly user resampling of a Batsim workload: the protocol of Gaussier, Lelong, Reis, Trystram,
*Online Tuning of EASY-Backfilling using Queue Reordering Policies* (models.md §A "Protocol").

To make a trace of W weeks from a log: for each simulated week k and each user u of the log, copy
all the jobs u submitted in an original week drawn uniformly (independently per (k, u)), each at
its offset within that week.  The choices the paper leaves open (docs/resample.md):

- original week i = [origin + i·WEEK, origin + (i+1)·WEEK), origin = the log's first subtime;
  only *complete* weeks are drawn (origin + (i+1)·WEEK ≤ the last subtime): a partial last week
  would lower the load of every user drawn from it (the authors' sampler, freuk/ocst
  ``src/sampler.ml``, also skips its partial edge weeks);
- draws: ``numpy.random.default_rng(seed).integers(0, log_weeks, size=(weeks, users))``, row k =
  simulated week k, column = the user's rank (users sorted: numbers, then strings, then the
  anonymous user, i.e. jobs without ``user``, which are resampled together as one user);
- output: jobs sorted by subtime (ties: simulated week, user rank, input order), ids 0, 1, ...
  in that order; every other field copied, plus ``resampled_from`` (original id) and
  ``resampled_week`` (original week); only the profiles used; ``nb_res`` kept; a top-level
  ``batfeed_resample`` entry records the source, weeks, seed and method.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from batfeed.errors import BatfeedError, InputError

__all__ = ["METHOD", "WEEK", "JobTable", "Resampled", "WeeklyLog", "resample_weekly", "write_workload_file"]

WEEK = 604_800  # seconds
METHOD = "weekly-user (Gaussier, Lelong, Reis, Trystram, Online Tuning of EASY-Backfilling)"
DRAWS = ("numpy.random.default_rng(seed).integers(0, log_weeks, size=(weeks, users)): row k = simulated week k, "
         "column = user rank (numbers, strings, anonymous)")
_encode = json.JSONEncoder().encode  # json.dumps with its default arguments
_ADDED = ("resampled_from", "resampled_week")


def _user_key(user: Any) -> tuple[int, Any]:
    """Sort key of a user: numbers, then strings, then the anonymous user (None)."""
    if user is None:
        return (2, "")
    return (1, user) if isinstance(user, str) else (0, user)


def job_time_user(job: dict[str, Any], i: int, source: str) -> tuple[float, Any]:
    """Job ``i``'s ``subtime`` (checked finite) and ``user`` (None when missing; otherwise checked to be
    a finite number or a string), with one-line errors naming the job (its id, else ``#i``)."""
    t = job.get("subtime")
    if not isinstance(t, int | float) or isinstance(t, bool) or not np.isfinite(t):
        raise InputError(f"job {job.get('id', f'#{i}')}: subtime must be a finite number, got {t!r}", source)
    user = job.get("user")
    if user is not None and (not isinstance(user, int | float | str) or isinstance(user, bool)
                             or (isinstance(user, float) and not np.isfinite(user))):
        raise InputError(f"job {job.get('id', f'#{i}')}: user must be a number or a string, got {user!r}", source)
    return t, user


class JobTable:
    """A workload's jobs checked once for resampling: subtimes, users (sorted, ranked), profile codes, and
    each job's JSON text for the writers.  The resamplers build on it (:class:`WeeklyLog`;
    ``resample_permute.PermuteLog``).  Build one with :meth:`load`."""

    def __init__(self, data: dict[str, Any], source: str = "in-memory", sha256: str | None = None):
        jobs, profiles = data.get("jobs"), data.get("profiles")
        if not isinstance(jobs, list) or not isinstance(profiles, dict):
            raise InputError("not a Batsim workload (no 'jobs' array or 'profiles' object)", source)
        if not jobs:
            raise InputError("the workload has no job", source)
        if not isinstance(data.get("nb_res"), int) or isinstance(data["nb_res"], bool):
            raise InputError("the workload has no integer 'nb_res'", source)
        self.data, self.source, self.sha256 = data, source, sha256
        self.profile_names = list(profiles)
        pindex = {name: i for i, name in enumerate(self.profile_names)}
        n = len(jobs)
        subtime, pcode, users = np.empty(n), np.empty(n, np.int64), [None] * n
        for i, job in enumerate(jobs):
            if not isinstance(job, dict) or "id" not in job:
                raise InputError(f"job #{i} has no 'id'", source)
            t, user = job_time_user(job, i, source)
            profile = job.get("profile")
            if (code := pindex.get(profile) if isinstance(profile, str) else None) is None:
                raise InputError(f"job {job['id']}: profile {job.get('profile')!r} is not in 'profiles'", source)
            subtime[i], pcode[i], users[i] = t, code, user
        self.subtime, self.pcode = subtime, pcode
        self.users = sorted(set(users), key=_user_key)
        rank = {u: r for r, u in enumerate(self.users)}
        self.ucode = np.fromiter((rank[u] for u in users), np.int64, n)  # each job's user rank
        self.anonymous = users.count(None)
        self._tails: list[str | None] = [None] * n  # each used job's JSON after id and subtime

    @classmethod
    def load(cls, workload: dict[str, Any] | str | Path, source: str | Path | None = None) -> Self:
        """From a workload dict or a Batsim workload JSON file (plain or gzip/xz-compressed); ``source``:
        the file it was converted from (e.g. an SWF trace), named in errors and recorded with its sha256."""
        if isinstance(workload, dict):
            return cls(workload)
        from batfeed.adapters.workload import load_workload_json

        data = load_workload_json(workload)
        shown = Path(workload if source is None else source)
        with shown.open("rb") as raw:
            sha = hashlib.file_digest(raw, "sha256").hexdigest()
        return cls(data, str(shown), sha)

    def provenance(self) -> dict[str, Any]:
        """``source`` (the file's name, or "in-memory") and ``source_sha256`` (None for a dict)."""
        return {"source": Path(self.source).name if self.sha256 else self.source, "source_sha256": self.sha256}

    def _tail(self, i: int) -> str:
        """Job ``i``'s JSON after its subtime, up to its drawn week: ``, "k": v, ..., "resampled_from":
        ID, "resampled_week": `` (encoded once per source job, reused by every copy and seed)."""
        tail = self._tails[i]
        if tail is None:
            job = self.data["jobs"][i]
            rest = {k: v for k, v in job.items() if k not in ("id", "subtime", *_ADDED)}
            tail = self._tails[i] = ((", " + _encode(rest)[1:-1]) if rest else "") + \
                f', "resampled_from": {_encode(job["id"])}, "resampled_week": '
        return tail


class WeeklyLog(JobTable):
    """A workload prepared for weekly resampling: its jobs grouped by (user, complete week), once for
    any number of draws.  Build it with :meth:`load`."""

    def __init__(self, data: dict[str, Any], source: str = "in-memory", sha256: str | None = None):
        super().__init__(data, source, sha256)
        n = len(self.subtime)
        self.origin = float(self.subtime.min())
        rel = self.subtime - self.origin
        self.span = float(rel.max())
        self.log_weeks = int(self.span // WEEK)  # complete weeks: (i + 1)·WEEK <= span
        if self.log_weeks < 1:
            raise InputError(f"the jobs span {self.span / 86400:.2f} days: less than one complete week to draw from",
                             source)
        week = (rel // WEEK).astype(np.int64)
        self.offset = rel - week * WEEK
        drawable = np.flatnonzero(week < self.log_weeks)
        self.undrawable = n - len(drawable)  # jobs of the partial last week
        cell = self.ucode[drawable] * self.log_weeks + week[drawable]
        # jobs sorted by (user, week) cell, input order within a cell; counts and starts per cell
        self.by_cell = drawable[np.argsort(cell, kind="stable")]
        self.counts = np.bincount(cell, minlength=len(self.users) * self.log_weeks)
        self.starts = np.cumsum(self.counts) - self.counts

    def draws(self, weeks: int, seed: int) -> np.ndarray:
        """The original week of each (simulated week, user rank): an int64 array (weeks, users)."""
        if isinstance(weeks, bool) or not isinstance(weeks, int | np.integer) or weeks < 1:
            raise BatfeedError(f"weeks must be an integer >= 1 (got {weeks!r})")
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise BatfeedError(f"seed must be an integer >= 0 (got {seed!r})")
        return np.random.default_rng(int(seed)).integers(0, self.log_weeks, size=(int(weeks), len(self.users)))

    def resample(self, weeks: int, seed: int) -> Resampled:
        """One resample of ``weeks`` weeks with ``seed`` (vectorised: no Python loop over jobs)."""
        drawn = self.draws(weeks, seed)
        nu = len(self.users)
        cells = (np.arange(nu) * self.log_weeks + drawn).ravel()  # (k, u) in row-major order
        count, start = self.counts[cells], self.starts[cells]
        total = int(count.sum())
        first = np.cumsum(count) - count
        pos = np.repeat(start - first, count) + np.arange(total)
        src = self.by_cell[pos]
        k = np.repeat(np.arange(weeks * nu) // nu, count)
        subtime = k * float(WEEK) + self.offset[src]
        order = np.argsort(subtime, kind="stable")
        info: dict[str, Any] = {"method": METHOD, **self.provenance(), "weeks": int(weeks), "seed": int(seed),
                                "week_seconds": WEEK, "log_weeks": self.log_weeks, "log_origin": self.origin,
                                "source_unix_start": self.data.get("unix_start"), "jobs_in": len(self.subtime),
                                "jobs_out": total, "users": len(self.users), "anonymous_jobs": self.anonymous,
                                "draws": DRAWS}
        return Resampled(self, int(weeks), int(seed), drawn, src[order], subtime[order],
                         np.repeat(drawn.ravel(), count)[order], info)


@dataclass
class Resampled:
    """One resample: the source job of each output job (``src``), its new ``subtime`` and the
    original week it was drawn from, in output order (output job ``i`` has id ``i``); ``drawn``: the
    original week of each (output week, user rank), an int64 array (weeks, users)."""

    log: JobTable
    weeks: int
    seed: int
    drawn: np.ndarray
    src: np.ndarray
    subtime: np.ndarray
    week_from: np.ndarray
    info: dict[str, Any]    # the ``batfeed_resample`` entry

    def top(self) -> dict[str, Any]:
        """The top-level entries: ``nb_res`` and ``batfeed_resample``."""
        return {"nb_res": self.log.data["nb_res"], "batfeed_resample": self.info}

    def profiles(self) -> dict[str, Any]:
        """The profiles the output jobs use, in the source's order."""
        names, profiles = self.log.profile_names, self.log.data["profiles"]
        return {names[c]: profiles[names[c]] for c in np.unique(self.log.pcode[self.src]).tolist()}

    def to_dict(self) -> dict[str, Any]:
        """The resampled Batsim workload as a dict (what :meth:`write` writes)."""
        jobs_in = self.log.data["jobs"]
        jobs = []
        for new, (i, t, d) in enumerate(zip(self.src.tolist(), self.subtime.tolist(), self.week_from.tolist(),
                                            strict=True)):
            job = jobs_in[i]
            rest = {k: v for k, v in job.items() if k not in ("id", "subtime", *_ADDED)}
            jobs.append({"id": new, "subtime": t, **rest, "resampled_from": job["id"], "resampled_week": d})
        return {**self.top(), "jobs": jobs, "profiles": self.profiles()}

    def write(self, path: str | Path) -> Path:
        """Write the workload (one job per line; gzip when ``path`` ends with .gz), byte for byte what
        :func:`write_workload_file` writes of :meth:`to_dict`, without building the job dicts."""
        tail, frepr = self.log._tail, float.__repr__

        def lines() -> Any:
            for new, (i, t, d) in enumerate(zip(self.src.tolist(), self.subtime.tolist(), self.week_from.tolist(),
                                                strict=True)):
                yield f'{{"id": {new}, "subtime": {frepr(t)}{tail(i)}{d}}}'

        return _write(path, self.top(), lines(), self.profiles())


def resample_weekly(workload: dict[str, Any] | str | Path, weeks: int, seed: int) -> dict[str, Any]:
    """A ``weeks``-week weekly user resample of ``workload`` (dict or JSON file) as a Batsim workload
    dict; see the module docstring for the protocol and :class:`WeeklyLog` for many seeds."""
    return WeeklyLog.load(workload).resample(weeks, seed).to_dict()


def write_workload_file(path: str | Path, workload: dict[str, Any]) -> Path:
    """Write a workload dict with one job and profile per line (gzip when ``path`` ends with .gz)."""
    top = {k: v for k, v in workload.items() if k not in ("jobs", "profiles")}
    return _write(path, top, (_encode(job) for job in workload["jobs"]), workload["profiles"])


def _write(path: str | Path, top: dict[str, Any], job_lines: Any, profiles: dict[str, Any]) -> Path:
    from batfeed.adapters.workload import write_workload_stream

    path = Path(path)
    profile_lines = (f"{_encode(name)}: {_encode(p)}" for name, p in profiles.items())
    if path.name.endswith(".gz"):  # no name or time in the gzip header: same bytes for the same workload
        with path.open("wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0) as gz, \
                io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as out:
            write_workload_stream(out, top, job_lines, profile_lines)
    else:
        with path.open("w", encoding="utf-8", newline="\n") as out:
            write_workload_stream(out, top, job_lines, profile_lines)
    return path
