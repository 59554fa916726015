"""When Maui's priority order is the submission order: the re-keying of every iteration skipped, exactly.

MQueue.c ``MQueuePrioritizeJobs`` sorts the idle jobs by ``StartPriority`` at each iteration
(:meth:`WaitQueue.refresh` re-keys every waiting job).  When every job's priority is one and the same
nondecreasing function G of its queue time - no limit (queue times frozen or restarted, maui_limits.py),
no fairshare, no XFACTOR, no REJECTNEGPRIOJOBS (which reads the keys), SERVICEWEIGHT × QUEUETIMEWEIGHT
≥ 0, every job with the same credential term, queue time = now − submission (event-driven, or the count
mechanics: no one-poll lag) - and the jobs were queued in submission order, then a job queued earlier has
waited at least as long, so its priority is at least the later one's, and equal priorities keep queue
order: the sorted order *is* the queue order.  (G is a composition of monotone float operations: the
product by a weight, the division by 60, the sum, the clamp at 1, the cap at 10⁹ and the truncation.)

So the index stays in queue order without re-keying, as long as each newly queued job was placed after
every other one (its key at queueing is its priority then, G(0) for a job queued at its submission:
the lowest): :meth:`Order.refresh` checks that the jobs queued since the last iteration form the index's
tail, in queue order, and re-keys everything (as Maui does) otherwise, or as soon as a condition fails
(a job of another credential term, a job older than one queued before it, a restored defer whose queue
time restarts: maui_defer.py).  The keys of a skipped iteration are left as they were: nothing reads their
values under these conditions, only their order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from batfeed.schedulers.jobqueue import Entry, QueueIndex

if TYPE_CHECKING:
    from batfeed.schedulers.maui_core import JobInfo, MauiCore


class Order:
    """Decides, at each iteration of a :class:`MauiCore`, whether the priority re-sort can be skipped."""

    def __init__(self, s: MauiCore):
        cfg = s.cfg
        self.s = s
        self.on = (s.limits is None and not s._fs_on and not cfg.xfactorweight and not cfg.rejectnegpriojobs
                   and cfg.serviceweight * cfg.queuetimeweight >= 0 and (s.counts or s.interval is None))
        self.cred: float | None = None      # the credential term every job has
        self.last_r = -float("inf")         # the latest submission queued
        self.pushed: list[Entry] = []       # queued since the last iteration

    def queued(self, e: Entry, info: JobInfo) -> None:
        """``e`` was just queued with credentials ``info``."""
        if not self.on:
            return
        if self.cred is None:
            self.cred = info.cred
        if info.cred != self.cred or e.r < self.last_r:
            self.off()
            return
        self.last_r = e.r
        self.pushed.append(e)

    def off(self) -> None:
        """The order may differ from the queue order from now on: re-key at every iteration."""
        self.on = False
        self.pushed = []

    def refresh(self, now: float) -> None:
        """``wq.refresh(now)``, unless the order provably stays the queue order (module docstring)."""
        pushed, self.pushed = self.pushed, []
        if self.on and in_tail(self.s.wq.main, [e for e in pushed if e.where == 0]):
            return
        self.s.wq.refresh(now)


def in_tail(index: QueueIndex, new: list[Entry]) -> bool:
    """``new`` are the last entries of ``index``, in this order."""
    k = len(new)
    if k == 0:
        return True
    if k > len(index):
        return False
    for block in reversed(index.ents):
        for e in reversed(block):
            k -= 1
            if e is not new[k]:
                return False
            if k == 0:
                return True
    return False
