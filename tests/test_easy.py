"""EASY(P, Θ): hand-computed schedules (models.md §A), batsched-like machine reservations,
downtime, maintenance windows, options, and the unchanged file under pybatsim's loader.

Platform small_4.xml (4 hosts, ids 0-3, zero latency: start = decision time, finish = start +
runtime).  A job is (id, submit r, machines q, runtime, walltime p̃).  When runtime == walltime
the job runs exactly its walltime (Batsim then reports COMPLETED_WALLTIME_REACHED; only times and
allocations are checked).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from batfeed.schedulers.backfill import OptionError
from batfeed.schedulers.conservative import Conservative
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.fcfs import Fcfs
from batfeed.schedulers.resources import parse
from sched_helpers import schedule_of, simulate_jobs, starts

from batfeed.cli import main
from batfeed.engine import EngineConfig, simulate
from batfeed.registry import make_scheduler
from batfeed.runner import free_tcp_port

REPO = Path(__file__).resolve().parent.parent

# ------------------------------------------------------------------------------------------ 1
# EASY differs from FCFS and from conservative backfilling.
#   1: r=0 q=3 p̃=100   2: r=1 q=2 p̃=100   3: r=2 q=2 p̃=100   4: r=3 q=1 p̃=500   5: r=4 q=1 p̃=50
THREE = [(1, 0, 3, 100, 100), (2, 1, 2, 100, 100), (3, 2, 2, 100, 100), (4, 3, 1, 500, 500), (5, 4, 1, 50, 50)]


def test_easy_differs_from_fcfs_and_from_conservative(tmp_path):
    # FCFS: 1 on 0-2 [0,100); 2 (2 machines) waits for 1; at 100: 2 on 0-1 and 3 on 2-3 until 200;
    # then 4 and 5 (1 machine each) at 200.
    assert schedule_of(tmp_path / "f", THREE, Fcfs()) == {
        "1": (0, 100, "0-2"), "2": (100, 200, "0-1"), "3": (100, 200, "2-3"),
        "4": (200, 700, "0"), "5": (200, 250, "1")}
    # EASY(FCFS): t=1 head 2 blocked (free 1): running 1 ends at 100 giving 3 -> shadow 100,
    # extra = 1 + 3 - 2 = 2.  t=2: 3 needs 2 > free 1.  t=3: 4 (1 machine, ends 503 > 100) uses an
    # extra machine (1 <= 2): starts on 3, extra 1.  t=4: no free machine.  t=100: 1 ends, free
    # {0,1,2}: 2 starts on 0-1; head 3 (2 > free 1): running 2 ends 200 giving 2 -> shadow 200,
    # extra 1; 5 ends at 150 <= 200: backfills on 2.  t=200: 3 on 0-1.  The backfilled 4 delayed 3
    # (which is not the head when 4 starts): EASY protects the head only.
    assert schedule_of(tmp_path / "e", THREE, Easy()) == {
        "1": (0, 100, "0-2"), "2": (100, 200, "0-1"), "3": (200, 300, "0-1"),
        "4": (3, 503, "3"), "5": (100, 150, "2")}
    # Conservative: reservations 2 -> [100,200); 3 -> [100,200) (2 + 2 machines then); 4 (500 s)
    # would overlap both -> [200,700); 5 (50 s) fits now on the free machine: [4,54).
    assert schedule_of(tmp_path / "c", THREE, Conservative()) == {
        "1": (0, 100, "0-2"), "2": (100, 200, "0-1"), "3": (100, 200, "2-3"),
        "4": (200, 700, "0"), "5": (4, 54, "3")}


# ------------------------------------------------------------------------------------------ 2
def test_theta_promotes_a_job_waiting_too_long(tmp_path):
    # 1 takes the machine [0,100). SPF would start 3 (p̃ 10) before 2 (p̃ 100) at t=100; with
    # Θ = 50, 2 has waited 99 s > 50 and goes first (3 waited 40 s): 2 on 0-2 [100,200), 3 (2
    # machines, 1 free) waits until 200.  Without Θ: 3 on 0-1 [100,110); 2 (3 machines) at 110.
    jobs = [(1, 0, 4, 100, 100), (2, 1, 3, 100, 100), (3, 60, 2, 10, 10)]
    assert schedule_of(tmp_path / "a", jobs, Easy({"policy": "SPF", "theta": None})) == {
        "1": (0, 100, "0-3"), "2": (110, 210, "0-2"), "3": (100, 110, "0-1")}
    assert schedule_of(tmp_path / "b", jobs, Easy({"policy": "SPF", "theta": 50})) == {
        "1": (0, 100, "0-3"), "2": (100, 200, "0-2"), "3": (200, 210, "0-1")}
    # default Θ is 40 h: no promotion here
    assert starts(tmp_path / "c", jobs, Easy({"policy": "SPF"}))["2"] == 110


# ------------------------------------------------------------------------------------------ 3
def test_backfill_order_other_than_primary_order_changes_the_result(tmp_path):
    # 1 on 0-2 [0,100); head 2 (4 machines): shadow 100, extra 0, one free machine.  3 (p̃ 90) and
    # 4 (p̃ 20) arrive together at t=2 and both end before 100.
    # B = P = FCFS: 3 first -> [2,92) on 3; 4 then finds no machine, and at 92 it would end at
    #   112 > 100: waits; 2 at 100 [100,110); 4 at 110.
    # B = SPF: 4 first -> [2,22); at 22, 3 would end at 112 > 100: waits until 2 is done: 110.
    jobs = [(1, 0, 3, 100, 100), (2, 1, 4, 10, 10), (3, 2, 1, 90, 90), (4, 2, 1, 20, 20)]
    assert schedule_of(tmp_path / "a", jobs, Easy()) == {
        "1": (0, 100, "0-2"), "2": (100, 110, "0-3"), "3": (2, 92, "3"), "4": (110, 130, "0")}
    assert schedule_of(tmp_path / "b", jobs, Easy({"backfill_policy": "SPF"})) == {
        "1": (0, 100, "0-2"), "2": (100, 110, "0-3"), "3": (110, 200, "0"), "4": (2, 22, "3")}


# ------------------------------------------------------------------------------------------ 4
def test_machines_reservation_differs_from_count_reservation(tmp_path):
    # 1 on 0-1 ends early at 10 (p̃ 50); 2 on 2-3 [1,101).  t=11: head 3 (3 machines), free {0,1}.
    # count: shadow 101 (2 gives back 2 -> 4 free), extra = 4 - 3 = 1; t=12: 4 (1 machine, 500 s)
    #   uses the extra machine: starts at 12 on 0; at 101 3 gets 1-3.
    # machines (batsched easy_bf): 3 reserves the 3 lowest machines free at 101: {0,1,2}; 4 ends
    #   after 101 so it may only use free machines outside {0,1,2}: none -> waits; at 101 3 gets 0-2
    #   and 4 the remaining machine 3.
    jobs = [(1, 0, 2, 10, 50), (2, 1, 2, 100, 100), (3, 11, 3, 50, 50), (4, 12, 1, 500, 500)]
    assert schedule_of(tmp_path / "a", jobs, Easy()) == {
        "1": (0, 10, "0-1"), "2": (1, 101, "2-3"), "3": (101, 151, "1-3"), "4": (12, 512, "0")}
    assert schedule_of(tmp_path / "b", jobs, Easy({"reservation": "machines"})) == {
        "1": (0, 10, "0-1"), "2": (1, 101, "2-3"), "3": (101, 151, "0-2"), "4": (101, 601, "3")}


def test_machines_mode_tries_only_new_jobs_when_nothing_ended(tmp_path):
    # SPF.  1 on 0-2 [0,100), machine 3 free.  t=1: head 2 (4 machines, p̃ 50) reserves 0-3 at 100.
    # t=2: 3 (1 machine, p̃ 1000) would overlap that reservation: waits.  t=3: 4 (2 machines, p̃ 10)
    # becomes the head (SPF) and reserves only {0,1} at 100, so 3 could now run on machine 3 —
    # count mode starts it (extra = 4 - 2 = 2) but batsched only tries the new job 4 when no job
    # ended, so in machines mode 3 waits: 4 [100,110), 2 [110,160), 3 [160,1160).
    jobs = [(1, 0, 3, 100, 100), (2, 1, 4, 50, 50), (3, 2, 1, 1000, 1000), (4, 3, 2, 10, 10)]
    assert schedule_of(tmp_path / "m", jobs, Easy({"policy": "SPF", "reservation": "machines"})) == {
        "1": (0, 100, "0-2"), "2": (110, 160, "0-3"), "3": (160, 1160, "0"), "4": (100, 110, "0-1")}
    # count: 3 at 3 on machine 3; at 100 4 [100,110) on 0-1; head 2 then needs 3 ending at 1003.
    assert schedule_of(tmp_path / "c", jobs, Easy({"policy": "SPF"})) == {
        "1": (0, 100, "0-2"), "2": (1003, 1053, "0-3"), "3": (3, 1003, "3"), "4": (100, 110, "0-1")}


# ------------------------------------------------------------------------------------------ 5
def test_jobs_without_walltime(tmp_path):
    # 1 has no walltime (p̃ = inf) on 0-2 for 100 s.  Head 2 (2 machines) can only count on
    # machines given back by running jobs, and 1 never gives any back: shadow = inf, so every job
    # that fits may start — 3 (1 machine, p̃ 500) takes the free machine at t=2.  At 100 1 ends:
    # 2 on 0-1.  4 (no walltime, 1 machine) arrives at 101 with nothing ahead of it: starts on 2.
    jobs = [(1, 0, 3, 100, None), (2, 1, 2, 10, 10), (3, 2, 1, 500, 500), (4, 101, 1, 5, None)]
    assert schedule_of(tmp_path / "a", jobs, Easy()) == {
        "1": (0, 100, "0-2"), "2": (100, 110, "0-1"), "3": (2, 502, "3"), "4": (101, 106, "2")}
    # the reservation the scheduler computed for 2 at t=1 and t=2 was indeed inf
    sched = Easy()
    sched.trace_reservations = True
    schedule_of(tmp_path / "b", jobs, sched)
    assert ("w0!2", float("inf")) in [(j, t) for _, j, t in sched.reservations]


# ------------------------------------------------------------------------------------------ 6
# Downtime: 1 on 0-1 and 2 on 2-3 run [0,100) (p̃ 200).  Machine 1 is down from 50 to 300.
DOWN_JOBS = [(1, 0, 2, 100, 200), (2, 0, 2, 100, 200), (3, 10, 4, 10, 20), (4, 20, 3, 30, 40)]
DOWN_EVENTS = [{"timestamp": 50, "type": "machine_unavailable", "resources": "1"},
               {"timestamp": 300, "type": "machine_available", "resources": "1"}]


def never_on_machine_1_while_down(rows):
    for start, finish, alloc, _ in rows.values():
        if start is not None and any(a <= 1 <= b for a, b in parse(alloc)):
            assert finish <= 50 or start >= 300, (start, finish, alloc)


def test_downtime_ignore_lets_running_jobs_continue(tmp_path):
    # 1 keeps running on 0-1 until 100.  Head 3 needs 4 machines, only 3 are up: no running job
    # can give the 4th back -> shadow inf, so 4 (3 machines) starts at 100 on 0 2-3; 3 waits for
    # machine 1 to come back at 300.
    sched = Easy()
    rows, result = simulate_jobs(tmp_path, DOWN_JOBS, sched, events=DOWN_EVENTS)
    assert {k: v[:3] for k, v in rows.items()} == {
        "1": (0, 100, "0-1"), "2": (0, 100, "2-3"), "3": (300, 310, "0-3"), "4": (100, 130, "0 2-3")}
    assert (sched.downtime_killed, sched.dropped, sched.resubmitted) == ([], [], {})
    never_on_machine_1_while_down({k: v for k, v in rows.items() if k != "1"})


def test_downtime_kill_drop(tmp_path, caplog):
    sched = Easy({"on_machine_down": "kill-drop"})
    with caplog.at_level(logging.INFO, logger="batfeed.schedulers"):
        rows, result = simulate_jobs(tmp_path, DOWN_JOBS, sched, events=DOWN_EVENTS)
    assert rows["1"] == (0, 50, "0-1", "COMPLETED_KILLED")
    assert {k: v[:3] for k, v in rows.items() if k != "1"} == {
        "2": (0, 100, "2-3"), "3": (300, 310, "0-3"), "4": (100, 130, "0 2-3")}
    assert (sched.downtime_killed, sched.dropped, sched.resubmitted) == (["w0!1"], ["w0!1"], {})
    assert result.counts["completed_killed"] == 1 and result.counts["submitted"] == 4
    assert "1 job(s) killed by downtimes, 0 resubmitted, 1 dropped" in caplog.text
    never_on_machine_1_while_down(rows)


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")   # pybatsim, with ACK
@pytest.mark.parametrize("ack", [False, True])
def test_downtime_kill_resubmit(tmp_path, ack):
    # 1 is killed at 50 and registered again as 1#resub1 (r = 50, same size, walltime, runtime).
    # FCFS order 3, 4, 1#resub1.  Machines up: 0, 2, 3.  At 100: 4 (3 machines) starts (3 is blocked
    # with shadow inf); at 130 1#resub1 runs on 0 2 until 230; 3 waits for machine 1 (300).
    sched = Easy({"on_machine_down": "kill-resubmit"})
    config = EngineConfig(enable_dynamic_jobs=True, acknowledge_dynamic_jobs=ack)
    rows, result = simulate_jobs(tmp_path, DOWN_JOBS, sched, events=DOWN_EVENTS, config=config)
    assert rows["1"] == (0, 50, "0-1", "COMPLETED_KILLED")
    assert {k: v[:3] for k, v in rows.items() if k != "1"} == {
        "2": (0, 100, "2-3"), "3": (300, 310, "0-3"), "4": (100, 130, "0 2-3"), "1#resub1": (130, 230, "0 2")}
    assert sched.resubmitted == {"w0!1": "w0!1#resub1"} and sched.dropped == []
    assert result.counts["submitted"] == 5          # the engine accounted for the resubmitted job too
    never_on_machine_1_while_down(rows)


def test_kill_resubmit_without_dynamic_jobs_drops_and_warns(tmp_path, caplog):
    sched = Easy({"on_machine_down": "kill-resubmit"})
    with caplog.at_level(logging.WARNING, logger="batfeed.schedulers"):
        rows, _ = simulate_jobs(tmp_path, DOWN_JOBS, sched, events=DOWN_EVENTS)
    assert sched.dropped == ["w0!1"] and sched.resubmitted == {}
    assert "cannot resubmit w0!1" in caplog.text and "--enable-dynamic-jobs" in caplog.text
    assert rows["1"][3] == "COMPLETED_KILLED" and "1#resub1" not in rows


# ------------------------------------------------------------------------------------------ 7
# Maintenance on machines 0-1 during [50, 100).
MAINT_JOBS = [(1, 0, 2, 80, 80), (2, 0, 2, 30, 30), (3, 1, 4, 10, 10), (4, 2, 1, 20, 20), (5, 3, 1, 30, 30)]
MAINT = [{"start": 50, "end": 100, "machines": "0-1"}]
# t=0: 1's span [0,80) overlaps the window -> it gets 2-3, not 0-1; 2 [0,30) does not -> 0-1.
# t=1: head 3 (4 machines): at 30 only 0-1 come back, at 80 all four but [80,90) overlaps the window,
#   at 100 (window end) all four are usable -> shadow 100, extra 0.
# t=30: 4 [30,50) ends before the window and before 100 -> machine 0; 5 [30,60) would overlap the
#   window and only 0-1 are free -> waits.  t=50, t=80: 5 still cannot (window / ends after 100).
# t=100 (the scheduler asked Batsim for a call at the window end): 3 [100,110); 5 [110,140).
MAINT_EXPECTED = {"1": (0, 80, "2-3"), "2": (0, 30, "0-1"), "3": (100, 110, "0-3"), "4": (30, 50, "0"),
                  "5": (110, 140, "0")}


@pytest.mark.parametrize("reservation", ["count", "machines"])
def test_maintenance_windows_are_respected(tmp_path, reservation):
    assert schedule_of(tmp_path, MAINT_JOBS, Easy({"maintenance": MAINT, "reservation": reservation})) \
        == MAINT_EXPECTED
    # without the window: 1 on 0-1, 2 on 2-3, 3 at 80, 4 and 5 backfill at 30
    assert starts(tmp_path / "none", MAINT_JOBS, Easy({"reservation": reservation})) == {
        "1": 0, "2": 0, "3": 80, "4": 30, "5": 30}


def test_maintenance_from_an_events_file_also_given_to_batsim(tmp_path):
    """The same outage as Batsim events (machines really down) and as the scheduler's plan."""
    events = [{"timestamp": 50, "type": "machine_unavailable", "resources": "0-1"},
              {"timestamp": 100, "type": "machine_available", "resources": "0-1"}]
    ev_file = tmp_path / "maint.txt"
    ev_file.write_text("".join(json.dumps(e) + "\n" for e in events))
    got = schedule_of(tmp_path / "run", MAINT_JOBS, Easy({"maintenance": str(ev_file)}), events=events)
    assert got == MAINT_EXPECTED


