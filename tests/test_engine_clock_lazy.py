"""SimGridTimers' lazy remainders give exactly SimGrid's full update (batfeed/engine/clock.py).

SimGrid's ``ptask_L07`` model subtracts every step from every started action's remainder; the engine only
visits the remainders a step can change.  These tests replay random sequences of sleeps, parallel tasks,
steps, 1-byte messages and cancellations on :class:`SimGridTimers` and on ``FullUpdate`` below (SimGrid's
loop as it is written: every remainder, every step, in creation order) and require the same clock, the
same actions ending in the same order, and bit-identical remainders.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from batfeed.engine.clock import PRECISION, WORK_PRECISION, SimGridTimers


class FullUpdate:
    """``HostL07Model::update_actions_state`` and ``next_occurring_event_full`` for sleeps and constant-rate
    tasks, literally: every action is visited at every step."""

    def __init__(self) -> None:
        self.live: list[list[Any]] = []       # [remaining, seq, kind, payload, rate], creation order
        self.tiny = False

    def add(self, clock: float, duration: float, seq: int, kind: int, payload: Any, rate: float = 0.0) -> None:
        self.live.append([1.0 if rate else duration, seq, kind, payload, rate])
        if not rate and duration < PRECISION:
            self.tiny = True

    def _next(self) -> float:
        return min(e[0] / e[4] if e[4] else e[0] for e in self.live)

    def _step(self, dt: float) -> list[list[Any]]:
        keep, due = [], []
        for e in self.live:
            if e[4]:
                r = e[0] - e[4] * dt
                done = r < WORK_PRECISION
            else:
                r = e[0] - dt
                done = r < PRECISION
            if done:
                due.append(e)
            else:
                e[0] = r
                keep.append(e)
        self.live = keep
        self.tiny = False
        return due

    def next_step(self, clock: float) -> tuple[float, list[list[Any]]]:
        dt = self._next()
        return clock + dt, self._step(dt)

    def message_step(self, clock: float, lat: float, rate: float, early: Any) -> tuple[float, list[list[Any]]]:
        if not lat and not rate:
            return (clock, self._step(0.0)) if self.tiny else (clock, [])
        left, work = lat, 1.0 if rate else 0.0
        while True:
            dt_comm = left if left > 0 else work / rate
            # the engine's rule (clock.py before the lazy remainders): a comm step below the precision is taken
            # as is unless a sleep below the precision was just added (SimGrid takes the smallest of all: they
            # differ when a parallel task has less than 1e-9 s of work left and the link is slow, e.g. 1.25 GBps)
            dt = min(dt_comm, self._next()) if self.live and (dt_comm >= PRECISION or self.tiny) else dt_comm
            due = self._step(dt)
            clock += dt
            if left > 0:
                left = 0.0 if left <= dt or left - dt < PRECISION else left - dt
                if left == 0 and not work:
                    return clock, due
            else:
                work -= rate * dt
                if work < WORK_PRECISION:
                    return clock, due
            if due:
                early(clock, due)

    def cancel_job(self, job: Any, keep_task: bool = False) -> None:
        self.live = [e for e in self.live
                     if not (isinstance(e[3], tuple) and e[3][0] is job and not (keep_task and e[4]))]


class _Job:
    pass


def _duration(rng: random.Random, clock: float, noisy: bool) -> float:
    """Durations as Batsim's actors compute them: integer dates minus the (drifting) clock, integer job
    durations, Batsim's 1e-5 floor, sleeps below the precision, fractional durations."""
    k = rng.random()
    if k < 0.35:
        return float(rng.randint(int(clock) + 1, int(clock) + rng.choice([3, 30, 3000, 100000]))) - clock
    if k < 0.7:
        return float(rng.randint(1, rng.choice([5, 40, 4000, 200000])))
    if k < 0.75:
        d = float(rng.randint(1, 3000))
        for _ in range(rng.randint(1, 8)):
            d = math.nextafter(d, -math.inf if rng.random() < 0.7 else math.inf)
        return d
    if not noisy:
        return float(rng.randint(1, 20))
    if k < 0.8:
        return 1e-5
    if k < 0.85:
        return rng.uniform(1e-12, 1e-8)
    if k < 0.9:
        return rng.uniform(0, 100)
    if k < 0.95:
        return 2.0 ** rng.randint(-3, 25) * (1 + rng.choice([0, 1, -1]) * 2 ** -52)
    return rng.uniform(1e6, 3e7)


