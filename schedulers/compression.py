"""Compression of conservative backfilling's reservations without trying every waiting job.

The rule (``conservative.py``, step 1; batsched's ``conservative_bf`` re-inserts every queued job
after a release the same way): after an early end, in priority order, every reserved job is
removed and put back at its earliest fit if that is earlier; then the same again over the jobs
ahead of the last one that moved, until a pass moves nothing.  A job j (q machines, p̃ = d
seconds, reserved at ``old > now``) moves iff ``Profile.earliest(q, d, now, free, before=old,
skip=its reservation) < old``.  With f the free machines over time (its reservation included),
that walk answers yes exactly when

- (run) some stretch of [now, old) where f >= q lasts d seconds, or
- (touch) f >= q just before ``old`` and, if ``old`` is a change point of the profile, f(old) >= 0
  (the walk then sees its own machines come back at ``old``; when the steps at ``old`` cancel out,
  it does not, and needs q other machines free there).

:meth:`Compression.movable` decides that by a few tree searches, and only for *unsettled* jobs.
A job is *settled* when f < q just before ``old`` and no stretch of [now, old) with f >= q lasts d
seconds: a job just reserved at its earliest fit, or one that failed the test (outside the "touch
with f(old) < 0" case, which stays unsettled).  Lowering f keeps both facts; time passing too.
f only rises when a job ends early (by its machines, on [now, expected end)) or a reservation
moves or goes (by its size, where it no longer is), and :meth:`Compression.raised` then unsettles
the settled jobs the rise on [s, e) may free — those with ``old > s``, a size q that f crossed
upwards somewhere in [s, e), and

- (touch) ``old`` in (s, e] and f(old-) >= q now, or
- (run) a stretch of f >= q meeting [s, e), cut at ``old``, that lasts d seconds.

A stretch long enough for a job must meet the span of the last rise that crossed q inside it, so
each unsettled job keeps the hull of the spans of the (run) rises since it was settled, and
:meth:`movable` only looks at the stretches meeting that hull (a job unsettled for another reason —
a late start, machines coming back or going — has no hull: every stretch is looked at).

A pass visits the unsettled jobs in priority order (a job unsettled during the pass joins it if it
comes later in the order than the one that moved, as the reference loop would reach it), and the
next pass visits those ahead of the last one that moved: moves happen in the same order and to the
same places as when every job is tried (``tests/test_conservative_fast.py`` checks it against that
reference, with the walk's answer for every job after every decision).  With maintenance windows or
unavailable machines (the level at ``now`` then depends on the time, ``Profile.levels``), every
job is tried at every compression, as in the reference.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any

from batfeed.schedulers.jobqueue import Entry
from batfeed.schedulers.step_profile import StepProfile
from batfeed.schedulers.steps import Steps

if TYPE_CHECKING:
    from batfeed.schedulers.reservations import Plan

INF = float("inf")


def moves(verdict: float | bool | None) -> bool:
    """Whether a :meth:`Compression.movable` verdict is yes (a time, possibly 0.0)."""
    return verdict is not False and verdict is not None


def rank(e: Entry) -> tuple[Any, ...]:
    """Position in ``WaitQueue.ordered()``: starved jobs by (r, seq), then the others by their key
    ``kp`` = (key, tie); then the job id.  One flat tuple: the passes' heaps compare it (nested
    tuples cost twice the comparisons)."""
    if e.where == 1:
        return (0, e.r, e.seq, e.id)
    kp = e.kp
    return (1, kp[0], kp[1], e.id)


Hull = tuple[float, float]
EMPTY: Hull = (INF, -INF)


def _seg_runs(times: list[float], levels: list[int], q: int, lo: float, hi: float) -> list[tuple[float, float]]:
    """:meth:`Compression._runs` from the levels of a short span [s, e) (``Steps.walk``): ``lo`` starts
    the stretch holding s, ``hi`` ends the one reaching e (``Compression._stretch``)."""
    out: list[tuple[float, float]] = []
    a = INF
    inside = False
    for k in range(len(levels)):
        if levels[k] >= q:
            if not inside:
                a = lo if k == 0 else times[k]
                inside = True
        elif inside:
            out.append((a, times[k]))
            inside = False
    if inside:
        out.append((a, hi))
    return out


def _find(keys: list[float], seqs: list[int], key: float, seq: int) -> int:
    """``bisect_left`` over the pairs (keys[i], seqs[i]): native comparisons when compiled, no tuples."""
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) >> 1
        k = keys[mid]
        if k < key or (k == key and seqs[mid] < seq):
            lo = mid + 1
        else:
            hi = mid
    return lo


class Bucket:
    """The reserved jobs of one size by reserved start and by p̃ (ties by seq), in parallel lists."""

    __slots__ = ("olds", "oseqs", "oents", "ds", "dseqs", "dents", "dolds")

    def __init__(self) -> None:
        self.olds: list[float] = []         # by reserved start: the starts, seqs, entries
        self.oseqs: list[int] = []
        self.oents: list[Entry] = []
        self.ds: list[float] = []           # by p̃: the p̃, seqs, entries, reserved starts
        self.dseqs: list[int] = []
        self.dents: list[Entry] = []
        self.dolds: list[float] = []

    def add(self, old: float, e: Entry) -> None:
        i = _find(self.olds, self.oseqs, old, e.seq)
        self.olds.insert(i, old)
        self.oseqs.insert(i, e.seq)
        self.oents.insert(i, e)
        i = _find(self.ds, self.dseqs, e.p, e.seq)
        self.ds.insert(i, e.p)
        self.dseqs.insert(i, e.seq)
        self.dents.insert(i, e)
        self.dolds.insert(i, old)

    def remove(self, old: float, e: Entry) -> None:
        i = _find(self.olds, self.oseqs, old, e.seq)
        del self.olds[i], self.oseqs[i], self.oents[i]
        i = _find(self.ds, self.dseqs, e.p, e.seq)
        del self.ds[i], self.dseqs[i], self.dents[i], self.dolds[i]


class Compression:
    """Which reserved jobs may move, and the passes that move them.

    Every reserved job is indexed by its size (``by_q``); ``unsettled`` maps the jobs to try to the
    span (hull) of the rises that may have freed them — a stretch long enough for them must meet
    it, so :meth:`movable` only looks at the stretches that do — or to None (look everywhere)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan                                            # the reservations (reservations.py)
        self.prof: StepProfile = plan.profile
        self.st: Steps = plan.profile.steps
        self.unsettled: dict[str, Hull | None] = {}
        self.by_q: dict[int, Bucket] = {}                           # reserved jobs by size
        self.qs: list[int] = []                                     # their sizes, sorted
        self.marked: list[str] = []                                 # unsettled by the last rise
        self.tried = 0                                              # movable() calls (work counter)

    def everything(self) -> bool:
        """True when every job must be tried at each compression (windows, unavailable machines)."""
        return bool(self.prof.unavailable or self.prof.windows)

    # ---------------------------------------------------------------- settled / unsettled
    def reserved(self, e: Entry, t: float, settled: bool) -> None:
        bucket = self.by_q.get(e.q)
        if bucket is None:
            bucket = self.by_q[e.q] = Bucket()
            self.qs.insert(bisect_left(self.qs, e.q), e.q)
        bucket.add(t, e)
        if not settled or self.everything():
            self.unsettled[e.id] = None

    def unreserved(self, e: Entry, t: float) -> None:
        self.unsettled.pop(e.id, None)
        bucket = self.by_q[e.q]
        bucket.remove(t, e)
        if not bucket.olds:
            del self.by_q[e.q]
            del self.qs[bisect_left(self.qs, e.q)]

    def unsettle_all(self) -> None:
        for bucket in self.by_q.values():
            self.unsettled.update((e.id, None) for e in bucket.oents)

    # ---------------------------------------------------------------- rises of the profile
    def raised(self, s: float, e: float, delta: int, now: float) -> None:
        """Free machines rose by ``delta`` on [s, e): unsettle the settled jobs this may free
        (listed in ``marked``) and widen the hulls of the unsettled ones."""
        self.marked = marked = []
        if self.everything():
            self.unsettle_all()
            return
        if s < now:
            s = now
        qs = self.qs
        if e <= s or not qs:
            return
        prof = self.prof
        st = self.st
        base = prof.base(now, self.plan.free.count)
        seg = st.walk(s, e, base, 32)           # a short span: its levels, for exact tests
        if seg is None:
            low, high = st.minmax(s, e, base)
            times: list[float] = []
            levels: list[int] = []
            ranked: list[int] = []
            f_s = f_e = None
        else:
            times, levels, f_e = seg
            f_s = levels[0]
            ranked = sorted(levels)
            low, high = ranked[0], ranked[-1]
        i = bisect_right(qs, low - delta)
        unsettled = self.unsettled
        touched: list[str] = []                                 # settled, f(old-) reached q
        ran: list[str] = []                                     # a stretch through [s, e) may fit
        n = len(qs)
        widest = None              # the stretch through [s, e) for the smallest q: longer than any
        while i < n and qs[i] <= high:
            q = qs[i]
            i += 1
            if levels:                                          # f rose past q somewhere?
                j = bisect_left(ranked, q)                      # (a level in [q, q + delta))
                if j == len(ranked) or ranked[j] >= q + delta:
                    continue
            bucket = self.by_q[q]
            olds, oents = bucket.olds, bucket.oents
            k = bisect_right(olds, s)
            if k == len(olds):
                continue                                        # all reserved by s: not freed
            for x in range(k, bisect_right(olds, e)):
                old, ent = olds[x], oents[x]
                if ent.id not in unsettled and (levels[bisect_left(times, old) - 1] if levels else
                                                base + st.prefix(old, True)) >= q:
                    touched.append(ent.id)
            if widest is None:
                lo, hi = self._stretch(s, e, q, base, now, f_s, f_e)
                widest = hi - lo
            elif bucket.ds[0] > widest:
                continue
            else:
                lo, hi = self._stretch(s, e, q, base, now, f_s, f_e)
            longest = hi - lo
            runs = None
            ds, dents, dolds = bucket.ds, bucket.dents, bucket.dolds
            for x in range(len(ds)):
                d = ds[x]
                if d > longest:
                    break
                old = dolds[x]
                jid = dents[x].id
                if old <= s or unsettled.get(jid, EMPTY) is None:
                    continue
                if runs is None:
                    runs = (self._runs(s, e, q, base, lo) if not levels else
                            _seg_runs(times, levels, q, lo, hi))
                for a, z in runs:
                    if a < old and (z if z < old else old) - a >= d:
                        ran.append(jid)
                        break
        for jid in touched:
            if jid not in unsettled:
                unsettled[jid] = EMPTY
                marked.append(jid)
        for jid in ran:
            if jid not in unsettled:
                unsettled[jid] = (s, e)
                marked.append(jid)
            elif (h := unsettled[jid]) is not None:
                unsettled[jid] = (h[0] if h[0] < s else s, h[1] if h[1] > e else e)

    def _stretch(self, s: float, e: float, q: int, base: int, now: float, f_s: int | None,
                 f_e: int | None) -> tuple[float, float]:
        """[lo, hi) holding every stretch of f >= q that meets [s, e): from the start of the one
        holding s (or s) to the first time >= e where f < q (f_s, f_e: f at s and e if known)."""
        st = self.st
        if f_s is None:
            f_s = base + st.prefix(s)
        lo = st.run_start(s, q, base, now) if f_s >= q else s
        if e == INF or (f_e if f_e is not None else base + st.prefix(e)) < q:
            return lo, e
        x = st.next_lt(e, q, base)
        return lo, (INF if x is None else x)

    def _runs(self, s: float, e: float, q: int, base: int, lo: float) -> list[tuple[float, float]]:
        """The stretches [a, z) where f >= q that meet [s, e) (``lo``: start of the one holding s)."""
        st = self.st
        out = []
        c: float | None = lo if base + st.prefix(s) >= q else st.next_ge(s, q, base)
        while c is not None and c < e:
            x = st.next_lt(c, q, base)
            out.append((c, INF if x is None else x))
            if x is None:
                break
            c = st.next_ge(x, q, base)
        return out

    def moved(self, e: Entry, old: float, t: float, now: float) -> None:
        """Reservation of ``e`` moved from ``old`` to ``t``: f rose where it no longer is."""
        d = e.p
        if t == old:
            self.marked = []
        elif t >= old + d or t + d <= old:
            self.raised(old, old + d, e.q, now)
        elif t > old:
            self.raised(old, t, e.q, now)
        else:
            self.raised(t + d, old + d, e.q, now)

    # ---------------------------------------------------------------- the test
    def movable(self, e: Entry, old: float, now: float, base: int, hull: Hull | None) -> float | bool | None:
        """Does ``Profile.earliest(..., before=old, skip=own reservation) < old`` hold (module doc)?

        Only the stretches meeting ``hull`` are looked at (all of them if None).  Yes: a time from
        which to search the new place (no stretch ending earlier fits); False: no; None: no, but the
        job stays unsettled (f >= q just before ``old`` and f(old) < 0)."""
        self.tried += 1
        st = self.st
        q, d = e.q, e.p
        if hull is None:
            a, z = now, old
        else:
            a, z = (hull[0] if hull[0] > now else now), (hull[1] if hull[1] < old else old)
        below, at_old = st.around(old)
        touching = False
        if base + below >= q:
            if not at_old or base + below + at_old >= 0:
                # no stretch ending before a (or before old, when none may meet the hull) fits
                return a if a < z else old
            touching = True
        last = old - d if old < INF else INF           # a stretch starting later is too short
        if a < z and now <= last:
            c = st.run_start(a, q, base, now) if base + st.prefix(a) >= q else st.next_ge(a, q, base)
            while c is not None and c < z and c <= last:
                x = st.next_lt(c, q, base)
                if (old if x is None or x > old else x) - c >= d:
                    return a
                if x is None or x >= old:
                    break
                c = st.next_ge(x, q, base)
        return None if touching else False

    # ---------------------------------------------------------------- the passes
    def compress(self, now: float) -> None:
        plan = self.plan
        base = self.prof.base(now, plan.free.count)
        if self.everything():
            self.unsettle_all()
            self._compress_all(now, base)
            return
        res, unsettled = plan.res, self.unsettled
        limit: tuple[Any, ...] | None = None
        while unsettled:
            heap = []
            for jid in unsettled:
                old, e, _ = res[jid]
                if old > now:
                    r = rank(e)
                    if limit is None or r < limit:
                        heap.append(r)
            heapq.heapify(heap)
            last = None
            while heap:
                r = heapq.heappop(heap)
                jid = r[3]
                if jid not in unsettled:
                    continue
                old, e, _ = res[jid]
                verdict = self.movable(e, old, now, base, unsettled[jid])
                if verdict is None:
                    unsettled[jid] = EMPTY
                    continue
                if verdict is False:
                    del unsettled[jid]
                    continue
                plan.unreserve(e)
                t = plan.reserve(e, now, before=old, prev=old, start=verdict)
                self.moved(e, old, t, now)
                for m in self.marked:
                    rm = rank(res[m][1])
                    if rm > r and (limit is None or rm < limit):
                        heapq.heappush(heap, rm)
                last = r
            if last is None:
                break
            limit = last

    def _compress_all(self, now: float, base: int) -> None:
        """Every reserved job tried in each pass (windows or unavailable machines)."""
        plan = self.plan
        todo = [e for e in plan.sched.wq.ordered() if e.id in plan.res]
        while todo:
            last = -1
            for k, e in enumerate(todo):
                old = plan.res[e.id][0]
                if old > now and moves(self.movable(e, old, now, base, None)):
                    plan.unreserve(e)
                    plan.reserve(e, now, before=old, prev=old)
                    last = k
            todo = todo[:last] if last > 0 else []
