"""Maui 3's node-level mechanics (schedulers/maui_nodes.py, issue 18), computed by hand.

Platform platforms/small_4.xml: 4 machines (ids 0-3).  The first tests take NODEALLOCATIONPOLICY
FIRSTAVAILABLE (``fa``: the lowest-index nodes); the LASTAVAILABLE ones (Maui's default) are at the end.
A job is ``(id, submit, machines, runtime, walltime, extra fields)``.  Maui's defaults: priority =
queue minutes (clamped at 1), so jobs of equal priority keep submission order; RESERVATIONDEPTH 1,
BACKFILLPOLICY FIRSTFIT.
"""

from __future__ import annotations

import pytest
from batfeed.schedulers.maui import Maui
from batfeed.schedulers.maui_nodes import highest
from batsim.batsim import Job
from test_maui import cfg_file, fa, schedule, simulate


def test_a_reservation_holds_an_idle_node_and_prevents_its_backfill(tmp_path):
    # 1 [0,20) on 0; 2 [0,200) on 1; 3 [0,100) on 2-3.  At 21, 4 (2 machines, 10 s) cannot start
    # (only 0 is free): nodes free during [100,110) are 0, 2, 3, so it reserves 0 and 2 from 100
    # (MJobGetEStartTime + MJobAllocMNL) - idle node 0 included.  5 (1 machine, 150 s) arrives at
    # 22: node 0 is idle but reserved at 100 < 22 + 150, so it neither starts in the priority pass
    # nor backfills (its window is node 0 for 78 s).  At 100, 4 starts on 0 and 2, 5 on 3.
    jobs = [(1, 0, 1, 20, 20), (2, 0, 1, 200, 200), (3, 0, 2, 100, 100), (4, 21, 2, 10, 10), (5, 22, 1, 150, 150)]
    got = schedule(tmp_path / "n", jobs, fa())
    assert got["4"] == (100, 110, "0 2") and got["5"] == (100, 250, "3")
    # counts (batfeed's earlier model): 3 machines are free at 100 besides 5's, so 5 backfills onto
    # node 0 at 22 and 4 takes 2-3 at 100.
    old = schedule(tmp_path / "c", jobs, fa({"mechanics": "counts"}))
    assert old["5"] == (22, 172, "0") and old["4"] == (100, 110, "2-3")


def test_two_windows_a_short_job_takes_idle_nodes_before_a_longer_higher_priority_one(tmp_path):
    # 1 [0,100) on 0-1.  2 (3 machines) reserves 0-2 from 100 (idle node 2 included); 3 (4
    # machines) can neither start nor be reserved (depth 1): IdleJobFound.  At 3, L (1 machine,
    # 500 s) and S (2 machines, 50 s) arrive, L first.  Backfill windows (MBFGetWindow): window 1 =
    # idle nodes 2, 3 (time to next reservation 97 s and unlimited), duration 97: only S fits
    # (500 > 97) and takes 2-3.  Window 2 = idle nodes with more than 97 s: none left.  L starts in
    # the window of node 3 when S ends at 53 (node 2: 47 s, node 3: unlimited).
    jobs = [(1, 0, 2, 100, 100), (2, 1, 3, 10, 10), (3, 1, 4, 10, 10), ("L", 3, 1, 500, 500), ("S", 3, 2, 50, 50)]
    got = schedule(tmp_path / "n", jobs, fa())
    assert got["S"] == (3, 53, "2-3") and got["L"] == (53, 553, "3")
    assert got["2"] == (100, 110, "0-2")
    # counts: priority-order backfill gives L the free machine first; S waits for 110
    old = schedule(tmp_path / "c", jobs, fa({"mechanics": "counts"}))
    assert old["L"] == (3, 503, "2") and old["S"][0] == 110


@pytest.mark.parametrize("mechanics", ["nodes", "counts"])
def test_backfillpolicy_none_makes_no_priority_reservation(tmp_path, mechanics):
    # 1 [0,100) on 0-1; 2 (4 machines) cannot start at 1.  Under BACKFILLPOLICY NONE MJob.c MJobPReserve
    # makes no reservation (as under RESERVATIONPOLICY NEVER), so 2 ends the priority pass (MQueue.c
    # MQueueScheduleIJobs, IdleJobFound) and 3 (1 machine, 50 s, arriving at 2) is not started by it;
    # with no backfill it runs after 2, at 110.  (With a reservation for 2, Maui's pass would go on and
    # start 3 at 2: it ends before 100.)  The counts model also gives 110.
    jobs = [(1, 0, 2, 100, 100), (2, 1, 4, 10, 10), (3, 2, 1, 50, 50)]
    sched = Maui({"config": cfg_file(tmp_path, "BACKFILLPOLICY NONE\n"), "mechanics": mechanics})
    got = schedule(tmp_path / "r", jobs, sched)
    assert got["3"][0] == 110 and got["2"] == (100, 110, "0-3")


