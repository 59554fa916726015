"""User-based workload resampling of Zakay & Feitelson, *Workload resampling for performance evaluation
of parallel job schedulers* (models.md §E [RES], "Generation", "Load factor f").

Users are classified by :func:`batfeed.users.classify.classify_users` (long-term / temporary;
discarded users are unused).  A user's jobs are kept as one sequence (input sorted by subtime, stable)
and only ever shifted by whole weeks of the log's week grid (weeks ``[T0 + i·WEEK, T0 + (i+1)·WEEK)``,
``T0`` = the log's first subtime), so day-of-week, time-of-day, order, gaps and every field are kept.
Output time 0 is the start of output week 0; jobs outside ``[0, weeks·WEEK)`` are dropped.

Rare behaviours (RB, optional): with ``rb`` (flurry windows of :mod:`batfeed.users.flurry`, or
``"detect"`` for its calibrated defaults) each window's jobs (its user, ``begin <= subtime < end``) leave
the regular pools — classification runs on the remaining jobs — and form one RB unit each.  With
``rb_npw > 0`` each week's ``k`` arrivals hold ``n_rb ~ Binomial(k, rb_npw/λ)`` RB units (models.md
pseudo-code; so on average ``f·rb_npw`` per week, the total unchanged), at most |RB| (without
replacement), the rest temporary users; an RB unit is emitted whole from its first job, its first job's
week at output week w.  RB jobs carry ``resampled_rb: true`` so that metrics can exclude them (the paper's
RB experiments do).  ``rb_npw`` must be ≤ λ.

Generation with load factor ``f`` (``load``); the paper's UNDEF points are resolved as models.md "REC":

- **long-term init**: ``c = f·|LT|`` copies (fractional part: one Bernoulli draw, so E[c] = f·|LT|);
  every user gets ``c // |LT|`` copies, ``c mod |LT|`` users drawn uniformly without replacement get
  one more (replicas only after every user is used once).  User u draws a phase
  ``a_u ~ U{0, .., weeks_active_u − 1}``; its copy k of m is at phase ``(a_u + ⌊k·P_u/m⌋) mod P_u``
  (replicas spread evenly over the period, 2 copies P_u/2 apart: REC "≥ L/2 weeks apart").
  A copy at phase p < weeks_active emits its jobs from relative week p on (REC "only jobs from their
  start week on") with relative week p at output week 0; at a phase inside the restart gap its first
  full copy starts at output week ``P_u − p``.
- **long-term restart**: the paper's gap ``(first_u − T0) + (T1 − last_u)`` (period = log length
  ``T1 − T0``) rounded *up* to a whole-week shift: each restart is the previous copy shifted by
  ``P_u = max(⌈(T1 − T0)/WEEK⌉, weeks_active_u)`` weeks (≥ 1), i.e. gap + (P_u·WEEK − (T1 − T0));
  exact when the log length is a whole number of weeks.
- **temporary init**: count ``~ Poisson(f·μ)``, μ = mean number of temporary users present per
  calendar week of the log (``Σ weeks_active / L``, L = ``week(T1) + 1`` weeks); users drawn ∝ weeks
  active without replacement (a further pass when the count exceeds the pool), each at a uniform
  week of its activity (emitting from that week on, as long-term).
- **weekly arrivals**, output weeks ``w = 1 .. weeks − 1`` (week 0's arrivals are in the init, which
  samples present (user, week) pairs): ``k ~ Binomial(n, f·λ/n)``, λ = |TMP| / L (arrival rate over
  the whole log), ``n = max(|TMP|, ⌈f·λ⌉)`` (REC: increase n when f·λ > pool); k is capped at |TMP|
  (never the same user twice in one week); users uniform without replacement, each from its first
  job, its week-of-first-job at output week w.  Temporary users never restart.

Draw order, all from ``numpy.random.default_rng(seed)``: (1) ``random()`` for the fractional long-term
count; (2) ``permutation(|LT|)`` (its first ``c mod |LT|`` get the extra copy); (3) ``integers(0,
weeks_active)`` for every long-term user (table order); (4) ``poisson(f·μ)``; (5) per pass
``choice(|TMP|, size, replace=False, p=weeks_active/Σ)``; (6) ``integers(0, weeks_active)`` of the
chosen temporary users; (7) ``binomial(n, f·λ/n, size=weeks−1)``; (7b) only when rb_npw > 0,
``binomial(k, rb_npw/λ)`` (vector over the weeks); (8) per week with k − n_rb > 0,
``choice(|TMP|, k − n_rb, replace=False)``, then (8b) with n_rb > 0 ``choice(|RB|, n_rb, replace=False)``;
(3) is skipped when |LT| = 0 and (4)-(8b) when |TMP| = 0.
Same seed → same output.

Output (conventions of :mod:`batfeed.adapters.resample`): jobs sorted by subtime (ties: copy creation
order, then sequence position), ids 0, 1, ...; ``user`` = a fresh id per emitted copy (each init,
restart, arrival; numbered by first output job); every other field copied plus ``resampled_from``
(original id), ``resampled_week`` (original week on the log grid), ``resampled_user`` (original user)
and ``resampled_copy`` (copy id, = the new user), and ``resampled_rb: true`` on RB jobs; only the profiles
used; ``nb_res`` kept; a top-level ``batfeed_resample`` entry.  Write it with
:func:`batfeed.adapters.resample.write_workload_file`.
:func:`build_pools` does the per-log work (loading, RB split, classification, pools) once for many seeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from batfeed.adapters.resample import WEEK
from batfeed.users.classify import Classification, classify_users, job_times_users
from batfeed.users.flurry import Flurry, detect_flurries, window_jobs

from batfeed.errors import BatfeedError, InputError

__all__ = ["METHOD", "Pools", "build_pools", "resample_users"]

METHOD = "user-based (Zakay & Feitelson, workload resampling)"
DRAWS = ("default_rng(seed): random() LT fraction; permutation(|LT|) extra copies; integers(0, weeks_active) "
         "LT phases; poisson(f*mu) TMP init; choice(|TMP|, p ~ weeks_active, no replacement) per pass; "
         "integers(0, weeks_active) TMP starts; binomial(n, f*lambda/n, weeks-1); [rb_npw > 0: binomial(k, "
         "rb_npw/lambda)]; per week choice(|TMP|, k - n_rb, no replacement) [then choice(|RB|, n_rb, no "
         "replacement)]")
_ADDED = ("resampled_from", "resampled_week", "resampled_user", "resampled_copy", "resampled_rb")


@dataclass
class _User:
    """One pool unit (a user, or an RB window): job indices in sequence order, their week relative to the
    first job's week."""

    key: Any
    idx: np.ndarray  # input job indices, sorted by subtime (stable)
    rel: np.ndarray  # relative week of each job (0 = week of the first job)
    w0: int  # log week of the first job
    weeks_active: int


