"""The ordered waiting queue shared by every backfilling scheduler.

- :class:`QueueIndex`: entries sorted by ``(key, seq)`` in blocks of at most ``2 * LOAD`` (like a
  ``SortedList``, so insertion and removal cost O(log n + LOAD)), plus a min-tree over the blocks
  holding each block's smallest q and smallest p̃.  :meth:`QueueIndex.scan` walks the entries in
  order but jumps over every subtree that cannot hold a job with ``q <= free`` and
  ``(p̃ <= horizon or q <= extra)`` (EASY's backfill rule, models.md §A), so a backfill pass over a
  60,000-job queue examines the few candidates, not every waiting job.
- :class:`WaitQueue`: primary order P, optional backfill order B, starvation threshold Θ (jobs
  waiting longer than Θ go first, by submission; they move to their own index once, at the first
  decision after crossing Θ).  Static policies keep their index; dynamic ones (SEXP, LEXP) are
  re-keyed and re-sorted at each decision (O(n log n), [TUNE] does the same).
- Ties (``ties``): ``"oldest"`` (default) orders equal keys by arrival; ``"newest"`` follows the
  authors' simulator (freuk/ocst ``engine.ml``/``easy.ml``, models.md §A "What the authors actually
  ran"): a submission is prepended to the waiting list and every sort is stable, so equal keys go
  newest first, starved jobs of equal submit times too; and the backfill list is the rest of the
  primary order sorted stably by B, so B's ties follow the primary order and starved jobs are
  ranked by B like the others (in ``"oldest"`` they come first, and B's ties go by arrival).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any

from batfeed.schedulers.policies import Policy, get_policy

INF = float("inf")
BIG = 1 << 62
TIES = ("oldest", "newest")   # order of equal keys: by arrival, or newest first (the authors' ocst)


class Entry:
    """A waiting job: submit time r, requested time p (inf without walltime), size q, arrival seq."""

    __slots__ = ("job", "id", "r", "p", "q", "seq", "tie", "kp", "kb", "ks", "where")

    def __init__(self, job: Any, seq: int, tie: int | None = None):
        self.job = job
        self.id: str = job.id
        self.r = float(job.submit_time)
        wall = job.requested_time
        self.p = float(wall) if wall is not None and wall > 0 else INF
        self.q: int = job.requested_resources
        self.seq = seq
        self.tie = seq if tie is None else tie   # second component of the keys: seq, or -seq (newest first)
        self.kp: Any = None
        self.kb: Any = None
        self.ks: Any = None     # key in the starved index
        self.where = 0          # 0: main indexes, 1: starved index, -1: gone

    def __repr__(self) -> str:
        return f"Entry({self.id}, r={self.r:g}, p={self.p:g}, q={self.q})"


class ScanState:
    """Mutable thresholds of a backfill pass (the caller updates them as jobs start)."""

    __slots__ = ("free", "horizon", "extra")

    def __init__(self, free: int, horizon: float, extra: float):
        self.free, self.horizon, self.extra = free, horizon, extra


class QueueIndex:
    LOAD = 64

    def __init__(self) -> None:
        self.keys: list[list[Any]] = []
        self.ents: list[list[Entry]] = []
        self.qs: list[list[int]] = []
        self.ps: list[list[float]] = []
        self.maxes: list[Any] = []
        self.n = 0
        self.examined = 0       # entries and tree nodes looked at by scan() (work counter for tests)
        self._build_tree()

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[Entry]:
        for block in self.ents:
            yield from block

    def first(self) -> Entry | None:
        return self.ents[0][0] if self.n else None

    # ------------------------------------------------------------------ tree over blocks
    def _build_tree(self) -> None:
        nb = len(self.keys)
        size = 1
        while size < nb:
            size *= 2
        tq = [BIG] * (2 * size)
        tp = [INF] * (2 * size)
        tq[size:size + nb] = [min(q) for q in self.qs]
        tp[size:size + nb] = [min(p) for p in self.ps]
        for i in range(size - 1, 0, -1):
            a, b = tq[2 * i], tq[2 * i + 1]
            tq[i] = a if a < b else b
            a2, b2 = tp[2 * i], tp[2 * i + 1]
            tp[i] = a2 if a2 < b2 else b2
        self.size, self.tq, self.tp = size, tq, tp

    def _lower(self, b: int, q: int, p: float) -> None:
        tq, tp = self.tq, self.tp
        i = self.size + b
        while i and (q < tq[i] or p < tp[i]):
            if q < tq[i]:
                tq[i] = q
            if p < tp[i]:
                tp[i] = p
            i >>= 1

    def _fix(self, b: int) -> None:
        tq, tp = self.tq, self.tp
        i = self.size + b
        tq[i], tp[i] = min(self.qs[b]), min(self.ps[b])
        i >>= 1
        while i:
            a, c = tq[2 * i], tq[2 * i + 1]
            nq = a if a < c else c
            a2, c2 = tp[2 * i], tp[2 * i + 1]
            np_ = a2 if a2 < c2 else c2
            if tq[i] == nq and tp[i] == np_:
                break
            tq[i], tp[i] = nq, np_
            i >>= 1

    # ------------------------------------------------------------------ updates
    def add(self, key: Any, e: Entry) -> None:
        self.n += 1
        if not self.keys:      # one block: the tree is its root (size 1, leaf at index 1)
            self.keys, self.ents, self.qs, self.ps, self.maxes = [[key]], [[e]], [[e.q]], [[e.p]], [key]
            self.size, self.tq, self.tp = 1, [BIG, e.q], [INF, e.p]
            return
        b = bisect_left(self.maxes, key)
        if b == len(self.maxes):
            b -= 1
        keys = self.keys[b]
        i = bisect_left(keys, key)
        keys.insert(i, key)
        self.ents[b].insert(i, e)
        self.qs[b].insert(i, e.q)
        self.ps[b].insert(i, e.p)
        if i == len(keys) - 1:
            self.maxes[b] = key
        if len(keys) > 2 * self.LOAD:
            h = len(keys) // 2
            all_lists: tuple[list[Any], ...] = (self.keys, self.ents, self.qs, self.ps)
            for lists in all_lists:
                blk = lists[b]
                lists[b:b + 1] = [blk[:h], blk[h:]]
            self.maxes[b:b + 1] = [self.keys[b][-1], self.keys[b + 1][-1]]
            self._build_tree()
        else:
            self._lower(b, e.q, e.p)

    def remove(self, key: Any) -> None:
        b = bisect_left(self.maxes, key)
        keys = self.keys[b] if b < len(self.keys) else []
        i = bisect_left(keys, key)
        if i == len(keys) or keys[i] != key:
            raise KeyError(key)
        del keys[i], self.ents[b][i]
        q, p = self.qs[b].pop(i), self.ps[b].pop(i)
        self.n -= 1
        if not keys:
            if self.n == 0:    # the last entry: back to the empty index
                self.keys, self.ents, self.qs, self.ps, self.maxes = [], [], [], [], []
                self.size, self.tq, self.tp = 1, [BIG, BIG], [INF, INF]
                return
            every: tuple[list[Any], ...] = (self.keys, self.ents, self.qs, self.ps, self.maxes)
            for lists in every:
                del lists[b]
            self._build_tree()
            return
        if i == len(keys):
            self.maxes[b] = keys[-1]
        if len(keys) < self.LOAD // 4 and len(self.keys) > 1:
            c = b + 1 if b + 1 < len(self.keys) else b - 1
            lo, hi = min(b, c), max(b, c)
            if len(self.keys[lo]) + len(self.keys[hi]) <= 2 * self.LOAD:
                all_lists: tuple[list[Any], ...] = (self.keys, self.ents, self.qs, self.ps)
                for lists in all_lists:
                    lists[lo:hi + 1] = [lists[lo] + lists[hi]]
                self.maxes[lo:hi + 1] = [self.keys[lo][-1]]
                self._build_tree()
                return
        leaf = self.size + b
        if q == self.tq[leaf] or p == self.tp[leaf]:
            self._fix(b)

    def rebuild(self, items: list[tuple[Any, Entry]]) -> None:
        """Replace the content by ``items``, already sorted by key."""
        step = self.LOAD
        chunks = [items[i:i + step] for i in range(0, len(items), step)]
        self.keys = [[k for k, _ in c] for c in chunks]
        self.ents = [[e for _, e in c] for c in chunks]
        self.qs = [[e.q for _, e in c] for c in chunks]
        self.ps = [[e.p for _, e in c] for c in chunks]
        self.maxes = [k[-1] for k in self.keys]
        self.n = len(items)
        self._build_tree()

    # ------------------------------------------------------------------ backfill scan
    def scan(self, st: ScanState) -> Iterator[Entry]:
        """Entries in order with ``q <= st.free`` and ``(q <= st.extra or p <= st.horizon)``.

        Reads ``st`` again after each yield (the caller starts jobs in between); the index must
        not change while the generator runs (remove started jobs afterwards).
        """
        size, tq, tp = self.size, self.tq, self.tp
        stack = [1]
        pop, push = stack.pop, stack.append
        while stack:
            i = pop()
            self.examined += 1
            q = tq[i]
            if q > st.free or (q > st.extra and tp[i] > st.horizon):
                continue
            if i < size:
                push(2 * i + 1)
                push(2 * i)
                continue
            b = i - size
            qs, ps, ents = self.qs[b], self.ps[b], self.ents[b]
            self.examined += len(qs)
            free, extra, horizon = st.free, st.extra, st.horizon
            for k in range(len(qs)):
                q = qs[k]
                if q <= free and (q <= extra or ps[k] <= horizon):
                    yield ents[k]
                    free, extra, horizon = st.free, st.extra, st.horizon
                    if free <= 0:
                        return


def _orders(policy: str | Policy, backfill_policy: str | Policy | None) -> tuple[Policy, Policy | None]:
    """(P, B) from names or :class:`Policy` objects; B is None when it is P (one index serves both)."""
    P = policy if isinstance(policy, Policy) else get_policy(policy)
    b = P if backfill_policy is None else (
        backfill_policy if isinstance(backfill_policy, Policy) else get_policy(backfill_policy))
    return P, (b if b.name != P.name else None)


def _rank(e: Entry) -> tuple:
    """Position of ``e`` in the primary order Q (starved by their key, then the others by P)."""
    return (0, e.ks) if e.where == 1 else (1, e.kp)


def _rekey(pol: Policy, index: QueueIndex, attr: str, entries: Iterable[Entry], now: float,
           rank: bool = False) -> None:
    """Key ``entries`` with ``pol`` at ``now`` (stored in ``entry.<attr>``) and make them ``index``'s content.

    Keys are (key, tie), or (key, *Q-rank) with ``rank`` (ties "newest": B's ties follow Q).  A policy
    with a vectorised key (``Policy.vkey``, e.g. CREASY's) is evaluated on numpy arrays and sorted with
    ``lexsort`` on (key, tie): the same keys and order as the per-entry path."""
    if rank:
        items = [((pol.key(e, now), *_rank(e)), e) for e in entries]
        for k, e in items:
            setattr(e, attr, k)
        items.sort(key=lambda it: it[0])
        index.rebuild(items)
        return
    if pol.vkey is not None:
        ents = list(entries)
        if len(ents) > 32:
            import numpy as np  # only vectorised policies (CREASY's, whose module imports numpy)

            r = np.fromiter((e.r for e in ents), float, len(ents))
            p = np.fromiter((e.p for e in ents), float, len(ents))
            seq = np.fromiter((e.tie for e in ents), np.int64, len(ents))
            keys = pol.vkey(r, p, now)
            order = np.lexsort((seq, keys)).tolist()
            kl, sl = keys.tolist(), seq.tolist()
            items = []
            for i in order:
                k = (kl[i], sl[i])
                e = ents[i]
                setattr(e, attr, k)
                items.append((k, e))
            index.rebuild(items)
            return
        entries = ents
    items = []
    for e in entries:
        k = (pol.key(e, now), e.tie)
        setattr(e, attr, k)
        items.append((k, e))
    items.sort(key=lambda it: it[0])
    index.rebuild(items)


class WaitQueue:
    """Waiting jobs in the order Q of models.md §A: starved jobs (now − r > Θ) by submission, then P."""

    def __init__(self, policy: str | Policy = "FCFS", backfill_policy: str | Policy | None = None,
                 theta: float | None = None, ties: str = "oldest"):
        """``policy``/``backfill_policy``: a registered name (:mod:`policies`) or a :class:`Policy`
        object (e.g. Maui's priority, a scheduler's own order); ``ties``: one of :data:`TIES`."""
        if ties not in TIES:
            raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
        self.newest = ties == "newest"
        self.theta = theta
        self.P, self.B = self._orders(policy, backfill_policy)
        self.main = QueueIndex()                       # order P
        self.main_b = QueueIndex() if self.B else None  # order B (ties "newest": starved jobs too)
        self.starved = QueueIndex()                    # (r, tie); ties "newest": (r, kp)
        self._arrivals: list[tuple[float, int, Entry]] = []   # heap for Θ promotion
        self.seq = 0
        self.new: list[Entry] = []                     # submitted since the scheduler last cleared it
        self.dynamic = self.P.dynamic or (self.B is not None and self.B.dynamic)
        self.n = 0                                     # waiting jobs

    def __len__(self) -> int:
        return self.n

    def _orders(self, policy: str | Policy, backfill_policy: str | Policy | None) -> tuple[Policy, Policy | None]:
        """(P, B), B None when one index serves both orders.  With ties "newest" and Θ, B is kept
        even when it is P: starved jobs are first in Q but ranked by B in the backfill order."""
        P, B = _orders(policy, backfill_policy)
        if B is None and self.newest and self.theta is not None:
            B = P
        return P, B

    def set_policies(self, policy: str | Policy, backfill_policy: str | Policy | None, now: float) -> None:
        """Change P (and B; None: the same as P) at ``now``: the waiting jobs not starved are re-keyed
        and both indexes rebuilt, as if the queue had been built with these orders (ties stay by
        arrival, or newest first); starved jobs keep their submission order."""
        entries = list(self.main)
        self.P, self.B = self._orders(policy, backfill_policy)
        self.dynamic = self.P.dynamic or (self.B is not None and self.B.dynamic)
        _rekey(self.P, self.main, "kp", entries, now)
        if self.newest and len(self.starved):          # their ties follow the new P
            self._rekey_starved(now)
        self.main_b = None
        if self.B is not None:
            self.main_b = QueueIndex()
            if self.newest:
                _rekey(self.B, self.main_b, "kb", list(self.starved) + entries, now, rank=True)
            else:
                _rekey(self.B, self.main_b, "kb", entries, now)

    def _rekey_starved(self, now: float) -> None:
        """Ties "newest": starved jobs are ordered by (r, P's key at ``now``) (ocst sorts Q by r, stably)."""
        starved = list(self.starved)
        for e in starved:
            e.kp = (self.P.key(e, now), e.tie)
            e.ks = (e.r, e.kp)
        self.starved.rebuild(sorted(((e.ks, e) for e in starved), key=lambda it: it[0]))

    def push(self, job: Any, now: float, walltime: float | None = None) -> Entry:
        """Queue ``job``; ``walltime``: plan with this requested time instead of the job's."""
        e = Entry(job, self.seq, -self.seq if self.newest else self.seq)
        if walltime is not None:
            e.p = walltime if walltime > 0 else INF
        self.seq += 1
        e.kp = (self.P.key(e, now), e.tie)
        self.main.add(e.kp, e)
        if self.main_b is not None and self.B is not None:
            e.kb = (self.B.key(e, now), 1, e.kp) if self.newest else (self.B.key(e, now), e.tie)
            self.main_b.add(e.kb, e)
        if self.theta is not None:
            heapq.heappush(self._arrivals, (e.r, e.seq, e))
        self.new.append(e)
        self.n += 1
        return e

    def remove(self, e: Entry) -> None:
        if e.where == 1:
            self.starved.remove(e.ks)
            if self.newest and self.main_b is not None:
                self.main_b.remove(e.kb)
        elif e.where == 0:
            self.main.remove(e.kp)
            if self.main_b is not None:
                self.main_b.remove(e.kb)
        else:
            return
        self.n -= 1
        e.where = -1

    def refresh(self, now: float) -> bool:
        """Θ promotions and re-keying of dynamic policies at ``now``; True if the order may have changed."""
        changed = False
        arr = self._arrivals
        theta: Any = self.theta
        if arr and (arr[0][2].where != 0 or arr[0][0] < now - theta):   # (empty when Θ is None)
            limit = now - theta
            while arr and (arr[0][2].where != 0 or arr[0][0] < limit):
                e = heapq.heappop(arr)[2]
                if e.where == 0:
                    self.main.remove(e.kp)
                    if self.main_b is not None:
                        self.main_b.remove(e.kb)
                    e.where = 1
                    e.ks = (e.r, e.kp) if self.newest else (e.r, e.tie)   # ocst: a stable sort of Q by r
                    self.starved.add(e.ks, e)
                    if self.newest and self.main_b is not None:   # still ranked by B, now as a starved job
                        e.kb = (e.kb[0], 0, e.ks)
                        self.main_b.add(e.kb, e)
                    changed = True
        if not self.dynamic:
            return changed
        if self.P.dynamic and len(self.main):
            _rekey(self.P, self.main, "kp", self.main, now)
            changed = True
        if self.newest and self.P.dynamic and len(self.starved):   # their ties follow P's keys at now
            self._rekey_starved(now)
            changed = True
        B, main_b = self.B, self.main_b
        if B is not None and main_b is not None and len(main_b):
            if self.newest and (B.dynamic or self.P.dynamic):     # B's keys hold Q's ranks
                _rekey(B, main_b, "kb", list(main_b), now, rank=True)
                changed = True
            elif B.dynamic:
                _rekey(B, main_b, "kb", main_b, now)
                changed = True
        return changed

    def head(self) -> Entry | None:
        if self.starved.n:
            return self.starved.ents[0][0]
        return self.main.ents[0][0] if self.main.n else None

    def ordered(self) -> list[Entry]:
        """Q: starved jobs by submission, then the others in order P."""
        return list(self.starved) + list(self.main)

    def backfill_order(self) -> list[Entry]:
        """Starved jobs by submission, then the others in order B (ties "newest": every job in order B)."""
        if self.newest:
            return list(self.main_b if self.main_b is not None else self.main)
        return list(self.starved) + list(self.main_b if self.main_b is not None else self.main)

    def backfill_key(self, e: Entry) -> tuple:
        """Position of ``e`` in the backfill order (starved jobs first, then B; or B for all)."""
        if self.newest:
            return e.kb if self.main_b is not None else e.kp
        if e.where == 1:
            return (0, e.ks)
        return (1, e.kb if self.main_b is not None else e.kp)

    def scan(self, st: ScanState) -> Iterator[Entry]:
        """Backfill candidates (see :meth:`QueueIndex.scan`): starved jobs first, then order B
        (ties "newest": all in order B, where the starved jobs also are)."""
        if self.newest and self.main_b is not None:
            yield from self.main_b.scan(st)
            return
        yield from self.starved.scan(st)
        if st.free > 0:
            yield from (self.main_b if self.main_b is not None else self.main).scan(st)

    @property
    def examined(self) -> int:
        return self.starved.examined + self.main.examined + (self.main_b.examined if self.main_b else 0)
