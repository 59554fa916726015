"""Conservative backfilling (Mu'alem & Feitelson 2001; models.md §B).

Every waiting job holds a reservation in the shared availability profile (running jobs' expected
ends s + p̃, other reservations, maintenance windows); a job starts before the jobs ahead of it
only if it delays none of their reservations.  At each decision:

1. if a job ended before its expected end or machines came back: *compression* — in priority
   order (option ``policy``, FCFS by default), each job's reservation is removed and put back at
   its earliest fit, which is never later than before; then again over the jobs ahead of the last
   one that moved, until a pass moves nothing (batsched's ``conservative_bf`` re-inserts every
   queued job after a release the same way); if machines became unavailable, all reservations are
   re-planned in priority order (they may then move later: the guarantee only holds without
   unplanned downtime);
2. each job submitted since the previous decision gets the earliest reservation where q machines
   are free for p̃ seconds, in submission order;
3. every job whose reservation time has come starts on the lowest-numbered free machines (outside
   the maintenance windows its span overlaps; if those constraints leave too few machines, the job
   moves to the next time the profile changes).

Reservations sit at times where something ends (a running job, a reserved job, a maintenance
window), so an event always wakes the scheduler then (the base class asks for a call at the end
of each maintenance window while jobs wait).
Options: ``policy``, ``on_machine_down``, ``maintenance`` (see backfill.py).

Cost (issue 27).  The profile is a :class:`~batfeed.schedulers.step_profile.StepProfile`: finding
a job's earliest fit takes O(log n) tree searches per candidate stretch instead of a walk over
the whole profile.  A compression does not try every reserved job either:
:mod:`batfeed.schedulers.compression` keeps those that provably cannot move out of the passes and
tries the others in the same order, with the same outcome as trying them all (the old
implementation, kept as ``tests/conservative_ref.py``, is the reference of
``tests/test_conservative_fast.py``).  A job starting at its reservation keeps the reservation's
end step as its own (:meth:`StepProfile.take_over`).  The compiled kernel compiles ``steps``,
``step_profile`` and ``compression`` with mypyc (native integers and floats in their loops,
docs/kernel.md); this class stays interpreted.
"""

from __future__ import annotations

import heapq
from typing import Any

from batfeed.schedulers.backfill import BackfillScheduler
from batfeed.schedulers.base import make_procset
from batfeed.schedulers.compression import Compression
from batfeed.schedulers.jobqueue import Entry
from batfeed.schedulers.step_profile import StepProfile
from batsim.batsim import Job
from procset import ProcSet

INF = float("inf")


class Conservative(BackfillScheduler):
    PROFILE_ENDS_IN_STEPS = True

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        self.profile = StepProfile()
        self.res: dict[str, tuple[float, Entry, int]] = {}   # job id -> (reserved start, entry, token)
        self._plan: list[tuple[float, int, int, str]] = []   # heap (start, seq, token, job id), lazy
        self._token = 0
        self._early = False                                  # capacity came back earlier than planned
        self._lost = False                                   # capacity lost (machines down)
        self.cz = Compression(self)

    # ---------------------------------------------------------------- profile bookkeeping
    def _reserve(self, e: Entry, now: float, before: float = INF, not_before: float | None = None,
                 prev: float | None = None, start: float | None = None) -> float:
        free = self.free.count
        t = self.profile.earliest(e.q, e.p, now, free, before, start=start)
        if t == INF and before < INF:
            t = self.profile.earliest(e.q, e.p, now, free)
        if not_before is not None and t < not_before:
            t = self.profile.earliest(e.q, e.p, not_before, free)
        self.profile.reserve(t, e.p, e.q)
        self._token += 1
        self.res[e.id] = (t, e, self._token)
        heapq.heappush(self._plan, (t, e.seq, self._token, e.id))
        self.cz.reserved(e, t, settled=not_before is None)
        if self.trace_reservations and t != prev:
            self.record(now, e, t)
        return t

    def _unreserve(self, e: Entry) -> float:
        t = self.res.pop(e.id)[0]
        self.cz.unreserved(e, t)
        self.profile.unreserve(t, e.p, e.q)
        return t

    def _first_planned(self) -> tuple[float, str] | None:
        """(start, job id) of the first reservation, dropping the stale heap entries on the way."""
        plan, res = self._plan, self.res
        while plan:
            t, _, token, jid = plan[0]
            r = res.get(jid)
            if r is not None and r[2] == token:
                return t, jid
            heapq.heappop(plan)
        return None

    # ---------------------------------------------------------------- callbacks
    def onJobCompletion(self, job: Job) -> None:
        now = self.bs.time()
        known = self.profile.jobs.get(job.id)
        early = known is not None and known[0][0] > now
        ret = 0
        if early:
            self._early = True
            ret = self.profile.ret(job.id)
        super().onJobCompletion(job)
        if early:
            self.cz.raised(now, known[0][0], ret, now)      # free machines rose on [now, end)

    def onNotifyEventMachineUnavailable(self, machines: ProcSet) -> None:
        super().onNotifyEventMachineUnavailable(machines)
        self._lost = True
        self.cz.unsettle_all()

    def onNotifyEventMachineAvailable(self, machines: ProcSet) -> None:
        super().onNotifyEventMachineAvailable(machines)
        self._early = True
        self.cz.unsettle_all()

    # ---------------------------------------------------------------- the algorithm
    def schedule(self) -> None:
        now, wq = self.bs.time(), self.wq
        wq.refresh(now)
        new, wq.new = wq.new, []
        self._ended = False
        self.profile.prune_windows(now)
        if self._lost or self._early:
            if self._lost:                                  # re-plan from scratch
                order = [e for e in wq.ordered() if e.id in self.res]
                olds = [self._unreserve(e) for e in order]
                for e, old in zip(order, olds, strict=True):
                    self._reserve(e, now, prev=old)
            else:                                           # compression: never later than before
                self.cz.compress(now)
            self._early = self._lost = False
        for e in new:
            if e.where >= 0 and e.id not in self.res:
                self._reserve(e, now)
        while (first := self._first_planned()) is not None and first[0] <= now:
            t, jid = first
            e = self.res[jid][1]
            ivs = self.allocate(e, now)
            if ivs is None:                                 # windows leave too few machines now
                self._unreserve(e)
                t1 = self._reserve(e, now, not_before=self._next_change(now))
                # the reservation left [now, t + p̃) (the part not yet past) for [t1, t1 + p̃)
                self.cz.raised(now, t + e.p if t1 >= t + e.p else t1, e.q, now)
                continue
            wq.remove(e)
            if t == now:                                    # the reservation becomes the running job
                del self.res[jid]
                self.cz.unreserved(e, t)
                self.profile.take_over(e.id, t, now + e.p, ivs, e.q)
                e.job.allocation = make_procset(ivs)
                self.running[e.id] = ivs
                self._to_start.append(e.job)
            else:                                           # started late: the profile only drops
                self._unreserve(e)
                self.launch(e, ivs, now)
        t = first[0] if first is not None else INF
        if not self.running and now < t < INF and t not in self._calls:
            self._calls.add(t)                              # safety net: nothing else would wake us
            self.bs.wake_me_up_at(t)

    def _next_change(self, now: float) -> float:
        return self.profile.steps.after(now)
