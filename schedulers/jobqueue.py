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
  ``"obps"`` follows the ocst that the authors' workflow pins (freuk/obps's submodule, freuk/ocst
  c0a0c57, ``jobs.ml``, ``easy.ml``, ``metrics.ml``): the waiting list is appended to, so equal keys
  go by arrival; the greedy backfill selection (``MakeGreedySelector``) keeps the *last* job of the
  largest criterion in the primary order, so B's ties go in the reverse of the primary order; and Θ is
  a criterion (``MakeThresholdedCriteria``, in P and in B): a starved job's is 9999999 + its wait, so
  starved jobs go first by submission (equal submissions: by arrival in P, reversed in B) unless a
  job's own criterion is larger (:data:`OCST_NEG`: in practice LAF's areas above 10^7).  That is its
  ``threshold`` command (the fixed policies); its ``bandit`` command (the tuned runs and their
  what-ifs, branch obps-article ``simulate.ml`` and ``bandit.ml``) leaves B without Θ: with
  ``backfill_theta=False`` starved jobs are ranked by B like the others (ties: reverse P order).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any

from batfeed.schedulers.policies import Policy, get_policy

INF = float("inf")
BIG = 1 << 62
TIES = ("oldest", "newest", "obps")   # equal keys: by arrival; newest first (ocst); the ocst obps pins
STARVED = 9999999.0     # ocst c0a0c57 MakeThresholdedCriteria: a starved job's criterion is 9999999 + its wait
# the policies whose key is minus ocst's criterion ("highest first"): only they can exceed a starved job's
OCST_NEG = frozenset({"LPF", "LQF", "LAF", "LEXP"})


class Entry:
    """A waiting job: submit time r, requested time p (inf without walltime), size q, arrival seq."""

    __slots__ = ("job", "id", "r", "p", "q", "seq", "tie", "kp", "kb", "ks", "ksb", "where")

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
        self.ksb: Any = None    # key in the starved index of order B (ties "obps")
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


def _merge(main: list[Entry], starved: list[Entry], before: Any) -> list[Entry]:
    """``main`` and ``starved`` (each in order) merged: an entry of ``main`` goes first when ``before(m, s)``."""
    out: list[Entry] = []
    i = j = 0
    while i < len(main) or j < len(starved):
        if i < len(main) and (j == len(starved) or before(main[i], starved[j])):
            out.append(main[i])
            i += 1
        else:
            out.append(starved[j])
            j += 1
    return out


