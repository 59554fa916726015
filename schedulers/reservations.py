"""Conservative backfilling's reservations and its decision, as a compiled class over the core's state.

:class:`~batfeed.schedulers.conservative.Conservative` stays a pybatsim ``BatsimScheduler``; what it
does per waiting job — reserving at the earliest fit, taking a reservation out, finding the first
reservation due, starting it — is :class:`Plan`'s, which the kernel compiles with mypyc
(docs/kernel.md) together with the step function (``steps``, ``step_profile``) and the compression
(``compression``).  A compression's moves (a reservation out, then back at its earliest fit) and a
decision's starts then run as native code from end to end, instead of an interpreted method call per
reservation (the precedent: ``passes.py`` for EASY).  The pure-Python path runs the same source;
``tests/test_kernel.py`` and ``tests/test_conservative_fast.py`` check both against each other and
against the reference implementation.

The algorithm is the one of ``conservative.py``'s docstring: steps 2 (new jobs reserved) and 3 (the
reservations due start) are :meth:`Plan.start`; step 1 is :meth:`Plan.replan` (machines lost) or
:meth:`Compression.compress` (an early end, machines back).
"""

from __future__ import annotations

import heapq
from typing import Any

from batfeed.schedulers.compression import Compression
from batfeed.schedulers.jobqueue import Entry, WaitQueue
from batfeed.schedulers.passes import launch, make_procset
from batfeed.schedulers.resources import FreeMachines, Intervals
from batfeed.schedulers.step_profile import StepProfile

INF = float("inf")


class Plan:
    """Every waiting job's reservation: ``res`` (job id -> (reserved start, entry, token)), in the
    profile and in the compression's index, and ``heap``, the reservations by (start, seq) with the
    token of the reservation they were pushed for (stale ones are dropped when they come first)."""

    def __init__(self, sched: Any, profile: StepProfile) -> None:
        self.sched = sched                                          # the Conservative scheduler
        self.profile = profile
        self.res: dict[str, tuple[float, Entry, int]] = {}
        self.heap: list[tuple[float, int, int, str]] = []
        self.token = 0
        self.free: FreeMachines = sched.free                        # the scheduler's (onSimulationBegins)
        self.trace = False                                          # record every reservation (tests)
        self.cz = Compression(self)

    # ---------------------------------------------------------------- one reservation
    def reserve(self, e: Entry, now: float, before: float = INF, not_before: float | None = None,
                prev: float | None = None, start: float | None = None) -> float:
        """Reserve ``e`` at its earliest fit from ``now`` (tried first before ``before``, not before
        ``not_before``; ``start``: no fit ends earlier, :meth:`StepProfile.earliest`); its start."""
        profile = self.profile
        free = self.free.count
        q, p = e.q, e.p
        t = profile.earliest(q, p, now, free, before, start=start)
        if t == INF and before < INF:
            t = profile.earliest(q, p, now, free)
        if not_before is not None and t < not_before:
            t = profile.earliest(q, p, not_before, free)
        profile.reserve(t, p, q)
        self.token += 1
        self.res[e.id] = (t, e, self.token)
        heapq.heappush(self.heap, (t, e.seq, self.token, e.id))
        self.cz.reserved(e, t, not_before is None)
        if self.trace and t != prev:
            self.sched.record(now, e, t)
        return t

    def unreserve(self, e: Entry) -> float:
        """Take ``e``'s reservation out; its start."""
        t = self.res.pop(e.id)[0]
        self.cz.unreserved(e, t)
        self.profile.unreserve(t, e.p, e.q)
        return t

    def first(self) -> tuple[float, str] | None:
        """(start, job id) of the first reservation, dropping the stale heap entries on the way."""
        heap, res = self.heap, self.res
        while heap:
            t, _, token, jid = heap[0]
            r = res.get(jid)
            if r is not None and r[2] == token:
                return t, jid
            heapq.heappop(heap)
        return None

    # ---------------------------------------------------------------- the decision
    def replan(self, now: float, wq: WaitQueue) -> None:
        """Machines were lost: every reservation out, then back in priority order (may be later)."""
        order = [e for e in wq.ordered() if e.id in self.res]
        olds = [self.unreserve(e) for e in order]
        for k in range(len(order)):
            self.reserve(order[k], now, prev=olds[k])

    def start(self, now: float, new: list[Entry], wq: WaitQueue, running: dict[str, Intervals],
              to_start: list[Any], plain: bool) -> float:
        """Steps 2 and 3: reserve the jobs submitted since the last decision, then start every job
        whose reservation has come; the first reservation still ahead (inf if none).

        ``plain``: the scheduler's ``allocate`` and ``launch`` are the base class's and there is no
        maintenance window, so the lowest free machines are taken here."""
        res, profile, free = self.res, self.profile, self.free
        for e in new:
            if e.where >= 0 and e.id not in res:
                self.reserve(e, now)
        while True:
            first = self.first()
            if first is None or first[0] > now:
                return INF if first is None else first[0]
            t, jid = first
            e = res[jid][1]
            ivs: Intervals | None
            if not plain:
                ivs = self.sched.allocate(e, now)
            elif e.q > free.count:
                ivs = None
            else:
                ivs = free.take_lowest(e.q)
            if ivs is None:                                 # windows leave too few machines now
                self.unreserve(e)
                t1 = self.reserve(e, now, not_before=profile.steps.after(now))
                # the reservation left [now, t + p̃) (the part not yet past) for [t1, t1 + p̃)
                self.cz.raised(now, t + e.p if t1 >= t + e.p else t1, e.q, now)
                continue
            wq.remove(e)
            if t == now:                                    # the reservation becomes the running job
                del res[jid]
                self.cz.unreserved(e, t)
                profile.take_over(e.id, t, now + e.p, ivs, e.q)
                e.job.allocation = make_procset(ivs)
                running[e.id] = ivs
                to_start.append(e.job)
            else:                                           # started late: the profile only drops
                self.unreserve(e)
                if plain:
                    launch(e, ivs, now, profile, running, to_start)
                else:
                    self.sched.launch(e, ivs, now)