def test_the_pass_stops_at_the_first_job_neither_started_nor_reserved(tmp_path):
    # As above with 3 (4 machines) before 4 (1 machine, 50 s): 2 holds the only reservation, 3
    # can neither start nor be reserved (IdleJobFound), so 4 is left to the backfill - none here.
    jobs = [(1, 0, 2, 100, 100), (2, 1, 4, 10, 10), (3, 1, 4, 10, 10), (4, 2, 1, 50, 50)]
    none = fa({"config": cfg_file(tmp_path, "BACKFILLPOLICY NONE\n")})
    assert schedule(tmp_path / "none", jobs, none)["4"][0] == 120      # after 2 [100,110) and 3 [110,120)
    # FIRSTFIT backfills it: window of nodes 2-3 for 98 s
    assert schedule(tmp_path / "ff", jobs, fa())["4"] == (2, 52, "2")


# ------------------------------------------------------------------------------ walltime overrun
OVERRUN_JOBS = [(1, 0, 4, 1000, 100), (2, 1, 1, 8, 10)]


def _overrun(jobs, x):
    """Jobs as ``batfeed convert --overrun x`` writes them: Batsim's walltime is the request + x."""
    return [(j, r, q, run, wall + x, {"requested_walltime": wall}) for j, r, q, run, wall in jobs]


@pytest.mark.parametrize("x, killed, start2", [(0, 105, 115), (600, 705, 715)])
def test_overrun_timeline_at_a_5s_poll(tmp_path, x, killed, start2):
    # Δ = 5, first submission at 0: passes at 5, 10, ... (none at 0).  1 (4 machines, request
    # 100 s, runs 1000 s) starts at 5.  Batsim kills it at 5 + 100 + x.  Maui cancels it after the
    # first pass where now - start > 100 + x (JOBMAXOVERRUN x; MLimit.c MLimitEnforceAll), i.e. the
    # poll after the kill, and its nodes are free at the poll after that: 2 starts then.
    # While past its walltime (from 105), 1's planned end is max(105, now + 1) (MRes.c), which is
    # where 2's reservation goes.
    sched = fa({"interval": 5, "poll": True})       # poll: a pass (and a reservation) every 5 s
    sched.trace_reservations = True
    rows, _ = simulate(tmp_path, _overrun(OVERRUN_JOBS, x), sched)
    assert rows["1"] == (5, killed, "0-3", "COMPLETED_WALLTIME_REACHED")
    assert rows["2"][:3] == (start2, start2 + 8, "0")
    res = {now: t for now, jid, t in sched.reservations if jid == "w0!2"}
    assert res[100] == 105                # not yet past: the request's end, 5 + 100
    assert res[105] == 106 and res[killed + 5] == killed + 6   # past it: now + 1
    # Batsim's semantics (no --overrun): killed at 105 and its nodes free at once
    plain = schedule(tmp_path / "plain", OVERRUN_JOBS, fa({"interval": 5}))
    assert plain["1"][1] == 105 and plain["2"][0] == 105


def test_overrun_within_the_extension_completes_at_the_next_poll(tmp_path):
    # request 100 s, runs 300 s, extension 600 s: it ends at 305 (a poll), 2 starts then.
    jobs = [(1, 0, 4, 300, 100), (2, 1, 1, 10, 10)]
    rows, _ = simulate(tmp_path, _overrun(jobs, 600), Maui({"interval": 5}))
    assert rows["1"][3] == "COMPLETED_SUCCESSFULLY" and rows["1"][1] == 305 and rows["2"][0] == 305


# ------------------------------------------------------------------------------ priority
def _queue(sched: Maui, jobs: list[tuple]) -> list:
    sched.nb_machines, sched.t0 = 4, 0.0
    out = []
    for jid, r, wall in jobs:
        j = Job(f"w0!{jid}", r, wall, 1, "d", {})
        sched.info[j.id] = sched._job_info(j)
        out.append(sched.wq.push(j, r))
    return out


def test_queue_time_term_in_whole_minutes_at_least_1_lagging_one_poll():
    # MPriority.c MJobGetStartPriority: QUEUETIME = (now - queue time)/60 minutes, the sum clamped at
    # 1 and stored as an integer (MQueue.c MQueuePrioritizeJobs); from its second pass on, a job is
    # ranked by its wait at the previous pass (EffQueueDuration, MPolicy.c MQueueSelectJobs).
    (e,) = _queue(event := Maui(), [(1, 0, 600)])
    assert [event.priority(e, t) for t in (30, 90, 170)] == [1, 1, 2]      # 0.5 -> 1, 1.5 -> 1, 2.83 -> 2
    (e,) = _queue(poll := Maui({"interval": 60}), [(1, 0, 600)])
    assert poll.priority(e, 60) == 1            # first pass (none at 0): 60 s = 1 min
    assert poll.priority(e, 180) == 2           # ranked by its wait at 120: 2 min (3 without the lag)
    (e,) = _queue(old := Maui({"mechanics": "counts"}), [(1, 0, 600)])
    assert old.priority(e, 170) == pytest.approx(170 / 60)   # the earlier model: real minutes


