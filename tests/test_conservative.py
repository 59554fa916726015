"""Conservative backfilling (models.md §B): hand-computed schedules on small_4.xml (4 machines).

A job is (id, submit r, machines q, runtime, walltime p̃); see tests/sched_helpers.py.
"""

from __future__ import annotations

from batfeed.schedulers.conservative import Conservative
from batfeed.schedulers.easy import Easy
from sched_helpers import schedule_of, simulate_jobs

INF = float("inf")


def test_backfilling_never_delays_any_reservation(tmp_path):
    # 1 on 0-2 [0,100).  Reservations: 2 (2 machines) [100,200); 3 (2) [100,200) beside it;
    # 4 (1 machine, 500 s) would overlap both -> [200,700); 5 (1 machine, 50 s) fits the free
    # machine now without touching any reservation: [4,54).  EASY instead lets 4 start at 3 and
    # 3 then waits until 200 (tests/test_easy.py, test 1).
    jobs = [(1, 0, 3, 100, 100), (2, 1, 2, 100, 100), (3, 2, 2, 100, 100), (4, 3, 1, 500, 500), (5, 4, 1, 50, 50)]
    sched = Conservative()
    sched.trace_reservations = True
    assert schedule_of(tmp_path, jobs, sched) == {
        "1": (0, 100, "0-2"), "2": (100, 200, "0-1"), "3": (100, 200, "2-3"),
        "4": (200, 700, "0"), "5": (4, 54, "3")}
    first = {}
    for _, jid, t in sched.reservations:
        first.setdefault(jid, t)
    assert first == {"w0!1": 0, "w0!2": 100, "w0!3": 100, "w0!4": 200, "w0!5": 4}


def test_compression_after_an_early_end(tmp_path):
    # 1 takes all 4 machines, p̃ 100 but ends at 20.  Reservations at submission: 2 [100,150),
    # 3 [100,150) (2 + 2 machines), 4 (4 machines) [150,160).  At 20, compression in FCFS order:
    # 2 -> 20, 3 -> 20, 4 -> 70.
    jobs = [(1, 0, 4, 20, 100), (2, 1, 2, 50, 50), (3, 2, 2, 50, 50), (4, 3, 4, 10, 10)]
    sched = Conservative()
    sched.trace_reservations = True
    assert schedule_of(tmp_path, jobs, sched) == {
        "1": (0, 20, "0-3"), "2": (20, 70, "0-1"), "3": (20, 70, "2-3"), "4": (70, 80, "0-3")}
    assert [(now, j, t) for now, j, t in sched.reservations if j != "w0!1"] == [
        (1, "w0!2", 100), (2, "w0!3", 100), (3, "w0!4", 150),
        (20, "w0!2", 20), (20, "w0!3", 20), (20, "w0!4", 70)]


def test_compression_follows_the_priority_order(tmp_path):
    # 1 (all machines, p̃ 100) ends at 20.  2 (3 machines, 50 s) is reserved at 100, 3 (3 machines,
    # 10 s) at 150.  Compression in FCFS order: 2 -> 20, 3 -> 70.  In SPF order 3 (p̃ 10) goes first:
    # 3 -> 20, then 2 -> 30 (still not later than its 100).
    jobs = [(1, 0, 4, 20, 100), (2, 1, 3, 50, 50), (3, 2, 3, 10, 10)]
    assert schedule_of(tmp_path / "f", jobs, Conservative()) == {
        "1": (0, 20, "0-3"), "2": (20, 70, "0-2"), "3": (70, 80, "0-2")}
    assert schedule_of(tmp_path / "s", jobs, Conservative({"policy": "SPF"})) == {
        "1": (0, 20, "0-3"), "2": (30, 80, "0-2"), "3": (20, 30, "0-2")}