# ------------------------------------------------------------------------------------------ 8
def test_rejects_jobs_larger_than_the_machine_with_a_reason(tmp_path, caplog):
    sched = Easy()
    with caplog.at_level(logging.INFO, logger="batfeed.schedulers"):
        rows, result = simulate_jobs(tmp_path, [(1, 0, 5, 10, 20), (2, 0, 1, 10, 20)], sched)
    assert rows["1"][3] == "REJECTED" and rows["2"][:3] == (0, 10, "0")
    assert sched.rejected == {"w0!1": "requests 5 machines, the platform has 4"}
    assert "rejecting w0!1: requests 5 machines, the platform has 4" in caplog.text


@pytest.mark.parametrize("options, message", [
    ({"polcy": "SQF"}, "unknown option 'polcy' for Easy (did you mean 'policy'?; known: backfill_policy, "
                       "backfill_theta, maintenance, on_machine_down, policy, reservation, theta, ties)"),
    ({"policy": "XYZ"}, "option 'policy' for Easy must be a queue policy (FCFS, LCFS, SPF, LPF, LQF, SQF, "),
    ({"policy": "fcf"}, "got \"fcf\" (did you mean \"FCFS\"?)"),
    ({"backfill_policy": 3}, "option 'backfill_policy' for Easy must be a queue policy (FCFS, "),
    ({"theta": "1h"}, "option 'theta' for Easy must be a number of seconds >= 0 or null, got \"1h\""),
    ({"theta": -1}, "option 'theta' for Easy must be a number of seconds >= 0 or null, got -1"),
    ({"reservation": "nodes"}, "option 'reservation' for Easy must be one of \"count\", \"machines\", got \"nodes\""),
    ({"on_machine_down": "kill"}, "option 'on_machine_down' for Easy must be one of \"ignore\", \"kill-resubmit\", "
                                  "\"kill-drop\", got \"kill\" (did you mean \"kill-drop\"?)"),
    ({"maintenance": [{"start": 5, "end": 1, "machines": "0"}]}, "bad maintenance window"),
    ({"maintenance": [{"start": 5}]}, "bad maintenance window {'start': 5}: need start, end and machines"),
    ({"maintenance": "/nonexistent/ev.txt"}, "cannot read events file /nonexistent/ev.txt"),
])
def test_bad_options_are_one_line_errors(options, message):
    with pytest.raises(OptionError) as info:
        Easy(options)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_conservative_refuses_easy_only_options():
    with pytest.raises(OptionError, match="unknown option 'theta' for Conservative"):
        Conservative({"theta": 10})


