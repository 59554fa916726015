"""Which machines of an interval set a Maui job gets: the highest or lowest ones (MSched.c ``MJobAllocMNL``
takes its node list from the end or the start, :mod:`maui_nodes`), read only as far as needed.

:func:`pick_union` picks from the union of the free machines and other machines (those the running jobs
give back before a reservation's start) without building that set: one sort, then a walk that merges
adjacent intervals only as far as needed, so the result is the one :func:`highest`/``lowest`` give on the
union as :class:`FreeMachines` keeps it (maximal intervals).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from batfeed.schedulers.resources import FreeMachines, Intervals


def highest(ivs: Intervals, n: int) -> Intervals:
    """The ``n`` highest machines of ``ivs`` (sorted, disjoint; all of them if there are fewer)."""
    return highest_of(reversed(ivs), n)


def highest_of(desc: Iterable[tuple[int, int]], n: int) -> Intervals:
    """The ``n`` highest machines of intervals given from the highest down (read only as far as needed)."""
    out: Intervals = []
    if n <= 0:
        return out
    for a, b in desc:
        if b - a >= n - 1:          # the last interval needed: its n highest machines
            out.append((b - n + 1, b))
            break
        out.append((a, b))
        n -= b - a + 1
    out.reverse()
    return out


def pick_union(free: FreeMachines, extra: Intervals, q: int, low: bool) -> Intervals:
    """The ``q`` lowest (``low``) or highest machines of ``free`` ∪ ``extra`` (disjoint from it):
    ``lowest``/``highest`` of that union, its adjacent intervals merged."""
    ivs = free.intervals()
    ivs += extra
    if not ivs or q <= 0:
        return []
    ivs.sort(reverse=not low)
    out: Intervals = []
    n = q
    a, b = ivs[0]
    if low:
        for c, d in islice(ivs, 1, None):
            if c == b + 1:              # adjacent: the same interval of the union
                b = d
                continue
            if b - a + 1 >= n:
                out.append((a, a + n - 1))
                return out
            out.append((a, b))
            n -= b - a + 1
            a, b = c, d
        out.append((a, b) if b - a + 1 <= n else (a, a + n - 1))
        return out
    for c, d in islice(ivs, 1, None):
        if d == a - 1:
            a = c
            continue
        if b - a + 1 >= n:
            out.append((b - n + 1, b))
            out.reverse()
            return out
        out.append((a, b))
        n -= b - a + 1
        a, b = c, d
    out.append((a, b) if b - a + 1 <= n else (b - n + 1, b))
    out.reverse()
    return out