@dataclass
class Pools:
    """A log's pools (:func:`build_pools`): long-term, temporary and RB units on the log's week grid."""

    data: dict[str, Any]
    source: str  # the workload's path (its file name is recorded in the output) or "in-memory"
    subtime: np.ndarray  # seconds from the log start T0
    lweek: np.ndarray  # log week of each job
    t0: float
    t1: float
    log_weeks: int  # L, calendar weeks of the log
    period: int  # ⌈(T1 − T0) / WEEK⌉
    lt: list[_User]
    tmp: list[_User]
    rb: list[_User]
    classes: Classification  # of the regular jobs (RB windows removed)
    flurries: list[Flurry]

    @property
    def discarded(self) -> int:
        """Discarded (edge) users."""
        return len(self.classes.users_of("discarded"))


def _load(workload: dict[str, Any] | str | Path, source: str | Path | None) -> tuple[dict[str, Any], str]:
    """The workload dict and the name of its source in errors (``source``, else the path or ``in-memory``)."""
    if isinstance(workload, dict):
        data, shown = workload, "in-memory"
    else:
        from batfeed.adapters.workload import load_workload_json

        data, shown = load_workload_json(workload), str(workload)
    shown = shown if source is None else str(source)
    if not isinstance(data.get("jobs"), list) or not isinstance(data.get("profiles"), dict):
        raise InputError("not a Batsim workload (no 'jobs' array or 'profiles' object)", shown)
    return data, shown