def test_maintenance_window_in_reservations(tmp_path):
    # Window on machines 0-1 during [50, 100) (as in tests/test_easy.py): the profile counts 2
    # machines less then.  1 (2 machines, [0,80)) overlaps it -> gets 2-3; 2 [0,30) -> 0-1.
    # 3 (4 machines): free counts 0 until 30, 2 in [30,50), 0 in [50,80), 2 in [80,100), 4 from 100
    # -> [100,110).  4 (1 machine, 20 s) -> [30,50) on 0.  5 (1 machine, 30 s): [30,60) would
    # hit 0 free at 50, [80,110) hits 3's reservation -> [110,140).
    jobs = [(1, 0, 2, 80, 80), (2, 0, 2, 30, 30), (3, 1, 4, 10, 10), (4, 2, 1, 20, 20), (5, 3, 1, 30, 30)]
    maint = [{"start": 50, "end": 100, "machines": "0-1"}]
    assert schedule_of(tmp_path, jobs, Conservative({"maintenance": maint})) == {
        "1": (0, 80, "2-3"), "2": (0, 30, "0-1"), "3": (100, 110, "0-3"), "4": (30, 50, "0"), "5": (110, 140, "0")}


def test_downtime_replans_reservations(tmp_path):
    # 1 and 2 run [0,100) (p̃ 200).  3 (4 machines) reserved at 200, 4 (3 machines) at 220.
    # At 50 machine 1 goes down (1 keeps running, option "ignore"): 3 can never get 4 machines
    # while it is down -> reservation inf; 4 -> 200, and at 100 (early ends) -> 100.  At 300
    # machine 1 is back: 3 -> 300.  (Only changes of reservation are recorded.)
    jobs = [(1, 0, 2, 100, 200), (2, 0, 2, 100, 200), (3, 10, 4, 10, 20), (4, 20, 3, 30, 40)]
    events = [{"timestamp": 50, "type": "machine_unavailable", "resources": "1"},
              {"timestamp": 300, "type": "machine_available", "resources": "1"}]
    sched = Conservative()
    sched.trace_reservations = True
    rows, _ = simulate_jobs(tmp_path, jobs, sched, events=events)
    assert {k: v[:3] for k, v in rows.items()} == {
        "1": (0, 100, "0-1"), "2": (0, 100, "2-3"), "3": (300, 310, "0-3"), "4": (100, 130, "0 2-3")}
    assert [(now, j[3:], t) for now, j, t in sched.reservations if now >= 10] == [
        (10, "3", 200), (20, "4", 220), (50, "3", INF), (50, "4", 200), (100, "4", 100), (300, "3", 300)]


def test_same_as_easy_when_only_the_head_can_be_delayed(tmp_path):
    # With a single waiting job behind the head, both protect the same reservation.
    jobs = [(1, 0, 3, 100, 100), (2, 1, 4, 10, 10), (3, 2, 1, 90, 90)]
    assert schedule_of(tmp_path / "c", jobs, Conservative()) == schedule_of(tmp_path / "e", jobs, Easy()) == {
        "1": (0, 100, "0-2"), "2": (100, 110, "0-3"), "3": (2, 92, "3")}


def test_compression_is_repeated_until_nothing_moves(tmp_path):
    # (found by the property test) LCFS.  t=0: 2 (1 machine, p̃ 3) [0,3); 3 (4 machines, p̃ 1)
    # reserved [3,4).  t=1: 1 (1 machine, no walltime) -> [4, inf).  t=2: 2 ends early; compression
    # in LCFS order: 1 first (3 still holds [3,4)) stays at 4; then 3 moves to 2 and starts.  Nothing
    # would happen at 4 any more: a second pass moves 1 to 3, the end of 3, where it starts.
    jobs = [(1, 1, 1, 1, None), (2, 0, 1, 2, 3), (3, 0, 4, 1, 1)]
    sched = Conservative({"policy": "LCFS"})
    sched.trace_reservations = True
    assert schedule_of(tmp_path, jobs, sched) == {"1": (3, 4, "0"), "2": (0, 2, "0"), "3": (2, 3, "0-3")}
    assert [(now, j[3:], t) for now, j, t in sched.reservations] == [
        (0, "2", 0), (0, "3", 3), (1, "1", 4), (2, "3", 2), (2, "1", 3)]
