"""Common base of batfeed's pybatsim schedulers.

It owns the protocol side so that algorithms only decide: Batsim callbacks update the queue
and the free-machine set, the algorithm's :meth:`BatfeedScheduler.schedule` calls
:meth:`start` / :meth:`reject`, and the buffered decisions are sent once per Batsim message
(in ``onNoMoreEvents``), the way batsched separates decisions from the protocol.  Machines
reported unavailable are never allocated; jobs that can never run (more machines than the
platform has, or none) are rejected with a logged reason.
"""

from __future__ import annotations

import logging
from typing import Any

from batfeed.schedulers.passes import make_procset
from batfeed.schedulers.resources import FreeMachines, Intervals, subtract
from batsim.batsim import BatsimScheduler, Job
from procset import ProcSet

__all__ = ["BatfeedScheduler", "make_procset", "procset_intervals"]

log = logging.getLogger("batfeed.schedulers")


def procset_intervals(ps: ProcSet) -> Intervals:
    return [(iv.inf, iv.sup) for iv in ps.intervals()]


class BatfeedScheduler(BatsimScheduler):
    """Subclass and implement :meth:`schedule` (and optionally :meth:`on_submit`).

    Only the part of pybatsim's ``Batsim`` listed in :class:`batfeed.engine.direct.BatsimFacade` is
    used (through ``self.bs``), so the embedded engine can drive these schedulers directly
    (``direct_driver_ok``) as well as through pybatsim (real Batsim, ``--driver pybatsim``).
    """

    direct_driver_ok = True
    #: finished jobs are never looked up in ``self.bs.jobs``: the direct driver may drop them (memory)
    forgets_finished_jobs = True

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(dict(options or {}))
        self.queue: list[Job] = []
        self.running: dict[str, Intervals] = {}
        self.unavailable: Intervals = []
        self.free = FreeMachines(0)
        self.nb_machines = 0
        self.rejected: dict[str, str] = {}
        self._to_start: list[Job] = []
        self._to_reject: list[Job] = []

    # ---------------------------------------------------------------- decisions (buffered)
    def start(self, job: Job, ivs: Intervals) -> None:
        """Start ``job`` now on machines ``ivs`` (taken out of the free set by the caller)."""
        job.allocation = make_procset(ivs)
        self.running[job.id] = ivs
        self._to_start.append(job)

    def reject(self, job: Job, reason: str) -> None:
        log.info("rejecting %s: %s", job.id, reason)
        self.rejected[job.id] = reason
        self._to_reject.append(job)

    def schedule(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def on_submit(self, job: Job) -> None:
        self.queue.append(job)

    # ---------------------------------------------------------------- pybatsim callbacks
    def onSimulationBegins(self) -> None:
        self.nb_machines = self.bs.nb_compute_resources
        self.free = FreeMachines(self.nb_machines)

    def onJobSubmission(self, job: Job) -> None:
        if job.requested_resources > self.nb_machines:
            self.reject(job, f"requests {job.requested_resources} machines, the platform has {self.nb_machines}")
        elif job.requested_resources <= 0:
            self.reject(job, "requests no machine")
        else:
            self.on_submit(job)

    def onJobCompletion(self, job: Job) -> None:
        ivs = self.running.pop(job.id, None)
        if ivs is None:
            return
        self.free.release(subtract(ivs, self.unavailable) if self.unavailable else ivs)

    def onJobsKilled(self, jobs: list[Job]) -> None:
        pass  # their JOB_COMPLETED (COMPLETED_KILLED) releases the machines

    def onRequestedCall(self) -> None:
        pass

    def onNotifyEventMachineUnavailable(self, machines: ProcSet) -> None:
        ivs = procset_intervals(machines)
        self.free.remove(ivs)
        self.unavailable = procset_intervals(ProcSet(*self.unavailable) | machines)

    def onNotifyEventMachineAvailable(self, machines: ProcSet) -> None:
        ivs = procset_intervals(machines)
        self.unavailable = procset_intervals(ProcSet(*self.unavailable) - machines)
        busy = ProcSet(*[iv for run in self.running.values() for iv in run])
        self.free.release(procset_intervals(ProcSet(*ivs) - busy))

    def onNotifyGenericEvent(self, event_data: dict[str, Any]) -> None:
        pass

    def onDeadlock(self) -> None:
        pass  # batfeed runs pybatsim without a receive timeout; never give up on Batsim

    def onNoMoreEvents(self) -> None:
        if self.queue:
            self.schedule()
        self.flush()

    def flush(self) -> None:
        """Send the buffered decisions (rejections first, then starts, in decision order)."""
        if self._to_reject:
            self.bs.reject_jobs(self._to_reject)
            self._to_reject = []
        if self._to_start:
            self.bs.execute_jobs(self._to_start)
            self._to_start = []