def build_pools(workload: dict[str, Any] | str | Path, *, rb: list[Flurry] | Literal["detect"] | None = None,
                anonymous: Literal["error", "user"] = "error", source: str | Path | None = None) -> Pools:
    """Load ``workload``, split off the RB windows ``rb`` (module docstring), classify the remaining jobs'
    users and build the long-term, temporary and RB pools.  ``source``: the workload's name in errors (e.g.
    the SWF trace it was converted from; its file name is recorded in the output).  A log whose every user is
    discarded (nothing to resample) is an :class:`InputError`."""
    data, shown = _load(workload, source)
    jobs = data["jobs"]
    if not jobs:
        raise InputError("no jobs to resample", shown)
    times, users = job_times_users(jobs, shown)
    flurries = detect_flurries(data) if rb == "detect" else list(rb or [])
    rb_idx = window_jobs(times, users, flurries)
    is_rb = np.zeros(len(jobs), bool)
    for idx in rb_idx:
        is_rb[idx] = True
    if flurries:
        if is_rb.all():
            raise InputError("every job is in a rare-behaviour window: no regular users left", shown)
        regular = [j for j, r in zip(jobs, is_rb.tolist(), strict=True) if not r]
        cls = classify_users({"jobs": regular, "profiles": data["profiles"]}, anonymous=anonymous, source=shown)
    else:
        cls = classify_users(data, anonymous=anonymous, source=shown)
    if (cls.users["class"] == "discarded").all():
        n = len(cls.users)
        raise InputError(f"no user to resample: the jobs span {(cls.log_end - cls.log_start) / 86400:.2f} days and "
                         f"{'the only user is' if n == 1 else f'all {n} users are'} discarded (a temporary user "
                         f"active only within {cls.edge_weeks:g} weeks of the log start or end is taken as truncated)",
                         shown)
    t0, t1 = float(times.min()), float(times.max())
    subtime = times - t0
    lweek = (subtime // WEEK).astype(np.int64)
    by_user: dict[Any, list[int]] = {}
    for i, (user, r) in enumerate(zip(users, is_rb.tolist(), strict=True)):
        if not r:
            by_user.setdefault(user, []).append(i)

    def unit(key: Any, idx: list[int] | np.ndarray) -> _User:  # weeks active on the whole log's grid (RB jobs included)
        ix = np.asarray(idx, dtype=np.int64)
        ix = ix[np.argsort(subtime[ix], kind="stable")]
        w0 = int(lweek[ix[0]])
        rel = lweek[ix] - w0
        return _User(key, ix, rel, w0, int(rel[-1]) + 1)

    def pool(name: str) -> list[_User]:
        return [unit(k, by_user[k]) for k in cls.users_of(name)]

    rb_units = [unit((f.user, f.begin, f.end), idx) for f, idx in zip(flurries, rb_idx, strict=True) if len(idx)]
    return Pools(data, shown, subtime, lweek, t0, t1, int(lweek.max()) + 1, max(1, math.ceil((t1 - t0) / WEEK)),
                 pool("long_term"), pool("temporary"), rb_units, cls, flurries)


def _check(name: str, value: Any, integer: bool, low: float) -> None:
    if integer:
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise BatfeedError(f"{name} must be an integer >= {low:g} (got {value!r})")
    elif isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < low:
        raise BatfeedError(f"{name} must be a finite number >= {low:g} (got {value!r})")


def resample_users(workload: dict[str, Any] | str | Path | Pools, weeks: int, seed: int, *, load: float = 1.0,
                   rb_npw: float = 0.0, rb: list[Flurry] | Literal["detect"] | None = None,
                   anonymous: Literal["error", "user"] = "error") -> dict[str, Any]:
    """A ``weeks``-week user-based resample (Zakay & Feitelson, models.md §E) of ``workload`` (dict,
    Batsim JSON file or :class:`Pools`; ``rb``/``anonymous`` apply when building pools) at load factor
    ``load``, with ``rb_npw`` RB arrivals per week, as a Batsim workload dict (module docstring)."""
    _check("weeks", weeks, True, 1)
    _check("seed", seed, True, 0)
    _check("load", load, False, 0)
    _check("rb_npw", rb_npw, False, 0)
    weeks, seed, f, rb_npw = int(weeks), int(seed), float(load), float(rb_npw)
    pools = workload if isinstance(workload, Pools) else build_pools(workload, rb=rb, anonymous=anonymous)
    data, jobs, subtime, lweek = pools.data, pools.data["jobs"], pools.subtime, pools.lweek
    lt, tmp, rbp = pools.lt, pools.tmp, pools.rb
    log_weeks, period = pools.log_weeks, pools.period
    lam = len(tmp) / log_weeks
    if rb_npw > 0:
        if not rbp:
            raise BatfeedError(f"rb_npw = {rb_npw:g} needs rare-behaviour windows, and {pools.source} has none "
                               "(pass rb='detect' or a list of flurries)")
        if rb_npw > lam:
            raise BatfeedError(f"rb_npw = {rb_npw:g} exceeds the weekly temporary arrival rate {lam:.3g} of "
                               f"{pools.source} (RB arrivals are taken out of it)")
    rng = np.random.default_rng(seed)
    copies: list[tuple[_User, int, int]] = []  # (unit, shift in weeks, first relative week emitted)
    horizon = weeks * WEEK

    # long-term init and restarts, draws (1)-(3)
    x = f * len(lt)
    c_lt = int(x) + int(rng.random() < x - int(x))
    perm = rng.permutation(len(lt))
    phases = rng.integers(0, [u.weeks_active for u in lt]) if lt else np.empty(0, np.int64)
    extra = np.zeros(len(lt), np.int64)
    if lt:
        extra[perm[:c_lt % len(lt)]] = 1
    for r, u in enumerate(lt):
        m = c_lt // len(lt) + int(extra[r])
        p_u = max(period, u.weeks_active)
        for k in range(m):
            p = (int(phases[r]) + (k * p_u) // m) % p_u
            if p < u.weeks_active:  # inside the activity: emit from relative week p, at output week 0
                start, frm = -p, p
            else:  # inside the restart gap: first full copy at output week p_u − p
                start, frm = p_u - p, 0
            while start < weeks:
                copies.append((u, start - u.w0, frm))
                start, frm = start + p_u, 0

    # temporary init, draws (4)-(6)
    wa = np.array([u.weeks_active for u in tmp], dtype=float)
    mu = float(wa.sum()) / log_weeks
    chosen: list[int] = []
    if tmp:
        count = int(rng.poisson(f * mu))
        while len(chosen) < count:
            size = min(count - len(chosen), len(tmp))
            chosen += rng.choice(len(tmp), size=size, replace=False, p=wa / wa.sum()).tolist()
        starts = rng.integers(0, wa[chosen].astype(np.int64)) if chosen else []
        for r, a in zip(chosen, np.asarray(starts).tolist(), strict=True):
            copies.append((tmp[r], -a - tmp[r].w0, a))

    # weekly arrivals, draws (7)-(8b): k temporary users, n_rb of them replaced by RB units
    n_binom = max(len(tmp), math.ceil(f * lam))
    arrivals = rb_arrivals = 0
    rb_copies: set[int] = set()
    if tmp and weeks > 1:
        ks = np.minimum(rng.binomial(n_binom, f * lam / n_binom, size=weeks - 1), len(tmp))
        n_rbs = rng.binomial(ks, rb_npw / lam) if rb_npw > 0 else np.zeros_like(ks)
        n_rbs = np.minimum(n_rbs, len(rbp))
        for w, (k, n_rb) in enumerate(zip(ks.tolist(), n_rbs.tolist(), strict=True), start=1):
            if k - n_rb:
                for r in rng.choice(len(tmp), size=k - n_rb, replace=False).tolist():
                    copies.append((tmp[r], w - tmp[r].w0, 0))
            if n_rb:
                for r in rng.choice(len(rbp), size=n_rb, replace=False).tolist():
                    rb_copies.add(len(copies))
                    copies.append((rbp[r], w - rbp[r].w0, 0))
            arrivals += k - n_rb
            rb_arrivals += n_rb

    # emission: each copy's suffix from its first relative week, shifted by whole weeks
    parts_src, parts_t, parts_copy, parts_pos = [], [], [], []
    for cid, (u, shift, frm) in enumerate(copies):
        sel = u.idx[u.rel >= frm]
        t = subtime[sel] + shift * WEEK
        keep = t < horizon
        parts_src.append(sel[keep])
        parts_t.append(t[keep])
        parts_copy.append(np.full(int(keep.sum()), cid, np.int64))
        parts_pos.append(np.flatnonzero(keep))
    if parts_src:
        src, t_out = np.concatenate(parts_src), np.concatenate(parts_t)
        copy, pos = np.concatenate(parts_copy), np.concatenate(parts_pos)
    else:
        src, t_out = np.empty(0, np.int64), np.empty(0)
        copy, pos = np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.lexsort((pos, copy, t_out))
    src, t_out, copy = src[order], t_out[order], copy[order]
    used, first_seen = np.unique(copy, return_index=True)
    new_user = np.empty(len(copies), np.int64)
    new_user[used[np.argsort(first_seen)]] = np.arange(len(used))

    out_jobs = []
    for new, (i, t, c) in enumerate(zip(src.tolist(), t_out.tolist(), copy.tolist(), strict=True)):
        job = jobs[i]
        rest = {k: v for k, v in job.items() if k not in ("id", "subtime", *_ADDED)}
        uid = int(new_user[c])
        rest["user"] = uid
        out = {"id": new, "subtime": t, **rest, "resampled_from": job["id"], "resampled_week": int(lweek[i]),
               "resampled_user": job.get("user"), "resampled_copy": uid}
        if c in rb_copies:
            out["resampled_rb"] = True
        out_jobs.append(out)
    names = list(data["profiles"])
    used_profiles = {j["profile"] for j in out_jobs}
    missing = used_profiles - set(names)
    if missing:
        raise InputError(f"profile(s) {sorted(missing)!r} not in 'profiles'", pools.source)
    recorded = pools.source if pools.source == "in-memory" else Path(pools.source).name
    info = {"method": METHOD, "source": recorded, "weeks": weeks, "seed": seed, "load": f,
            "week_seconds": WEEK, "log_start": pools.t0, "log_end": pools.t1, "log_weeks": log_weeks,
            "period_weeks": period,
            "source_unix_start": data.get("unix_start"), "jobs_in": len(jobs), "jobs_out": len(out_jobs),
            "long_term_users": len(lt), "long_term_copies": c_lt, "temporary_users": len(tmp),
            "temporary_init": len(chosen), "temporary_mean_present": mu, "temporary_arrival_rate": lam,
            "temporary_arrivals": arrivals, "binomial_n": n_binom, "rb_npw": rb_npw,
            "rb_windows": len(rbp), "rb_pool_jobs": int(sum(len(u.idx) for u in rbp)), "rb_arrivals": rb_arrivals,
            "rb_jobs_out": sum(1 for j in out_jobs if "resampled_rb" in j),
            "discarded_users": pools.discarded, "copies": len(copies),
            "users_out": len(used), "draws": DRAWS}
    return {"nb_res": data.get("nb_res"), "batfeed_resample": info, "jobs": out_jobs,
            "profiles": {n: data["profiles"][n] for n in names if n in used_profiles}}

