"""FCFS and its free-machine set (hand-computed)."""

from __future__ import annotations

import json

from batfeed.schedulers.fcfs import Fcfs
from batfeed.schedulers.resources import FreeMachines, subtract
from hypothesis import given, settings
from hypothesis import strategies as st

from batfeed.engine import simulate


def test_take_lowest_and_release_merge():
    f = FreeMachines(10)
    assert f.take_lowest(3) == [(0, 2)]
    assert f.take_lowest(2) == [(3, 4)]
    f.release([(0, 2)])                       # free: 0-2, 5-9
    assert f.intervals() == [(0, 2), (5, 9)] and f.count == 8
    assert f.take_lowest(4) == [(0, 2), (5, 5)]
    f.release([(3, 4)])                       # free: 3-4, 6-9
    f.release([(5, 5)])                       # merges both sides -> 3-9
    assert f.intervals() == [(3, 9)] and f.count == 7


def test_remove_splits_and_reports_only_free_parts():
    f = FreeMachines(10)
    f.take_lowest(2)                          # free 2-9
    assert f.remove([(0, 3), (6, 6)]) == [(2, 3), (6, 6)]
    assert f.intervals() == [(4, 5), (7, 9)] and f.count == 5
    assert subtract([(0, 9)], [(2, 3), (6, 6)]) == [(0, 1), (4, 5), (7, 9)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 6)), max_size=40))
def test_free_set_matches_a_plain_set(ops):
    f, free, held = FreeMachines(16), set(range(16)), []
    for take, n in ops:
        if take and n <= f.count:
            got = [m for a, b in f.take_lowest(n) for m in range(a, b + 1)]
            assert got == sorted(free)[:n]        # lowest-numbered free machines
            free -= set(got)
            held.append(got)
        elif held:
            ms = held.pop(0)
            f.release([(m, m) for m in ms])
            free |= set(ms)
        assert f.count == len(free)
        assert [m for a, b in f.intervals() for m in range(a, b + 1)] == sorted(free)
        assert all(b + 1 < c for (_, b), (c, _) in zip(f.intervals(), f.intervals()[1:], strict=False))


def test_fcfs_waits_for_machines_back_from_a_downtime(tmp_path):
    # 4 machines; machines 2-3 unavailable in [0, 50).  Job 1 (4 machines, 10 s) submitted at 1 cannot
    # start before 50; job 2 (1 machine, 5 s) submitted at 2 waits behind it (FCFS, no backfilling).
    # At 50: job 1 on 0-3 until 60; job 2 on 0 at 60 until 65.
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 1, "res": 4, "profile": "d10"},
        {"id": 2, "subtime": 2, "res": 1, "profile": "d5"}],
        "profiles": {"d10": {"type": "delay", "delay": 10}, "d5": {"type": "delay", "delay": 5}}}))
    ev = tmp_path / "ev.txt"
    ev.write_text('{"timestamp": 0, "type": "machine_unavailable", "resources": "2-3"}\n'
                  '{"timestamp": 50, "type": "machine_available", "resources": "2-3"}\n')
    from pathlib import Path
    plat = Path(__file__).resolve().parent.parent / "platforms" / "small_4.xml"
    r = simulate(plat, [wl], Fcfs(), events=[ev], export=tmp_path / "o")
    rows = [line.split(",") for line in (tmp_path / "o_jobs.csv").read_text().splitlines()[1:]]
    assert [(x[0], x[8], x[10], x[14]) for x in rows] == [
        ("1", "50.000000", "60.000000", "0-3"), ("2", "60.000000", "65.000000", "0")]
    assert r.counts["submitted"] == 2 == r.counts["completed_successfully"]
    # machines 2-3 were unavailable 0..50: 2 x 50 = 100 machine-seconds
    assert r.schedule["time_unavailable"] == "100.000000"


def test_fcfs_rejects_jobs_larger_than_the_machine(tmp_path):
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 5, "profile": "d"},
                                                    {"id": 2, "subtime": 0, "res": 0, "profile": "d"}],
                              "profiles": {"d": {"type": "delay", "delay": 1}}}))
    from pathlib import Path
    plat = Path(__file__).resolve().parent.parent / "platforms" / "small_4.xml"
    sched = Fcfs()
    r = simulate(plat, [wl], sched)
    assert r.counts["rejected"] == 2
    assert "platform has 4" in sched.rejected["w0!1"] and "no machine" in sched.rejected["w0!2"]


def test_same_inputs_give_byte_identical_outputs(tmp_path, kth_trace):
    from batfeed.adapters.swf import convert_swf
    conv = convert_swf(kth_trace, tmp_path / "in")
    data = json.loads(conv.workload_path.read_text())
    data["jobs"] = data["jobs"][:2000]
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps(data))
    a = simulate(conv.platform_path, [wl], Fcfs(), export=tmp_path / "a")
    b = simulate(conv.platform_path, [wl], Fcfs(), export=tmp_path / "b")
    assert a.jobs_csv.read_bytes() == b.jobs_csv.read_bytes()
    assert a.counts["submitted"] == 2000
