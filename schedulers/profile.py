"""The availability profile shared by the backfilling schedulers (models.md §A step 2 and §B).

Free machines over time, for t >= now::

    avail(t) = free_now + sum(ret_r for running r with s_r + p̃_r <= t) + steps(t)

- running jobs are kept sorted by expected end ``s + p̃`` (then start order) in blocks carrying the
  sum of their ``ret`` (machines they give back: their size minus those now unavailable), so the
  EASY shadow time — the first running job whose end makes ``q_head`` machines free — is found with
  two C-level prefix sums instead of a walk over thousands of running jobs;
- a step function (sorted times -> change of free machines) holds reservations
  (:meth:`reserve`/:meth:`unreserve`, used by conservative backfilling) and planned maintenance
  windows (:meth:`add_window`: their machines count as taken during the window); with
  ``ends_in_steps`` (schedulers that query :meth:`earliest` a lot) it also holds the running jobs'
  ends, so :meth:`levels` walks one list instead of merging two;
- :meth:`earliest` gives the earliest start of q machines during d seconds, :meth:`fits_now` whether a
  job can start now without delaying any reservation.

Counts only: which machines a job gets is decided at start time (no topology, non-contiguous
allocations); :meth:`blocked` lists the machines of the windows a time span overlaps, which a job
spanning them must avoid.  Jobs without walltime have p̃ = inf and hold their machines forever in
the profile.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate
from typing import Any, NamedTuple

from batfeed.schedulers.resources import Intervals, count, intersect, union
from mypy_extensions import mypyc_attr

INF = float("inf")


class Window(NamedTuple):
    start: float
    end: float
    machines: Intervals
    size: int


@mypyc_attr(allow_interpreted_subclasses=True)
class Profile:
    LOAD = 64

    def __init__(self, ends_in_steps: bool = False) -> None:
        self.ends_in_steps = ends_in_steps
        self._keys: list[list[tuple[float, int]]] = []   # (end, start seq) per block, sorted
        self._rets: list[list[int]] = []
        self._ids: list[list[str]] = []
        self._sums: list[int] = []
        self._maxes: list[tuple[float, int]] = []
        self.jobs: dict[str, tuple[tuple[float, int], Intervals]] = {}
        self.total = 0                  # sum of ret over running jobs
        self._seq = 0
        self.version = 0                # changes whenever the profile does
        self.times: list[float] = []     # the step function: sorted times and changes of free machines
        self.deltas: list[int] = []
        self.windows: list[Window] = []
        self.unavailable: Intervals = []    # machines down now (those in a window come back at its end)

    # ------------------------------------------------------------------ running jobs
    def add(self, jid: str, end: float, ivs: Intervals, ret: int) -> None:
        """A job started now, expected to end at ``end`` (start + p̃); ``ret`` machines come back then."""
        key = (end, self._seq)
        self._seq += 1
        self.version += 1
        self.jobs[jid] = (key, ivs)
        if self.ends_in_steps and end < INF:
            self._step(end, ret)
        self.total += ret
        if not self._keys or key > self._maxes[-1]:
            if not self._keys or len(self._keys[-1]) >= 2 * self.LOAD:
                self._keys.append([])
                self._rets.append([])
                self._ids.append([])
                self._sums.append(0)
                self._maxes.append(key)
            b, i = len(self._keys) - 1, len(self._keys[-1])
        else:
            b = bisect_left(self._maxes, key)
            i = bisect_left(self._keys[b], key)
        self._keys[b].insert(i, key)
        self._rets[b].insert(i, ret)
        self._ids[b].insert(i, jid)
        self._sums[b] += ret
        if key > self._maxes[b]:
            self._maxes[b] = key
        if len(self._keys[b]) > 2 * self.LOAD:
            h = self.LOAD
            all_lists: tuple[list[Any], ...] = (self._keys, self._rets, self._ids)
            for lists in all_lists:
                blk = lists[b]
                lists[b:b + 1] = [blk[:h], blk[h:]]
            self._sums[b:b + 1] = [sum(self._rets[b]), sum(self._rets[b + 1])]
            self._maxes[b:b + 1] = [self._keys[b][-1], self._keys[b + 1][-1]]

    def _locate(self, jid: str) -> tuple[int, int]:
        key = self.jobs[jid][0]
        b = bisect_left(self._maxes, key)
        return b, bisect_left(self._keys[b], key)

    def remove(self, jid: str) -> None:
        if jid not in self.jobs:
            return
        b, i = self._locate(jid)
        key_end = self.jobs.pop(jid)[0][0]
        self.version += 1
        del self._keys[b][i], self._ids[b][i]
        ret = self._rets[b].pop(i)
        self._sums[b] -= ret
        self.total -= ret
        if self.ends_in_steps and key_end < INF:
            self._step(key_end, -ret)
        if not self._keys[b]:
            for lists in (self._keys, self._rets, self._ids, self._sums, self._maxes):
                del lists[b]
        elif i == len(self._keys[b]):
            self._maxes[b] = self._keys[b][-1]

    def set_ret(self, jid: str, ret: int) -> None:
        if jid not in self.jobs:      # not tracked (FCFS keeps no running jobs here)
            return
        self.version += 1
        b, i = self._locate(jid)
        d = ret - self._rets[b][i]
        self._rets[b][i] = ret
        self._sums[b] += d
        self.total += d
        if self.ends_in_steps and self._keys[b][i][0] < INF:
            self._step(self._keys[b][i][0], d)

    def running(self) -> Iterator[tuple[float, int, str]]:
        """(expected end, ret, job id) in order of expected end, then start order."""
        for keys, rets, ids in zip(self._keys, self._rets, self._ids, strict=True):
            for k, r, j in zip(keys, rets, ids, strict=True):
                yield k[0], r, j

    def ended_by(self, t: float) -> list[str]:
        """The running jobs expected to end by ``t``, in the order of :meth:`running`."""
        out: list[str] = []
        for keys, ids in zip(self._keys, self._ids, strict=True):
            if keys[-1][0] <= t:
                out += ids
                continue
            i = 0
            while keys[i][0] <= t:
                i += 1
            out += ids[:i]
            break
        return out

    def crossing(self, need: int) -> tuple[float, int]:
        """(end of the first running job after which the cumulated ret reaches ``need``, that sum).

        In the order of expected end then start order, stopping at the first job that reaches
        ``need`` (models.md §A step 2 breaks there, so jobs ending at the same instant after it are
        not counted).  ``(inf, total)`` when the running jobs never give back ``need`` machines.
        """
        if need <= 0:
            return -INF, 0
        if need > self.total:
            return INF, self.total
        if len(self._sums) == 1:
            b, before = 0, 0
        else:
            cum = list(accumulate(self._sums))
            b = bisect_left(cum, need)
            before = cum[b - 1] if b else 0
        inner = list(accumulate(self._rets[b]))
        i = bisect_left(inner, need - before)
        return self._keys[b][i][0], before + inner[i]

    # ------------------------------------------------------------------ steps: reservations, windows
    def _step(self, t: float, delta: int) -> None:
        self.version += 1
        times, deltas = self.times, self.deltas
        i = bisect_left(times, t)
        if i < len(times) and times[i] == t:
            v = deltas[i] + delta
            if v:
                deltas[i] = v
            else:
                del times[i], deltas[i]
        elif delta:
            times.insert(i, t)
            deltas.insert(i, delta)

    def reserve(self, t: float, d: float, q: int) -> None:
        self._step(t, -q)
        if t + d < INF:
            self._step(t + d, q)

    def unreserve(self, t: float, d: float, q: int) -> None:
        self.reserve(t, d, -q)

    def add_window(self, start: float, end: float, machines: Intervals) -> None:
        w = Window(start, end, machines, count(machines))
        self.windows.append(w)
        self.windows.sort()
        self.reserve(start, end - start, w.size)

    def prune_windows(self, now: float) -> None:
        """Forget the windows that are over."""
        if self.windows and self.windows[0].end <= now:
            for w in [w for w in self.windows if w.end <= now]:
                self.windows.remove(w)
                self.unreserve(w.start, w.end - w.start, w.size)

    def blocked(self, a: float, b: float) -> Intervals:
        """Machines of the maintenance windows overlapping the span [a, b)."""
        out: Intervals = []
        for w in self.windows:
            if w.start >= b:
                break
            if w.end > a:
                out = union(out, w.machines)
        return out

    # ------------------------------------------------------------------ queries
    def levels(self, now: float, free: int, skip: tuple[float, float, int] | None = None
               ) -> Iterator[tuple[float, int]]:
        """(t, free machines from t until the next t) for t = now and every later change
        (running jobs without walltime never give their machines back).

        ``skip=(t, d, q)``: as if the reservation of q machines during [t, t + d) were not there.
        """
        level, cur = free, now
        if self.unavailable:      # down machines of an ongoing window: not free now, back at its end
            level += sum(count(intersect(w.machines, self.unavailable)) for w in self.windows
                         if w.start <= now < w.end)
        steps: Iterator[tuple[float, int]] = zip(self.times, self.deltas, strict=True)
        if skip is not None:      # one entry per time in the step lists: adjust before any merge
            st, sd, sq = skip
            adjust = {st: sq, st + sd: -sq} if st + sd < INF else {st: sq}
            steps = ((t, dl + adjust.get(t, 0)) for t, dl in steps)
        if not self.ends_in_steps and self.total:
            ends = ((k[0], r) for keys, rets in zip(self._keys, self._rets, strict=True)
                    for k, r in zip(keys, rets, strict=True) if k[0] < INF)
            steps = heapq.merge(ends, steps)
        for t, dl in steps:
            if t > cur:
                yield cur, level
                cur = t
            level += dl
        yield cur, level

    def earliest(self, q: int, d: float, now: float, free: int, before: float = INF,
                 skip: tuple[float, float, int] | None = None) -> float:
        """Earliest t >= now with at least q free machines during [t, t + d); inf if none (before ``before``).

        ``skip``: ignore one reservation (t, d, q), e.g. the job's own when looking for a better place.
        """
        cand = None
        for t, level in self.levels(now, free, skip):
            if cand is not None and t >= cand + d:
                return cand
            if t > before:
                break
            if level >= q:
                if cand is None:
                    cand = t
            else:
                cand = None
        return cand if cand is not None and cand <= before else INF

    def fits_now(self, q: int, d: float, now: float, free: int) -> bool:
        """Can q machines run now for d seconds without delaying any reservation?"""
        if q > free:
            return False
        for t, level in self.levels(now, free):
            if t >= now + d:
                return True
            if level < q:
                return False
        return True

