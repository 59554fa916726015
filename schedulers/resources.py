"""The set of currently free machines as sorted disjoint intervals.

``take_lowest`` hands out the lowest-numbered free machines (first fit by id), ``release`` and
``remove`` merge/split intervals with binary search, so a decision costs O(log k + touched
intervals) even on a 90,000-machine platform.
"""

from __future__ import annotations

from bisect import bisect_right

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
        self.count -= sum(b - a + 1 for a, b in out)
        return out

    def release(self, ivs: Intervals) -> None:
        """Add machines back (they must not be free already)."""
        starts, ends = self.starts, self.ends
        for a, b in ivs:
            i = bisect_right(starts, a)
            merge_left = i > 0 and ends[i - 1] == a - 1
            merge_right = i < len(starts) and starts[i] == b + 1
            if merge_left and merge_right:
                ends[i - 1] = ends[i]
                del starts[i], ends[i]
            elif merge_left:
                ends[i - 1] = b
            elif merge_right:
                starts[i] = a
            else:
                starts.insert(i, a)
                ends.insert(i, b)
            self.count += b - a + 1

    def remove(self, ivs: Intervals) -> Intervals:
        """Remove whatever part of ``ivs`` is free; return what was removed."""
        removed: Intervals = []
        for a, b in ivs:
            for lo, hi in self.intervals():
                x, y = max(a, lo), min(b, hi)
                if x <= y:
                    removed.append((x, y))
        for x, y in removed:
            i = bisect_right(self.starts, x) - 1
            lo, hi = self.starts[i], self.ends[i]
            del self.starts[i], self.ends[i]
            parts = [(lo, x - 1)] if lo < x else []
            parts += [(y + 1, hi)] if y < hi else []
            for k, (p, q) in enumerate(parts):
                self.starts.insert(i + k, p)
                self.ends.insert(i + k, q)
            self.count -= y - x + 1
        return removed


def subtract(ivs: Intervals, other: Intervals) -> Intervals:
    """``ivs`` minus ``other`` (both sorted, disjoint)."""
    out: Intervals = []
    for a, b in ivs:
        cur = a
        for x, y in other:
            if y < cur or x > b:
                continue
            if x > cur:
                out.append((cur, x - 1))
            cur = max(cur, y + 1)
        if cur <= b:
            out.append((cur, b))
    return out
