"""Maui 3's iteration on specific nodes (issue 18; default ``mechanics`` of :mod:`maui`).

What the count-based model of the shared profile simplifies, following Maui's source
(TempleHPC ``maui-scheduler``, ``src/``):

- **Node reservations** (MQueue.c ``MQueueScheduleIJobs`` → MJob.c ``MJobPReserve``/``MJobReserve``/
  ``MJobGetEStartTime`` → MSched.c ``MJobAllocMNL``): a job that cannot start is reserved at the
  earliest S at which q nodes are free during [S, S + p̃) — a running job ends at start + p̃ (past
  its walltime, at max(start + p̃, now + 1): MRes.c ``MResJCreate``), reservations made earlier in the
  iteration and maintenance windows block their nodes — and holds q such nodes (NODEALLOCATIONPOLICY, below),
  idle ones included.  A reserved node only takes a job that ends by S.
- **Priority pass** (``MQueueScheduleIJobs``): jobs in priority order start when q nodes are free now
  for [now, now + p̃); one that cannot start is reserved while fewer than RESERVATIONDEPTH jobs hold
  one, and the pass goes on (``IdleJobFound`` stays false); the first job that can neither start nor
  be reserved sets ``IdleJobFound``: later jobs can then only be reserved (and start if reserved now).
- **Window backfill** (MQueue.c ``MQueueBackFill``, MBF.c ``MBFGetWindow`` then ``MBFFirstFit``/
  ``MBFBestFit``): a window is the set of idle nodes whose time to their next reservation exceeds
  the previous window's duration (0 first); its duration is the least such time (unlimited without
  reservation).  Jobs that are unreserved, with q ≤ the window's size and p̃ ≤ its duration, in
  priority order (the first BACKFILLDEPTH of them), start on window nodes still idle (NODEALLOCATIONPOLICY)
  (FIRSTFIT), or the one with the largest BACKFILLMETRIC first, repeatedly (BESTFIT); the next window
  is built from the nodes left idle.

Which nodes a job gets follows NODEALLOCATIONPOLICY (MSched.c ``MJobAllocMNL``: :meth:`Plan.pick_now`,
:meth:`Plan.pick_at`).  The plan works on machine intervals (resources.py; free machines, running jobs,
reservations, windows): an iteration costs what its jobs and reservations touch, not the platform's size.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from batfeed.schedulers.maui_backfill import backfill, start
from batfeed.schedulers.maui_fairshare import fs_capped
from batfeed.schedulers.maui_limits import window_blocked
from batfeed.schedulers.maui_pick import highest, highest_of, pick_union
from batfeed.schedulers.resources import FreeMachines, Intervals, count, intersect, lowest, subtract, union
from mypy_extensions import mypyc_attr

if TYPE_CHECKING:
    from batfeed.schedulers.jobqueue import Entry
    from batfeed.schedulers.maui import Maui

INF = float("inf")


@dataclass(slots=True)
class Memo:
    """A reservation :meth:`Plan._earliest_counts` computed and the state it holds for (kept by ``starting``)."""

    q: int                  # the machines asked for
    version: int            # the profile's version (the running jobs)
    starts: list[int]       # the free machines (FreeMachines.starts, .ends)
    ends: list[int]
    first_end: float        # the first running job's expected end: no job is overdue before it
    start: float            # S
    machines: Intervals     # the machines picked
    free_at: int            # the machines free at S


@mypyc_attr(allow_interpreted_subclasses=True)     # tests derive the general walk (test_maui_shortcuts.py)
class Plan:
    """What one Maui iteration knows of the machines besides the free set: reservations, windows."""

    def __init__(self) -> None:
        self.res: list[tuple[float, float, Intervals]] = []      # this iteration's (S, E, machines)
        self.blocks: list[tuple[float, float, Intervals]] = []   # res + maintenance windows (+ kept)
        self.last: dict[str, tuple[Entry, tuple[float, float, Intervals]]] = {}   # reservations at the end
        self.kept: dict[str, tuple[Entry, tuple[float, float, Intervals]]] = {}   # of an iteration, kept ones
        self.memo: Memo | None = None       # the last _earliest_counts, while it holds

    def begin(self, s: Maui, now: float) -> None:
        self.s = s
        self.res = []
        self.blocks = [(w.start, w.end, w.machines) for w in s.profile.windows if w.end > now]
        # A job over a fairshare cap keeps the reservation it held (MPolicy.c MQueueCheckSingleJob does not
        # destroy it, and MQueue.c MQueueScheduleRJobs releases only the selected jobs'): it still blocks -
        # unless deferred (MJob.c MJobSetHold destroys J->R; with DEFERTIME <= 0 it returns before that).
        self.kept = {jid: (e, r) for jid, (e, r) in self.last.items()
                     if e.where >= 0 and r[1] > now and jid not in s.defer.until
                     and fs_capped(s.cfg, s.fs, s.info[jid].keys, e.q, e.p)}
        self.blocks += [r for _, r in self.kept.values()]

    @staticmethod
    def overdue(s: Maui, now: float) -> bool:
        """A running job is past its planned end (its machines' expected return moves with time)."""
        first = next(s.profile.running(), None)
        return first is not None and first[0] <= now

    def blocked(self, a: float, b: float) -> Intervals:
        """Machines a reservation or maintenance window holds during part of [a, b)."""
        out: Intervals = []
        for st, en, ivs in self.blocks:
            if st < b and en > a:
                out = union(out, ivs) if out else ivs
        return out

    def reserve(self, t: float, p: float, ivs: Intervals) -> tuple[float, float, Intervals]:
        r = (t, t + p, ivs)
        self.res.append(r)
        self.blocks.append(r)
        return r

    def unreserve(self, r: tuple[float, float, Intervals]) -> None:
        self.res.remove(r)
        self.blocks.remove(r)

    # ---------------------------------------------------------------- decisions
    def fit_now(self, q: int, p: float, now: float, allowed: Intervals | None) -> Intervals | None:
        """q idle machines free during [now, now + p̃) chosen by :meth:`pick_now`, or None (MJobSelectMNL)."""
        free = self.s.free
        if q > free.count:
            return None
        blk = self.blocked(now, now + p)
        if allowed is None and not blk:         # without listing every free interval
            if self.s.cfg.nodeallocationpolicy == "FIRSTAVAILABLE":
                return lowest(zip(free.starts, free.ends, strict=True), q)
            if not self.blocks:                 # no reservation at all: the highest-index idle nodes
                return highest_of(zip(reversed(free.starts), reversed(free.ends), strict=True), q)
        usable = free.intervals()
        if allowed is not None:
            usable = intersect(usable, allowed)
        if blk:
            usable = subtract(usable, blk)
        if count(usable) < q:
            return None
        return self.pick_now(usable, q, now)

    def pick_now(self, usable: Intervals, q: int, now: float) -> Intervals:
        """The q of the idle ``usable`` machines a job starting now gets (MSched.c ``MJobAllocMNL`` on the
        list of MNode.c ``MNodeSelectIdleTasks``).  FIRSTAVAILABLE: the first q of the list, in node
        order.  LASTAVAILABLE: the list is sorted by availability (time to the node's next reservation,
        MJob.c ``MJobCheckNStartTime`` ``ATime``; unreserved nodes all alike) low to high by a stable
        qsort, and the job takes nodes from its end: the nodes free the longest, highest index first.
        MINRESOURCE (CPULOAD, whose idle nodes all have one free processor here): from the end of the
        unsorted list, i.e. the highest-index nodes (every node has the same memory)."""
        policy = self.s.cfg.nodeallocationpolicy
        if policy == "FIRSTAVAILABLE":
            return lowest(usable, q)
        if policy != "LASTAVAILABLE":
            return highest(usable, q)
        later = sorted({st for st, en, ivs in self.blocks if en > now and st > now and intersect(ivs, usable)})
        groups: list[Intervals] = []          # usable nodes by their next reservation's start, earliest first
        left = usable
        for st in later:
            held = [ivs for s0, en, ivs in self.blocks if s0 == st and en > now]
            grp: Intervals = []
            for ivs in held:
                grp = union(grp, intersect(left, ivs))
            if grp:
                groups.append(grp)
                left = subtract(left, grp)
        out: Intervals = []
        need = q
        for grp in [left, *reversed(groups)]:     # unreserved first, then the latest reservation first
            got = highest(grp, need)
            out = union(out, got) if out else got
            need -= count(got)
            if need <= 0:
                break
        return out

    def pick_at(self, avail: Intervals, q: int) -> Intervals:
        """The q of the machines ``avail`` at a reservation's start that it holds (MJob.c
        ``MJobGetEStartTime`` → ``MJobGetRange``, whose list is in node order, → MSched.c
        ``MJobAllocMNL``): FIRSTAVAILABLE the lowest-index ones; LASTAVAILABLE, MINRESOURCE and CPULOAD
        (MINRESOURCE for a future start) take the list from its end: the highest-index ones."""
        if self.s.cfg.nodeallocationpolicy == "FIRSTAVAILABLE":
            return lowest(avail, q)
        return highest(avail, q)

    def _returns(self, now: float) -> Iterator[tuple[float, Intervals]]:
        """(time, machines) as the running jobs' machines come back, in time order: at start + p̃,
        at now + 1 once past it (MRes.c MResJCreate); machines down now do not, except those of a
        current maintenance window (at its end)."""
        s = self.s
        down = s.unavailable
        run = s.profile.running()
        late: list[tuple[float, str]] = []
        rest: Iterator[tuple[float, str]] = iter(())
        for end, _, jid in run:
            if end > now:
                rest = chain(((end, jid),), ((e, j) for e, _, j in run))
                break
            late.append((now + 1.0, jid))
        jobs = s.profile.jobs
        for t, jid in heapq.merge(late, rest) if late else rest:
            if t == INF:
                return
            ivs = jobs[jid][1]
            yield t, subtract(ivs, down) if down else ivs
        # (windows' down machines are merged in by earliest())

    def earliest(self, q: int, p: float, now: float, allowed: Intervals | None) -> tuple[float, Intervals]:
        """Earliest S >= now with q machines free during [S, S + p̃), its machines (MJobGetEStartTime); (inf, [])."""
        if allowed is None and not self.blocks and not self.s.unavailable:
            return self._earliest_counts(q, p, now)
        return self._earliest_walk(q, p, now, allowed)

    def _earliest_walk(self, q: int, p: float, now: float, allowed: Intervals | None) -> tuple[float, Intervals]:
        """:meth:`earliest`: the machines come back one event after the other, each candidate S checked."""
        s = self.s
        avail = FreeMachines(0)
        start = s.free.intervals() if allowed is None else intersect(s.free.intervals(), allowed)
        avail.release(start)
        events: Iterator[tuple[float, Intervals]] = self._returns(now)
        if s.unavailable:
            back = sorted((w.end, intersect(w.machines, s.unavailable)) for w in s.profile.windows
                          if w.start <= now < w.end)
            if back:
                events = heapq.merge(events, back, key=lambda x: x[0])
        ends = sorted({e for _, e, _ in self.blocks if now < e < INF})
        nxt = next(events, None)
        k = 0
        t = now
        while True:
            blk = self.blocked(t, t + p) if self.blocks else []
            n = avail.count - (avail.count_in(blk) if blk else 0)
            if n >= q:
                got = avail.intervals()
                return t, self.pick_at(subtract(got, blk) if blk else got, q)
            while k < len(ends) and ends[k] <= t:
                k += 1
            t_next = min(nxt[0] if nxt is not None else INF, ends[k] if k < len(ends) else INF)
            if t_next == INF:
                return INF, []
            t = t_next
            while nxt is not None and nxt[0] <= t:
                ivs = nxt[1] if allowed is None else intersect(nxt[1], allowed)
                if ivs:
                    avail.release(ivs)
                nxt = next(events, None)

    def _earliest_counts(self, q: int, p: float, now: float) -> tuple[float, Intervals]:
        """:meth:`earliest` with no reservation, window or machine down: the running jobs give their
        machines back in their order (end, start) at max(end, now + 1) - a time that grows with it
        unless a job ends within a second after an overdue one (then :meth:`earliest` itself) - so S is
        the return of the first job after which q machines are free (the count the profile keeps, ``ret``:
        ``Profile.crossing`` when no job is overdue), and the machines are chosen among the free ones and
        those of every job back by S.  While no running job is overdue, ``now`` plays no part: the result
        is reused as long as q, the running jobs (the profile's version) and the free machines are the
        same and no job is overdue yet."""
        s = self.s
        free = s.free
        low = s.cfg.nodeallocationpolicy == "FIRSTAVAILABLE"
        if q <= free.count:
            return now, pick_union(free, [], q, low)
        memo = self.memo
        if (memo is not None and memo.q == q and memo.version == s.profile.version and now < memo.first_end
                and memo.starts == free.starts and memo.ends == free.ends):
            return memo.start, list(memo.machines)
        prof = s.profile
        first = next(prof.running(), None)
        if first is not None and first[0] > now:       # no job overdue: each comes back at its end
            at = prof.crossing(q - free.count)[0]
            if at == INF:
                return INF, []
            jobs = prof.jobs
            extra = [iv for jid in prof.ended_by(at) for iv in jobs[jid][1]]
            at_s = free.count + count(extra)
            ivs = pick_union(free, extra, q, low)
            self.memo = Memo(q, prof.version, list(free.starts), list(free.ends), first[0], at, list(ivs), at_s)
            return at, ivs
        got = free.count
        late = now + 1.0
        jobs = s.profile.jobs
        extra = []
        at = -INF                       # the return time reached
        found = False
        for end, ret, jid in s.profile.running():
            t = end if end > now else late
            if t < at:                  # not in time order: the general walk
                return self._earliest_walk(q, p, now, None)
            if found and t > at:
                break
            if t == INF:
                return INF, []
            at = t
            extra += jobs[jid][1]
            got += ret
            found = found or got >= q
        if not found:
            return INF, []
        return at, pick_union(free, extra, q, low)

    def starting(self, q: int, end: float, ivs: Intervals) -> bool:
        """A job of ``q`` machines ``ivs`` (free) is about to start, to end at ``end``: keep the memo of
        :meth:`_earliest_counts` when the start cannot change it - its machines are back by S (the count
        is the same at S and lower before), or they are none of the reservation's and q machines are still
        free at S (then S and the q highest, or lowest, of the machines free at S are the same).  True if
        it is kept (:meth:`started` then records the new state), False if dropped."""
        m = self.memo
        s = self.s
        if m is None or not (m.version == s.profile.version and m.starts == s.free.starts
                             and m.ends == s.free.ends):
            self.memo = None
            return False
        if end <= m.start:
            return True
        if m.free_at - q >= m.q and not intersect(ivs, m.machines):
            m.free_at -= q
            return True
        self.memo = None
        return False

    def started(self, end: float) -> None:
        """The start :meth:`starting` kept the memo for is done: the memo's state is the new one."""
        m, free = self.memo, self.s.free
        assert m is not None
        m.version, m.starts, m.ends = self.s.profile.version, list(free.starts), list(free.ends)
        m.first_end = min(m.first_end, end)

    def windows(self, now: float) -> Iterator[tuple[float, Intervals]]:
        """MBFGetWindow: (duration, idle machines) of each backfill window, from the machines still idle then."""
        prev = 0.0
        free = self.s.free
        live = [(st - now, ivs) for st, en, ivs in self.blocks if en > now]
        while free.count:
            idle = free.intervals()
            held = [ivs for wait, ivs in live if wait <= prev]
            win = idle
            for ivs in held:
                win = subtract(win, ivs)
            if not win:
                return
            dur = min((wait for wait, ivs in live if wait > prev and intersect(ivs, win)), default=INF)
            yield dur, win
            if dur == INF:
                return
            prev = dur


# -------------------------------------------------------------------- the iteration
def iterate(s: Maui, now: float) -> bool:
    """One Maui iteration on nodes (module docstring); True if a job started.

    MSched.c ``MSchedProcessJobs`` runs the priority pass (MQueue.c ``MQueueScheduleIJobs``) twice, and in
    between ``MQueueSelectJobs`` (MPolicy.c ``MQueueCheckSingleJob``) drops the jobs that the first pass's
    starts put over a limit, destroying their reservations; the second pass skips the jobs started or
    still reserved (counting the latter towards RESERVATIONDEPTH) and takes the others again.  Without
    such a job it changes nothing, so it runs only then."""
    cfg, wq, plan = s.cfg, s.wq, s.plan
    plan.begin(s, now)
    # MJob.c MJobPReserve makes no priority reservation under BACKFILLPOLICY NONE (as under RESERVATIONPOLICY
    # NEVER): the first job that cannot start ends the pass (MQueue.c MQueueScheduleIJobs, IdleJobFound)
    depth = 0 if cfg.backfillpolicy == "NONE" else cfg.depth
    started: list[Entry] = []
    reserved: dict[str, tuple[Entry, tuple[float, float, Intervals]]] = {}
    _pass(s, now, depth, started, reserved)
    over = [jid for jid, (e, _) in reserved.items() if s._held(e, s.info[jid])]
    if over:
        for jid in over:
            plan.unreserve(reserved.pop(jid)[1])
        _pass(s, now, depth, started, reserved)
    for e in started:
        wq.remove(e)
    if s._fs_caps:
        plan.last = {**plan.kept, **reserved}
    if cfg.backfillpolicy != "NONE" and s.free.count and not window_blocked(s, now):
        backfill(s, set(reserved), now)
    return bool(started)


def _pass(s: Maui, now: float, depth: int, started: list[Entry],
          reserved: dict[str, tuple[Entry, tuple[float, float, Intervals]]]) -> None:
    """MQueue.c ``MQueueScheduleIJobs`` over the waiting jobs not yet ``started`` nor ``reserved``."""
    plan = s.plan
    done = {e.id for e in started}
    idle_found = False
    for e in s.wq.main:
        if e.id in done or e.id in reserved:
            continue
        info = s.info[e.id]
        if idle_found and len(plan.res) >= depth:
            break                       # nothing below can start or be reserved any more
        if s._held(e, info):
            continue
        if not idle_found:
            ivs = plan.fit_now(e.q, e.p, now, info.nodes)
            if ivs is not None:
                start(s, e, ivs, now)
                started.append(e)
                continue
        if len(plan.res) < depth:
            t, ivs = plan.earliest(e.q, e.p, now, info.nodes)
            if s.trace_reservations:
                s.record(now, e, t)
            if t < INF:
                if t <= now and idle_found:     # MJobPReserve made it for now: start it
                    start(s, e, ivs, now)
                    started.append(e)
                    continue
                reserved[e.id] = (e, plan.reserve(t, e.p, ivs))
                continue
        idle_found = True
