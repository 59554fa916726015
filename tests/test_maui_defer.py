"""batfeed's Maui defers (schedulers/maui_defer.py): a job wider than the up machines, by hand on 4 machines.

Small schedules by hand of Maui's rules (MPolicy.c MQueueSelectAllJobs, MJob.c MJobSetHold, MRM.c
MRMJobPostUpdate), event-driven and on polls; tests/test_maui_conformance.py has the recorded scenarios
(down_*, drained_*, defer_poll_*, outage_*: nodes down throughout or taken down and back mid-run).
Every run also checks the accounting: submitted = completed + rejected + killed (test_engine_helpers.run).
"""

from __future__ import annotations

from test_maui import cfg_file, fa, simulate

# machines 2-3 unavailable during [0, 500)
BACK = [{"timestamp": 0, "type": "machine_unavailable", "resources": "2-3"},
        {"timestamp": 500, "type": "machine_available", "resources": "2-3"}]
GONE = BACK[:1]                   # ... for good
# A: 4 machines at 10 (wider than the 2 up machines); B: 1 machine at 20
JOBS = [("A", 10, 4, 100, 100), ("B", 20, 1, 100, 100)]


def test_a_deferred_job_is_restored_after_defertime(tmp_path):
    # event-driven: A is deferred at 10 until 610 (DEFERTIME 10 min), restored then and starts (the machines
    # are back since 500); B is not held up by it: it starts at once
    sched = fa({"config": cfg_file(tmp_path, "DEFERTIME 00:10:00\n")})
    rows, _ = simulate(tmp_path / "run", JOBS, sched, events=BACK)
    assert rows["A"][:3] == (610, 710, "0-3") and rows["B"][:3] == (20, 120, "0")
    assert sched.defer.count == {"w0!A": 1} and sched.defer.until == {}


def test_restored_at_the_first_poll_after_the_deadline(tmp_path):
    # 60 s polls from the first submission (10): first pass at 70, A deferred until 670, restored at the
    # first poll strictly after it (730: MSched.Time > SyncDeadLine), when it starts; B starts at 70
    sched = fa({"config": cfg_file(tmp_path, "DEFERTIME 600\n"), "interval": 60, "poll": True})
    rows, _ = simulate(tmp_path / "run", JOBS, sched, events=BACK)
    assert rows["A"][0] == 730 and rows["B"][0] == 70


def test_defercount_turns_it_into_a_batch_hold_rejected(tmp_path, caplog):
    # machines 2-3 never come back: A deferred at 10, 110, 210 (DEFERTIME 100, restored at the deadline
    # when event-driven); the third defer exceeds DEFERCOUNT 2: a batch hold for good, so A is rejected
    sched = fa({"config": cfg_file(tmp_path, "DEFERTIME 100\nDEFERCOUNT 2\n")})
    rows, result = simulate(tmp_path / "run", JOBS, sched, events=GONE)
    assert rows["A"][3] == "REJECTED" and rows["B"][:3] == (20, 120, "0")
    assert sched.rejected == {"w0!A": "batch hold after 3 defers (DEFERCOUNT 2): requests 4 machines, 2 are up"}
    assert result.counts["submitted"] == 2


def test_defer_disabled_skips_the_job_until_it_fits(tmp_path):
    # DEFERTIME 0: "defer disabled" - A is only skipped while too wide, and starts when the machines return
    sched = fa({"config": cfg_file(tmp_path, "DEFERTIME 0\n")})
    rows, _ = simulate(tmp_path / "run", JOBS, sched, events=BACK)
    assert rows["A"][:3] == (500, 600, "0-3") and rows["B"][0] == 20


def test_a_job_held_for_ever_is_rejected(tmp_path):
    # DEFERTIME 0 (or DEFERCOUNT 0, or DEFERTIME INFINITY) with no machine event left: Maui keeps A idle for
    # ever; batfeed rejects it, so that every job is accounted for
    for text, why in (("DEFERTIME 0\n", "requests 4 machines, 2 are up and no machine event is left"),
                      ("DEFERCOUNT 0\nDEFERTIME 60\n", "requests 4 machines, 2 are up and no machine event is left"),
                      ("DEFERTIME INFINITY\n", "deferred for ever (DEFERTIME INFINITY)")):
        sched = fa({"config": cfg_file(tmp_path, text)})
        rows, _ = simulate(tmp_path / str(len(text)), JOBS, sched, events=GONE)
        assert rows["A"][3] == "REJECTED" and why in sched.rejected["w0!A"], text
        assert rows["B"][0] == 20


def test_a_deferred_job_loses_the_reservation_a_fairshare_cap_keeps():
    # a job over its FSTARGET=N^ cap keeps its last reservation (maui_nodes.Plan.begin), but a defer destroys
    # it (MJob.c MJobSetHold: MResDestroy(&J->R)), so a deferred capped job no longer blocks its machines
    from types import SimpleNamespace

    from batfeed.schedulers.jobqueue import Entry
    from batfeed.schedulers.maui_config import parse_config
    from batfeed.schedulers.maui_nodes import Plan
    from batfeed.schedulers.profile import Profile

    # 4 × 100 processor-seconds > the cap of 10
    e = Entry(SimpleNamespace(id="a", submit_time=0.0, requested_time=100.0, requested_resources=4), 0)
    res = (50.0, 150.0, [(0, 3)])
    keys = (("user", "u"), ("group", "g"), ("account", "g"), ("class", "DEFAULT"))
    for until, kept in (({}, True), ({"a": (70.0, e)}, False)):
        s = SimpleNamespace(profile=Profile(),
                            cfg=parse_config("FSPOLICY DEDICATEDPS\nUSERCFG[u] FSTARGET=10^\n"),
                            fs=SimpleNamespace(enabled=True, usage={}, weights=[1.0], total=[0.0]),
                            info={"a": SimpleNamespace(keys=keys)}, defer=SimpleNamespace(until=until))
        plan = Plan()
        plan.last = {"a": (e, res)}
        plan.begin(s, 10.0)      # type: ignore[arg-type]
        assert ("a" in plan.kept, res in plan.blocks) == (kept, kept), until