def test_options_through_the_cli(tmp_path, capsys):
    from sched_helpers import write_jobs
    wl = write_jobs(tmp_path, THREE)
    plat = REPO / "platforms" / "small_4.xml"
    assert main(["simulate", str(plat), str(wl), "--scheduler", "easy", "--options", '{"policy": "SQF"}',
                 "--export", str(tmp_path / "o")]) == 0
    assert main(["simulate", str(plat), str(wl), "--scheduler", "easy", "--options", '{"policy": "SQX"}',
                 "--export", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "option 'policy' for Easy must be a queue policy (FCFS, LCFS, SPF, LPF, " in err[0]


# ------------------------------------------------------------------------------------------ 9
def test_the_file_loads_unchanged_with_pybatsims_loader():
    """pybatsim loads ``schedulers/easy.py`` by path (class Easy) with its ``-o`` options."""
    code = ("from batsim.tools.launcher import instanciate_scheduler as load\n"
            "s = load('schedulers/easy.py', {'policy': 'SQF'})\n"
            "c = load('schedulers/conservative.py', {})\n"
            "print(type(s).__name__, s.opts['policy'], s.opts['theta'], type(c).__name__)\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Easy", "SQF", "144000.0", "Conservative"]
    assert type(make_scheduler("easy", {"policy": "LAF"})).__name__ == "Easy"


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
def test_pybatsim_launcher_runs_the_repo_file_over_zmq(tmp_path):
    """``pybatsim schedulers/easy.py -t 0 -o '{"policy": "SQF"}'`` from the repository root, with
    the engine as Batsim: same _jobs.csv as the in-process run."""
    from sched_helpers import write_jobs
    wl = write_jobs(tmp_path, [(i, j, q, rt, rt + 5) for i, (_, j, q, rt, _) in enumerate(THREE, 1)])
    plat = REPO / "platforms" / "small_4.xml"
    port = free_tcp_port()
    log = tmp_path / "pybatsim.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "pybatsim"), "schedulers/easy.py", "-t", "0",
                                 "-s", f"tcp://127.0.0.1:{port}", "-o", '{"policy": "SQF"}'],
                                cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        simulate(plat, [wl], socket=f"tcp://127.0.0.1:{port}", export=tmp_path / "zmq", timeout_s=60)
        assert proc.wait(timeout=30) == 0, log.read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    assert "Scheduler: Easy ({'policy': 'SQF'})" in log.read_text()
    simulate(plat, [wl], Easy({"policy": "SQF"}), export=tmp_path / "inproc")
    assert (tmp_path / "zmq_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()
