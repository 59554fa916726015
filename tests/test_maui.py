"""Maui scheduler (schedulers/maui.py, models.md §F): hand-computed priorities and schedules.

Schedules run on platforms/small_4.xml (4 zero-latency machines, ids 0-3).  A job is
``(id, submit r, machines q, runtime, walltime p̃, extra fields)``; every job has a walltime.
"""

from __future__ import annotations

import csv
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest
from batfeed.schedulers.backfill import OptionError
from batfeed.schedulers.conservative import Conservative
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.maui import Maui
from batsim.batsim import Job
from test_engine_helpers import SMALL_4, delay, job, run, write_events, write_workload

from batfeed.engine import EngineConfig

DATA = Path(__file__).resolve().parent / "data" / "maui"


def simulate(directory: Path, jobs: list[tuple], sched: Any, events: list[dict] | None = None,
             config: EngineConfig | None = None) -> tuple[dict[str, tuple], Any]:
    """{job_id: (start, finish, alloc, final state)} of a run of ``jobs`` with ``sched``."""
    directory.mkdir(parents=True, exist_ok=True)
    profiles, specs = {}, []
    for jid, r, q, runtime, wall, *extra in jobs:
        profiles[f"d{runtime:g}"] = delay(runtime)
        specs.append(job(jid, r, q, f"d{runtime:g}", wall, **(extra[0] if extra else {})))
    wl = write_workload(directory, specs, profiles)
    evs = [write_events(directory, events)] if events else ()
    result, _ = run([wl], sched, events=evs, config=config, export=directory / "out", platform=SMALL_4)
    with open(directory / "out_jobs.csv", newline="") as f:
        rows = {r["job_id"]: (float(r["starting_time"]) if r["starting_time"] else None,
                              float(r["finish_time"]) if r["finish_time"] else None,
                              r["allocated_resources"], r["final_state"]) for r in csv.DictReader(f)}
    return rows, result


def schedule(directory: Path, jobs: list[tuple], sched: Any, **kw: Any) -> dict[str, tuple]:
    rows, _ = simulate(directory, jobs, sched, **kw)
    return {k: v[:3] for k, v in rows.items()}


def fa(options: dict[str, Any] | None = None) -> Maui:
    """Maui with ``NODEALLOCATIONPOLICY FIRSTAVAILABLE`` ahead of ``options``' config (a later line of it
    wins): the schedules of the tests that use it were computed by hand on the lowest-index nodes."""
    opts = dict(options or {})
    text = "NODEALLOCATIONPOLICY FIRSTAVAILABLE\n"
    if opts.get("config"):
        text += Path(opts["config"]).read_text()
    with tempfile.TemporaryDirectory(prefix="maui-fa-") as tmp:   # Maui reads its config when built
        path = Path(tmp) / "maui.cfg"
        path.write_text(text)
        opts["config"] = str(path)
        return Maui(opts)


