"""Maui 3's iteration on specific nodes (issue 18; default ``mechanics`` of :mod:`maui`).

What the count-based model of the shared profile simplifies, following Maui's source
(TempleHPC ``maui-scheduler``, ``src/``):

- **Node reservations** (MQueue.c ``MQueueScheduleIJobs`` → MJob.c ``MJobPReserve``/``MJobReserve``/
  ``MJobGetEStartTime`` → MSched.c ``MJobAllocMNL``): a job that cannot start is reserved at the
  earliest S at which q nodes are free during [S, S + p̃) — a running job ends at start + p̃ (past
  its walltime, at max(start + p̃, now + 1): MRes.c ``MResJCreate``), reservations made earlier in the
  iteration and maintenance windows block their nodes — and holds the q lowest-index such nodes,
  idle ones included.  A reserved node only takes a job that ends by S.
- **Priority pass** (``MQueueScheduleIJobs``): jobs in priority order start when q nodes are free now
  for [now, now + p̃); one that cannot start is reserved while fewer than RESERVATIONDEPTH jobs hold
  one, and the pass goes on (``IdleJobFound`` stays false); the first job that can neither start nor
  be reserved sets ``IdleJobFound``: later jobs can then only be reserved (and start if reserved now).
- **Window backfill** (MQueue.c ``MQueueBackFill``, MBF.c ``MBFGetWindow`` then ``MBFFirstFit``/
  ``MBFBestFit``): a window is the set of idle nodes whose time to their next reservation exceeds
  the previous window's duration (0 first); its duration is the least such time (unlimited without
  reservation).  Jobs that are unreserved, with q ≤ the window's size and p̃ ≤ its duration, in
  priority order (the first BACKFILLDEPTH of them), start on the lowest-index window nodes still idle
  (FIRSTFIT), or the one with the largest BACKFILLMETRIC first, repeatedly (BESTFIT); the next window
  is built from the nodes left idle.

Allocation takes the lowest-index eligible nodes (the issue's reading of NODEALLOCATIONPOLICY on a
homogeneous machine; Maui's LASTAVAILABLE ordering is not modelled).  Node state lives in numpy
arrays of the platform's size: ``end`` (planned end of the job on each node, −inf when idle) and
``down``; reservations of an iteration are (S, S + p̃, node mask).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from batfeed.schedulers.jobqueue import ScanState
from batfeed.schedulers.resources import Intervals

if TYPE_CHECKING:
    from batfeed.schedulers.jobqueue import Entry
    from batfeed.schedulers.maui import JobInfo, Maui

INF = float("inf")


def mask_of(ivs: Intervals, n: int) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    for a, b in ivs:
        m[a:b + 1] = True
    return m


def intervals_of(idx: np.ndarray) -> Intervals:
    """Sorted node indices -> closed intervals."""
    nodes = idx.tolist()
    if not nodes:
        return []
    out: Intervals = []
    a = b = nodes[0]
    for x in nodes[1:]:
        if x != b + 1:
            out.append((a, b))
            a = x
        b = x
    out.append((a, b))
    return out


class Nodes:
    """Per-node plan of one Maui scheduler: planned ends, idle and down nodes, reservations."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.end = np.full(n, -INF)             # planned end of the running job, -inf = no job
        self.res: list[tuple[float, float, np.ndarray]] = []   # this iteration's (S, E, nodes)
        self.blocks: list[tuple[float, float, np.ndarray]] = []  # res + maintenance windows
        self.idle = np.zeros(n, dtype=bool)
        self.ready = np.zeros(n)
        self.allowed: dict[int, np.ndarray] = {}

    # ---------------------------------------------------------------- state
    def started(self, ivs: Intervals, end: float) -> None:
        for a, b in ivs:
            self.end[a:b + 1] = end
            self.idle[a:b + 1] = False

    def ended(self, ivs: Intervals) -> None:
        for a, b in ivs:
            self.end[a:b + 1] = -INF

    def overdue(self, now: float) -> bool:
        """A running job is past its planned end (its nodes' expected return moves with time)."""
        return bool(((self.end > -INF) & (self.end <= now)).any())

    def begin(self, s: Maui, now: float) -> None:
        """Snapshot at the start of an iteration: idle nodes, when each busy one is expected back."""
        n = self.n
        self.idle = mask_of(s.free.intervals(), n)
        end = self.end
        ready = np.where(end > now, end, now + 1.0)      # past its walltime: max(start + p̃, now + 1)
        ready[self.idle] = now
        if s.unavailable:
            down = mask_of(s.unavailable, n)
            back = np.full(n, INF)
            for w in s.profile.windows:                   # down for a window: back at its end
                if w.start <= now < w.end:
                    m = mask_of(w.machines, n) & down
                    back[m] = np.minimum(back[m], w.end)
            ready[down] = np.maximum(ready[down], back[down])
        self.ready = ready
        self.res = []
        self.blocks = [(w.start, w.end, mask_of(w.machines, n)) for w in s.profile.windows if w.end > now]

    def hostmask(self, info: JobInfo) -> np.ndarray | None:
        if info.nodes is None:
            return None
        key = id(info.nodes)
        m = self.allowed.get(key)
        if m is None:
            m = self.allowed[key] = mask_of(info.nodes, self.n)
        return m

    def blocked(self, a: float, b: float) -> np.ndarray | None:
        """Nodes a reservation or maintenance window holds during part of [a, b)."""
        out = None
        for s, e, m in self.blocks:
            if s < b and e > a:
                out = m.copy() if out is None else out | m
        return out

    def free_during(self, a: float, b: float, allowed: np.ndarray | None) -> np.ndarray:
        m = self.ready <= a
        if allowed is not None:
            m &= allowed
        blk = self.blocked(a, b)
        if blk is not None:
            m &= ~blk
        return m

    # ---------------------------------------------------------------- decisions
    def fit_now(self, q: int, p: float, now: float, allowed: np.ndarray | None) -> np.ndarray | None:
        """The q lowest idle nodes free during [now, now + p̃), or None (MJobSelectMNL)."""
        m = self.free_during(now, now + p, allowed) & self.idle
        idx = np.flatnonzero(m)
        return idx[:q] if len(idx) >= q else None

    def earliest(self, q: int, p: float, now: float, allowed: np.ndarray | None) -> tuple[float, np.ndarray]:
        """Earliest S >= now with q nodes free during [S, S + p̃) and the q lowest of them
        (MJobGetEStartTime); (inf, empty) if never."""
        ready = self.ready if allowed is None else np.where(allowed, self.ready, INF)
        lb = float(np.partition(ready, q - 1)[q - 1])      # no start before q nodes are back
        if lb == INF:
            return INF, np.empty(0, dtype=np.intp)
        if not self.blocks:                               # nothing reserved yet: the q-th return
            return lb, np.flatnonzero(ready <= lb)[:q]
        later = ready[(ready >= lb) & (ready < INF)]
        ends = [e for _, e, _ in self.blocks if lb < e < INF]
        for t in np.unique(np.concatenate((later, ends)) if ends else later).tolist():
            idx = np.flatnonzero(self.free_during(t, t + p, allowed))
            if len(idx) >= q:
                return t, idx[:q]
        return INF, np.empty(0, dtype=np.intp)

    def reserve(self, s: float, p: float, idx: np.ndarray) -> None:
        m = np.zeros(self.n, dtype=bool)
        m[idx] = True
        r = (s, s + p, m)
        self.res.append(r)
        self.blocks.append(r)

    def take(self, idx: np.ndarray, now: float, p: float) -> Intervals:
        """Nodes ``idx`` start a job now (``started`` records its planned end when it is launched)."""
        self.idle[idx] = False
        self.ready[idx] = max(now + p, now + 1.0)
        return intervals_of(idx)

    def time_to_block(self, now: float) -> np.ndarray:
        """Per node: seconds until its next reservation or window (inf if none, 0 if held now)."""
        t = np.full(self.n, INF)
        for s, e, m in self.blocks:
            if e > now:
                t[m] = np.minimum(t[m], max(s - now, 0.0))
        return t


