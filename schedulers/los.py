"""LOS, the Lookahead Optimizing Scheduler (Shmueli & Feitelson, *Backfilling with lookahead to
optimize the packing of parallel jobs*, JPDC 65(9), 2005; JSSPP 2003; models.md §C, "LOS").

Options (pybatsim ``-o`` JSON, ``batfeed simulate --options``)::

    depth            lookahead C: how many waiting jobs (from the head, in queue order) the dynamic
                     programming considers (integer >= 1, default 50: the paper's "≈ 50 jobs give
                     essentially the full benefit")
    tie              among job sets using the same number of machines: "slowdown" (default) prefers
                     the largest total expected slowdown (wait + p̃) / p̃ at now of the set's jobs (the
                     paper's best variant), "fcfs" the set with the earliest jobs
    policy           queue order (default FCFS = submission order, as in the paper)
    on_machine_down, maintenance    as every backfilling scheduler (see backfill.py)

At each decision (after a submission or an end, when a machine is free), W = the first C waiting jobs
in queue order, p̃ = the requested time (walltime; none: inf), and one of:

- *Basic_DP*, when the head fits in the free machines: the subset of W with the largest Σq subject to
  Σq <= free (0/1 knapsack, value = size).  The head need not be in it: Basic_DP runs on the whole
  lookahead and maximises the machines used now (models.md: "0/1 knapsack over the first C queued
  jobs"); a head left out is blocked afterwards and gets Reservation_DP's protection at the next
  decision.
- *Reservation_DP*, when the head is blocked: its shadow time and ``extra`` exactly as EASY computes
  them (:meth:`Easy.shadow`, the same profile crossing, window-aware under maintenance); the subset
  S of W without the head with the largest Σq subject to Σ_S q <= free and Σ_{j in S, now + p̃_j >
  shadow} q_j <= extra (2-D knapsack: a job ending by the shadow uses only free machines, one still
  running after it also uses the extra ones).  So the head's shadow time never moves later.

The chosen jobs start in queue order on the lowest free machines through the shared
:meth:`BackfillScheduler.allocate` / ``launch``.  Under planned maintenance, the head "fits" when
enough free machines lie outside the windows its span overlaps, W drops the other jobs that could
not start even alone, and a chosen job that no longer gets machines outside its windows (the
others took them) is skipped: the DP counts machines, not which ones.  One DP per decision: machines left over stay
idle until the next event even if a job beyond the lookahead would fit (the paper's lookahead bound).

Ties (UNDEF in the paper, deterministic here): first the largest Σq, then (``tie: slowdown``) the
largest Σ (now − r + p̃)/p̃ (a job without walltime counts 1), then the lexicographically first set in
queue order (the set containing the earliest job where two sets differ); ``tie: fcfs`` skips the
second criterion.  The DP (:func:`knapsack`) runs over suffixes of W on a numpy table indexed by (Σq,
bound on the after-shadow Σq) — O(C · free · extra) per decision, after dividing sizes and
capacities by the gcd of the sizes; it is skipped when all candidates fit together.
"""

from __future__ import annotations

from itertools import chain, islice
from math import gcd

import numpy as np
from batfeed.schedulers.backfill import BackfillScheduler
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.jobqueue import Entry
from batfeed.schedulers.options import Option, specs
from batfeed.schedulers.resources import count, subtract

INF = float("inf")
NEG = -INF

__all__ = ["Los", "basic_dp", "knapsack", "reservation_dp"]


