"""The authors' public weekly resampler: one permutation per user of the log's interior calendar weeks
(freuk/ocst ``src/sampler.ml``; models.md §A, "What the authors actually ran"; docs/resample.md).

The rule, as sampler.ml applies it: a job submitted at ``r`` (the log's own clock) is in week
``wid = floor(r / WEEK)``; ``w0``/``w1`` are the weeks of the first/last job; the *interior* weeks
``w0+1 .. w1-1`` are permuted, without replacement, independently for each user; a job of user u in
interior week ``wid`` moves to week ``w0 + 1 + perm_u[wid - w0 - 1]`` at its offset ``r - wid·WEEK``;
the jobs of the two edge weeks ``w0`` and ``w1`` are dropped.  So a resample is as long as the log
(its interior weeks), unlike :mod:`batfeed.adapters.resample`'s ``weekly`` (draws with replacement of
complete weeks counted from the first job, any number of weeks).  Our choices:

- clock: the SWF submit time ``swf_submit`` (what sampler.ml reads: seconds since the log's
  UnixStartTime; ``subtime`` is re-based to the first kept job by the conversion) when every job has
  one that differs from its ``subtime`` by one constant (a plain conversion: not after a ``load``
  scaling or another resample, whose copied ``swf_submit`` is stale); else ``subtime``.  Recorded as
  ``clock``.
- draws: ``rng = numpy.random.default_rng(seed)``, then ``rng.permutation(interior)`` for each user
  in the order of :mod:`~batfeed.adapters.resample` (numbers, strings, then the anonymous user: the
  jobs without ``user``, permuted together).  sampler.ml's OCaml ``Random`` draws are not reproduced.
- output: re-based so that the first output job submits at 0 (``time_shift``: the clock time of
  subtime 0); as ``weekly``'s otherwise: sorted by subtime (ties: user rank, input order), ids 0, 1,
  ...; every other field copied, plus ``resampled_from`` (original id) and ``resampled_week`` (the
  original week id ``wid`` on the clock); only the profiles used; ``nb_res`` kept; the top-level
  ``batfeed_resample`` entry records the source, seed, weeks, job counts and this rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from batfeed.adapters.resample import WEEK, JobTable, Resampled

from batfeed.errors import BatfeedError, InputError

__all__ = ["DRAWS", "METHOD", "PermuteLog", "log_clock", "resample_permute"]

METHOD = "permute-weeks (Gaussier et al.'s authors' sampler, freuk/ocst src/sampler.ml)"
DRAWS = ("rng = numpy.random.default_rng(seed); for each user rank (numbers, strings, anonymous): "
         "rng.permutation(interior weeks): the user's jobs of interior week i move to interior week perm[i]")
CLOCK_TOLERANCE = 1e-3  # seconds: swf_submit - subtime must be this constant to be the jobs' clock


def log_clock(jobs: list[dict[str, Any]], subtime: np.ndarray) -> tuple[np.ndarray, str]:
    """The submit times on the log's own clock and its name: ``swf_submit`` when every job has a finite
    one at a constant distance from its ``subtime``, else ``subtime`` itself."""
    submits = [job.get("swf_submit") for job in jobs]
    if all(isinstance(r, int | float) and not isinstance(r, bool) for r in submits):
        clock = np.array(submits, dtype=float)
        if np.isfinite(clock).all():
            shift = clock - subtime
            if float(shift.max() - shift.min()) <= CLOCK_TOLERANCE:
                return clock, "swf_submit"
    return subtime, "subtime"


class PermuteLog(JobTable):
    """A workload prepared for permutation resampling: each job's calendar week and offset on the log's
    clock, the interior weeks' jobs, once for any number of seeds.  Build it with :meth:`load`."""

    def __init__(self, data: dict[str, Any], source: str = "in-memory", sha256: str | None = None):
        super().__init__(data, source, sha256)
        clock, self.clock = log_clock(data["jobs"], self.subtime)
        week = np.floor(clock / WEEK).astype(np.int64)
        self.first_week, self.last_week = int(week.min()), int(week.max())
        self.interior = self.last_week - self.first_week - 1
        where = f"weeks {self.first_week}..{self.last_week} of the {self.clock} clock"
        if self.interior < 1:
            raise InputError(f"the jobs lie in {self.interior + 2} calendar week(s) ({where}): fewer than 3, so no "
                             "interior week to permute (the first and last weeks are dropped)", source)
        self.week, self.offset = week, clock - week * float(WEEK)
        self.kept = np.flatnonzero((week > self.first_week) & (week < self.last_week))  # input order
        self.dropped = len(week) - len(self.kept)  # jobs of the two edge weeks
        if not len(self.kept):
            raise InputError(f"no job in the {self.interior} interior week(s) ({where}): every job is in the "
                             "first or last calendar week, which are dropped", source)

    def draws(self, seed: int) -> np.ndarray:
        """Each user's permutation: ``perm[r, i]`` = the interior week (0-based) to which user rank r's jobs
        of interior week i move; an int64 array (users, interior weeks)."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise BatfeedError(f"seed must be an integer >= 0 (got {seed!r})")
        rng = np.random.default_rng(int(seed))
        perms = [rng.permutation(self.interior) for _ in self.users]
        return np.array(perms, dtype=np.int64).reshape(len(self.users), self.interior)

    def resample(self, seed: int) -> Resampled:
        """The resample with ``seed`` (vectorised); its ``drawn[k, r]`` is the original week id whose jobs of
        user rank r land in output week k, ``weeks`` the number of interior weeks."""
        perm = self.draws(seed)
        src, w0 = self.kept, self.first_week + 1
        user, week = self.ucode[src], self.week[src]
        t = (w0 + perm[user, week - w0]) * float(WEEK) + self.offset[src]
        shift = float(t.min())
        subtime = t - shift
        order = np.lexsort((user, subtime))  # stable: ties by user rank, then input order (src ascends)
        drawn = (w0 + np.argsort(perm, axis=1)).T.copy()
        info: dict[str, Any] = {
            "method": METHOD, **self.provenance(), "seed": int(seed), "clock": self.clock, "week_seconds": WEEK,
            "weeks": self.interior, "log_weeks": self.interior + 2, "first_week": self.first_week,
            "last_week": self.last_week, "time_shift": shift, "source_unix_start": self.data.get("unix_start"),
            "jobs_in": len(self.subtime), "jobs_out": len(src), "dropped_edge_jobs": self.dropped,
            "users": len(self.users), "anonymous_jobs": self.anonymous, "draws": DRAWS}
        return Resampled(self, self.interior, int(seed), drawn, src[order], subtime[order], week[order], info)


def resample_permute(workload: dict[str, Any] | str | Path, seed: int) -> dict[str, Any]:
    """The permutation resample of ``workload`` (dict or Batsim workload JSON file) with ``seed`` as a
    Batsim workload dict; see the module docstring and :class:`PermuteLog` for many seeds."""
    return PermuteLog.load(workload).resample(seed).to_dict()
