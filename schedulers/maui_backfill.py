"""Maui 3's backfill on nodes (MQueue.c ``MQueueBackFill``, MBF.c ``MBFGetWindow``, ``MBFFirstFit``/``MBFBestFit``):
the windows of :meth:`Plan.windows <batfeed.schedulers.maui_nodes.Plan.windows>` filled in priority order
(:mod:`maui_nodes`' docstring describes the rules)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batfeed.schedulers.jobqueue import QueueIndex, ScanState
from batfeed.schedulers.resources import Intervals, count, intersect

if TYPE_CHECKING:
    from batfeed.schedulers.jobqueue import Entry
    from batfeed.schedulers.maui import Maui

INF = float("inf")


def start(s: Maui, e: Entry, ivs: Intervals, now: float) -> None:
    keep = s.plan.memo is not None and s.plan.starting(e.q, now + e.p, ivs)
    s.free.remove(ivs)
    s.launch(e, ivs, now)
    if keep:
        s.plan.started(now + e.p)


def backfill(s: Maui, reserved: set[str], now: float) -> bool:
    """MQueueBackFill: windows of idle nodes by time to their next reservation (module docstring); True if
    a job started.  Once per iteration: MSched.c ``MSchedProcessJobs`` backfills with the hard policy
    limits after its priority passes; its soft-limit backfill before them runs only when the DEFAULT
    partition's ``BFPolicy != ptOFF``, and that partition keeps the default bfFIRSTFIT (= ptOFF: MPar.c
    ``MParProcessOConfig`` does not copy BACKFILLPOLICY to it, unlike NODEALLOCATIONPOLICY)."""
    cfg = s.cfg
    main = s.wq.main
    idle = s.free.count     # no window is larger: the queue index yields only the jobs that fit them
    if not _any(main, idle, reserved):
        return False
    any_started = False
    limit = cfg.backfilldepth
    for dur, win in s.plan.windows(now):
        size = count(win)
        base = s.free.count          # the free machines the window was built from (none come back meanwhile)
        left = [size]                # its machines still idle (a start in it takes q of them)
        started: list[Entry] = []
        if cfg.backfillpolicy == "FIRSTFIT" and not limit and not cfg.rejectnegpriojobs:
            _first_fit(s, reserved, dur, win, left, base, started, now)
        elif cfg.backfillpolicy == "FIRSTFIT":
            for e in _select(s, reserved, size, dur, limit):
                if _try(s, e, win, left, base, now):
                    started.append(e)
        else:
            pool = _select(s, reserved, size, dur, limit)
            while pool:            # the largest metric among the jobs that fit, first in priority order
                best, best_v, best_ivs = None, 0.0, None
                for e in pool:
                    v = cfg.bf_value(e.q, e.p)
                    if v > best_v and not s._held(e, s.info[e.id], True):
                        ivs = _fits(s, e, win, left[0], base, now)
                        if ivs is not None:
                            best, best_v, best_ivs = e, v, ivs
                if best is None or best_ivs is None:
                    break
                pool.remove(best)
                start(s, best, best_ivs, now)
                left[0] -= best.q
                started.append(best)
        for e in started:
            s.wq.remove(e)
        if started:
            any_started = True
            if not _any(main, idle, reserved):
                return True
    return any_started


def _select(s: Maui, reserved: set[str], size: int, dur: float, limit: int) -> list[Entry]:
    """The window's candidates (MBF.c ``MBFFirstFit``/``MBFBestFit`` on MQueue.c ``MQueueSelectJobs``'s list):
    unreserved jobs within the hard limits with q <= ``size`` and p̃ <= ``dur``, in priority order, the
    first BACKFILLDEPTH (``limit``; 0: all) of them."""
    sel = []
    for e in s.wq.main.scan(ScanState(size, dur, -1.0)):
        if e.id not in reserved and not s._held(e, s.info[e.id], hard=True):
            sel.append(e)
            if limit and len(sel) >= limit:
                break
    return sel


def _first_fit(s: Maui, reserved: set[str], dur: float, win: Intervals, left: list[int], base: int,
               started: list[Entry], now: float) -> None:
    """MBF.c ``MBFFirstFit`` over :func:`_select`'s candidates without BACKFILLDEPTH, selected and tried in
    one scan of the queue index: a job larger than the window's machines still idle cannot start, and
    without a depth it counts for nothing, so the scan skips it (``st.free``: those machines).  Checking
    the hard limits at the try only is the same: they only tighten as jobs start, and nothing else that
    :meth:`~batfeed.schedulers.maui_core.MauiCore._held` reads changes (no REJECTNEGPRIOJOBS here)."""
    st = ScanState(left[0], dur, -1.0)
    for e in s.wq.main.scan(st):
        if e.id not in reserved and not s._held(e, s.info[e.id], hard=True) and _try(s, e, win, left, base, now):
            started.append(e)
            st.free = left[0]


def _any(main: QueueIndex, idle: int, reserved: set[str]) -> bool:
    """A waiting job of at most ``idle`` machines is not reserved."""
    return any(e.id not in reserved for e in main.scan(ScanState(idle, INF, INF)))


def _fits(s: Maui, e: Entry, win: Intervals, left: int, base: int, now: float) -> Intervals | None:
    """q window machines still idle (and in the job's HOSTLIST), chosen by :meth:`Plan.pick_now` (MBF.c
    ``MBFFirstFit`` → ``MJobSelectMNL`` on the window's nodes → ``MJobAllocMNL``); p̃ <= the window's
    duration keeps them clear of every reservation and maintenance window.  ``left``: the window's
    machines still idle; ``base``: the free machines when it was built (the same count: all of them)."""
    if e.q > left:
        return None
    free = s.free
    m = win if free.count == base else intersect(win, free.intervals())
    nodes = s.info[e.id].nodes
    if nodes is not None:
        m = intersect(m, nodes)
        if count(m) < e.q:
            return None
    return s.plan.pick_now(m, e.q, now)


def _try(s: Maui, e: Entry, win: Intervals, left: list[int], base: int, now: float) -> bool:
    """Start ``e`` in the window if it is still within the hard limits (MBF.c ``MBFFirstFit``; checked when
    it was selected: only the usage a limit or a fairshare cap counts can have changed since) and fits."""
    info = s.info[e.id]
    if (info.cred_limits or info.limits is not None or s._fs_caps) and s._held(e, info, hard=True):
        return False
    ivs = _fits(s, e, win, left[0], base, now)
    if ivs is None:
        return False
    start(s, e, ivs, now)
    left[0] -= e.q
    return True