def knapsack(free: int, extra: int, ends: list[float], q: list[int],
             values: list[float] | None = None) -> list[int]:
    """Indices (ascending) of the chosen subset of items ``q``.

    Maximises Σq subject to Σq <= ``free`` and Σ_{ends[i] > 0} q_i <= ``extra`` (``ends``: expected
    ends relative to the shadow time); among those, the largest Σ ``values`` (None: all equal); among
    those, the lexicographically first set (prefers including earlier items).  Sizes must be >= 1.
    """
    n = len(q)
    after = [ends[i] > 0 for i in range(n)]
    cand = [i for i in range(n) if q[i] <= free and (not after[i] or q[i] <= extra)]
    if not cand:
        return []
    total = sum(q[i] for i in cand)
    total_after = sum(q[i] for i in cand if after[i])
    if total <= free and total_after <= extra:
        return cand                          # the only set of that size
    g = 0
    for i in cand:
        g = gcd(g, q[i])
    A = min(free, total) // g
    B = min(extra, total_after, free) // g
    qs = [q[i] // g for i in cand]
    bs = [qs[k] if after[i] else 0 for k, i in enumerate(cand)]
    vs = [0.0] * len(cand) if values is None else [float(values[i]) for i in cand]
    m = len(cand)
    # W[k][a, b]: best Σ value over subsets of cand[k:] with Σq == a and after-shadow Σq <= b
    W: list[np.ndarray] = [np.empty(0)] * (m + 1)
    cur = np.full((A + 1, B + 1), NEG)
    cur[0, :] = 0.0
    W[m] = cur
    for k in range(m - 1, -1, -1):
        qa, qb, v = qs[k], bs[k], vs[k]
        nxt = cur.copy()
        if qa <= A and qb <= B:
            take = cur[:A + 1 - qa, :B + 1 - qb] + v
            np.maximum(nxt[qa:, qb:], take, out=nxt[qa:, qb:])
        W[k] = cur = nxt
    col = W[0][:, B]
    a = int(np.flatnonzero(col > NEG)[-1])
    b = B
    chosen = []
    for k in range(m):
        qa, qb = qs[k], bs[k]
        if a >= qa and b >= qb:
            t = W[k + 1][a - qa, b - qb] + vs[k]
            if t > NEG and t >= W[k + 1][a, b]:
                chosen.append(cand[k])
                a -= qa
                b -= qb
    return chosen


def basic_dp(free: int, q: list[int], values: list[float] | None = None) -> list[int]:
    """Basic_DP: the subset with the largest Σq <= ``free`` (ties as :func:`knapsack`)."""
    return knapsack(free, 0, [0.0] * len(q), q, values)


def reservation_dp(free: int, extra: int, ends: list[float], q: list[int],
                   values: list[float] | None = None) -> list[int]:
    """Reservation_DP: :func:`knapsack` with ``ends`` = expected ends minus the head's shadow time."""
    return knapsack(free, extra, ends, q, values)


class Los(BackfillScheduler):
    OPTIONS = specs(BackfillScheduler.OPTIONS.values(), [
        Option("depth", "number", 50, "lookahead C: waiting jobs from the head considered by the dynamic "
               "programming", minimum=1, integer=True),
        Option("tie", "choice", "slowdown", "among sets using as many machines: slowdown = the largest total "
               "expected slowdown (wait + walltime) / walltime (the paper's best), fcfs = the earliest jobs",
               choices=("slowdown", "fcfs")),
    ])

    shadow = Easy.shadow           # (shadow time, extra) of the head, exactly as EASY
    _walk = Easy._walk

    def __init__(self, options=None):
        super().__init__(options)
        self.depth = int(self.opts["depth"])
        self.by_slowdown = self.opts["tie"] == "slowdown"

    def window(self) -> list[Entry]:
        """W: the first ``depth`` waiting jobs in queue order."""
        wq = self.wq
        return list(islice(chain(wq.starved, wq.main), self.depth))

    def fits(self, e: Entry, now: float) -> bool:
        """``e`` alone could start now (enough free machines outside the windows its span overlaps)."""
        if e.q > self.free.count:
            return False
        if not self.profile.windows:
            return True
        usable = subtract(self.free.intervals(), self.profile.blocked(now, now + e.p))
        return count(usable) >= e.q

    def schedule(self) -> None:
        now = self.bs.time()
        wq = self.wq
        wq.refresh(now)
        wq.new = []
        self._ended = False
        if self.free.count == 0 and not self.trace_reservations:
            return
        self.profile.prune_windows(now)
        head = wq.head()
        if head is None:
            return
        free = self.free.count
        W = self.window()
        if self.profile.windows:        # jobs that could not start even alone stay out of the DP
            W = [e for e in W if e is head or self.fits(e, now)]
        values = [(now - e.r + e.p) / e.p if e.p < INF else 1.0 for e in W] if self.by_slowdown else None
        if self.fits(head, now):
            chosen = basic_dp(free, [e.q for e in W], values)
        else:
            shadow, extra = self.shadow(now, head)
            if self.trace_reservations:
                self.record(now, head, shadow)
            if free == 0:
                return
            rest = [i for i, e in enumerate(W) if e is not head]
            ends = [now + W[i].p - shadow if shadow < INF else NEG for i in rest]   # > 0: after the shadow
            sub = reservation_dp(free, min(extra, free), ends, [W[i].q for i in rest],
                                 None if values is None else [values[i] for i in rest])
            chosen = [rest[k] for k in sub]
        started = []
        for i in chosen:
            e = W[i]
            ivs = self.allocate(e, now)
            if ivs is None:
                continue
            self.launch(e, ivs, now)
            started.append(e)
        for e in started:
            wq.remove(e)
