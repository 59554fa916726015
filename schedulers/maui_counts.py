"""Batfeed's earlier, count-based Maui iteration (``mechanics: "counts"``; the default before issue 18).

Reservations are counts in the shared availability :class:`Profile` (models.md §B): the priority pass
starts jobs in priority order until one cannot; that job and the next ones that cannot start get
reservations at their earliest start (``Profile.earliest``) until RESERVATIONDEPTH jobs hold one; the
first job that can neither start nor be reserved ends the pass; FIRSTFIT/BESTFIT then backfill the
top BACKFILLDEPTH remaining jobs, in priority order, with every job that fits without delaying a
reservation (``Profile.fits_now``).  Which machines a job gets is decided at start; a job restricted
to a HOSTLIST pins the lowest q machines of its set expected free at its reserved start.  Kept so that
results made before issue 18 can be reproduced; :mod:`maui_nodes` is Maui 3's own mechanics.
"""

from __future__ import annotations

from batfeed.schedulers.jobqueue import Entry, ScanState
from batfeed.schedulers.maui_core import JobInfo, MauiCore
from batfeed.schedulers.resources import Intervals, count, intersect, lowest, subtract, union

INF = float("inf")


class MauiCounts(MauiCore):
    """The count-based iteration on :class:`~batfeed.schedulers.maui_core.MauiCore`'s state."""

    def iterate_counts(self, now: float) -> None:
        wq, cfg = self.wq, self.cfg
        self._clear_reservations()
        self.order.refresh(now)
        started: list[Entry] = []
        reserved: set[str] = set()
        depth = cfg.depth
        rest = blocked = False
        for e in wq.main:
            info = self.info[e.id]
            if self._held(e, info):
                continue
            if blocked and len(reserved) >= depth:
                rest = True                     # the remaining jobs are for backfill
                break
            if self._usable(e, info, now) and self._start(e, info, now):
                started.append(e)
                continue
            blocked = True
            if len(reserved) < depth:
                self._reserve(e, info, now)
                reserved.add(e.id)
                continue
            rest = True
            break
        for e in started:
            wq.remove(e)
        n = len(wq)
        if rest and cfg.backfillpolicy != "NONE" and self.free.count > 0:
            if cfg.backfillpolicy == "FIRSTFIT":
                self._firstfit(reserved, now)
            else:
                self._bestfit(reserved, now)
        idle = not started and len(wq) == n and not self._neg_held
        self._idle = (self.profile.version, self.free.count, len(wq), wq.seq) if idle else None


    def _excluded(self, info: JobInfo, a: float, b: float) -> Intervals:
        """Machines a job running [a, b) may not use besides the windows: pinned ones, outside HOSTLIST."""
        out: Intervals = info.others
        for s, t, ivs in self._pins:
            if s < b and t > a:
                out = union(out, ivs)
        return out

    def _usable(self, e: Entry, info: JobInfo, now: float) -> bool:
        """Can ``e`` start now without delaying a reservation (counts and specific machines)?"""
        free = self.free.count
        if e.q > free:
            return False
        if self._floor is None:
            self._floor = min(level for _, level in self.profile.levels(now, free))
        if e.q > self._floor and not self.profile.fits_now(e.q, e.p, now, free):
            return False
        excl = self._excluded(info, now, now + e.p)
        if self.profile.windows:
            excl = union(excl, self.profile.blocked(now, now + e.p))
        return not excl or free - self.free.count_in(excl) >= e.q

    def _start(self, e: Entry, info: JobInfo, now: float) -> bool:
        ivs = self.allocate(e, now, self._excluded(info, now, now + e.p))
        if ivs is None:
            return False
        self.launch(e, ivs, now)
        if self._floor is not None:
            self._floor -= e.q      # a lower bound of the new minimum (exact would need a walk)
        return True

    # ---------------------------------------------------------------- reservations
    def _clear_reservations(self) -> None:
        for t, p, q in self._res:
            self.profile.unreserve(t, p, q)
        self._res, self._pins = [], []
        self._floor = None

    def _reserve(self, e: Entry, info: JobInfo, now: float) -> None:
        if info.nodes is None:
            t = self.profile.earliest(e.q, e.p, now, self.free.count)
            pins: Intervals = []
        else:
            t, pins = self._earliest_in_set(e, info, now)
        if t < INF:
            self._floor = None
            self.profile.reserve(t, e.p, e.q)
            self._res.append((t, e.p, e.q))
            if pins:
                self._pins.append((t, t + e.p, pins))
        if self.trace_reservations:
            self.record(now, e, t)

    def _earliest_in_set(self, e: Entry, info: JobInfo, now: float) -> tuple[float, Intervals]:
        """Earliest t at which q machines of the job's HOSTLIST are expected free for p̃ seconds
        (outside windows and other pinned reservations) and the counts allow it; those machines."""
        q, d, nodes, prof = e.q, e.p, info.nodes, self.profile
        assert nodes is not None
        free = self.free.count
        avail = intersect(self.free.intervals(), nodes)
        ends = [(end, jid) for end, _, jid in prof.running()]
        times = sorted({now, *(end for end, _ in ends if end > now),
                        *(b for _, b, _ in self._pins if b > now), *(w.end for w in prof.windows if w.end > now)})
        k = 0
        for t in times:
            while k < len(ends) and ends[k][0] <= t:
                ivs = intersect(prof.jobs[ends[k][1]][1], nodes)
                if self.unavailable:
                    ivs = subtract(ivs, self.unavailable)
                avail = union(avail, ivs)
                k += 1
            usable = subtract(avail, self._excluded(info, t, t + d))
            if prof.windows:
                usable = subtract(usable, prof.blocked(t, t + d))
            if count(usable) >= q and prof.earliest(q, d, t, free) == t:
                return t, lowest(usable, q)
        return INF, []

    # ---------------------------------------------------------------- backfill
    def _candidates(self, reserved: set[str]):
        """Eligible idle jobs in priority order (the top BACKFILLDEPTH if set)."""
        limit = self.cfg.backfilldepth
        if limit == 0 and self.cfg.backfillpolicy == "FIRSTFIT":
            st = ScanState(self.free.count, INF, INF)     # only jobs with q <= free (core's queue scan)
            source = self.wq.main.scan(st)
        else:
            st, source = None, iter(self.wq.main)
        n = 0
        for e in source:
            if e.id in reserved:
                continue
            info = self.info[e.id]
            if self._held(e, info):
                continue
            n += 1
            if limit and n > limit:
                return
            yield e, info, st

    def _firstfit(self, reserved: set[str], now: float) -> None:
        started = []
        for e, info, st in self._candidates(reserved):
            if self.free.count == 0:
                break
            if self._usable(e, info, now) and self._start(e, info, now):
                started.append(e)
                if st is not None:
                    st.free = self.free.count
        for e in started:
            self.wq.remove(e)

    def _bestfit(self, reserved: set[str], now: float) -> None:
        pool = [(e, info) for e, info, _ in self._candidates(reserved)]
        while pool and self.free.count > 0:
            best, best_v = -1, -INF
            for i, (e, info) in enumerate(pool):
                if e.q > self.free.count or self._held(e, info) or not self._usable(e, info, now):
                    continue
                v = self.cfg.bf_value(e.q, e.p)
                if v > best_v:
                    best, best_v = i, v
            if best < 0:
                break
            e, info = pool.pop(best)
            if self._start(e, info, now):
                self.wq.remove(e)
