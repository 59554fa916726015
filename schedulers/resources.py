"""Machine sets as sorted disjoint closed intervals ``[(a, b), ...]`` and the set of free machines.

``FreeMachines.take_lowest`` hands out the lowest-numbered free machines (first fit by id),
``release``/``remove`` merge/split intervals with binary search, so a decision costs
O(log k + touched intervals) even on a 90,000-machine platform.  The module-level helpers
(``count``, ``intersect``, ``subtract``, ``union``, ``lowest``, ``parse``) work on plain interval lists.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

Intervals = list[tuple[int, int]]


class FreeMachines:
    def __init__(self, nb_machines: int):
        self.starts: list[int] = [0] if nb_machines else []
        self.ends: list[int] = [nb_machines - 1] if nb_machines else []
        self.count = nb_machines

    def intervals(self) -> Intervals:
        return list(zip(self.starts, self.ends, strict=True))

    def take_lowest(self, n: int) -> Intervals:
        """Remove and return the ``n`` lowest-numbered free machines (caller checks ``n <= count``)."""
        starts, ends = self.starts, self.ends
        self.count -= n
        a, b = starts[0], ends[0]
        if b - a + 1 > n:                # the common case: inside the first free interval
            starts[0] = a + n
            return [(a, a + n - 1)]
        out: Intervals = []
        i = 0
        while n > 0:
            a, b = starts[i], ends[i]
            size = b - a + 1
            if size <= n:
                out.append((a, b))
                n -= size
                i += 1
            else:
                out.append((a, a + n - 1))
                starts[i] = a + n
                n = 0
        del starts[:i], ends[:i]
        return out

    def take_lowest_outside(self, n: int, excluded: Intervals) -> Intervals | None:
        """Remove and return the ``n`` lowest free machines not in ``excluded``; None if there are fewer."""
        if not excluded:
            return self.take_lowest(n) if n <= self.count else None
        got = lowest(subtract(self.intervals(), excluded), n)
        if count(got) < n:
            return None
        self.remove(got)
        return got

    def release(self, ivs: Intervals) -> None:
        """Add machines back (they must not be free already)."""
        starts, ends = self.starts, self.ends
        n = len(starts)
        added = 0
        for a, b in ivs:
            i = bisect_right(starts, a)
            added += b - a + 1
            if i and ends[i - 1] == a - 1:             # merges with the interval before
                if i < n and starts[i] == b + 1:      # and the one after
                    ends[i - 1] = ends[i]
                    del starts[i], ends[i]
                    n -= 1
                else:
                    ends[i - 1] = b
            elif i < n and starts[i] == b + 1:
                starts[i] = a
            else:
                starts.insert(i, a)
                ends.insert(i, b)
                n += 1
        self.count += added

    def remove(self, ivs: Intervals) -> Intervals:
        """Remove whatever part of ``ivs`` is free; return what was removed."""
        starts, ends = self.starts, self.ends
        removed: Intervals = []
        for a, b in ivs:
            i = max(bisect_right(starts, a) - 1, 0)
            while i < len(starts) and starts[i] <= b:
                lo, hi = starts[i], ends[i]
                x, y = max(a, lo), min(b, hi)
                if x > y:
                    i += 1
                    continue
                removed.append((x, y))
                self.count -= y - x + 1
                parts = ([(lo, x - 1)] if lo < x else []) + ([(y + 1, hi)] if y < hi else [])
                starts[i:i + 1] = [p for p, _ in parts]
                ends[i:i + 1] = [q for _, q in parts]
                i += len(parts)
        return removed

    def count_in(self, ivs: Intervals) -> int:
        """Number of free machines inside ``ivs``."""
        starts, ends = self.starts, self.ends
        n = 0
        for a, b in ivs:
            i = max(bisect_right(starts, a) - 1, 0)
            while i < len(starts) and starts[i] <= b:
                x, y = max(a, starts[i]), min(b, ends[i])
                if x <= y:
                    n += y - x + 1
                i += 1
        return n


def count(ivs: Intervals) -> int:
    return sum(b - a + 1 for a, b in ivs)


def subtract(ivs: Intervals, other: Intervals) -> Intervals:
    """``ivs`` minus ``other`` (both sorted, disjoint)."""
    out: Intervals = []
    j = 0
    for a, b in ivs:
        cur = a
        while j < len(other) and other[j][1] < cur:
            j += 1
        k = j
        while k < len(other) and other[k][0] <= b:
            x, y = other[k]
            if x > cur:
                out.append((cur, x - 1))
            cur = max(cur, y + 1)
            k += 1
        if cur <= b:
            out.append((cur, b))
    return out


def intersect(ivs: Intervals, other: Intervals) -> Intervals:
    out: Intervals = []
    i = j = 0
    while i < len(ivs) and j < len(other):
        a, b = ivs[i]
        c, d = other[j]
        x, y = max(a, c), min(b, d)
        if x <= y:
            out.append((x, y))
        if b < d:
            i += 1
        else:
            j += 1
    return out


def union(ivs: Intervals, other: Intervals) -> Intervals:
    out: Intervals = []
    for a, b in sorted(ivs + other):
        if out and a <= out[-1][1] + 1:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def lowest(ivs: Iterable[tuple[int, int]], n: int) -> Intervals:
    """The ``n`` lowest machines of ``ivs`` (all of them if there are fewer; read only as far as needed)."""
    out: Intervals = []
    for a, b in ivs:
        if n <= 0:
            break
        size = b - a + 1
        out.append((a, a + min(size, n) - 1))
        n -= size
    return out


def parse(text: str) -> Intervals:
    """``"0-3 7"`` -> ``[(0, 3), (7, 7)]`` (sorted, merged); ValueError on bad input."""
    ivs: Intervals = []
    for part in str(text).split():
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if a < 0 or b < a:
            raise ValueError(f"bad machine interval '{part}'")
        ivs.append((a, b))
    return union(ivs, [])


