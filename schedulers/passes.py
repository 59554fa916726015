"""The decision passes of FCFS and EASY (count mode), as functions over the scheduling core's state.

The schedulers (:mod:`easy`, :mod:`fcfs`) stay pybatsim ``BatsimScheduler`` classes; when nothing
is overridden or planned that these passes do not model (maintenance windows, batsched's machine
reservations, traced reservations, a subclass's own ``launch``/``allocate``/``shadow``), their
``schedule`` hands the queue, the profile and the free machines to one of these functions.  The
kernel compiles this module with mypyc (docs/kernel.md): the whole pass then runs as native code
over the native queue index, profile and machine set, instead of a dozen interpreted method calls
per decision.  The pure-Python path runs the same source; ``tests/test_passes.py`` checks both
against the schedulers' general path.

- :func:`easy_count` is ``Easy.schedule`` with ``reservation: "count"`` (models.md §A; the shortcuts
  are those described in :mod:`easy`).
- :func:`fcfs` is ``Fcfs.schedule`` without maintenance windows.
"""

from __future__ import annotations

from typing import Any

from batfeed.schedulers.jobqueue import Entry, ScanState, WaitQueue
from batfeed.schedulers.profile import Profile
from batfeed.schedulers.resources import FreeMachines, Intervals
from procset import ProcInt, ProcSet

_new_tuple: Any = tuple.__new__
_new_procset: Any = ProcSet.__new__
_PROCINT: Any = ProcInt
_PROCSET: Any = ProcSet

#: idle state of an EASY decision that started nothing: (profile version, free, head, shadow, extra)
Idle = tuple[int, int, Entry, float, int]


def make_procset(ivs: Intervals) -> Any:
    """ProcSet of sorted, disjoint, non-adjacent intervals, without ProcSet's generic merge."""
    # procset 1.x internals (pinned <2): the bounds are valid ints, skip __init__ and ProcInt's checks
    ps = _new_procset(_PROCSET)
    if len(ivs) == 1:
        ps._itvs = [_new_tuple(_PROCINT, ivs[0])]
        return ps
    prev = -2
    for a, b in ivs:
        if a <= prev + 1:
            return _PROCSET(*ivs)
        prev = b
    ps._itvs = [_new_tuple(_PROCINT, iv) for iv in ivs]
    return ps


def launch(e: Entry, ivs: Intervals, now: float, profile: Profile, running: dict[str, Intervals],
           to_start: list[Any], allocation: bool = True) -> None:
    """``BackfillScheduler.launch``: start ``e`` now on ``ivs`` (already out of the free set); ``allocation``:
    give the job its ProcSet (False: a what-if replay, which reads start times only)."""
    job = e.job
    if allocation:
        job.allocation = make_procset(ivs)
    running[e.id] = ivs
    to_start.append(job)
    profile.add(e.id, now + e.p, ivs, e.q)     # an allocation has exactly q machines


def easy_count(wq: WaitQueue, profile: Profile, free: FreeMachines, running: dict[str, Intervals],
               to_start: list[Any], now: float, idle: Idle | None, allocation: bool = True) -> Idle | None:
    """One EASY decision at ``now`` (``Easy.schedule``, count mode, no window); returns the new idle state.
    ``allocation``: as in :func:`launch`."""
    wq.refresh(now)
    new = wq.new
    wq.new = []
    if free.count == 0:
        return None
    head = wq.head()                              # 1) start from the head while it fits
    was_idle = idle is not None
    while head is not None and head.q <= free.count:
        ivs = free.take_lowest(head.q)
        wq.remove(head)
        launch(head, ivs, now, profile, running, to_start, allocation)
        head = wq.head()
        was_idle = False
    if head is None:
        return None
    nfree = free.count
    if min(wq.main.tq[1], wq.starved.tq[1]) > nfree:
        return None             # no waiting job fits in the free machines: the shadow is not needed
    if was_idle and idle is not None and idle[0] == profile.version and idle[1] == nfree and idle[2] is head:
        # nothing changed since a decision that started nothing: only the jobs submitted since can start
        shadow, extra = idle[3], idle[4]
        candidates: list[Entry] | None = sorted((e for e in new if e.where >= 0 and e is not head),
                                                key=wq.backfill_key)
    else:
        t, acc = profile.crossing(head.q - nfree)          # 2) the head's shadow time and extra
        shadow, extra = t, max(nfree + acc - head.q, 0)
        candidates = None
    if nfree == 0:
        return None
    st = ScanState(nfree, shadow - now + 1e-6 * (1.0 + abs(shadow)), extra)
    started: list[Entry] = []
    for e in wq.scan(st) if candidates is None else candidates:   # 3) one backfill pass in order B
        q = e.q
        if q > st.free or e is head:
            continue
        after = now + e.p > shadow
        if after and q > st.extra:
            continue
        ivs = free.take_lowest(q)
        launch(e, ivs, now, profile, running, to_start, allocation)
        started.append(e)
        st.free -= q
        if after:
            st.extra -= q
    for e in started:
        wq.remove(e)
    return None if started else (profile.version, nfree, head, shadow, extra)


def fcfs(q: Any, free: FreeMachines, running: dict[str, Intervals], to_start: list[Any]) -> int:
    """``Fcfs.schedule`` without windows: start jobs from the head of deque ``q`` while they fit; returns how many."""
    started = 0
    while q:
        job = q[0]
        n: int = job.requested_resources
        if n > free.count:
            break
        ivs = free.take_lowest(n)
        q.popleft()
        job.allocation = make_procset(ivs)
        running[job.id] = ivs
        to_start.append(job)
        started += 1
    return started
