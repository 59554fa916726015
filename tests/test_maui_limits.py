"""Per-credential limits as Maui applies them (schedulers/maui_limits.py, issue 29), computed by hand.

Platform platforms/small_4.xml (4 machines, ids 0-3), Maui's default weights (priority = queue
minutes, truncated, at least 1), RMPOLLINTERVAL 60 with an iteration at every poll (``poll``): passes
at 60, 120, ... (the first submission is at 0), a job completes at the first poll at or after its end.
A job is ``(id, submit, machines, runtime, walltime, fields)``.
"""

from __future__ import annotations

from batfeed.schedulers.maui import Maui
from test_maui import cfg_file, schedule


def _maui(tmp_path, text: str) -> Maui:
    return Maui({"config": cfg_file(tmp_path, text), "interval": 60, "poll": True})


def test_a_job_blocked_by_maxjob_keeps_its_queue_time_of_before(tmp_path):
    # USERCFG[DEFAULT] MAXJOB=1.  At 60, A1 and A2 (user a, both submitted at 0, priority 1) are ranked
    # in job order: A1 starts (node 3), then A2 is over a's limit.  Before that, MQueueSelectJobs had set
    # A2's EffQueueDuration to 60 s; as long as the limit blocks A2 it is not set again, so A2 keeps
    # priority 1 (and MQueueSelectAllJobs, walking A1 - queue time 60 s at its start, priority 1, first
    # in job order - before A2, resets A2's SystemQueueTime at every poll).  B (user b, 4 machines)
    # arrives at 300.  At 660 (A1 ended at 650) B ranks 5 (EffQueueDuration from 600: 300 s) above A2
    # (1), takes the four machines, and A2 starts at the poll after B's end (760).  Ranked by its queue
    # time since submission (600 s at 660: 10), A2 would have started at 660 and B at 780.
    jobs = [("A1", 0, 1, 590, 600, {"user": "a"}), ("A2", 0, 3, 100, 100, {"user": "a"}),
            ("B", 300, 4, 100, 100, {"user": "b"})]
    got = schedule(tmp_path / "lim", jobs, _maui(tmp_path, "USERCFG[DEFAULT] MAXJOB=1\n"))
    assert got == {"A1": (60, 650, "3"), "B": (660, 760, "0-3"), "A2": (780, 880, "1-3")}
    # without the limit A2 starts at 60 with A1 (four machines in all), B when A1 ends
    free = schedule(tmp_path / "free", jobs, _maui(tmp_path, ""))
    assert free["A2"][0] == 60 and free["B"][0] == 660


def test_the_limit_walk_counts_only_running_jobs_ranked_first(tmp_path):
    # MAXJOB=1.  X (user x, 2 machines, 2000 s) starts at 60 on 2-3; A2 (user a, 3 machines, submitted
    # at 1) cannot and is reserved at X's end (2060) on 1-3.  A1 (user a, 1 machine, 600 s) arrives at
    # 590 and backfills at 600 on node 0 (unreserved, LASTAVAILABLE); A2's EffQueueDuration, set at 600
    # before A1 started, is 599 s (priority 9).  From 660 on A2 ranks before the running A1 (priority 1:
    # 10 s of queue time at its start), so the walk of MQueueSelectAllJobs has not counted A1 when it
    # checks A2: no reset of A2's SystemQueueTime (1).  C (user c, 3 machines) arrives at 900.  A1 ends
    # at 1190; at 1200 A2 (still 9) outranks C (4) and is free of the limit: its EffQueueDuration
    # becomes 1199 s (19 from 1260 on, C 5), so it keeps the reservation and starts at the poll after
    # X's end (2100), C at the poll after A2's end (2220).  Had the walk counted A1 first, A2 would have
    # been reset at every poll to 1140, ranked 1 from 1260 on, and C would have taken the reservation.
    jobs = [("X", 0, 2, 2000, 2000, {"user": "x"}), ("A2", 1, 3, 100, 100, {"user": "a"}),
            ("A1", 590, 1, 590, 600, {"user": "a"}), ("C", 900, 3, 100, 100, {"user": "c"})]
    got = schedule(tmp_path / "lim", jobs, _maui(tmp_path, "USERCFG[DEFAULT] MAXJOB=1\n"))
    assert got == {"X": (60, 2060, "2-3"), "A1": (600, 1190, "0"), "A2": (2100, 2200, "1-3"),
                   "C": (2220, 2320, "1-3")}


def test_a_start_that_puts_a_reserved_job_over_its_limit_frees_its_reservation(tmp_path):
    # GROUPCFG[DEFAULT] MAXJOB=1, jobs in group order X (gx, 2 machines, 1000 s), A2 (ga, 3 machines),
    # A3 (ga, 1 machine, 500 s), B (gb, 1 machine, 1500 s of 2000), submitted at 0, 1, 2, 3.  First priority
    # pass at 60: X starts on 2-3; A2 cannot start and is reserved at 1060 on 1-3; A3 starts on node 0 (the
    # one free the longest, LASTAVAILABLE), putting ga at its limit; B does not fit node 1 before A2's
    # reservation.  MQueueSelectJobs then drops A2 (over the limit) and its reservation, and the second
    # pass starts B on node 1 at 60.  A2 starts when three nodes are free: X ends at 1060 (poll 1080).
    jobs = [("X", 0, 2, 1000, 1000, {"user": "x", "group": "gx"}),
            ("A2", 1, 3, 100, 100, {"user": "a", "group": "ga"}),
            ("A3", 2, 1, 500, 500, {"user": "a", "group": "ga"}),
            ("B", 3, 1, 1500, 2000, {"user": "b", "group": "gb"})]
    got = schedule(tmp_path / "lim", jobs, _maui(tmp_path, "GROUPCFG[DEFAULT] MAXJOB=1\n"))
    assert got == {"X": (60, 1060, "2-3"), "A3": (60, 560, "0"), "B": (60, 1560, "1"), "A2": (1080, 1180, "0 2-3")}


def test_a_job_over_its_soft_limit_only_backfills(tmp_path):
    # USERCFG[DEFAULT] MAXJOB=1,2: soft limit 1 for the priority pass (MQueueScheduleIJobs), hard limit 2
    # for the backfill (MSchedProcessJobs backfills at the hard level).  At 60, A1 starts in the pass; A2
    # (same user) is over the soft limit there, but the backfill window (3 idle nodes, no reservation)
    # takes it: both at 60.  With MAXJOB=1 A2 waits for A1's end (1060, poll 1080).
    jobs = [("A1", 0, 1, 1000, 1000, {"user": "a"}), ("A2", 1, 1, 100, 100, {"user": "a"})]
    got = schedule(tmp_path / "sh", jobs, _maui(tmp_path, "USERCFG[DEFAULT] MAXJOB=1,2\n"))
    assert got == {"A1": (60, 1060, "3"), "A2": (60, 160, "2")}
    one = schedule(tmp_path / "one", jobs, _maui(tmp_path, "USERCFG[DEFAULT] MAXJOB=1\n"))
    assert one["A2"][:2] == (1080, 1180)