def cfg_file(tmp_path: Path, text: str, name: str = "maui.cfg") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------------------ priority
def test_priority_components_by_hand():
    """Every component of tests/data/maui/priority.cfg, computed by hand."""
    s = Maui({"config": str(DATA / "priority.cfg")})
    s.nb_machines = 4
    # Fairshare usage (FSPOLICY DEDICATEDPS): alice/account p1 ran 2 machines during [0, 100) and
    # bob/account p2 6 machines during [0, 100): 200 and 600 machine-seconds, total 800, so
    # usage(p1) = usage(alice) = 25 %, usage(p2) = usage(bob) = 75 % (one window, no decay yet).
    s.fs.start([("user", "alice"), ("account", "p1")], 2, 0)
    s.fs.start([("user", "bob"), ("account", "p2")], 6, 0)
    s.fs.stop([("user", "alice"), ("account", "p1")], 2, 100)
    s.fs.stop([("user", "bob"), ("account", "p2")], 6, 100)
    a = Job("w0!1", 0, 600, 1, "d", {"user": "alice", "group": "g1", "account": "p1", "queue": "qexp"})
    b = Job("w0!2", 120, 3600, 1, "d", {"user": "bob", "group": "g2", "account": "p2", "queue": "qfree"})
    s.info = {j.id: s._job_info(j) for j in (a, b)}
    ea, eb = s.wq.push(a, 0), s.wq.push(b, 120)
    # Job a at now = 300 (waited 300 s = 5 min, walltime 600 s):
    #   credential  CREDWEIGHT 10 * (USERWEIGHT 2 * 4 [alice] + GROUPWEIGHT 3 * 1 [DEFAULT group]
    #               + ACCOUNTWEIGHT 5 * -2 [p1] + CLASSWEIGHT 7 * 150 [qexp]) = 10 * 1051 = 10510
    #   fairshare   FSWEIGHT 1000 * (FSACCOUNTWEIGHT 1 * (50 - 25)
    #               + FSUSERWEIGHT 2 * min(20 - 25, 0) [ceiling 20-]) = 1000 * (25 - 10) = 15000
    #   service     SERVICEWEIGHT 2 * (QUEUETIMEWEIGHT 3 * 5 min + XFACTORWEIGHT 100 * (1 + 300/600))
    #               = 2 * (15 + 150) = 330
    assert s.priority(ea, 300) == pytest.approx(10510 + 15000 + 330)
    # Job b at now = 300 (waited 180 s = 3 min, walltime 3600 s):
    #   credential  10 * (2 * 0 [bob has no PRIORITY] + 3 * 1 + 5 * 0 [p2] + 7 * -1024 [qfree]) = -71650
    #   fairshare   1000 * (1 * (50 - 75) + 2 * max(80 - 75, 0) [floor 80+]) = 1000 * (-25 + 10) = -15000
    #   service     2 * (3 * 3 + 100 * (1 + 180/3600)) = 2 * (9 + 105) = 228
    # negative, and kept negative (ENABLENEGJOBPRIORITY TRUE)
    assert s.priority(eb, 300) == pytest.approx(-71650 - 15000 + 228)
    # the queue order follows: a first
    s.wq.refresh(300)
    assert [e.id for e in s.wq.main] == ["w0!1", "w0!2"]


def test_maui_defaults_priority_is_queue_minutes_clamped_at_1():
    # No config: QUEUETIMEWEIGHT 1, SERVICEWEIGHT 1, every other weight inert, and without
    # ENABLENEGJOBPRIORITY a priority below 1 becomes 1.
    s = Maui()
    s.nb_machines = 4
    j = Job("w0!1", 100, 60, 1, "d", {})
    s.info = {j.id: s._job_info(j)}
    e = s.wq.push(j, 100)
    assert s.priority(e, 130) == 1.0           # 0.5 min -> 1
    assert s.priority(e, 100 + 600) == pytest.approx(10.0)    # 10 min


NEG_JOBS = [(1, 0, 4, 100, 100), (2, 1, 4, 10, 10, {"queue": "qfree"}), (3, 2, 4, 10, 10, {"queue": "qprod"})]


