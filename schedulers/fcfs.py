"""First-Come First-Served without backfilling.

Jobs start in submission order (Batsim's order: submit time, then job id string) on the
lowest-numbered free machines; the queue head blocks every later job.  Runs unchanged against
a real Batsim 4.2 (``pybatsim schedulers/fcfs.py -t 0``) and on batfeed's embedded engine.
"""

from __future__ import annotations

from batfeed.schedulers.base import BatfeedScheduler


class Fcfs(BatfeedScheduler):
    def schedule(self) -> None:
        queue, free = self.queue, self.free
        started = 0
        for job in queue:
            if job.requested_resources > free.count:
                break
            self.start(job, free.take_lowest(job.requested_resources))
            started += 1
        if started:
            del queue[:started]