# -------------------------------------------------------------------- the iteration
def iterate(s: Maui, now: float) -> bool:
    """One Maui iteration on nodes (module docstring); True if a job started."""
    cfg, wq, nodes = s.cfg, s.wq, s.nodes
    nodes.begin(s, now)
    depth = cfg.depth
    started: list[Entry] = []
    reserved: set[str] = set()
    idle_found = False
    for e in wq.main:
        info = s.info[e.id]
        if idle_found and len(nodes.res) >= depth:
            break                       # nothing below can start or be reserved any more
        if s._held(e, info):
            continue
        allowed = nodes.hostmask(info)
        if not idle_found:
            idx = nodes.fit_now(e.q, e.p, now, allowed)
            if idx is not None:
                _start(s, e, idx, now)
                started.append(e)
                continue
        if len(nodes.res) < depth:
            t, idx = nodes.earliest(e.q, e.p, now, allowed)
            if s.trace_reservations:
                s.record(now, e, t)
            if t < INF:
                if t <= now and idle_found:     # MJobPReserve made it for now: start it
                    _start(s, e, idx, now)
                    started.append(e)
                    continue
                nodes.reserve(t, e.p, idx)
                reserved.add(e.id)
                continue
        idle_found = True
    for e in started:
        wq.remove(e)
    if cfg.backfillpolicy != "NONE" and nodes.idle.any():
        _backfill(s, reserved, now)
    return bool(started)