def test_negative_priorities(tmp_path, caplog):
    base = "QUEUETIMEWEIGHT 0\nCLASSWEIGHT 1\nCLASSCFG[qfree] PRIORITY=-1024\n"
    # Default (ENABLENEGJOBPRIORITY FALSE): 2 (-1024) and 3 (0) are both raised to 1: tie, submission
    # order -> 2 at 100, 3 at 110.
    got = schedule(tmp_path / "clamp", NEG_JOBS, Maui({"config": cfg_file(tmp_path, base, "a.cfg")}))
    assert (got["2"][0], got["3"][0]) == (100, 110)
    # Negative priorities allowed: 3 (0) goes before 2 (-1024).
    neg = base + "ENABLENEGJOBPRIORITY TRUE\nREJECTNEGPRIOJOBS FALSE\n"
    got = schedule(tmp_path / "neg", NEG_JOBS, Maui({"config": cfg_file(tmp_path, neg, "b.cfg")}))
    assert (got["2"][0], got["3"][0]) == (110, 100)
    # REJECTNEGPRIOJOBS TRUE (MPolicy.c MQueueSelectAllJobs skips a job of negative priority): 2 never
    # starts; its priority cannot rise (no queue-time weight) and nothing else is left at 110, so batfeed
    # rejects it then (Maui would keep it idle).  Without ENABLENEGJOBPRIORITY as well, priorities are
    # not clipped at 1 either (MJobGetStartPriority clips only when both are FALSE): the same.
    rej = base + "ENABLENEGJOBPRIORITY TRUE\nREJECTNEGPRIOJOBS TRUE\n"
    sched = Maui({"config": cfg_file(tmp_path, rej, "c.cfg")})
    rows, _ = simulate(tmp_path / "rej", NEG_JOBS, sched)
    assert rows["2"][3] == "REJECTED" and rows["3"][:2] == (100, 110)
    assert "negative priority" in sched.rejected["w0!2"]
    alone = Maui({"config": cfg_file(tmp_path, base + "REJECTNEGPRIOJOBS TRUE\n", "d.cfg")})
    rows, _ = simulate(tmp_path / "alone", NEG_JOBS, alone)
    assert rows["2"][3] == "REJECTED" and rows["3"][:2] == (100, 110)


# ------------------------------------------------------------------------------ fairshare
def fairshare_jobs():
    a, b, c = ({"account": x} for x in "abc")
    # 1 (a) [0,100) all 4 machines: a is charged 400 in window 0 = [0,100).
    # 2 (b) [100,160): b 240 in window 1.  3 (c) [160,260): c 160 in window 1, 240 in window 2.
    # 4 (a) and 5 (b), all 4 machines, wait from 200 to 260.
    return [(1, 0, 4, 100, 100, a), (2, 100, 4, 60, 60, b), (3, 150, 4, 100, 100, c),
            (4, 200, 4, 40, 40, a), (5, 200, 4, 40, 40, b)]


@pytest.mark.parametrize("decay, first", [("0.5", "4"), ("1.0", "5")])
def test_fairshare_decay_over_two_intervals(tmp_path, decay, first):
    # FSINTERVAL 100, FSDEPTH 3; priority = FSWEIGHT 1 * FSACCOUNTWEIGHT 1 * (50 - usage %) only.
    # At 260 (window 2): history [window 2, window 1, window 0] =
    #   a: [0, 0, 400]   b: [0, 240, 0]   c: [240, 160, 0]
    # FSDECAY 0.5: a = 400 * 0.25 = 100, b = 240 * 0.5 = 120 (c = 240 + 80 = 320): a has used less,
    #   its job 4 goes first; a's usage two intervals ago counts a quarter.
    # FSDECAY 1.0: a = 400 > b = 240: job 5 goes first.
    text = (f"QUEUETIMEWEIGHT 0\nFSWEIGHT 1\nFSACCOUNTWEIGHT 1\nFSPOLICY DEDICATEDPS\nFSINTERVAL 100\n"
            f"FSDEPTH 3\nFSDECAY {decay}\nACCOUNTCFG[DEFAULT] FSTARGET=50\nENABLENEGJOBPRIORITY TRUE\n"
            f"REJECTNEGPRIOJOBS FALSE\n")
    sched = Maui({"config": cfg_file(tmp_path, text)})
    got = schedule(tmp_path / "run", fairshare_jobs(), sched)
    second = "5" if first == "4" else "4"
    assert got[first][:2] == (260, 300) and got[second][:2] == (300, 340)