def test_equal_integer_priorities_keep_submission_order(tmp_path):
    # XFACTORWEIGHT 1 only: at 100, a (submitted at 0, walltime 3600) has 1 + 100/3600 = 1.03 and
    # b (at 50, walltime 100) 1 + 50/100 = 1.5; both are StartPriority 1, so Maui's sort (qsort,
    # stable on glibc) keeps submission order: a first.  The counts model ranked b first.
    cfg = cfg_file(tmp_path, "QUEUETIMEWEIGHT 0\nXFACTORWEIGHT 1\n")
    for mechanics, order in (("nodes", ["w0!a", "w0!b"]), ("counts", ["w0!b", "w0!a"])):
        s = Maui({"config": cfg, "mechanics": mechanics})
        _queue(s, [("a", 0, 3600), ("b", 50, 100)])
        s.wq.refresh(100)
        assert [e.id for e in s.wq.main] == order, mechanics


def test_jobmaxoverrun_of_the_config_is_checked_against_the_workload(tmp_path, caplog):
    # Batsim enforces the walltime, so maui.cfg's JOBMAXOVERRUN acts through the conversion: one
    # warning when the workload was not converted with the same --overrun, none when it was.
    cfg = cfg_file(tmp_path, "JOBMAXOVERRUN 00:10:00\n")
    with caplog.at_level("WARNING", logger="batfeed.schedulers"):
        schedule(tmp_path / "plain", OVERRUN_JOBS, Maui({"config": cfg}))
        schedule(tmp_path / "x0", _overrun(OVERRUN_JOBS, 0), Maui({"config": cfg}))
        schedule(tmp_path / "x600", _overrun(OVERRUN_JOBS, 600), Maui({"config": cfg}))
    lines = [r.getMessage() for r in caplog.records if "JOBMAXOVERRUN" in r.getMessage()]
    assert len(lines) == 2
    assert "has no effect" in lines[0] and "--overrun 600" in lines[0]
    assert "extends requests by 0 s" in lines[1]
    assert Maui({"config": cfg_file(tmp_path, "JOBMAXOVERRUN -1\n", "n.cfg")}).cfg.jobmaxoverrun == float("inf")


# ------------------------------------------------------------------------------ NODEALLOCATIONPOLICY
def test_highest_takes_the_top_of_the_interval_list():
    assert highest([(0, 2), (5, 6), (9, 9)], 4) == [(2, 2), (5, 6), (9, 9)]
    assert highest([(0, 2)], 5) == [(0, 2)] and highest([(0, 2)], 0) == []


def test_lastavailable_takes_unreserved_then_highest_index_nodes(tmp_path):
    # Maui's default LASTAVAILABLE (MSched.c MJobAllocMNL from the end of MNode.c MNodeSelectIdleTasks'
    # list, sorted by time to the node's next reservation, low to high, stable).  1 (2 machines, 100 s)
    # at 0: nothing reserved, so the end of the list in node order: 2-3.  2 (3 machines, 10 s) at 1
    # cannot start (0, 1 free): its reservation at 100 (MJobGetEStartTime's list in node order, taken
    # from its end) holds 1-3.  3 (1 machine, 50 s) at 2: idle 0 (no reservation) and 1 (reserved in
    # 98 s >= 50): the list is [1, 0], so 3 gets 0, the node free the longest, not the highest 1.
    jobs = [(1, 0, 2, 100, 100), (2, 1, 3, 10, 10), (3, 2, 1, 50, 50)]
    got = schedule(tmp_path / "last", jobs, Maui())
    assert got == {"1": (0, 100, "2-3"), "2": (100, 110, "1-3"), "3": (2, 52, "0")}
    # FIRSTAVAILABLE: the first nodes of the lists: 1 on 0-1, 2 reserved on 0-2 at 100, 3 on 2 then
    first = schedule(tmp_path / "first", jobs, fa())
    assert first == {"1": (0, 100, "0-1"), "2": (100, 110, "0-2"), "3": (2, 52, "2")}


@pytest.mark.parametrize("policy", ["MINRESOURCE", "CPULOAD"])
def test_minresource_and_cpuload_take_the_highest_index_nodes(tmp_path, policy):
    # Identical single-processor nodes: MINRESOURCE's memory classes and CPULOAD's free processors
    # are all alike, and both walk the unsorted list from its end (MSched.c MJobAllocMNL).  As above,
    # but 3 now gets node 1 (reserved at 100, still free for its 50 s), the highest idle one.
    jobs = [(1, 0, 2, 100, 100), (2, 1, 3, 10, 10), (3, 2, 1, 50, 50)]
    got = schedule(tmp_path, jobs, Maui({"config": cfg_file(tmp_path, f"NODEALLOCATIONPOLICY {policy}\n")}))
    assert got == {"1": (0, 100, "2-3"), "2": (100, 110, "1-3"), "3": (2, 52, "1")}
