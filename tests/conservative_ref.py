"""The conservative backfilling of batfeed before issue 27 item 4, kept as the reference of the tests.

:class:`RefConservative` is schedulers/conservative.py as it was (every reserved job tried at each
compression, with :class:`Profile`'s walk over the flat step lists): the fast implementation must
take exactly its decisions (tests/test_conservative_fast.py).  Only the class name changed.
"""

from __future__ import annotations

from batfeed.schedulers.backfill import BackfillScheduler
from batfeed.schedulers.jobqueue import Entry
from batsim.batsim import Job
from procset import ProcSet
from sortedcontainers import SortedList

INF = float("inf")


class RefConservative(BackfillScheduler):
    PROFILE_ENDS_IN_STEPS = True

    def __init__(self, options=None):
        super().__init__(options)
        self.res: dict[str, tuple[float, Entry]] = {}     # job id -> (reserved start, entry)
        self.plan: SortedList = SortedList()              # (reserved start, seq, job id)
        self._early = False                                # capacity came back earlier than planned
        self._lost = False                                 # capacity lost (machines down)

    # ---------------------------------------------------------------- profile bookkeeping
    def _reserve(self, e: Entry, now: float, before: float = INF, not_before: float | None = None,
                 prev: float | None = None) -> None:
        t = self.profile.earliest(e.q, e.p, now, self.free.count, before)
        if t == INF and before < INF:
            t = self.profile.earliest(e.q, e.p, now, self.free.count)
        if not_before is not None and t < not_before:
            t = self.profile.earliest(e.q, e.p, not_before, self.free.count)
        self.profile.reserve(t, e.p, e.q)
        self.res[e.id] = (t, e)
        self.plan.add((t, e.seq, e.id))
        if self.trace_reservations and t != prev:
            self.record(now, e, t)

    def _unreserve(self, e: Entry) -> float:
        t, _ = self.res.pop(e.id)
        self.plan.remove((t, e.seq, e.id))
        self.profile.unreserve(t, e.p, e.q)
        return t

    # ---------------------------------------------------------------- callbacks
    def onJobCompletion(self, job: Job) -> None:
        known = self.profile.jobs.get(job.id)
        if known is not None and known[0][0] > self.bs.time():
            self._early = True
        super().onJobCompletion(job)

    def onNotifyEventMachineUnavailable(self, machines: ProcSet) -> None:
        super().onNotifyEventMachineUnavailable(machines)
        self._lost = True

    def onNotifyEventMachineAvailable(self, machines: ProcSet) -> None:
        super().onNotifyEventMachineAvailable(machines)
        self._early = True

    # ---------------------------------------------------------------- the algorithm
    def schedule(self) -> None:
        now, wq = self.bs.time(), self.wq
        wq.refresh(now)
        new, wq.new = wq.new, []
        self._ended = False
        self.profile.prune_windows(now)
        if self._lost or self._early:
            order = [e for e in wq.ordered() if e.id in self.res]
            if self._lost:                                  # re-plan from scratch
                olds = [self._unreserve(e) for e in order]
                for e, old in zip(order, olds, strict=True):
                    self._reserve(e, now, prev=old)
            else:                                           # compression: never later than before
                self._compress(order, now)
            self._early = self._lost = False
        for e in new:
            if e.where >= 0 and e.id not in self.res:
                self._reserve(e, now)
        while self.plan and self.plan[0][0] <= now:
            t, _, jid = self.plan[0]
            e = self.res[jid][1]
            self._unreserve(e)
            ivs = self.allocate(e, now)
            if ivs is None:                                 # windows leave too few machines now
                self._reserve(e, now, not_before=self._next_change(now))
                continue
            wq.remove(e)
            self.launch(e, ivs, now)
        t = self.plan[0][0] if self.plan else INF
        if not self.running and now < t < INF and t not in self._calls:
            self._calls.add(t)                              # safety net: nothing else would wake us
            self.bs.wake_me_up_at(t)

    def _compress(self, order: list[Entry], now: float) -> None:
        """Compression passes in priority order until no reservation moves.

        One pass can leave a job reserved at the end of another job's reservation that a later
        job of the same pass then moved earlier: nothing would happen at that time any more.  At
        the fixpoint every reservation sits where the profile rises (a running job's, a reserved
        job's or a window's end), so an event always wakes the scheduler then.
        """
        todo = order
        while todo:
            last = -1                   # jobs after the last one that moved saw every move
            for k, e in enumerate(todo):
                old = self.res[e.id][0]
                if old <= now:
                    continue
                t = self.profile.earliest(e.q, e.p, now, self.free.count, before=old, skip=(old, e.p, e.q))
                if t < old:
                    self._unreserve(e)
                    self._reserve(e, now, before=old, prev=old)
                    last = k
            todo = todo[:last] if last > 0 else []

    def _next_change(self, now: float) -> float:
        return next((t for t, _ in self.profile.levels(now, self.free.count) if t > now), INF)