def _start(s: Maui, e: Entry, idx: np.ndarray, now: float) -> None:
    ivs = s.nodes.take(idx, now, e.p)
    s.free.remove(ivs)
    s.launch(e, ivs, now)


def _backfill(s: Maui, reserved: set[str], now: float) -> None:
    """MQueueBackFill: windows of idle nodes by time to their next reservation (module docstring)."""
    cfg, nodes = s.cfg, s.nodes
    nidle = int(nodes.idle.sum())
    # no window is larger than the idle nodes: the queue index yields only the jobs that fit them
    cands = [e for e in s.wq.main.scan(ScanState(nidle, INF, INF)) if e.id not in reserved]
    if not cands:
        return
    avail = nodes.time_to_block(now)
    limit, metric = cfg.backfilldepth, cfg.backfillmetric
    prev = 0.0
    while cands:
        win = nodes.idle & (avail > prev)
        size = int(win.sum())
        if not size:
            return
        dur = float(avail[win].min())
        sel = []
        for e in cands:
            if e.q <= size and e.p <= dur and not s._held(e, s.info[e.id]):
                sel.append(e)
                if limit and len(sel) >= limit:
                    break
        started = []
        if cfg.backfillpolicy == "FIRSTFIT":
            for e in sel:
                if _try(s, e, win, now):
                    started.append(e)
        else:
            pool = list(sel)
            while pool:
                best, best_v = None, 0.0
                for e in pool:
                    v = e.q if metric == "PROCS" else e.p if metric == "SECONDS" else e.q * e.p
                    if v > best_v and not s._held(e, s.info[e.id]) and _fits(s, e, win, now) is not None:
                        best, best_v = e, v
                if best is None:
                    break
                pool.remove(best)
                if _try(s, best, win, now):
                    started.append(best)
        for e in started:
            s.wq.remove(e)
        if started:
            gone = {e.id for e in started}
            cands = [e for e in cands if e.id not in gone]
        if dur == INF:
            return
        prev = dur


def _fits(s: Maui, e: Entry, win: np.ndarray, now: float) -> np.ndarray | None:
    """The q lowest window nodes still idle (and in the job's HOSTLIST); p̃ <= the window's duration
    keeps them clear of every reservation and maintenance window."""
    m = win & s.nodes.idle
    allowed = s.nodes.hostmask(s.info[e.id])
    if allowed is not None:
        m &= allowed
    idx = np.flatnonzero(m)
    return idx[:e.q] if len(idx) >= e.q else None


def _try(s: Maui, e: Entry, win: np.ndarray, now: float) -> bool:
    if s._held(e, s.info[e.id]):
        return False
    idx = _fits(s, e, win, now)
    if idx is None:
        return False
    _start(s, e, idx, now)
    return True
