"""Site-level users (Shmueli, models.md §C): Phase-1 and Phase-2 models generating their jobs.

Hand-computed cases use a tiny behaviour model with deterministic distributions (single-value pmfs,
constant quantile tables).  ``_drive`` runs a model alone on an unbounded machine (each job ends at
submit + run time); the end-to-end tests run it on the embedded engine, wrapping EASY or FCFS."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from batfeed.users import MODELS, SitePhase1, SitePhase2, UserModelError, UserModelScheduler

from batfeed.engine import EngineConfig, simulate
from batfeed.runner import run_simulation

MON_0730, MON_1730, TUE_0730 = 27000.0, 63000.0, 86400.0 + 27000.0


def const(x: float) -> dict[str, list[float]]:
    return {"quantiles": [float(x)] * 101}


def tiny(tmp_path: Path, **over: Any) -> str:
    m: dict[str, Any] = {
        "format": "batfeed-site-users/1", "sources": [],
        "batch_width": {"values": [1], "probs": [1.0]}, "intra_batch_gap_s": const(10),
        "short_think_s": const(60), "break_s": const(3600), "size": {"values": [4], "probs": [1.0]},
        "size_repeat": {"values": [1], "probs": [1.0]}, "runtime_s": const(600), "machine_procs": 128,
        "p_cont": {"a": 0.8, "b": 0.05, "unit": "minutes"},
        "activity": {"day_share": 0.7, "weekday_share": 0.8, "day_window": ["07:30", "17:30"]}}
    m.update(over)
    path = tmp_path / f"model{len(list(tmp_path.glob('model*.json')))}.json"
    path.write_text(json.dumps(m))
    return str(path)


def _drive(model: SitePhase1, machine: int = 128, until: float = 1e9) -> SitePhase1:
    """Run a model on an unbounded machine: a job ends at submit + run time (rejected if too large)."""
    import heapq

    model.nb_resources = machine
    model.start()
    ends: list[tuple[float, int]] = []
    while True:
        nxt = model.next_due()
        t = min(x for x in (nxt, ends[0][0] if ends else None) if x is not None) if (nxt is not None or ends) \
            else None
        if t is None or t > until:
            break
        while ends and ends[0][0] <= t:
            te, i = heapq.heappop(ends)
            model.job_ended(i, te)
        for tj in model.pop_due(t):
            model.mark_submitted(tj.index, t)
            heapq.heappush(ends, (t + tj.runtime if tj.res <= machine else t, tj.index))
    return model


def _subs(model: SitePhase1, user: int = 0) -> list[float]:
    return [model.submitted_at[j.index] for j in model.trace.jobs if model.job_user[j.index] == user]


def test_registered() -> None:
    assert MODELS["site-phase1"] is SitePhase1 and MODELS["site-phase2"] is SitePhase2


def test_p_cont(tmp_path: Path) -> None:
    m = SitePhase2(None, {"model": tiny(tmp_path)})
    assert m.p_cont(0) == pytest.approx(0.8) and m.p_cont(20) == pytest.approx(0.4)
    m = SitePhase2(None, {"model": tiny(tmp_path), "p_cont_a": 0.5, "p_cont_b": 0.1})
    assert m.p_cont(10) == pytest.approx(0.25)


def test_bad_options(tmp_path: Path) -> None:
    with pytest.raises(UserModelError, match="nb_users"):
        SitePhase2(None, {"nb_users": 0})
    with pytest.raises(UserModelError, match="estimate"):
        SitePhase2(None, {"estimate": "guess"})
    with pytest.raises(UserModelError, match="estimate_factor"):
        SitePhase2(None, {"model": tiny(tmp_path), "estimate": "model"})


def _day_user(tmp_path: Path, **over: Any) -> SitePhase2:
    opts = {"nb_users": 1, "model": tiny(tmp_path, **over), "day_p": 1.0, "weekday_p": 1.0, "jitter_min": 0,
            "p_cont_a": 1.0, "p_cont_b": 0.0, "duration_s": 2 * 86400}
    return SitePhase2(None, opts)


def test_phase2_suspended_at_1730_resumes_next_window(tmp_path: Path) -> None:
    # run 900 s, think 0: batches at 07:30 + 900 k; the batch of 16:45 ends at 17:30 exactly (inside: the
    # next one is submitted at 17:30), the 17:30 one ends at 17:45 (outside) -> Tuesday 07:30
    m = _drive(_day_user(tmp_path, runtime_s=const(900), short_think_s=const(0)))
    subs = _subs(m)
    monday = [s for s in subs if s < 86400]
    assert monday == [MON_0730 + 900 * k for k in range(41)] and monday[-1] == MON_1730
    assert subs[41] == TUE_0730
    assert m.sessions == 2 and all(s <= 2 * 86400 for s in subs)


def test_phase2_window_checks(tmp_path: Path) -> None:
    m = _day_user(tmp_path)
    m.nb_resources = 128
    m.start()
    u = m.users[0]
    assert not m.in_window(u, 0) and m.in_window(u, MON_0730) and m.in_window(u, MON_1730)
    assert not m.in_window(u, MON_1730 + 1) and m.next_window_start(u, MON_1730 + 1) == TUE_0730
    fri_evening = 4 * 86400 + MON_1730 + 1
    assert m.next_window_start(u, fri_evening) == 7 * 86400 + MON_0730          # weekday user: Monday
    u.day, u.weekday, u.offset, u.length = False, False, 17 * 3600 + 1800, 14 * 3600   # weekend night user
    assert m.in_window(u, 0)                                                     # Sunday night, Monday 00:00
    assert not m.in_window(u, 7.5 * 3600 + 1) and m.next_window_start(u, 3600 * 8) == 5 * 86400 + MON_1730


def test_phase2_break_and_suspension_new_sessions(tmp_path: Path) -> None:
    # p_cont = 0: every batch is followed by a 1 h break (new session): submits 07:30 + 4200 k
    m = _drive(SitePhase2(None, {"nb_users": 1, "model": tiny(tmp_path), "day_p": 1, "weekday_p": 1,
                                 "jitter_min": 0, "p_cont_a": 0.0, "duration_s": 86400}))
    subs = _subs(m)
    assert subs == [MON_0730 + 4200 * k for k in range(len(subs))]
    assert subs[-1] + 600 + 3600 > MON_1730 and m.sessions == len(subs)


def test_think_from_last_submitted_job_end(tmp_path: Path) -> None:
    # Phase-1, width 2, gap 10, run 600, think 60: jobs at 0, 10 (ends 600, 610) -> next batch at 670
    model = tiny(tmp_path, batch_width={"values": [2], "probs": [1.0]})
    platform = write_homogeneous_platform(tmp_path / "p.xml", 128)
    swf = tmp_path / "out.swf"
    layer = UserModelScheduler({"scheduler": "easy", "users": "site-phase1", "nb_users": 1,
                                "model": model, "duration_s": 2000, "swf": str(swf)})
    result = simulate(platform, [], layer, export=tmp_path / "run", config=EngineConfig(enable_dynamic_jobs=True))
    with open(result.jobs_csv, newline="") as f:
        subs = sorted(float(r["submission_time"]) for r in csv.DictReader(f))
    assert subs == [0, 10, 670, 680, 1340, 1350]          # the batch at 2010 > duration_s is not started
    rows = [line.split() for line in swf.read_text().splitlines() if not line.startswith(";")]
    assert [len(r) for r in rows] == [18] * 6
    assert [r[16] for r in rows] == ["-1", "-1", "2", "2", "4", "4"]           # field 17
    assert [r[17] for r in rows] == ["-1", "-1", "60", "70", "60", "70"]       # field 18
    assert [r[1] for r in rows] == ["0", "10", "670", "680", "1340", "1350"] and {r[10] for r in rows} == {"1"}
    assert {r[3] for r in rows} == {"600"} and {r[8] for r in rows} == {"601"}  # exact estimate: run + 1 s


def test_size_repetition_keeps_size_and_runtime(tmp_path: Path) -> None:
    model = tiny(tmp_path, size={"values": [1, 2, 4, 8], "probs": [0.25] * 4},
                 size_repeat={"values": [3], "probs": [1.0]},
                 runtime_s={"quantiles": [60.0 + 60 * k for k in range(101)]})
    m = _drive(SitePhase1(None, {"nb_users": 1, "model": model, "duration_s": 40 * 86400}))
    jobs = m.trace.jobs
    assert len(jobs) >= 30
    shapes = [(j.res, j.runtime) for j in jobs[: len(jobs) // 3 * 3]]
    groups = [shapes[k:k + 3] for k in range(0, len(shapes), 3)]
    assert all(g[0] == g[1] == g[2] for g in groups)
    assert len({g[0] for g in groups}) > 3                  # and they do change between groups


def test_sizes_larger_than_machine_resampled(tmp_path: Path) -> None:
    model = tiny(tmp_path, size={"values": [4, 256], "probs": [0.5, 0.5]})
    m = _drive(SitePhase1(None, {"nb_users": 3, "model": model, "duration_s": 86400}), machine=128)
    assert len(m.trace.jobs) > 100 and {j.res for j in m.trace.jobs} == {4}
    m = SitePhase1(None, {"model": tiny(tmp_path, size={"values": [256], "probs": [1.0]})})
    with pytest.raises(UserModelError, match="no job size"):
        _drive(m, machine=128)


def test_phase1_sessions_always_on(tmp_path: Path) -> None:
    m = _drive(SitePhase1(None, {"nb_users": 5, "model": tiny(tmp_path), "duration_s": 86400}))
    assert m.sessions == 5 and m.stats()["users"] == 5 and m.exhausted
    for u in range(5):                                     # every user: 0, 660, 1320, ... up to the duration
        assert _subs(m, u) == [660.0 * k for k in range(int(86400 // 660) + 1)]


def _run(tmp_path: Path, name: str, scheduler: str = "easy", **opts: Any) -> tuple[Any, list[dict[str, str]]]:
    platform = write_homogeneous_platform(tmp_path / "p128.xml", 128)
    res = run_simulation(platform, [], scheduler=scheduler, users="site-phase2", export=tmp_path / name,
                         user_options={"nb_users": 10, "duration_s": 14 * 86400, **opts})
    with open(res.jobs_csv, newline="") as f:
        return res, list(csv.DictReader(f))


@pytest.mark.parametrize("scheduler", ["easy", "fcfs"])
def test_end_to_end_accounted(tmp_path: Path, scheduler: str) -> None:
    swf = tmp_path / "site.swf"
    res, rows = _run(tmp_path, "run", scheduler, seed=3, swf=str(swf))
    c = res.counts
    killed = c["completed_killed"] + c["completed_walltime_reached"] + c["completed_failed"]
    assert c["submitted"] == len(rows) > 50
    assert c["submitted"] == c["completed_successfully"] + c["rejected"] + killed and killed == 0
    lines = [line.split() for line in swf.read_text().splitlines() if not line.startswith(";")]
    assert len(lines) == len(rows) and {r[10] for r in lines} == {"1"}
    for r in lines:                                         # think times from the dependency's end are >= 0
        assert (r[16] == "-1") == (r[17] == "-1") and float(r[17]) >= -1
    man = json.loads((tmp_path / "run_manifest.json").read_text())
    assert man["users"]["options"]["nb_users"] == 10 and man["users"]["checked"]


def test_deterministic(tmp_path: Path) -> None:
    _, a = _run(tmp_path, "a", seed=1)
    _, b = _run(tmp_path, "b", seed=1)
    _, c = _run(tmp_path, "c", seed=2)
    assert (tmp_path / "a_jobs.csv").read_bytes() == (tmp_path / "b_jobs.csv").read_bytes()
    assert (tmp_path / "a_jobs.csv").read_bytes() != (tmp_path / "c_jobs.csv").read_bytes()
    assert a == b != c


def test_no_workload_allowed_only_for_generating_models(tmp_path: Path) -> None:
    from batfeed.errors import BatfeedError

    platform = write_homogeneous_platform(tmp_path / "p.xml", 16)
    with pytest.raises(BatfeedError, match="generates its jobs"):
        run_simulation(platform, [platform], scheduler="easy", users="site-phase1")
    with pytest.raises(BatfeedError, match="exactly one recorded trace"):
        run_simulation(platform, [], scheduler="easy", users="a60")


def test_phase1_has_no_phase2_options() -> None:
    with pytest.raises(UserModelError, match="unknown option 'day_p'"):
        SitePhase1(None, {"day_p": 0.5})


def test_cli_simulate_without_workload(tmp_path: Path) -> None:
    from cli_helpers import run_cli

    platform = write_homogeneous_platform(tmp_path / "p128.xml", 128)
    proc = run_cli(["simulate", str(platform), "--scheduler", "easy", "--users", "site-phase2", "--user-options",
                    '{"nb_users": 5, "duration_s": 259200, "seed": 1}', "-o", str(tmp_path / "out")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "user model 'site-phase2' generated the jobs" in proc.stdout
    with open(tmp_path / "out_jobs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["final_state"] == "COMPLETED_SUCCESSFULLY" for r in rows)


def test_runtime_scale(tmp_path: Path) -> None:
    """``runtime_scale`` multiplies every drawn run time (rounded, at least 1 s); the draws are unchanged."""
    model = tiny(tmp_path, runtime_s={"quantiles": [60.0 + 60 * k for k in range(101)]})
    base = _drive(SitePhase1(None, {"nb_users": 1, "model": model, "duration_s": 86400}))
    half = _drive(SitePhase1(None, {"nb_users": 1, "model": model, "duration_s": 86400, "runtime_scale": 0.5}))
    n = min(len(base.trace.jobs), len(half.trace.jobs), 20)
    pairs = zip(base.trace.jobs[:n], half.trace.jobs[:n], strict=True)
    assert all(abs(h.runtime - b.runtime * 0.5) <= 1 for b, h in pairs)
    assert [j.res for j in base.trace.jobs[:n]] == [j.res for j in half.trace.jobs[:n]]
    with pytest.raises(UserModelError, match="runtime_scale"):
        SitePhase1(None, {"runtime_scale": 0})