LINKS = [(0.0, 1e15), (0.0, 1.25e9), (5e-6, 1.25e9), (0.0, 0.0), (2e-6, 0.0),
         (0.0006000000000000001, 125e6), (1e-3, 1e15), (0.0, 1e15 / 3)]


def _replay(seed: int, n: int) -> int:
    rng = random.Random(seed)
    noisy = seed % 2 == 1
    ref, lazy = FullUpdate(), SimGridTimers()
    clock = rng.choice([0.0, 3e5, 2e7])
    seq = 0
    jobs = [_Job() for _ in range(30)]
    links = [(0.0, 1e15)] * 6 + (rng.sample(LINKS, 2) if noisy else [(0.0, 0.0)])
    lazy_steps = 0
    for i in range(n):
        op = rng.random()
        if op < 0.3 or not ref.live:
            seq += 1
            payload = (rng.choice(jobs), "x", False) if rng.random() < 0.6 else None
            if rng.random() < 0.02:
                rate, d = rng.choice([1 / 49, 0.5, 1 / 3]), 0.0
            else:
                rate, d = 0.0, _duration(rng, clock, noisy)
            ref.add(clock, d, seq, 0, payload, rate)
            lazy.add(clock, d, seq, 0, payload, rate)
        elif op < 0.5:
            lazy_steps += bool(lazy.lazy)
            c1, due1 = ref.next_step(clock)
            c2, due2 = lazy.next_step(clock)
            assert c1 == c2 and [e[1] for e in due1] == [e[1] for e in due2], (seed, i)
            clock = c1
        elif op < 0.99:
            lat, rate = rng.choice(links)
            lazy_steps += bool(lazy.lazy)
            early1: list = []
            early2: list = []
            c1, due1 = ref.message_step(clock, lat, rate, lambda t, d, out=early1: out.append((t, [e[1] for e in d])))
            c2, due2 = lazy.message_step(clock, lat, rate, lambda t, d, out=early2: out.append((t, [e[1] for e in d])))
            assert (c1, early1, [e[1] for e in due1]) == (c2, early2, [e[1] for e in due2]), (seed, i)
            clock = c1
        else:
            job, keep = rng.choice(jobs), rng.random() < 0.5
            ref.cancel_job(job, keep)
            lazy.cancel_job(job, keep)
        if i % 50 == 0 or i == n - 1:
            want = [(e[1], e[0].hex()) for e in ref.live]
            got = [(e[1], e[0].hex()) for e in lazy.live]
            assert want == got, (seed, i)
            assert bool(lazy) == bool(ref.live)
    return lazy_steps


@pytest.mark.parametrize("seed", range(24))
def test_lazy_remainders_equal_simgrids_full_update(seed):
    assert _replay(seed, 3000) > 100          # the lazy heap was in use


def test_a_step_below_the_precision_leaves_large_remainders_alone():
    sg = SimGridTimers()
    sg.add(1e7, 5.0, 1, 0, "short")
    sg.add(1e7, 3600.0, 2, 0, "long")
    clock, short = 1e7, 5.0
    for _ in range(1000):
        clock, due = sg.message_step(clock, 0.0, 1e15, lambda t, d: None)
        short -= 1e-15
        assert not due
    assert clock == 1e7 and short < 5.0                    # the clock absorbs the steps, the short sleep not
    assert [(e[3], e[0]) for e in sg.live] == [("short", short), ("long", 3600.0)]
    assert len(sg.lazy) == 1 and list(sg.vals) == [short]  # only the short one was visited
