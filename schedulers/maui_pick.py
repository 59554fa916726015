"""Which machines of an interval set a Maui job gets: the highest or lowest ones (MSched.c ``MJobAllocMNL``
takes its node list from the end or the start, :mod:`maui_nodes`), read only as far as needed.

:func:`pick_union` picks from the union of the free machines and other machines (those the running jobs
give back before a reservation's start) without building that set: one sort, then a walk that merges
adjacent intervals only as far as needed, so the result is the one :func:`highest`/``lowest`` give on the
union as :class:`FreeMachines` keeps it (maximal intervals).
"""

from __future__ import annotations

from collections.abc import Iterable

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
    ivs.sort(reverse=not low)
    out: Intervals = []
    i, m, n = 0, len(ivs), q
    while i < m and n > 0:
        a, b = ivs[i]
        i += 1
        if low:
            while i < m and ivs[i][0] == b + 1:
                b = ivs[i][1]
                i += 1
            out.append((a, b) if b - a < n else (a, a + n - 1))
        else:
            while i < m and ivs[i][1] == a - 1:
                a = ivs[i][0]
                i += 1
            out.append((a, b) if b - a < n else (b - n + 1, b))
        n -= b - a + 1
    if not low:
        out.reverse()
    return out