def test_fairshare_windows_by_hand():
    from batfeed.schedulers.fairshare import Fairshare
    fs = Fairshare(interval=100, depth=3, decay=0.5)
    fs.start([("account", "a")], 1, 0)
    fs.stop([("account", "a")], 1, 100)        # a: 100 in window 0
    fs.start([("account", "b")], 1, 100)
    fs.stop([("account", "b")], 1, 200)        # b: 100 in window 1
    fs.advance(250)
    # weights 1, 0.5, 0.25 for windows 2 (current), 1, 0: a = 25, b = 50 of 75
    assert fs.usage_pct(("account", "a")) == pytest.approx(100 * 25 / 75)
    assert fs.usage_pct(("account", "b")) == pytest.approx(100 * 50 / 75)
    fs.advance(300)                            # window 3: a's window 0 is beyond FSDEPTH 3
    assert fs.usage_pct(("account", "a")) == 0
    assert fs.usage_pct(("account", "b")) == pytest.approx(100)
    assert fs.usage_pct(("account", "nobody")) == 0


# ------------------------------------------------------------------------------ class limits
def test_class_limits_are_enforced(tmp_path, caplog):
    # limits.cfg: qexp MAXNODE=3, MAXNODEPERUSER=2, MAX.WCLIMIT=00:10:00; qlong HOSTLIST=0-1.
    u1, u2 = {"queue": "qexp", "user": "u1"}, {"queue": "qexp", "user": "u2"}
    jobs = [(1, 0, 1, 100, 100, u1), (2, 0, 1, 100, 100, u1),
            (3, 0, 1, 100, 100, u1),      # u1 already has 2 machines in qexp: waits for 1 or 2
            (4, 0, 1, 100, 100, u2),      # class total 3
            (5, 0, 1, 100, 100, u2),      # class total would be 4 > 3: waits although machine 3 is free
            (6, 0, 1, 100, 3600, u2),     # walltime 3600 > 600: rejected
            (7, 0, 4, 100, 100, u2),      # 4 machines > MAXNODE 3: rejected
            (8, 0, 3, 10, 10, {"queue": "qlong"})]   # 3 machines > its 2 HOSTLIST machines: rejected
    sched = fa({"config": str(DATA / "limits.cfg")})
    with caplog.at_level(logging.INFO, logger="batfeed.schedulers"):
        rows, _ = simulate(tmp_path, jobs, sched)
    assert {k: v[:3] for k, v in rows.items() if v[3] != "REJECTED"} == {
        "1": (0, 100, "0"), "2": (0, 100, "1"), "4": (0, 100, "2"), "3": (100, 200, "0"), "5": (100, 200, "1")}
    assert sched.rejected == {
        "w0!6": "walltime 3600 s exceeds MAX.WCLIMIT 600 s of class qexp",
        "w0!7": "requests 4 machines, more than MAXNODE 3 of class qexp",
        "w0!8": "requests 3 machines, class qlong has 2 (HOSTLIST)"}
    assert "rejecting w0!6: walltime 3600 s exceeds MAX.WCLIMIT" in caplog.text


def test_credential_limits_are_enforced(tmp_path):
    # USERCFG[DEFAULT] MAXPROC=2 (every user), USERCFG[bob] MAXJOB=1 (bob also keeps MAXPROC 2).
    cfg = cfg_file(tmp_path, "USERCFG[DEFAULT] MAXPROC=2\nUSERCFG[bob] MAXJOB=1\n")
    alice, bob, carol = {"user": "alice"}, {"user": "bob"}, {"user": "carol"}
    jobs = [(1, 0, 1, 100, 100, alice), (2, 0, 1, 100, 100, alice),
            (3, 0, 1, 50, 50, alice),     # alice already runs 2 machines: waits for 1 and 2 (100)
            (4, 0, 1, 100, 100, bob),
            (5, 0, 1, 30, 30, bob),       # bob already runs 1 job: waits for 4 (100)
            (6, 0, 3, 10, 10, carol)]     # 3 machines > MAXPROC 2: can never start, rejected
    sched = fa({"config": cfg})
    rows, _ = simulate(tmp_path, jobs, sched)
    # machine 3 stays idle during [0, 100) although 3 and 5 wait: the limits hold them
    assert {k: v[:3] for k, v in rows.items() if v[3] != "REJECTED"} == {
        "1": (0, 100, "0"), "2": (0, 100, "1"), "4": (0, 100, "2"), "3": (100, 150, "0"), "5": (100, 130, "1")}
    assert sched.rejected == {"w0!6": "requests 3 machines, more than MAXPROC 2 of user carol"}
    # without the limits everything but 5 starts at once (6 waits for 3 free machines)
    free = schedule(tmp_path / "free", jobs, fa())
    assert free["3"][0] == 0 and free["6"][0] == 100


