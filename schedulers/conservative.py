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
end step as its own (:meth:`StepProfile.take_over`).  The reservations and the decision's loop are
:class:`~batfeed.schedulers.reservations.Plan`'s: the compiled kernel compiles it with ``steps``,
``step_profile`` and ``compression`` (mypyc: native integers and floats in their loops, native calls
between them, docs/kernel.md); this class stays an interpreted pybatsim scheduler that calls it.
"""

from __future__ import annotations

from typing import Any

from batfeed.schedulers.backfill import BackfillScheduler
from batfeed.schedulers.reservations import Plan
from batfeed.schedulers.step_profile import StepProfile
from batsim.batsim import Job
from procset import ProcSet

INF = float("inf")


class Conservative(BackfillScheduler):
    PROFILE_ENDS_IN_STEPS = True

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        self.profile = StepProfile()
        self.plan = Plan(self, self.profile)
        self.res = self.plan.res                             # job id -> (reserved start, entry, token)
        self.cz = self.plan.cz                               # the compression (compression.py)
        self._early = False                                  # capacity came back earlier than planned
        self._lost = False                                   # capacity lost (machines down)
        cls = type(self)                                     # the plan takes the lowest free machines itself
        self._plain = cls.allocate is BackfillScheduler.allocate and cls.launch is BackfillScheduler.launch

    def onSimulationBegins(self) -> None:
        super().onSimulationBegins()
        self.plan.free = self.free

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
        now, wq, plan = self.bs.time(), self.wq, self.plan
        wq.refresh(now)
        new, wq.new = wq.new, []
        self._ended = False
        self.profile.prune_windows(now)
        plan.trace = self.trace_reservations
        if self._lost:                                      # 1) re-plan from scratch
            plan.replan(now, wq)
        elif self._early:                                   # 1) compression: never later than before
            self.cz.compress(now)
        self._early = self._lost = False
        # 2) reserve the new jobs, 3) start the reservations due (Plan.start)
        t = plan.start(now, new, wq, self.running, self._to_start, self._plain and not self.profile.windows)
        if not self.running and now < t < INF and t not in self._calls:
            self._calls.add(t)                              # safety net: nothing else would wake us
            self.bs.wake_me_up_at(t)
