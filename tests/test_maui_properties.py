"""Property tests of Maui's node mechanics (schedulers/maui_nodes.py) on random small workloads.

- every run is sound (every job accounted for, no start before submission, no machine used twice
  at once: ``check_sound``) for both mechanics, event-driven and at 5 s polls, RESERVATIONDEPTH 1
  and 3, FIRSTFIT and BESTFIT;
- with Maui's default priority (queue minutes: the oldest job first), event-driven and every job
  with a walltime, a job never starts later than any reservation it got: with RESERVATIONDEPTH 1
  the reserved job is the first in priority order that cannot start, its reserved nodes are free
  from S on (MJobReserve), no later job is started on them past S, in the priority pass or a
  backfill window, and each recomputation (RESERVATIONPOLICY CURRENTHIGHEST) can only find an
  earlier or equal start.  (Without walltimes it does not hold, rightly: a job that cannot be
  reserved - its nodes never planned back - keeps its priority, and may start on the nodes reserved
  for a later job once they come back early.)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from batfeed.schedulers.maui import Maui
from batfeed.schedulers.maui_nodes import Plan
from batfeed.schedulers.resources import Intervals
from hypothesis import given
from hypothesis import strategies as st
from test_backfill_properties import PROPS, job_st, run_on, workload_st

# every job has a walltime >= its run time
walled_st = st.lists(job_st, min_size=1, max_size=14).map(
    lambda js: [(i, r, q, rt, rt + (extra or 0)) for i, (r, q, rt, extra) in enumerate(js, 1)])


def _cfg(text: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
        f.write(text)
    return f.name


@PROPS
@given(workload_st, st.sampled_from(["nodes", "counts"]), st.sampled_from([None, 5]), st.sampled_from([1, 3]),
       st.sampled_from(["FIRSTFIT", "BESTFIT"]))
def test_maui_runs_are_sound(jobs, mechanics, interval, depth, policy):
    cfg = _cfg(f"RESERVATIONDEPTH {depth}\nBACKFILLPOLICY {policy}\n")
    try:
        run_on(jobs, Maui({"mechanics": mechanics, "interval": interval, "config": cfg}))
    finally:
        Path(cfg).unlink()


@PROPS
@given(walled_st, st.sampled_from(["FIRSTFIT", "BESTFIT"]))
def test_maui_never_starts_a_job_after_its_reservation(jobs, policy):
    cfg = _cfg(f"BACKFILLPOLICY {policy}\n")
    try:
        sched = Maui({"config": cfg})
        sched.trace_reservations = True
        rows = run_on(jobs, sched)
    finally:
        Path(cfg).unlink()
    for now, jid, t in sched.reservations:
        assert rows[jid[3:]][0] <= t, (jid, now, t, rows[jid[3:]], sched.reservations)


class BlindPlan(Plan):
    """A plan that ignores every reservation and window."""

    def blocked(self, a: float, b: float) -> Intervals:
        return []


def test_the_reservation_property_can_fail():
    """With reservations ignored (Plan.blocked always empty), 3 (1 machine, 500 s) starts at 2 on a
    node reserved for 2 from 100, and 2 starts at 502: the check above catches that."""
    jobs = [(1, 0, 2, 100, 100), (2, 1, 4, 10, 10), (3, 2, 1, 500, 500)]
    sched = Maui()
    sched.trace_reservations = True
    rows = run_on(jobs, sched, "ok")
    assert rows["2"][0] == 100 and all(rows["2"][0] <= t for _, j, t in sched.reservations if j == "w0!2")
    broken = Maui()
    broken.plan = BlindPlan()
    broken.trace_reservations = True
    rows = run_on(jobs, broken, "broken")
    assert rows["3"][0] == 2 and rows["2"][0] == 502
    assert any(rows["2"][0] > t for _, j, t in broken.reservations if j == "w0!2")