def test_hostlist_reservation_pins_its_machines(tmp_path):
    # qlong may only use machines 0-1.  1 (qlong, 1 machine) [0,100) on 0.  2 (qlong, 2 machines)
    # needs 0-1: machine 1 is free, 0 comes back at 100 -> reserved [100,110) on 0-1 (pinned).
    # 3 (qprod, 1 machine, 200 s) fits the counts (3 free now, 2 during the reservation), but the
    # lowest free machine is 1: it must avoid the pinned 0-1 and gets 2.  Without the pin it would
    # take 1 and 2 would wait until 203.
    jobs = [(1, 0, 1, 100, 100, {"queue": "qlong"}), (2, 1, 2, 10, 10, {"queue": "qlong"}),
            (3, 2, 1, 200, 200, {"queue": "qprod"})]
    got = schedule(tmp_path, jobs, fa({"config": str(DATA / "limits.cfg")}))
    assert got == {"1": (0, 100, "0"), "2": (100, 110, "0-1"), "3": (2, 202, "2")}


# ------------------------------------------------------------------------------ reservations, backfill
DEPTH_JOBS = [(1, 0, 3, 100, 100), (2, 1, 3, 10, 10), (3, 2, 4, 10, 10), (4, 3, 1, 200, 200)]


def test_reservation_depth_1_vs_3(tmp_path):
    # 1 [0,100) on 0-2.  2 (3 machines) reserved at 100 [100,110).  3 (4 machines) would be next
    # at 110.  4 (1 machine, 200 s) on the free machine 3 ends at 203:
    # - depth 1: only 2 is protected; 4 overlaps 2's reservation on one machine only (4 - 3 = 1
    #   machine is left then) -> 4 starts at 3, and 3 has to wait for it: [203,213);
    # - depth 3: 3 also holds a reservation [110,120) that 4 would break -> 4 waits (it gets the
    #   third reservation) and runs after 3: [120,320).
    d1 = schedule(tmp_path / "d1", DEPTH_JOBS, fa({"config": cfg_file(tmp_path, "RESERVATIONDEPTH 1\n", "1.cfg")}))
    d3 = schedule(tmp_path / "d3", DEPTH_JOBS, fa({"config": cfg_file(tmp_path, "RESERVATIONDEPTH 3\n", "3.cfg")}))
    assert d1 == {"1": (0, 100, "0-2"), "2": (100, 110, "0-2"), "3": (203, 213, "0-3"), "4": (3, 203, "3")}
    assert d3 == {"1": (0, 100, "0-2"), "2": (100, 110, "0-2"), "3": (110, 120, "0-3"), "4": (120, 320, "0")}
    # depth 1 is EASY, depth 3 (every job here) is conservative backfilling
    assert d1 == schedule(tmp_path / "easy", DEPTH_JOBS, Easy({"theta": None}))
    assert d3 == schedule(tmp_path / "cons", DEPTH_JOBS, Conservative())
    # RESERVATIONPOLICY NEVER: no reservation at all, 4 starts at 3 and 3 still waits for it
    never = fa({"config": cfg_file(tmp_path, "RESERVATIONPOLICY NEVER\n", "n.cfg")})
    assert schedule(tmp_path / "never", DEPTH_JOBS, never)["4"] == (3, 203, "3")


FIT_JOBS = [(1, 0, 2, 100, 100), (2, 1, 4, 10, 10), (5, 1, 3, 10, 10), (3, 2, 1, 50, 50), (4, 2, 2, 50, 50)]


