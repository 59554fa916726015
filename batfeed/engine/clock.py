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
wakes up one ulp before its date submits its first job alone.  It gives every remainder the value
SimGrid's full update gives it, but only visits those a step can change (exact integer arithmetic for
the others, see the class).  The engine switches from the first to the second as soon as a duration
is not an integer or messages take time.
"""

from __future__ import annotations

import heapq
import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from heapq import heappop, heappush
from math import ldexp
from typing import Any

PRECISION = 1e-9        # SimGrid 3.32's sg_surf_precision
WORK_PRECISION = 1e-14  # sg_maxmin_precision * sg_surf_precision: remaining work below it is done
_UNITS = 1 << 52        # lazy remainders are integers in units of 2**-52 s (a double >= 1 s is a multiple)
_ONE = _UNITS           # 1 s: the smallest lazy remainder
_LAZY_MAX = 2.0 ** 52   # longer sleeps (and inf) are not lazy: r - c stays exact below 2**53 s
_NONE: list[Any] = []   # no action ends (never modified)


def _seq_of(entry: Any) -> int:
    return entry[1]


def _absorbs(f: float) -> int:
    """The smallest remainder (in units of 2**-52 s, at least 1 s) from which on ``fl(w - f) == w``: with
    ``|f| < 2**x``, every double w > 2**(x + 53) (half the gap around w is at least 2**x; at 2**(x + 53)
    itself the gap below is halved)."""
    if not f:
        return _ONE
    x = math.frexp(f)[1] + 105
    return (1 << x) + 1 if x >= 52 else _ONE


def _subtract(vals: array[float], dt: float, m: int) -> None:
    """``r - dt`` for each of the first ``m`` remainders, in place (numpy's subtraction of float64 is IEEE's, as
    Python's: the same values, computed at once)."""
    if m < 12:
        for i in range(m):
            vals[i] -= dt
    else:
        view = _numpy().frombuffer(vals, count=m)
        view -= dt


def _numpy() -> Any:
    """numpy, imported at the first long step (a run that never needs it does not import it)."""
    import numpy

    return numpy


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
    """Sleeps as SimGrid's started actions (``HostL07Model::update_actions_state``, full update): a step of
    ``dt`` subtracts ``dt`` from every remainder, and that rounding is what the engine reproduces.  Most
    of those subtractions are exact or leave the remainder as it is (a 1e-15 s message step does not
    change a remainder above 16 s), so the actions are kept where a step costs what it changes:

    - :attr:`lazy`: plain sleeps of at least 1 s, a heap of ``(v, seq, entry)``; ``v`` is an integer (units
      of 2**-52 s) and the remainder is exactly ``(v - S) * 2**-52``.  A step ``dt`` is split into ``c``,
      a multiple of a power of two G >= 2**-53 x every lazy remainder (so that ``r - c`` is exact), and
      ``f = dt - c``; with ``|f| < 2**x``, every remainder with ``r - c > 2**(x + 53)`` (and >= 1 s) absorbs
      ``f``: ``fl(r - dt) == r - c``, so the step is ``S += c``.  The others leave the heap, smallest first,
      before the step (an integer step has f = 0; a step below the precision has c = 0);
    - :attr:`vals` / :attr:`ents`: the other plain sleeps, by remainder (ascending), each updated as
      SimGrid does (``r - dt``, at once with numpy when they are many).  Rounding is monotonic, so a step
      keeps them sorted, the sleeps ending in a step are the first ones, and a step below the precision
      only updates the remainders it can change;
    - :attr:`tasks`: parallel tasks at a constant rate (work decreasing by rate x dt);
    - :attr:`eager`: every action, in creation order, once a :attr:`system` is attached (tasks sharing
      resources): each step then follows the system's values as SimGrid's loop does.

    Every value is the one SimGrid computes; the actions ending in one step end in creation order."""

    exact = False

    def __init__(self) -> None:
        self.lazy: list[tuple[int, int, list[Any]]] = []     # heap of (v, seq, entry)
        self.S = 0                           # remainder of a lazy entry = (v - S) * 2**-52, exactly
        self.vmax = 0                        # an upper bound of the lazy entries' v
        self.vals: array[float] = array("d")    # the other sleeps' remainders, ascending
        self.ents: list[list[Any]] = []      # their entries [remaining, seq, kind, payload, rate], same order
        self.tasks: list[list[Any]] = []     # constant-rate parallel tasks, creation order
        self.eager: list[list[Any]] = []     # every action once a system is attached, creation order
        self.tiny = False                    # some remainder is below the precision (ends at any step)
        self.system: Any = None              # the ptask.System of tasks that share resources, if any
        self._g = -1                         # the last G's exponent (+ 52) and its scalings
        self._scale = (1.0, 1.0)
        self._tiny: dict[float, tuple[int, float]] = {}   # steps below the precision: limit - S, limit in s

    def attach(self, system: Any) -> None:
        """From now on, actions of ``system`` may be started: steps follow its values (every action is then
        in :attr:`eager`, in creation order)."""
        if self.system is None:
            self.eager = self.live
            self.lazy, self.vals, self.ents, self.tasks = [], array("d"), [], []
            self.system = system                # from now on _step and _next are _step_shared, _next_shared

    def __bool__(self) -> bool:
        return bool(self.lazy or self.vals or self.tasks or self.eager)

    @property
    def live(self) -> list[list[Any]]:
        """Every started action, in creation order, its remainder up to date."""
        S = self.S
        for v, _, entry in self.lazy:
            entry[0] = (v - S) / _UNITS
        for r, entry in zip(self.vals, self.ents, strict=True):
            entry[0] = r
        out = [x[2] for x in self.lazy] + self.ents + self.tasks + self.eager
        out.sort(key=_seq_of)
        return out

    def add(self, clock: float, duration: float, seq: int, kind: int, payload: Any, rate: Any = 0.0) -> None:
        """A sleep of ``duration`` seconds, or a parallel task of work 1 (``duration`` 0: none, it ends in the
        next step) at ``rate`` (a constant > 0, or an ``L07Action`` of :attr:`system`, which then starts)."""
        if self.system is not None:
            if rate.__class__ is not float:
                self.system.start(rate)
                self.eager.append([1.0 if duration else 0.0, seq, kind, payload, rate])
                if not duration:
                    self.tiny = True
            elif rate:
                self.eager.append([1.0, seq, kind, payload, rate])
            else:
                self.eager.append([duration, seq, kind, payload, 0.0])
                if duration < PRECISION:
                    self.tiny = True
        elif rate:
            self.tasks.append([1.0, seq, kind, payload, rate])
        elif 1.0 <= duration < _LAZY_MAX:
            v = int(duration * 4503599627370496.0) + self.S     # exact: a double >= 1 is a multiple of 2**-52
            if v > self.vmax or not self.lazy:
                self.vmax = v
            heappush(self.lazy, (v, seq, [duration, seq, kind, payload, 0.0]))
        else:
            i = bisect_right(self.vals, duration)
            self.vals.insert(i, duration)
            self.ents.insert(i, [duration, seq, kind, payload, 0.0])
            if duration < PRECISION:
                self.tiny = True

    def _tiny_limits(self, dt: float) -> tuple[int, float]:
        """A step below the precision is not split (c = 0, f = dt): the remainders it cannot change are the lazy
        ones from S + ``above`` on, and the sorted ones above ``limit`` (seconds; -1: any); cached."""
        got = self._tiny.get(dt)
        if got is None:
            if len(self._tiny) > 64:
                self._tiny.clear()
            got = self._tiny[dt] = (_absorbs(dt), ldexp(1.0, math.frexp(dt)[1] + 53) if dt else -1.0)
        return got

    def _lazy_step(self, dt: float) -> list[list[Any]]:
        """The lazy entries' part of a step of ``dt`` > 0: those whose remainder might round (or end) leave the
        heap (:meth:`_leave`); the others' remainders decrease by ``c``.  Returns those ending in the step."""
        S = self.S
        if dt < PRECISION:                              # c = 0, f = dt
            c = 0
            above = (self._tiny.get(dt) or self._tiny_limits(dt))[0]
        elif dt.is_integer():                           # c = dt, f = 0: r - dt is exact (r < 2**53 s)
            c = int(dt) << 52
            above = c + _ONE
        else:
            g = (self.vmax - S).bit_length() - 52      # G = 2**(g - 52) s >= 2**-53 x every lazy remainder
            if g < 0:
                g = 0
            if g != self._g:
                self._g, self._scale = g, (ldexp(1.0, 52 - g), ldexp(1.0, g - 52))
            up, down = self._scale
            k = round(dt * up)                          # exact scalings by powers of two
            c = k << g
            above = c + _absorbs(dt - k * down)         # f = dt - c: exact (Sterbenz), |f| <= G / 2
        due = self._leave(S + above, dt) if self.lazy[0][0] < S + above else _NONE
        if c:
            self.S = S + c
        return due

    def _leave(self, limit: int, dt: float) -> list[list[Any]]:
        """The lazy entries below ``limit`` leave the heap, before a step of ``dt``: those it ends are returned,
        the others join the sorted sleeps with their remainder (the step then updates them)."""
        lazy, vals, ents, S = self.lazy, self.vals, self.ents, self.S
        due = []
        while lazy and lazy[0][0] < limit:
            v, _, entry = heappop(lazy)
            r = (v - S) / _UNITS                        # exact: correctly rounded, and representable
            if r - dt < PRECISION:                      # double_update: it ends now
                due.append(entry)
            else:
                i = bisect_right(vals, r)
                vals.insert(i, r)
                ents.insert(i, entry)
        return due

    def _step(self, dt: float) -> list[list[Any]]:
        """Every started action advances by ``dt`` (without a :attr:`system`; with one, :meth:`_step_shared`);
        returns the actions ending then, in creation order."""
        if self.system is not None:     # (a compiled class cannot have its methods replaced per instance)
            return self._step_shared(dt)
        due = self._lazy_step(dt) if self.lazy and dt > 0 else _NONE
        self.tiny = False
        if self.tasks:
            due = due + self._sorted_step(dt)
        else:                                           # _sorted_step inlined
            vals = self.vals
            if vals:
                if dt >= PRECISION:
                    if len(vals) == 1:
                        vals[0] -= dt
                    else:
                        _subtract(vals, dt, len(vals))
                else:                                   # the remainders it can change are the first ones
                    limit = (self._tiny.get(dt) or self._tiny_limits(dt))[1]
                    if vals[0] <= limit:
                        _subtract(vals, dt, bisect_right(vals, limit))
                if vals[0] < PRECISION:                 # those ending are the first ones
                    due = due + self._ending()
        if len(due) > 1:
            due.sort(key=_seq_of)
        return due if due else []

    def _ending(self) -> list[list[Any]]:
        """The sorted sleeps whose remainder fell below the precision (the first ones), in creation order."""
        vals = self.vals
        k = bisect_left(vals, PRECISION)
        due = self.ents[:k]
        del vals[:k]
        del self.ents[:k]
        if k > 1:
            due.sort(key=_seq_of)
        return due

    def _sorted_step(self, dt: float, limit: float | None = None) -> list[list[Any]]:
        """The sorted sleeps' and the tasks' part of a step of ``dt``, as ``update_actions_state`` computes it:
        a sleep's remainder below the precision is 0 (``double_update``), it ends; a task ends when its work
        falls below 1e-14.  ``limit``: a step below the precision leaves the remainders above it as they are."""
        vals = self.vals
        due: list[list[Any]] = []
        if vals:
            if dt < PRECISION:                          # the remainders it can change are the first ones
                if limit is None:
                    limit = (self._tiny.get(dt) or self._tiny_limits(dt))[1]
                if vals[0] <= limit:
                    _subtract(vals, dt, bisect_right(vals, limit))
            else:
                _subtract(vals, dt, len(vals))
            if vals[0] < PRECISION:                     # those ending are the first ones
                due = self._ending()
        if self.tasks:
            keep = []
            for entry in self.tasks:
                r = entry[0] - entry[4] * dt
                if r < WORK_PRECISION:
                    due.append(entry)
                else:
                    entry[0] = r
                    keep.append(entry)
            self.tasks = keep
        if len(due) > 1:
            due.sort(key=_seq_of)
        return due

    def _step_shared(self, dt: float) -> list[list[Any]]:
        """``HostL07Model::update_actions_state``: every started action advances by ``dt``, in creation order."""
        system = self.system
        if system.dirty:
            system.solve()
        keep, due = [], []
        for entry in self.eager:
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
        self.eager = keep
        self.tiny = False
        return due

    def next_step(self, clock: float) -> tuple[float, list[list[Any]]]:
        """The next step: its date and the actions ending then, in creation order."""
        if self.system is not None or self.tasks:
            dt = self._next()
        else:                                           # _next inlined
            dt = (self.lazy[0][0] - self.S) / _UNITS if self.lazy else math.inf
            if self.vals and self.vals[0] < dt:
                dt = self.vals[0]
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
        if not lat:
            if not rate:
                return (clock, self._step(0.0)) if self.tiny else (clock, [])
            if act is None and not self.tiny and self.system is None:
                # the loop's first step, 1 / rate, if below the precision (no remainder is: nothing ends
                # first), and its last (1 - rate x dt < 1e-14); _step inlined
                dt = 1.0 / rate
                if dt < PRECISION:
                    above, limit = self._tiny.get(dt) or self._tiny_limits(dt)
                    lazy = self.lazy
                    if lazy and lazy[0][0] < self.S + above:
                        self._leave(self.S + above, dt)         # (none ends: they are >= 1 s)
                    vals = self.vals
                    if self.tasks:
                        return clock + dt, self._sorted_step(dt, limit)
                    if vals and vals[0] <= limit:       # _sorted_step inlined
                        if len(vals) == 1 or vals[1] > limit:
                            vals[0] -= dt
                        else:
                            _subtract(vals, dt, bisect_right(vals, limit))
                        if vals[0] < PRECISION:
                            return clock + dt, self._ending()
                    return clock + dt, []
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
            # remainders are >= the precision unless a tiny sleep was just added: below it, the comm ends
            # first (1000 TBps links: 1e-15 s) and no scan is needed
            if (dt_comm >= PRECISION or self.tiny) and (self.lazy or self.vals or self.tasks or self.eager):
                dt = min(dt_comm, self._next())
            else:
                dt = dt_comm
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
        """``next_occurring_event`` (without a :attr:`system`): the smallest remaining duration (or work /
        rate)."""
        if self.system is not None:
            return self._next_shared()
        best = (self.lazy[0][0] - self.S) / _UNITS if self.lazy else math.inf
        if self.vals and self.vals[0] < best:
            best = self.vals[0]
        for e in self.tasks:
            d = e[0] / e[4]
            if d < best:
                best = d
        return best

    def _next_shared(self) -> float:
        """``next_occurring_event`` with a :attr:`system`: the smallest remaining duration, work / value or
        latency."""
        system = self.system
        if system.dirty:
            system.solve()
        best = -1.0
        for e in self.eager:
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
        for e in self.tasks or self.eager:
            if e[4] and isinstance(e[3], tuple) and e[3][0] is job:
                return e[0]
        return 1.0

    def cancel_job(self, job: Any, keep_task: bool = False) -> None:
        """The actions of a job's executor (killed, or its walltime or its task ended) leave the
        started actions; ``keep_task``: its parallel task goes on (a ``wait_for`` that timed out leaves the
        task running: Batsim never cancels nor frees it, so it computes and communicates to its end)."""
        if self.eager:
            keep = []
            for e in self.eager:
                if isinstance(e[3], tuple) and e[3][0] is job and not (keep_task and e[4]):
                    if e[4].__class__ is not float:
                        self.system.remove(e[4])
                else:
                    keep.append(e)
            self.eager = keep
        if self.tasks and not keep_task:
            self.tasks = [e for e in self.tasks if not (isinstance(e[3], tuple) and e[3][0] is job)]
        ents = self.ents
        if ents:                                # plain sleeps: the executor's, whatever keep_task says
            gone = [i for i, e in enumerate(ents) if isinstance(e[3], tuple) and e[3][0] is job]
            for i in reversed(gone):
                del ents[i]
                del self.vals[i]
        lazy = self.lazy
        if lazy:
            kept = [x for x in lazy if not (isinstance(x[2][3], tuple) and x[2][3][0] is job)]
            if len(kept) != len(lazy):
                heapq.heapify(kept)
                self.lazy = kept
