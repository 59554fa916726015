"""Time as SimGrid 3.32 advances it under Batsim (host model ``ptask_L07``, full update).

Every actor's sleep is an action with a remaining duration.  A simulation step lasts as long as
the smallest remaining duration; the clock adds it, every action subtracts it, and each action whose
remainder falls below the precision (``sg_surf_precision``, 1e-9 s) ends in that step; actions ending
in the same step end in creation order.  A parallel task (``parallel_homogeneous*`` profiles) is an
action whose remaining work (1 at its start) decreases at rate speed / flops per host; it ends when
the work falls below 1e-14 (``maxmin/precision`` x ``surf/precision``).  A message to Batsim's server
is a 1-byte communication: on a platform without links it takes no time, on one with links it takes
1 / bandwidth (1e-15 s on 1000TBps links) and is a step of its own.

:class:`ExactTimers` is the fast path: a heap of absolute dates.  It is exact while every duration is
an integer and messages take no time, because then no subtraction or addition ever rounds.
:class:`SimGridTimers` replays SimGrid's floating-point steps (the remainders of every sleeping action,
creation order, the precision), so that real Batsim's clock drift is reproduced: e.g. a submitter that
wakes up one ulp before its date submits its first job alone.  The engine switches from the first to
the second as soon as a duration is not an integer or messages take time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

PRECISION = 1e-9        # SimGrid 3.32's sg_surf_precision
WORK_PRECISION = 1e-14  # sg_maxmin_precision * sg_surf_precision: remaining work below it is done


def _seq_of(entry: Any) -> int:
    return entry[1]


class ExactTimers:
    """Sleeps as a heap of (date, creation sequence, kind, payload)."""

    exact = True

    def __init__(self) -> None:
        self.heap: list[tuple[float, int, int, Any]] = []

    def __bool__(self) -> bool:
        return bool(self.heap)

    def add(self, clock: float, duration: float, seq: int, kind: int, payload: Any, rate: float = 0.0) -> None:
        heapq.heappush(self.heap, (clock + duration, seq, kind, payload))

    def next_step(self, clock: float) -> tuple[float, list[tuple[float, int, int, Any]]]:
        """(date of the next step, the sleeps ending then in creation order)."""
        heap = self.heap
        t = heap[0][0]
        if t < clock:
            t = clock
        due = [heapq.heappop(heap)]
        while heap and heap[0][0] - t < PRECISION:
            due.append(heapq.heappop(heap))
        if len(due) > 1 and due[-1][0] != due[0][0]:
            due.sort(key=_seq_of)
        return t, due

    def cancel_job(self, job: Any, keep_task: bool = False) -> None:
        """Nothing to do: a cancelled sleep is skipped when it ends (the engine checks its job)."""

    def work_left(self, job: Any) -> float:
        """A job's parallel task never runs on these timers (its rate makes them SimGrid's): none left."""
        return 0.0

    def to_simgrid(self, clock: float) -> SimGridTimers:
        out = SimGridTimers()
        for d, seq, kind, payload in sorted(self.heap, key=_seq_of):
            out.add(clock, d - clock, seq, kind, payload)
        return out



class SimGridTimers:
    """Sleeps as SimGrid's started actions: remainders in creation order, updated at every step."""

    exact = False

    def __init__(self) -> None:
        self.live: list[list[Any]] = []      # [remaining, seq, kind, payload, rate], creation order
        self.tiny = False                    # some remainder is below the precision (ends at any step)
        self.system: Any = None              # the ptask.System of tasks that share resources, if any

    def attach(self, system: Any) -> None:
        """From now on, actions of ``system`` may be started: steps follow its values."""
        if self.system is None:
            self.system = system
            self._step = self._step_shared          # type: ignore[method-assign]
            self._next = self._next_shared          # type: ignore[method-assign]

    def __bool__(self) -> bool:
        return bool(self.live)

    def add(self, clock: float, duration: float, seq: int, kind: int, payload: Any, rate: Any = 0.0) -> None:
        """A sleep of ``duration`` seconds, or a parallel task of work 1 (``duration`` 0: none, it ends in the
        next step) at ``rate`` (a constant > 0, or an ``L07Action`` of :attr:`system`, which then starts)."""
        if rate.__class__ is not float:
            self.system.start(rate)
            self.live.append([1.0 if duration else 0.0, seq, kind, payload, rate])
            if not duration:
                self.tiny = True
        elif rate:
            self.live.append([1.0, seq, kind, payload, rate])
        else:
            self.live.append([duration, seq, kind, payload, 0.0])
            if duration < PRECISION:
                self.tiny = True

    def _step(self, dt: float) -> list[list[Any]]:
        """Every started action advances by ``dt``, in creation order (sleeps and constant-rate tasks; once
        a :attr:`system` is attached, :meth:`_step_shared`)."""
        keep, due = [], []
        for entry in self.live:
            rate = entry[4]
            if rate:                            # a parallel task: its work decreases at its rate
                r = entry[0] - rate * dt
                done = r < WORK_PRECISION
            else:                               # double_update: below the precision is 0, the action ends
                r = entry[0] - dt
                done = r < PRECISION
            if done:
                due.append(entry)
            else:
                entry[0] = r
                keep.append(entry)
        self.live = keep
        self.tiny = False
        return due

    def _step_shared(self, dt: float) -> list[list[Any]]:
        """``HostL07Model::update_actions_state``: every started action advances by ``dt``, in creation order."""
        system = self.system
        if system.dirty:
            system.solve()
        keep, due = [], []
        for entry in self.live:
            rate = entry[4]
            if rate.__class__ is not float:     # an action of the system: latency, then work at its value
                if rate.latency > 0:
                    lat = rate.latency - dt if rate.latency > dt else 0.0
                    rate.latency = 0.0 if lat < PRECISION else lat
                    if rate.latency <= 0.0:
                        system.latency_paid(rate)
                r = entry[0] - rate.value * dt
                if r < WORK_PRECISION:
                    r = 0.0
                done = r <= 0.0 and rate.penalty > 0
                if done:
                    system.remove(rate)
            elif rate:                          # a parallel task: its work decreases at its rate
                r = entry[0] - rate * dt
                done = r < WORK_PRECISION
            else:                               # double_update: below the precision is 0, the action ends
                r = entry[0] - dt
                done = r < PRECISION
            if done:
                due.append(entry)
            else:
                entry[0] = r
                keep.append(entry)
        self.live = keep
        self.tiny = False
        return due

    def next_step(self, clock: float) -> tuple[float, list[list[Any]]]:
        dt = self._next()
        return clock + dt, self._step(dt)

    def message_step(self, clock: float, lat: float, rate: float,
                     early: Callable[[float, list[list[Any]]], None], act: Any = None) -> tuple[float, list[list[Any]]]:
        """The 1-byte message the server receives now (an ``L07Action``): ``lat`` seconds of latency, then
        its work 1 at ``rate`` per second (the route's bandwidth; 0: no link, nothing to transfer), as
        ``HostL07Model::update_actions_state`` steps them.  Other actions end meanwhile in their own steps
        (the comm's latency decreasing by each step, 0 below the precision; its work by rate × step, done
        below 1e-14): ``early(date, sleeps)`` posts them before the message arrives.  ``act``: the message's
        action in :attr:`system` when it shares a link with a parallel task: its rate is then its value
        there, step by step.  Returns (arrival date, the sleeps ending in the arrival step)."""
        if not lat and not rate:
            return (clock, self._step(0.0)) if self.tiny else (clock, [])
        system = self.system
        if act is not None:
            system.start(act)
        left, work = lat, 1.0 if rate else 0.0
        while True:
            if act is not None:
                if system.dirty:
                    system.solve()
                rate = act.value
            dt_comm = left if left > 0 else work / rate
            # live remainders are >= the precision unless a tiny sleep was just added: below it, the comm
            # ends first (1000 TBps links: 1e-15 s) and no scan is needed
            dt = min(dt_comm, self._next()) if self.live and (dt_comm >= PRECISION or self.tiny) else dt_comm
            due = self._step(dt)
            clock += dt
            if left > 0:                         # latency phase
                left = 0.0 if left <= dt or left - dt < PRECISION else left - dt
                if left == 0 and act is not None:
                    system.latency_paid(act)
                if left == 0 and not work:       # no link: arrives when the latency is paid
                    return clock, due
            else:                                # transfer phase
                work -= rate * dt
                if work < WORK_PRECISION:
                    if act is not None:
                        system.remove(act)
                    return clock, due
            if due:
                early(clock, due)

    def _next(self) -> float:
        """``next_occurring_event``: the smallest remaining duration (or work / rate)."""
        return min(e[0] / e[4] if e[4] else e[0] for e in self.live)

    def _next_shared(self) -> float:
        """``next_occurring_event`` with a :attr:`system`: the smallest remaining duration, work / value or
        latency."""
        system = self.system
        if system.dirty:
            system.solve()
        best = -1.0
        for e in self.live:
            rate = e[4]
            if rate.__class__ is float:
                d = e[0] / rate if rate else e[0]
            else:
                d = -1.0
                if rate.value > 0:
                    d = e[0] / rate.value if e[0] > 0 else 0.0
                if rate.latency > 0 and (d < 0 or rate.latency < d):
                    d = rate.latency
                if d < 0:
                    continue
            if best < 0 or d < best:
                best = d
        return best if best >= 0 else math.inf

    def work_left(self, job: Any) -> float:
        """The remaining work of ``job``'s running parallel task (1 before it starts; ``get_remaining_ratio``)."""
        for e in self.live:
            if e[4] and isinstance(e[3], tuple) and e[3][0] is job:
                return e[0]
        return 1.0

    def cancel_job(self, job: Any, keep_task: bool = False) -> None:
        """The actions of a job's executor (killed, or its walltime or its task ended) leave the
        started actions; ``keep_task``: its parallel task goes on (a ``wait_for`` that timed out leaves the
        task running: Batsim never cancels nor frees it, so it computes and communicates to its end)."""
        keep = []
        for e in self.live:
            if isinstance(e[3], tuple) and e[3][0] is job and not (keep_task and e[4]):
                if e[4].__class__ is not float:
                    self.system.remove(e[4])
            else:
                keep.append(e)
        self.live = keep
