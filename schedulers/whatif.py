"""What-if simulations of [TUNE]'s full and noisy feedback (models.md §A, "Online selection").

The cost of policy P_i for a period is the total wait of the jobs submitted in that period,
replayed alone under EASY(P_i, Θ) from an empty machine until drained, with their actual run
times.  A replay is exactly ``batfeed.api.simulate_jobs(jobs, nb_machines, "easy", {"policy": P_i,
...})`` (same scheduler, same Batsim semantics; ``tests/test_tuned_easy.py`` checks it), minus what a
replay does not need.  :class:`WhatIf` runs it one of two ways:

- **lean** (default, when every submission time, run time and walltime is a whole number of seconds and
  the reservations are counted): :func:`replay.easy_starts`, EASY's own queue index, profile and
  compiled decision pass driven by the event loop the engine amounts to on such jobs, without the
  engine (3.7 times faster on KTH-SP2's what-if replays; ``tests/test_whatif_replay.py`` checks it
  against the engine, job by job);
- **on the engine** otherwise (``lean=False`` forces it): batfeed's embedded engine with the direct
  driver and :class:`~batfeed.schedulers.easy.Easy`; the jobs become engine objects directly (no
  DataFrame, no per-job validation: they were validated when the real simulation loaded them), the
  platform (``nb_machines`` link-less hosts) and its host lists are built once per size and cached
  (:class:`_Replay`), and the engine's end-of-run accounting (O(machines) per run: 40 ms on CEA-Curie's
  93,312 machines) and outputs are skipped; the waits are read from the jobs.

Either way, an exact shortcut: when the jobs never need more than the machine at once (at every instant,
counting each job over the closed interval [r, r + p]), every job starts at its submission under every
policy (at each decision all waiting jobs fit together, so EASY starts them all whatever their order),
and every cost is 0 without simulating.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Any, NamedTuple

from batfeed.schedulers.replay import ReplayJob, easy_starts, exact, replays

from batfeed.api import homogeneous_platform
from batfeed.engine.direct import DirectDriver
from batfeed.engine.machines import Machines
from batfeed.engine.platform import Platform
from batfeed.engine.simulator import Simulator
from batfeed.engine.workload import Job, Profile, Workload, r6
from batfeed.errors import InputError

__all__ = ["PastJob", "WhatIf", "never_contend"]


_Lean = tuple[list[ReplayJob], list[float], list[ReplayJob] | None]   # jobs, durations (all), queued jobs


class PastJob(NamedTuple):
    """A job as the tuning scheduler recorded it at submission (what a replay needs)."""

    id: str                   # Batsim's job id ("w0!12")
    subtime: float
    res: int
    runtime: float            # actual run time (the job's delay profile)
    walltime: float           # requested time; <= 0: none
    json: dict[str, Any]      # the job's JSON, shared read-only (custom fields, for registered policies)


@lru_cache(maxsize=8)
def _hosts(nb_machines: int) -> tuple[Platform, list[str], list[float]]:
    plat = homogeneous_platform(nb_machines)
    return plat, [h.name for h in plat.compute], [h.speed for h in plat.compute]


class _Replay(Simulator):
    """The engine on ``nb_machines`` link-less hosts, without its end-of-run accounting and outputs
    (a replay reads the jobs' starts).  The host lists are built once per size: the engine is set up
    for a one-host platform of the same kind, then given the cached lists of the real one (10 ms per
    replay on CEA-Curie's 93,312 machines otherwise)."""

    def __init__(self, nb_machines: int, workloads: list[Workload]):
        plat, names, speeds = _hosts(nb_machines)
        super().__init__(homogeneous_platform(1), workloads)
        self.platform, self.machines, self.speed = plat, Machines(names), speeds
        self.host_delay = [self.master_delay] * nb_machines    # link-less: every host's message as the master's

    def _result(self, prefix: Any, wall: float) -> None:    # type: ignore[override]
        return None


def never_contend(jobs: Sequence[PastJob], nb_machines: int) -> bool:
    """True when the jobs' sizes, summed over every instant of [r, r + runtime] (closed), never
    exceed ``nb_machines``: then every job starts at its submission under every queue policy."""
    if sum(j.res for j in jobs) <= nb_machines:
        return True
    # starts before ends at the same instant (closed intervals): +q sorts before -q at equal times
    events = sorted([(j.subtime, -j.res) for j in jobs] + [(j.subtime + j.runtime, j.res) for j in jobs])
    return max(accumulate(-d for _, d in events)) <= nb_machines


class WhatIf:
    """Replays of past jobs under EASY(P, Θ) on ``nb_machines`` identical machines.

    ``options``: the EASY options every replay shares (``theta``, ``backfill_policy``, ``ties``,
    ``reservation``); the policy is given per call.  ``lean``: replay without the engine when the jobs
    allow it (module docstring).  ``replays`` counts the simulations run (``on_engine`` of them on the engine) and
    ``skipped`` the replays the exact shortcut avoided (for the log and the measurements).
    """

    def __init__(self, nb_machines: int, options: dict[str, Any], lean: bool = True):
        from batfeed.schedulers.easy import Easy

        self.nb_machines = nb_machines
        self.options = dict(options)
        self.easy = Easy
        self.replays = 0
        self.skipped = 0
        # lean only where Easy.schedule runs its pass alone, read from a scheduler with these options
        self.lean = lean and replays(Easy(self.options))
        self.on_engine = 0                     # replays run on the engine (the others: lean)

    def waits(self, jobs: Sequence[PastJob], policy: str, queued: Sequence[PastJob] = ()) -> list[float]:
        """Each job's wait (input order, then ``queued``'s; NaN if the replay rejected it) under
        EASY(``policy``, Θ).  ``queued``: jobs waiting when the replay begins (:func:`replay.easy_starts`;
        lean replays only)."""
        return self._waits(jobs, policy, self._lean(jobs, queued), queued)

    def _waits(self, jobs: Sequence[PastJob], policy: str, lean: _Lean | None,
               queued: Sequence[PastJob] = ()) -> list[float]:
        """:meth:`waits`, lean with ``lean`` (:meth:`_lean`'s jobs and durations), else on the engine."""
        if lean is not None:
            sched = self.easy({**self.options, "policy": policy})
            starts = easy_starts(lean[0], lean[1], self.nb_machines, sched.wq, sched.profile, None, lean[2])
            self.replays += 1
            return [s - float(j.subtime) for s, j in zip(starts, [*jobs, *queued], strict=True)]
        if queued:
            raise InputError(f"tuned_easy option whatif_jobs 'started' needs whole-second submission, run and "
                             f"requested times (a what-if replay beginning with a queue of {len(queued)} jobs)")
        wl = _workload(jobs)
        order = list(wl.jobs)                  # Simulator.run lets go of the workload's jobs
        sim = _Replay(self.nb_machines, [wl])
        sim.run(DirectDriver(self.easy({**self.options, "policy": policy})))
        self.replays += 1
        self.on_engine += 1
        return [j.start - j.subtime if j.start >= 0 else float("nan") for j in order]

    def _lean(self, jobs: Sequence[PastJob], queued: Sequence[PastJob] = ()) -> _Lean | None:
        """The jobs, their durations and the queued jobs for :func:`replay.easy_starts`, or None when the
        engine must replay them (times that are not whole seconds, or no lean replay for these options)."""
        if not self.lean:
            return None
        every = [*jobs, *queued]
        subs = [float(j.subtime) for j in every]
        runs = [float(j.runtime) for j in every]
        walls = [float(j.walltime) if j.walltime > 0 else -1.0 for j in every]
        if not (exact(subs) and exact(runs) and exact(walls)):
            return None
        out = [ReplayJob(f"w0!{j.id}", s, j.res, w, j.json, i)
               for i, (j, s, w) in enumerate(zip(every, subs, walls, strict=True))]
        n = len(jobs)
        return out[:n], [min(r, w) if w > 0 else r for r, w in zip(runs, walls, strict=True)], out[n:] or None

    def cost(self, jobs: Sequence[PastJob], policy: str, queued: Sequence[PastJob] = ()) -> float:
        """Total wait of ``jobs`` (and ``queued``) replayed alone under EASY(``policy``, Θ) until drained."""
        return _total(self.waits(jobs, policy, queued))

    def costs(self, jobs: Sequence[PastJob], policies: Sequence[str], queued: Sequence[PastJob] = ()) -> list[float]:
        """:meth:`cost` for each policy (0 for all, without simulating, when nothing is replayed: no ``jobs``,
        as in ocst, whose replay loops on the submissions; or jobs that never contend and no queue)."""
        if not jobs or (not queued and never_contend(jobs, self.nb_machines)):
            self.skipped += len(policies)
            return [0.0] * len(policies)
        lean = self._lean(jobs, queued)        # the jobs made once for the 12 replays
        return [_total(self._waits(jobs, p, lean, queued)) for p in policies]


def _total(waits: list[float]) -> float:
    """The cost: the waits' sum, rejected jobs (NaN) left out."""
    return sum(w for w in waits if w == w)


def _workload(jobs: Sequence[PastJob]) -> Workload:
    """Engine jobs (workload ``w0``, local names = the original ids) with one delay profile per run time,
    as :func:`batfeed.api.simulate_jobs` builds them."""
    profiles: dict[float, Profile] = {}
    out = []
    for j in jobs:
        d = float(j.runtime)
        prof = profiles.get(d)
        if prof is None:
            name = f"d{int(d)}" if d.is_integer() else f"d{d!r}"
            prof = profiles[d] = Profile(name, "delay", d, 0, {"type": "delay", "delay": d},
                                         {"type": "delay", "delay": r6(d)})
        wall = float(j.walltime) if j.walltime > 0 else -1.0
        full = f"w0!{j.id}"
        out.append(Job(full, "w0", float(j.subtime), j.res, wall, prof, j.json))   # json: read only
    return Workload("w0", "", len(out), {p.name: p for p in profiles.values()}, out)