@pytest.mark.parametrize("policy, expected", [
    # 1 [0,100) on 0-1; 2 (4 machines) reserved at 100 on 0-3; 5 (3 machines) can neither start
    # nor be reserved (depth 1): IdleJobFound, so 3 and 4 (arriving together, 3 first) are left
    # to the backfill (issue 18: before, 5 was absent and 3 started in the priority pass, which
    # Maui continues after a reservation - see test_maui_nodes.py).  Window: nodes 2-3 for 98 s.
    # FIRSTFIT: 3 fits and starts on 2; 4 (2 machines) no longer fits; at 52 the window is 48 s,
    #   too short for it: it runs after 2 and 5, reserved at 120 on 0-1.
    ("FIRSTFIT", {"3": (2, 52, "2"), "4": (120, 170, "0-1")}),
    # BESTFIT (BACKFILLMETRIC PROCS): 4 (2 machines) fills more: [2,52) on 2-3; 3 then waits for
    #   machine 3, free of reservations once 5 starts on 0-2 at 110.
    ("BESTFIT", {"3": (110, 160, "3"), "4": (2, 52, "2-3")}),
    # NONE: no backfill: 3 with 5 at 110 on 3, 4 reserved at 120 on 0-1
    ("NONE", {"3": (110, 160, "3"), "4": (120, 170, "0-1")}),
])
def test_backfill_policies(tmp_path, policy, expected):
    sched = fa({"config": cfg_file(tmp_path, f"BACKFILLPOLICY {policy}\n")})
    got = schedule(tmp_path / "run", FIT_JOBS, sched)
    assert {k: got[k] for k in ("3", "4")} == expected and got["2"] == (100, 110, "0-3")
    assert got["5"] == (110, 120, "0-2")


def test_backfill_depth(tmp_path):
    # 1 [0,100) on 0-1; 2 (4 machines) reserved at 100; 3 (3 machines) can neither start nor be
    # reserved.  4 and 5 (1 machine, 50 s each) arrive at 3: window nodes 2-3 for 97 s.  Maui counts
    # BACKFILLDEPTH among the jobs that fit the window (MQueueBackFill after MQueueSelectJobs; issue 18:
    # the count-based model counted 3 too): depth 1 starts only 4; 5 then waits until 3 starts at
    # 110 and leaves machine 3 free; depth 2 (or 0 = all) starts both at 3.
    jobs = [(1, 0, 2, 100, 100), (2, 1, 4, 10, 10), (3, 2, 3, 10, 10), (4, 3, 1, 50, 50), (5, 3, 1, 50, 50)]
    for depth, start in (("1", 110), ("2", 3), ("0", 3)):
        sched = Maui({"config": cfg_file(tmp_path, f"BACKFILLDEPTH {depth}\n", f"{depth}.cfg")})
        got = schedule(tmp_path / depth, jobs, sched)
        assert got["4"][0] == 3 and got["5"][0] == start, depth


# ------------------------------------------------------------------------------ downtimes
def test_planned_maintenance_drains_the_machine(tmp_path):
    # Window on all 4 machines during [100, 200) (a system reservation known from the start).
    # 1 [0,50) ends before it.  2 (2 machines, 150 s) would cross it: reserved after it, [200,350).
    # 3 [10,100) ends exactly when it begins: starts at once.  4 (arrives at 60, 50 s) would end at
    # 110: waits until 200.  Nothing runs during [100,200): the queue drains before the window.
    jobs = [(1, 0, 1, 50, 50), (2, 0, 2, 150, 150), (3, 10, 1, 90, 90), (4, 60, 1, 50, 50)]
    maint = [{"start": 100, "end": 200, "machines": "0-3"}]
    got = schedule(tmp_path, jobs, fa({"maintenance": maint}))
    assert got == {"1": (0, 50, "0"), "2": (200, 350, "0-1"), "3": (10, 100, "1"), "4": (200, 250, "2")}
    assert all(f <= 100 or s >= 200 for s, f, _ in got.values())
    # without the window 2 starts at 0 and 4 at 60
    free = schedule(tmp_path / "none", jobs, fa())
    assert free["2"][0] == 0 and free["4"][0] == 60


