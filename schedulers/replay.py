"""What-if replays without the engine: EASY's compiled pass (:func:`passes.easy_count`) driven by the
smallest event loop that gives it the messages the engine would (issue 27).

A what-if replay (:mod:`whatif`) asks one thing of a simulation: when each job starts under EASY(P, Θ)
on ``nb_machines`` identical machines, from an empty machine until drained.  On the engine that is a
Batsim run on a link-less platform; when every submission time, run time and walltime is a whole
number of seconds, nothing in it can round (the engine then keeps exact dates, docs/engine.md), and
the scheduler sees one message per instant at which something happens:

- the jobs submitted at t (Batsim's submitter sends them by (subtime, id string),
  ``job_comparator_subtime_number``) and the jobs ending at t (start + run time, or start + walltime
  when the run time reaches it: Batsim kills it then), in one message; the scheduler rejects a job
  wider than the machine or of no machine, and queues the others;
- one more message at t for the jobs that a decision at t started and that end at once (run time 0);
- after each message, ``BackfillScheduler.onNoMoreEvents``: EASY decides if a job was queued or ended
  since its last decision and some job waits.

:func:`easy_starts` is that loop; it calls the scheduler's own queue index, profile, machine set and
decision pass, so the algorithm stays in one place.  ``tests/test_whatif_replay.py`` checks that it
gives the engine's start times, on both kernel paths.
"""

from __future__ import annotations

import heapq
from typing import Any

from batfeed.schedulers import passes
from batfeed.schedulers.jobqueue import WaitQueue
from batfeed.schedulers.profile import Profile
from batfeed.schedulers.resources import FreeMachines, Intervals

NAN = float("nan")


class ReplayJob:
    """The part of a pybatsim ``Job`` that the queue index and the policies read (a replay's decisions give
    no allocation: :func:`passes.easy_count` with ``allocation`` False).  ``json``: the job's JSON object,
    or an object whose ``json_dict`` gives it when a registered policy first reads it (an engine job)."""

    __slots__ = ("id", "submit_time", "requested_time", "requested_resources", "_json", "index")

    def __init__(self, jid: str, subtime: float, res: int, walltime: float, json: Any, index: int) -> None:
        self.id = jid
        self.submit_time = subtime
        self.requested_time = walltime          # -1: none
        self.requested_resources = res
        self._json = json
        self.index = index                      # position in the caller's list

    @property
    def json_dict(self) -> dict[str, Any]:
        js = self._json
        return js if isinstance(js, dict) else js.json_dict


def replays(sched: Any) -> bool:
    """True when an ``Easy`` scheduler decides by its compiled pass alone, as :func:`easy_starts` replays it
    (``Easy.schedule``'s condition: count reservations, no planned window, no traced reservation)."""
    return bool(sched._pass and not sched.windows and not sched.trace_reservations)


def exact(values: list[float]) -> bool:
    """True when every value is a whole number of seconds that a double holds exactly with room to add."""
    for v in values:
        if not (v == v and -4.5e15 < v < 4.5e15 and v == int(v)):
            return False
    return True


def easy_starts(jobs: list[ReplayJob], durations: list[float], nb_machines: int, wq: WaitQueue,
                profile: Profile, order: list[int] | None = None,
                queued: list[ReplayJob] | None = None) -> list[float]:
    """Start time of each job of ``jobs`` (NaN: rejected) under the EASY pass on ``nb_machines`` machines.

    ``durations[i]``: how long job i holds its machines (its run time, or its walltime if the run time
    reaches it); ``wq`` and ``profile``: an ``Easy`` scheduler's, empty; ``order``, if given, receives
    the started jobs' indexes in the order they start (that of their ends at equal times).

    ``queued``: jobs already waiting when the replay begins (ocst's what-if, ``whatif`` "started"): queued
    in this order at the first submission of ``jobs``, before the jobs submitted then, whatever their own
    submission times (a policy still keys them by those); nothing is replayed when ``jobs`` is empty.  The
    indexes of all the jobs number ``jobs`` and ``queued`` together (the list returned is that long)."""
    n = len(jobs)
    starts = [NAN] * (n + (len(queued) if queued else 0))
    subs = sorted(jobs, key=_submission_key)
    free = FreeMachines(nb_machines)
    running: dict[str, Intervals] = {}
    to_start: list[Any] = []
    ends: list[tuple[float, int, ReplayJob]] = []        # (end, start order, job)
    started = 0
    idle: passes.Idle | None = None
    k = 0
    while k < n or ends:
        t = ends[0][0] if ends else float("inf")
        if k < n:
            t = min(t, float(subs[k].submit_time))
        changed = False
        while ends and ends[0][0] <= t:
            job = heapq.heappop(ends)[2]
            ivs = running.pop(job.id)
            free.release(ivs)
            profile.remove(job.id)
            changed = True
        if queued:                                        # the first instant: the queue the replay begins with
            for job in queued:
                if 0 < job.requested_resources <= nb_machines:
                    wq.push(job, t, None)
                    changed = True
            queued = None
        while k < n and float(subs[k].submit_time) <= t:
            job = subs[k]
            k += 1
            q = job.requested_resources
            if 0 < q <= nb_machines:
                wq.push(job, t, None)
                changed = True
        if changed and wq.n:
            idle = passes.easy_count(wq, profile, free, running, to_start, t, idle, False)
            for job in to_start:
                i = job.index
                starts[i] = t
                heapq.heappush(ends, (t + durations[i], started, job))
                started += 1
                if order is not None:
                    order.append(i)
            to_start.clear()
    return starts


def _submission_key(job: ReplayJob) -> tuple[float, str]:
    return (float(job.submit_time), job.id)