def _rekey(pol: Policy, index: QueueIndex, attr: str, entries: Iterable[Entry], now: float,
           rank: bool = False, rev: bool = False) -> None:
    """Key ``entries`` with ``pol`` at ``now`` (stored in ``entry.<attr>``) and make them ``index``'s content.

    Keys are (key, tie), or (key, *Q-rank) with ``rank`` (ties "newest": B's ties follow Q).  A policy
    with a vectorised key (``Policy.vkey``, e.g. CREASY's) is evaluated on numpy arrays and sorted with
    ``lexsort`` on (key, tie): the same keys and order as the per-entry path.  ``rev`` (ties "obps"):
    (key, -P key, -seq), B's ties in the reverse of P's order."""
    if rank or rev:
        items: list[tuple[Any, Entry]] = [
            ((pol.key(e, now), *(_rank(e) if rank else (-e.kp[0], -e.seq))), e) for e in entries]
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
                 theta: float | None = None, ties: str = "oldest", backfill_theta: bool = True):
        """``policy``/``backfill_policy``: a registered name (:mod:`policies`) or a :class:`Policy`
        object (e.g. Maui's priority, a scheduler's own order); ``ties``: one of :data:`TIES`;
        ``backfill_theta`` (ties "obps" only): Θ orders B too (ocst's ``threshold``), or not (``bandit``)."""
        if ties not in TIES:
            raise ValueError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
        if not backfill_theta and ties != "obps":
            raise ValueError(f"backfill_theta false needs ties 'obps', got ties {ties!r}")
        self.theta_b = backfill_theta                  # ties "obps": Θ is also a criterion of order B
        self.newest = ties == "newest"
        self.obps = ties == "obps"
        self._pq = False                               # ties "obps": P's (B's) criterion can beat Θ's
        self._bq = False
        self.theta = theta
        self.now = 0.0                                 # the time of the last refresh (ties "obps")
        self.P, self.B = self._orders(policy, backfill_policy)
        self.main = QueueIndex()                       # order P
        self.main_b = QueueIndex() if self.B else None  # order B (ties "newest": starved jobs too)
        self.starved = QueueIndex()                    # (r, tie); ties "newest": (r, kp)
        self.starved_b = QueueIndex()                  # ties "obps": starved jobs in order B: ksb
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
        if B is None and (self.newest and self.theta is not None or self.obps):
            B = P
        self._pq = self.obps and P.name in OCST_NEG     # P's criterion may exceed a starved job's
        self._bq = self.obps and B is not None and B.name in OCST_NEG and self.theta_b
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
                _rekey(self.B, self.main_b, "kb", entries, now, rev=self.obps)
        if self.obps and not self.theta_b and len(self.starved_b):
            self._rekey_starved_b(now)

    def _rekey_starved_b(self, now: float) -> None:
        """Ties "obps", B without Θ: starved jobs by (B's key at ``now``, the reverse of (r, arrival))."""
        B: Any = self.B
        starved = list(self.starved_b)
        for e in starved:
            e.ksb = (B.key(e, now), -e.r, -e.seq)
        self.starved_b.rebuild(sorted(((e.ksb, e) for e in starved), key=lambda it: it[0]))

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
            if self.obps:       # B's ties: the reverse of P's order
                e.kb = (self.B.key(e, now), -e.kp[0], -e.seq)
            else:
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
            elif self.obps:
                self.starved_b.remove(e.ksb)
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
        self.now = now
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
                    elif self.obps:
                        B: Any = self.B
                        e.ksb = (e.r, -e.seq) if self.theta_b else (B.key(e, now), -e.r, -e.seq)
                        self.starved_b.add(e.ksb, e)
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
            elif self.obps and (B.dynamic or self.P.dynamic):     # B's keys hold P's keys
                _rekey(B, main_b, "kb", list(main_b), now, rev=True)
                changed = True
            elif B.dynamic:
                _rekey(B, main_b, "kb", main_b, now)
                changed = True
        if self.obps and not self.theta_b and B is not None and B.dynamic and len(self.starved_b):
            self._rekey_starved_b(now)
            changed = True
        return changed

    def head(self) -> Entry | None:
        if self.starved.n:
            s = self.starved.ents[0][0]
            if self._pq and self.main.n and self._p_before(self.main.ents[0][0], s):
                return self.main.ents[0][0]
            return s
        return self.main.ents[0][0] if self.main.n else None

    def _p_before(self, m: Entry, s: Entry) -> bool:
        """Ties "obps": job ``m`` (not starved) before starved job ``s`` in Q at the last refresh: its
        criterion (minus its P key) is larger than 9999999 + s's wait, or equal and ``m`` came first."""
        if not self._pq:
            return False
        c: float = -m.kp[0]
        t = STARVED + (self.now - s.r)
        return c > t or (c == t and m.seq < s.seq)

    def _b_before(self, m: Entry, s: Entry) -> bool:
        """Ties "obps": job ``m`` (not starved) before starved job ``s`` in the backfill order: a larger
        criterion than 9999999 + s's wait (B without Θ: than s's), or an equal one and ``m`` after ``s``
        in Q (the greedy selection keeps the last maximum)."""
        if not self.theta_b:
            km, ks = m.kb[0], s.ksb[0]
            return km < ks or (km == ks and not self._p_before(m, s))
        if not self._bq:
            return False
        c: float = -m.kb[0]
        t = STARVED + (self.now - s.r)
        return c > t or (c == t and not self._p_before(m, s))

    def ordered(self) -> list[Entry]:
        """Q: starved jobs by submission, then the others in order P (ties "obps": merged by criterion)."""
        if self._pq:
            return _merge(list(self.main), list(self.starved), self._p_before)
        return list(self.starved) + list(self.main)

    def backfill_order(self) -> list[Entry]:
        """Starved jobs by submission, then the others in order B (ties "newest": every job in order B;
        "obps": the starved ones in reverse arrival on equal submissions, merged by criterion)."""
        if self.newest:
            return list(self.main_b if self.main_b is not None else self.main)
        if self.obps and self.main_b is not None:
            return _merge(list(self.main_b), list(self.starved_b), self._b_before)
        return list(self.starved) + list(self.main_b if self.main_b is not None else self.main)

    def backfill_key(self, e: Entry) -> tuple:
        """Position of ``e`` in the backfill order (starved jobs first, then B; or B for all)."""
        if self.newest:
            return e.kb if self.main_b is not None else e.kp
        if e.where == 1:
            return (0, e.ksb) if self.obps else (0, e.ks)
        return (1, e.kb if self.main_b is not None else e.kp)

    def scan(self, st: ScanState) -> Iterator[Entry]:
        """Backfill candidates (see :meth:`QueueIndex.scan`): starved jobs first, then order B
        (ties "newest": all in order B, where the starved jobs also are)."""
        if self.newest and self.main_b is not None:
            yield from self.main_b.scan(st)
            return
        if self.obps and self.main_b is not None:
            if self.starved_b.n and (self._bq or not self.theta_b):
                yield from self._merged_scan(self.main_b, st)
                return
            yield from self.starved_b.scan(st)
            if st.free > 0:
                yield from self.main_b.scan(st)
            return
        yield from self.starved.scan(st)
        if st.free > 0:
            yield from (self.main_b if self.main_b is not None else self.main).scan(st)

    def _merged_scan(self, main_b: QueueIndex, st: ScanState) -> Iterator[Entry]:
        """Ties "obps", B's criterion able to beat a starved job's: the two scans merged.  One entry of
        each is read ahead, under thresholds that can only have shrunk since: the caller checks again."""
        a, b = self.starved_b.scan(st), main_b.scan(st)
        s, m = next(a, None), next(b, None)
        while s is not None or m is not None:
            if m is not None and (s is None or self._b_before(m, s)):
                yield m
                m = next(b, None)
            elif s is not None:
                yield s
                s = next(a, None)

    @property
    def examined(self) -> int:
        return self.starved.examined + self.starved_b.examined + self.main.examined + \
            (self.main_b.examined if self.main_b else 0)