DOWN_JOBS = [(1, 0, 2, 100, 200), (2, 0, 2, 100, 200)]
DOWN = [{"timestamp": 50, "type": "machine_unavailable", "resources": "1"},
        {"timestamp": 300, "type": "machine_available", "resources": "1"}]


def test_outage_kills_and_requeues_a_job(tmp_path):
    # 1 runs on 0-1, machine 1 fails at 50: 1 is killed and requeued as 1#resub1 (submitted at 50).
    # Up machines then: 0, 2, 3; 2 holds 2-3 until 100, so 1#resub1 runs [100,200) on 0 and 2.
    sched = fa({"on_machine_down": "kill-resubmit"})
    rows, result = simulate(tmp_path, DOWN_JOBS, sched, events=DOWN, config=EngineConfig(enable_dynamic_jobs=True))
    assert rows["1"] == (0, 50, "0-1", "COMPLETED_KILLED")
    assert rows["1#resub1"] == (100, 200, "0 2", "COMPLETED_SUCCESSFULLY")
    assert rows["2"][:3] == (0, 100, "2-3")
    assert sched.downtime_killed == ["w0!1"] and sched.resubmitted == {"w0!1": "w0!1#resub1"}
    assert result.counts["submitted"] == 3
    # kill-drop: killed, not requeued
    drop = fa({"on_machine_down": "kill-drop"})
    rows, _ = simulate(tmp_path / "drop", DOWN_JOBS, drop, events=DOWN)
    assert rows["1"][3] == "COMPLETED_KILLED" and "1#resub1" not in rows and drop.dropped == ["w0!1"]


# ------------------------------------------------------------------------------ interval mode
INTERVAL_JOBS = [(1, 10, 4, 100, 100), (2, 20, 1, 10, 10), (3, 135, 1, 10, 10)]


@pytest.mark.parametrize("poll", [False, True])
def test_interval_mode_decides_on_the_grid(tmp_path, poll):
    # Δ = 60, grid 10 + 60k (first submission at 10); Maui's simulator makes its first pass one
    # poll after the first submission (MSim.c, issue 18: before, 1 started at 10).  1 starts at 70
    # and ends at 170; 2 (waiting) starts at the next grid point, 190, and so does 3 (arrived at
    # 135 while 1 held all 4 machines).  Event-driven: 2 at 110 and 3 at 135.
    sched = Maui({"interval": 60, "poll": poll})
    rows, result = simulate(tmp_path, INTERVAL_JOBS, sched)
    assert {k: v[0] for k, v in rows.items()} == {"1": 70, "2": 190, "3": 190}
    # no CALL_ME_LATER is left pending once everything is done: the simulation ends at 3's end
    assert result.simulated_time == 200
    # the count-based mechanics keep the earlier grid (a pass at the first submission)
    old, _ = simulate(tmp_path / "c", INTERVAL_JOBS, Maui({"interval": 60, "poll": poll, "mechanics": "counts"}))
    assert {k: v[0] for k, v in old.items()} == {"1": 10, "2": 130, "3": 190}
    events = schedule(tmp_path / "ev", INTERVAL_JOBS, Maui())
    assert {k: v[0] for k, v in events.items()} == {"1": 10, "2": 110, "3": 135}


def test_rmpollinterval_of_the_config_and_option_precedence(tmp_path):
    cfg = cfg_file(tmp_path, "RMPOLLINTERVAL 00:01:00\n")
    assert Maui({"config": cfg}).interval == 60
    assert Maui({"config": cfg, "interval": None}).interval is None
    assert Maui({"config": cfg, "interval": 5}).interval == 5
    assert Maui({"interval": 0}).interval is None


# ------------------------------------------------------------------------------ options, CLI
@pytest.mark.parametrize("options, message", [
    ({"policy": "SJF"}, "unknown option 'policy' for Maui (did you mean 'poll'?; known: config, interval, "),
    ({"interval": -5}, "option 'interval' for Maui must be a number of seconds >= 0 or null, got -5"),
    ({"interval": "5s"}, "option 'interval' for Maui must be a number of seconds >= 0 or null, got \"5s\""),
    ({"config": 3}, "option 'config' for Maui must be the path of a maui.cfg or null, got 3"),
    ({"poll": 1}, "option 'poll' for Maui must be true or false, got 1"),
])
def test_bad_options(options, message):
    with pytest.raises(OptionError) as info:
        Maui(options)
    assert message in str(info.value)


