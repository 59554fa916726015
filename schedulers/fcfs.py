"""First-Come First-Served without backfilling.

Jobs start in submission order (Batsim's order: submit time, then job id string) on the
lowest-numbered free machines; the queue head blocks every later job.  Runs unchanged against
a real Batsim 4.2 (``pybatsim schedulers/fcfs.py -t 0``) and on batfeed's embedded engine.

It is the :class:`BackfillScheduler` core without a backfilling pass, so it shares the options
``on_machine_down`` and ``maintenance`` with EASY, conservative and Maui (a head whose span would
overlap a maintenance window waits for machines outside it, and blocks the queue meanwhile).
"""

from __future__ import annotations

from collections import deque

from batfeed.schedulers import passes
from batfeed.schedulers.backfill import BackfillScheduler
from batfeed.schedulers.base import make_procset
from batfeed.schedulers.jobqueue import Entry
from batfeed.schedulers.options import specs
from batfeed.schedulers.resources import subtract
from batsim.batsim import Job


class Fifo:
    """Waiting jobs in submission order (pybatsim Job objects): the part of :class:`WaitQueue`'s
    interface the backfilling core reads (``n``, ``len``); FCFS's order never changes, so no index."""

    def __init__(self) -> None:
        self.q: deque[Job] = deque()
        self.n = 0

    def __len__(self) -> int:
        return self.n


class Fcfs(BackfillScheduler):
    OPTIONS = specs([BackfillScheduler.OPTIONS["on_machine_down"], BackfillScheduler.OPTIONS["maintenance"]])
    NEEDS_WALLTIME = False

    def make_queue(self) -> Fifo:   # type: ignore[override]
        return Fifo()

    def on_submit(self, job: Job) -> None:
        wq = self.wq
        wq.q.append(job)
        wq.n += 1
        self._changed = True

    def onJobCompletion(self, job: Job) -> None:
        """BackfillScheduler's, without the running jobs' profile (FCFS keeps none)."""
        ivs = self.running.pop(job.id, None)
        if ivs is not None:
            self.free.release(subtract(ivs, self.unavailable) if self.unavailable else ivs)
        if self._killing:
            self._killing.discard(job.id)
        self._changed = self._ended = True

    def schedule(self) -> None:
        wq, free = self.wq, self.free
        q = wq.q
        if not self.profile.windows:        # the pass as one function of the core's state (passes.py)
            wq.n -= passes.fcfs(q, free, self.running, self._to_start)
            return
        now = self.bs.time()
        self.profile.prune_windows(now)
        while q:
            job = q[0]
            n = job.requested_resources
            if n > free.count:
                break
            # the lowest free machines outside the windows the job's span overlaps
            ivs = self.allocate(Entry(job, 0), now)
            if ivs is None:
                break
            q.popleft()
            wq.n -= 1
            job.allocation = make_procset(ivs)
            self.running[job.id] = ivs
            self._to_start.append(job)
