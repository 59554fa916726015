"""batfeed/lean.py gives the engine's metrics, job counts and order of ends (both kernel paths: CI reruns
this file with BATFEED_PURE=1), and sends to the engine every run it cannot replay exactly; a campaign with
``lean: true`` gives the engine campaign's table.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from hypothesis import given
from hypothesis import strategies as st
from test_backfill_properties import PROPS

from batfeed.campaign import load_spec, run_campaign
from batfeed.campaign.columns import flatten
from batfeed.lean import lean_jobs
from batfeed.metrics import compute_metrics
from batfeed.runner import run_simulation

OPTIONS = [
    {},
    {"policy": "SAF", "theta": 200000.0, "ties": "newest", "backfill_policy": "SQF"},
    {"policy": "LQF"},
    {"policy": "SEXP", "theta": 144000.0},
    {"policy": "SPF", "backfill_policy": "FCFS", "ties": "newest"},
    {"policy": "LAF", "theta": 200000.0, "ties": "obps", "backfill_policy": "LQF"},
]


def engine_and_lean(platform, workload, options, prefix):
    """The engine's result and metrics, and the lean run (which must be possible)."""
    result = run_simulation(platform, [workload], scheduler="easy", options=dict(options), export=prefix)
    engine = flatten(compute_metrics(f"{prefix}_jobs.csv"))
    lean = lean_jobs(platform, [workload], "easy", dict(options))
    assert not isinstance(lean, str), lean
    return result, engine, lean


def same_metrics(engine, lean):
    mine = flatten(compute_metrics(lean.jobs, nb_resources=lean.nb_machines))
    differ = {k: (mine.get(k), engine.get(k)) for k in set(mine) | set(engine)
              if k != "nb_resources_source" and mine.get(k) != engine.get(k)
              and not (mine.get(k) != mine.get(k) and engine.get(k) != engine.get(k))}
    assert not differ


@pytest.fixture(scope="module")
def kth(tmp_path_factory):
    from batfeed.adapters.swf import convert_swf
    from test_tuned_easy import KTH

    conv = convert_swf(KTH, tmp_path_factory.mktemp("kth4000"), max_jobs=4000, name="kth4000")
    return conv.platform_path, conv.workload_path


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: o.get("policy", "FCFS"))
def test_lean_kth_is_the_engine(kth, tmp_path, options):
    """KTH-SP2's first 4,000 jobs: every metric, the counts, the simulated time, each job's times, and the
    order in which the jobs end."""
    result, engine, lean = engine_and_lean(*kth, options, tmp_path / "e")
    same_metrics(engine, lean)
    assert lean.counts == result.counts
    assert lean.simulated_time == result.simulated_time
    csv = pd.read_csv(tmp_path / "e_jobs.csv", dtype={"job_id": str})
    ran = csv[csv.final_state != "REJECTED"]
    mine = lean.jobs[lean.jobs.final_state != "REJECTED"]
    assert list(mine.job_id) == list(ran.job_id)                  # the order of the ends
    for col in ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time", "stretch"):
        assert list(mine[col]) == list(ran[col]), col


job_st = st.tuples(st.integers(0, 30), st.integers(0, 7), st.integers(0, 20), st.integers(-1, 25), st.booleans())


def workload_file(path, jobs, nb):
    """Jobs (subtime, res, delay, walltime (-1: none), fails): ids whose string order is not their number's,
    zero delays, delays equal to the walltime, jobs wider than the machine, a profile with ret 1."""
    profiles, out = {}, []
    for i, (r, q, d, w, fails) in enumerate(jobs):
        name = f"d{d}{'f' if fails else ''}"
        profiles[name] = {"type": "delay", "delay": d, **({"ret": 1} if fails else {})}
        job = {"id": str(7 + 3 * i), "subtime": r, "res": q, "profile": name}
        if w > 0:
            job["walltime"] = w
        out.append(job)
    path.write_text(json.dumps({"nb_res": nb, "jobs": out, "profiles": profiles}))
    return path


