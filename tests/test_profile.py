"""The shared availability profile (schedulers/profile.py), hand-computed."""

from __future__ import annotations

import pytest
from batfeed.schedulers.profile import Profile

INF = float("inf")


@pytest.fixture(params=[False, True], ids=["merge", "ends-in-steps"])
def prof(request):
    # now = 0, 1 machine free; running: a (2 machines) ends 10, b (1) ends 10, c (3) ends 30,
    # d (no walltime) never
    p = Profile(ends_in_steps=request.param)
    p.add("a", 10.0, [(1, 2)], 2)
    p.add("b", 10.0, [(3, 3)], 1)
    p.add("c", 30.0, [(4, 6)], 3)
    p.add("d", INF, [(7, 7)], 1)
    return p


def test_crossing_stops_at_the_first_job_reaching_the_need(prof):
    # cumulated give-back in (end, start order): a 2 (t=10), b 3 (t=10), c 6 (t=30), d 7 (never)
    assert prof.crossing(1) == (10.0, 2)
    assert prof.crossing(2) == (10.0, 2)      # b, ending at the same instant, is not counted
    assert prof.crossing(3) == (10.0, 3)
    assert prof.crossing(4) == (30.0, 6)
    assert prof.crossing(7) == (INF, 7)        # d never ends
    assert prof.crossing(8) == (INF, 7)


def test_levels_earliest_fits_now_and_reservations(prof):
    free = 1
    assert list(prof.levels(0.0, free)) == [(0.0, 1), (10.0, 4), (30.0, 7)]
    assert prof.earliest(4, 100, 0.0, free) == 10.0
    assert prof.earliest(7, 5, 0.0, free) == 30.0
    assert prof.earliest(8, 5, 0.0, free) == INF
    prof.reserve(10.0, 15.0, 4)                # [10, 25): 4 machines
    assert list(prof.levels(0.0, free)) == [(0.0, 1), (10.0, 0), (25.0, 4), (30.0, 7)]
    assert prof.fits_now(1, 10, 0.0, free)     # ends at 10, the reservation's start
    assert not prof.fits_now(1, 11, 0.0, free)
    assert prof.earliest(1, 11, 0.0, free) == 25.0
    assert prof.earliest(4, 5, 0.0, free, skip=(10.0, 15.0, 4)) == 10.0   # ignoring that reservation
    assert prof.earliest(1, 11, 0.0, free, before=20.0) == INF
    prof.reserve(30.0, INF, 2)                 # no walltime: held for ever
    assert prof.earliest(6, 5, 0.0, free) == INF
    assert prof.earliest(6, 5, 0.0, free, skip=(30.0, INF, 2)) == 30.0
    prof.unreserve(30.0, INF, 2)
    prof.unreserve(10.0, 15.0, 4)
    assert list(prof.levels(0.0, free)) == [(0.0, 1), (10.0, 4), (30.0, 7)]


def test_remove_set_ret_and_windows(prof):
    prof.remove("a")                           # ended early: its 2 machines are free now
    prof.set_ret("c", 1)                       # 2 of c's machines went down
    assert list(prof.levels(5.0, 3)) == [(5.0, 3), (10.0, 4), (30.0, 5)]
    prof.add_window(20.0, 40.0, [(0, 1)])
    assert list(prof.levels(5.0, 3)) == [(5.0, 3), (10.0, 4), (20.0, 2), (30.0, 3), (40.0, 5)]
    assert prof.blocked(0.0, 20.0) == [] and prof.blocked(0.0, 20.5) == [(0, 1)]
    # at 25, b has ended; machine 0 of the window is also reported down: it is not free now and
    # comes back at the window's end, so it is not taken away twice (1 free - 2 + 1 = 0)
    prof.remove("b")
    prof.unavailable = [(0, 0)]
    assert list(prof.levels(25.0, 1)) == [(25.0, 0), (30.0, 1), (40.0, 3)]
    prof.prune_windows(40.0)
    prof.remove("c")
    assert prof.windows == [] and list(prof.levels(40.0, 3)) == [(40.0, 3)]     # d never ends