def test_bad_hostlist_is_an_error(tmp_path):
    sched = Maui({"config": cfg_file(tmp_path, "CLASSCFG[q] HOSTLIST=0-9\n")})
    with pytest.raises(OptionError, match=r"CLASSCFG\[q\] HOSTLIST: machines 0-9 do not exist \(the platform has 4\)"):
        simulate(tmp_path / "run", [(1, 0, 1, 10, 10)], sched)


def test_simulate_cli_with_the_salomon_example(tmp_path, capsys):
    from batfeed.cli import main
    plat = tmp_path / "salomon.xml"
    assert main(["platform", "1008", "-o", str(plat)]) == 0
    wl = write_workload(tmp_path, [job(1, 0, 2, "d10", 20, queue="qexp", account="p1"),
                                   job(2, 0, 2, "d10", 7200, queue="qexp")], {"d10": delay(10)})
    cfg = Path(__file__).resolve().parent.parent / "schedulers" / "examples" / "salomon-maui.cfg"
    opts = f'{{"config": "{cfg}", "interval": 5}}'
    assert main(["simulate", str(plat), str(wl), "--scheduler", "maui", "--options", opts,
                 "--export", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    # job 2 asks 2 h in qexp (MAX.WCLIMIT 1 h): rejected
    assert "completed=1 + rejected=1" in out


def test_poll_skips_iterations_that_cannot_change_anything(tmp_path):
    # 1 (3 machines, 300 s) at 0, 2 (4 machines) at 11, 3 (1 machine, 1000 s) at 12; Δ = 10 with poll:
    # no pass at 0 (issue 18), 1 starts at 10 [10,310); from 20, 2 holds a reservation of 0-3 at 310
    # and 3 fits the free machine 3 but not before that reservation (nor in its window): it waits.
    # Grid points 20 ... 300 (29 of them), then 310 (1 ends, 2 starts) and 320 (2 ends, 3 starts).
    # Default config (order fixed while nothing happens): iterations at 10, 20 (2's and 3's first
    # pass, ranked without the one-poll lag of their queue time), 30 (starts nothing), 310 and 320;
    # the 27 grid points between find the same state and are skipped.
    # XFACTORWEIGHT 1 (the order may change with time; XFMINWCLIMIT 0: the expansion factor is
    # (wait + p̃) / p̃ for 2's 10 s too, which keeps 2 ahead of 3): an iteration at each of the 30 points + 2.
    jobs = [(1, 0, 3, 300, 300), (2, 11, 4, 10, 10), (3, 12, 1, 1000, 1000)]
    expected = {"1": (10, 310, "0-2"), "2": (310, 320, "0-3"), "3": (320, 1320, "0")}
    static = fa({"interval": 10, "poll": True})
    assert schedule(tmp_path / "s", jobs, static) == expected
    assert static.iterations == 5
    dynamic = fa({"interval": 10, "poll": True, "config": cfg_file(tmp_path, "XFACTORWEIGHT 1\nXFMINWCLIMIT 0\n")})
    assert schedule(tmp_path / "d", jobs, dynamic) == expected
    assert dynamic.iterations == 32
    # an iteration in which no waiting job fits the idle machines is not run at all (nothing could
    # start, in the priority pass or a backfill window): without 3, only 10 and 310 iterate
    assert schedule(tmp_path / "n", jobs[:2], d2 := fa({"interval": 10, "poll": True,
                    "config": cfg_file(tmp_path, "XFACTORWEIGHT 1\nXFMINWCLIMIT 0\n", "x.cfg")}))["2"] == (
                        310, 320, "0-3")
    assert d2.iterations == 2