@PROPS
@given(st.lists(job_st, min_size=1, max_size=14), st.sampled_from(OPTIONS))
def test_lean_is_the_engine_on_edge_cases(tmp_path_factory, jobs, options):
    tmp = tmp_path_factory.mktemp("lean")
    platform = write_homogeneous_platform(tmp / "p.xml", 5)
    wl = workload_file(tmp / "w.json", [(r, q, max(d, 1), w, f) for r, q, d, w, f in jobs], 5)
    result, engine, lean = engine_and_lean(platform, wl, options, tmp / "e")
    same_metrics(engine, lean)
    assert lean.counts == result.counts and lean.simulated_time == result.simulated_time


def test_what_needs_the_engine(tmp_path, test_data):
    plat = write_homogeneous_platform(tmp_path / "p.xml", 4)
    wl = workload_file(tmp_path / "w.json", [(0, 1, 5, -1, False), (3, 2, 4, 10, False)], 4)
    links = test_data / "platforms" / "small_platform.xml"          # Batsim's, with links
    assert "links" in lean_jobs(links, [wl], "easy", {})
    assert "not EASY's compiled pass" in lean_jobs(plat, [wl], "easy", {"reservation": "machines"})
    assert "not EASY's compiled pass" in lean_jobs(plat, [wl], "fcfs", {})
    assert "2 workloads" in lean_jobs(plat, [wl, wl], "easy", {})
    frac = json.loads(wl.read_text())
    frac["jobs"][1]["subtime"] = 3.5
    assert "whole number" in lean_jobs(plat, [_write(tmp_path / "f.json", json.dumps(frac))], "easy", {})
    frac["jobs"][1]["subtime"] = 3
    frac["profiles"]["d4"] = {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0}
    assert "parallel_homogeneous profile" in lean_jobs(plat, [_write(tmp_path / "g.json", json.dumps(frac))],
                                                       "easy", {})
    assert not isinstance(lean_jobs(plat, [wl], "easy", {}), str)


def _write(path, text):
    path.write_text(text)
    return path


def test_a_lean_campaign_gives_the_engine_campaigns_table(tmp_path):
    """The same campaign with and without ``lean``: the same metrics; the lean one ran no engine for easy
    (its records say so) and sent fcfs to the engine, with its reason in the record and one summary line."""
    spec = {"name": "lean", "seeds": [1, 2], "traces": [{"name": "kth", "path": "KTH-SP2", "max_jobs": 1500,
                                                         "shake": 60}],
            "schedulers": [{"name": "easy", "options": {"policy": ["FCFS", "SAF", "LQF"]}}, "fcfs"],
            "metrics": ["nb_jobs", "wait.mean", "bounded_slowdown.mean", "utilisation", "makespan"]}
    tables = {}
    for lean in (False, True):
        out = tmp_path / f"lean{lean}"
        said: list[str] = []
        tables[lean] = run_campaign(load_spec({**spec, "lean": lean}), out, workers=1, log=said.append)
        records = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*/result.json"))]
        kinds = sorted(r["simulation"] for r in records)
        assert kinds == (["engine"] * 2 + ["lean"] * 6 if lean else ["engine"] * 8)
        if lean:
            assert all("not EASY's compiled pass" in r["lean_reason"] and "notes" not in r
                       for r in records if r["simulation"] == "engine")
            assert said[-1] == ("lean: 6 of 8 runs without the engine; on the engine: 2: scheduler fcfs with these "
                                "options is not EASY's compiled pass")
        else:
            assert not any(line.startswith("lean:") for line in said)
            assert all((out / "runs" / r["key"] / "run_manifest.json").is_file() for r in records)
    cols = ["key", *spec["metrics"]]
    pd.testing.assert_frame_equal(tables[False][cols], tables[True][cols])
