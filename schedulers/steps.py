"""A step function of free machines, searchable in O(log n): the profile of conservative backfilling.

:class:`Steps` holds the profile's change points (sorted times, each with the change of free
machines there) in blocks of at most ``2 * LOAD`` entries, like :class:`Profile`'s running jobs.
A segment tree over the blocks keeps, for every subtree, the sum of its changes and the lowest and
highest partial sum reached inside it.  With ``base`` the level before the first change point, the
free machines at time x are ``base + prefix(x)``, and the first change point after x where the level
reaches (or drops below) a threshold is found by one descent of that tree plus a scan of one block:
O(log(n / LOAD) + LOAD) instead of a walk over the whole profile.  Updates cost the same (one
block's partial sums, then the path to the root).

This is the "availability profile" of Mu'alem & Feitelson (2001), stored the way batsched's
``Schedule`` stores its time slices (``src/schedule.hpp``: a ``std::list<TimeSlice>``, each with its
available machines), but indexed so that finding a hole does not walk every slice.

``tests/test_conservative_fast.py`` checks every query against a scan of the sorted change points.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from itertools import accumulate

INF = float("inf")
BIG = 1 << 62


class Steps:
    """Sorted change points ``t -> delta`` (no zero delta is kept) with prefix-sum searches.

    Per block: the change points, their deltas and the partial sums ``pre`` of the deltas; per tree
    node: sum, lowest and highest partial sum of its blocks (a leaf: of one block)."""

    LOAD = 16

    def __init__(self) -> None:
        self.ts: list[list[float]] = []      # blocks of times
        self.ds: list[list[int]] = []        # their deltas
        self.pre: list[list[int]] = []       # partial sums of the deltas inside each block
        self.last: list[float] = []          # last time of each block
        self.n = 0
        self._at = 0                         # _edit: the position of its change in its block
        self._rebuild()

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[float, int]]:
        for ts, ds in zip(self.ts, self.ds, strict=True):
            yield from zip(ts, ds, strict=True)

    # ------------------------------------------------------------------ the tree over the blocks
    def _rebuild(self) -> None:
        nb = len(self.ts)
        self.pre = [list(accumulate(ds)) for ds in self.ds]
        size = 1
        while size < nb:
            size *= 2
        self.size = size
        self.tsum = [0] * (2 * size)
        self.tmin = [BIG] * (2 * size)
        self.tmax = [-BIG] * (2 * size)
        for b, pre in enumerate(self.pre):
            i = size + b
            self.tsum[i], self.tmin[i], self.tmax[i] = pre[-1], min(pre), max(pre)
        for i in range(size - 1, 0, -1):
            self._pull(i)

    def _pull(self, i: int) -> None:
        tsum, tmin, tmax = self.tsum, self.tmin, self.tmax
        left, right = 2 * i, 2 * i + 1
        s = tsum[left]
        tsum[i] = s + tsum[right]
        a, c = tmin[left], s + tmin[right]
        tmin[i] = a if a < c else c
        a, c = tmax[left], s + tmax[right]
        tmax[i] = a if a > c else c

    def _nodes(self, b0: int, b1: int) -> list[int]:
        """The tree nodes covering exactly the blocks b0 .. b1-1, left to right."""
        lo, hi = b0 + self.size, b1 + self.size
        lefts: list[int] = []
        rights: list[int] = []
        while lo < hi:
            if lo & 1:
                lefts.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                rights.append(hi)
            lo >>= 1
            hi >>= 1
        return lefts + rights[::-1]

    def _before(self, b: int) -> int:
        """Sum of the deltas of blocks 0 .. b-1: the left siblings on the path from leaf b up."""
        tsum, s = self.tsum, 0
        if b >= self.size:
            return tsum[1]
        i = self.size + b
        while i > 1:
            if i & 1:
                s += tsum[i - 1]
            i >>= 1
        return s

    # ------------------------------------------------------------------ updates
    def add(self, t: float, delta: int) -> None:
        """Add ``delta`` free machines from ``t`` on (an entry whose delta becomes 0 is removed)."""
        b = self._edit(t, delta)
        if b is not None:
            self._refresh(b, self._at)

    def add2(self, t1: float, d1: int, t2: float, d2: int) -> None:
        """``add(t1, d1)`` then ``add(t2, d2)`` (a reservation's two steps), with one update of the
        tree when both land in the same block."""
        b1 = self._edit(t1, d1)
        at1 = self._at
        b2 = self._edit(t2, d2)
        if b2 is None:              # no change, or a rebuild that covers the first change too
            if b1 is not None and d2 == 0:
                self._refresh(b1, at1)
            return
        if b1 is not None and b1 != b2:
            self._refresh(b1, at1)
        self._refresh(b2, at1 if b1 == b2 and at1 < self._at else self._at)

    def _edit(self, t: float, delta: int) -> int | None:
        """Change the lists; the block whose sums are now stale, or None (no change, or rebuilt).
        ``_at``: where in that block (the partial sums before it still hold)."""
        if not delta:
            return None
        last = self.last
        b = bisect_left(last, t)
        if b == len(last):
            if not last:
                self.ts, self.ds, self.last, self.n = [[t]], [[delta]], [t], 1
                self._rebuild()
                return None
            b -= 1
        ts, ds = self.ts[b], self.ds[b]
        i = bisect_left(ts, t)
        if i < len(ts) and ts[i] == t:
            v = ds[i] + delta
            if v:
                ds[i] = v
            else:
                del ts[i], ds[i]
                self.n -= 1
                if not ts:
                    del self.ts[b], self.ds[b], last[b]
                    self._rebuild()
                    return None
                if i == len(ts):
                    last[b] = ts[-1]
                if len(ts) < self.LOAD // 4 and len(last) > 1:
                    c = b + 1 if b + 1 < len(last) else b - 1
                    lo, hi = min(b, c), max(b, c)
                    if len(self.ts[lo]) + len(self.ts[hi]) <= 2 * self.LOAD:
                        self.ts[lo:hi + 1] = [self.ts[lo] + self.ts[hi]]
                        self.ds[lo:hi + 1] = [self.ds[lo] + self.ds[hi]]
                        last[lo:hi + 1] = [self.ts[lo][-1]]
                        self._rebuild()
                        return None
        else:
            ts.insert(i, t)
            ds.insert(i, delta)
            self.n += 1
            if i == len(ts) - 1:
                last[b] = t
            if len(ts) > 2 * self.LOAD:
                h = len(ts) // 2
                self.ts[b:b + 1] = [ts[:h], ts[h:]]
                self.ds[b:b + 1] = [ds[:h], ds[h:]]
                last[b:b + 1] = [ts[h - 1], ts[-1]]
                self._rebuild()
                return None
        self._at = i
        return b

    def _refresh(self, b: int, at: int) -> None:
        """Block b changed from its change point ``at`` on: its partial sums from there, its lowest
        and highest, then its leaf and the path to the root (native loops when compiled)."""
        pre, ds = self.pre[b], self.ds[b]
        n = len(ds)
        while len(pre) < n:             # change points added or removed: the list's length first
            pre.append(0)
        while len(pre) > n:
            pre.pop()
        acc = pre[at - 1] if at else 0
        for k in range(at, n):
            acc += ds[k]
            pre[k] = acc
        lo, hi = BIG, -BIG
        for v in pre:
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        i = self.size + b
        tsum, tmin, tmax = self.tsum, self.tmin, self.tmax
        while i:                        # a node left unchanged leaves its ancestors unchanged
            if tsum[i] == acc and tmin[i] == lo and tmax[i] == hi:
                return
            tsum[i], tmin[i], tmax[i] = acc, lo, hi
            i >>= 1
            if i:
                left = 2 * i
                s = tsum[left]
                acc = s + tsum[left + 1]
                a, c = tmin[left], s + tmin[left + 1]
                lo = a if a < c else c
                a, c = tmax[left], s + tmax[left + 1]
                hi = a if a > c else c

    # ------------------------------------------------------------------ point queries
    def prefix(self, x: float, strict: bool = False) -> int:
        """Sum of the deltas at times <= x (< x if ``strict``)."""
        last = self.last
        b = bisect_left(last, x) if strict else bisect_right(last, x)
        acc = self._before(b) if b else 0
        if b < len(last):
            i = bisect_left(self.ts[b], x) if strict else bisect_right(self.ts[b], x)
            if i:
                acc += self.pre[b][i - 1]
        return acc

    def around(self, t: float) -> tuple[int, int]:
        """(sum of the deltas at times < t, delta at t or 0)."""
        last = self.last
        b = bisect_left(last, t)
        if b == len(last):
            return self.tsum[1] if last else 0, 0
        ts = self.ts[b]
        i = bisect_left(ts, t)
        acc = self._before(b) if b else 0
        if i:
            acc += self.pre[b][i - 1]
        return acc, (self.ds[b][i] if ts[i] == t else 0)

    def after(self, x: float) -> float:
        """The first change point > x (inf if none)."""
        last = self.last
        b = bisect_right(last, x)
        if b == len(last):
            return INF
        ts = self.ts[b]
        return ts[bisect_right(ts, x)]

    # ------------------------------------------------------------------ searches
    def next_ge(self, x: float, q: int, base: int) -> float | None:
        """First change point t > x where ``base + prefix(t) >= q`` (None if none)."""
        last = self.last
        b = bisect_right(last, x)
        if b == len(last):
            return None
        ts = self.ts[b]
        i = bisect_right(ts, x)
        acc = base + self._before(b) if b else base
        thr = q - acc
        pre = self.pre[b]
        if self.tmax[self.size + b] >= thr:         # in this block, after x
            for k in range(i, len(pre)):
                if pre[k] >= thr:
                    return ts[k]
        return self._descend(b + 1, acc + pre[-1], q, True)

    def next_lt(self, x: float, q: int, base: int) -> float | None:
        """First change point t > x where ``base + prefix(t) < q`` (None if none)."""
        last = self.last
        b = bisect_right(last, x)
        if b == len(last):
            return None
        ts = self.ts[b]
        i = bisect_right(ts, x)
        acc = base + self._before(b) if b else base
        thr = q - acc
        pre = self.pre[b]
        if self.tmin[self.size + b] < thr:
            for k in range(i, len(pre)):
                if pre[k] < thr:
                    return ts[k]
        return self._descend(b + 1, acc + pre[-1], q, False)

    def _descend(self, b0: int, acc: int, q: int, high: bool) -> float | None:
        """First change point of blocks b0.. whose level (``acc`` before block b0) is >= q (``high``)
        or < q: the first such tree node of the range, then down to its block."""
        nb = len(self.last)
        if b0 >= nb:
            return None
        size = self.size
        tsum, tagg = self.tsum, (self.tmax if high else self.tmin)
        for node in self._nodes(b0, nb):
            v = acc + tagg[node]
            if (v >= q) if high else (v < q):
                while node < size:
                    node *= 2
                    v = acc + tagg[node]
                    if not ((v >= q) if high else (v < q)):
                        acc += tsum[node]
                        node += 1
                b = node - size
                thr = q - acc
                pre = self.pre[b]
                for k in range(len(pre)):
                    if (pre[k] >= thr) if high else (pre[k] < thr):
                        return self.ts[b][k]
                raise AssertionError("Steps: tree and blocks disagree")   # pragma: no cover
            acc += tsum[node]
        return None

    def run_start(self, x: float, q: int, base: int, lo: float) -> float:
        """Start of the stretch ending at x where the level stays >= q, not before ``lo``.

        The change point following the last one <= x whose level is < q (the first change point
        if there is none and ``base < q``; -inf if ``base >= q``), or ``lo`` if that is earlier
        (the caller knows that the level at x is >= q)."""
        last = self.last
        if not last:
            return lo
        b = bisect_right(last, x)
        if b == len(last):
            b -= 1
        i = bisect_right(self.ts[b], x)         # ts[:i] are <= x
        before = base + (self._before(b) if b else 0)
        found = None
        pre, thr = self.pre[b], q - before
        for k in range(i - 1, -1, -1):
            if pre[k] < thr:
                found = (b, k)
                break
        if found is None:                       # earlier blocks, right to left, by the tree
            size, tsum, tmin = self.size, self.tsum, self.tmin
            acc = before
            for node in reversed(self._nodes(0, b)):
                start = acc - tsum[node]        # level before the blocks of this node
                if start + tmin[node] < q:
                    while node < size:          # the rightmost block holding a level < q
                        left = 2 * node
                        mid = start + tsum[left]
                        if mid + tmin[left + 1] < q:
                            node, start = left + 1, mid
                        else:
                            node = left
                    bi = node - size
                    pre, thr = self.pre[bi], q - start
                    for k in range(len(pre) - 1, -1, -1):
                        if pre[k] < thr:
                            found = (bi, k)
                            break
                    break
                acc = start
        if found is None:
            t = self.ts[0][0] if base < q else -INF
        else:
            bi, k = found
            t = self.ts[bi][k + 1] if k + 1 < len(self.ts[bi]) else self.ts[bi + 1][0]
        return t if t > lo else lo

    def walk(self, x: float, y: float, base: int, limit: int) -> tuple[list[float], list[int], int] | None:
        """([x, then the change points in (x, y)], the levels from each of them, the level at y);
        None if there are more than ``limit`` change points in (x, y)."""
        last = self.last
        lv = base + self.prefix(x)
        times, levels = [x], [lv]
        b = bisect_right(last, x)
        while b < len(last):
            ts, ds = self.ts[b], self.ds[b]
            for k in range(bisect_right(ts, x) if ts[0] <= x else 0, len(ts)):
                t = ts[k]
                if t >= y:
                    return times, levels, (lv + ds[k] if t == y else lv)
                if len(times) > limit:
                    return None
                lv += ds[k]
                times.append(t)
                levels.append(lv)
            b += 1
        return times, levels, lv

    def minmax(self, x: float, y: float, base: int) -> tuple[int, int]:
        """(lowest, highest) level over [x, y): at x, then at every change point in (x, y)."""
        last, ts_, pre_ = self.last, self.ts, self.pre
        nb = len(last)
        b = bisect_right(last, x)                   # first block with change points after x
        off = base + (self._before(b) if b else 0)  # level before block b
        lv = off
        if b < nb:
            i = bisect_right(ts_[b], x)
            if i:
                lv += pre_[b][i - 1]
        lo = hi = lv
        if b == nb:
            return lo, hi
        ts, pre = ts_[b], pre_[b]
        j = bisect_left(ts, y)
        i = bisect_right(ts, x)
        if i < j:
            lo, hi = min(lo, off + min(pre[i:j])), max(hi, off + max(pre[i:j]))
        if j < len(ts):
            return lo, hi
        b2 = bisect_left(last, y)                   # the block holding the first change point >= y
        acc = off + pre[-1]
        tsum, tmin, tmax = self.tsum, self.tmin, self.tmax
        for node in self._nodes(b + 1, min(b2, nb)):    # the whole blocks b+1 .. b2-1
            lo, hi = min(lo, acc + tmin[node]), max(hi, acc + tmax[node])
            acc += tsum[node]
        if b2 < nb:                                 # the change points of block b2 before y
            k = bisect_left(ts_[b2], y)
            if k:
                pre = pre_[b2]
                lo, hi = min(lo, acc + min(pre[:k])), max(hi, acc + max(pre[:k]))
        return lo, hi
