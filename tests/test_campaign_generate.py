"""Generated traces in campaigns (``generate = true``): no workload, the user model makes the jobs (Shmueli's
site-level users, users/site.py), on an nb_machines or xml platform; the runs equal ``batfeed simulate``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from batfeed.campaign import load_spec, run_campaign
from batfeed.campaign.spec import CampaignError
from batfeed.errors import BatfeedError
from batfeed.runner import run_simulation

USERS = {"model": "site-phase2", "options": {"nb_users": 6, "duration_s": 2 * 86400, "runtime_scale": 0.1}}
SPEC = {"traces": [{"name": "site", "generate": True}], "platforms": [{"name": "p64", "nb_machines": 64}],
        "schedulers": [{"name": "creasy", "options": {"alpha": [0, 6000]}}], "users": [USERS], "seeds": [1, 2],
        "metrics": ["nb_jobs", "wait.mean", "utilisation", "users.jobs", "users.jobs_per_session"]}


def test_generated_trace_runs_equal_batfeed_simulate(tmp_path: Path) -> None:
    out = run_campaign(SPEC, tmp_path / "c", workers=2, progress=False)
    assert (out["status"] == "ok").all() and len(out) == 4 and out["seed_used"].all()
    assert out["key"].nunique() == 4 and (out["nb_jobs"] > 0).all()
    assert out.loc[out["seed"] == 1, "nb_jobs"].iloc[0] != out.loc[out["seed"] == 2, "nb_jobs"].iloc[0]
    row = out[(out["seed"] == 2) & (out["options.alpha"] == 6000)].iloc[0]
    platform = tmp_path / "c" / "inputs" / "platforms" / "n64.xml"
    run_simulation(platform, [], scheduler="creasy", options={"alpha": 6000}, users="site-phase2",
                   user_options={**USERS["options"], "seed": 2}, export=tmp_path / "direct")
    ours = pd.read_csv(tmp_path / "c" / row["jobs_csv"])
    direct = pd.read_csv(tmp_path / "direct_jobs.csv")
    assert ours.drop(columns="metadata").equals(direct.drop(columns="metadata")) and len(direct) == row["nb_jobs"]
    # the users' own count (users/site.py stats) is in the table and the manifest: every generated job ran
    assert (out["users.jobs"] == out["nb_jobs"]).all() and (out["users.jobs_per_session"] >= 1).all()
    import json
    stats = json.loads((tmp_path / "direct_manifest.json").read_text())["user_stats"]
    assert stats["jobs"] == row["nb_jobs"] and stats["jobs_per_session"] == row["users.jobs_per_session"]


def test_thesis_workload_by_name_and_window_throughput(tmp_path: Path) -> None:
    users = {"model": "site-phase2", "options": {"nb_users": 4, "duration_s": 86400, "model": "thesis-phase2"}}
    spec = {**SPEC, "users": [users], "seeds": [1], "window": [0, 86400],
            "schedulers": [{"name": "creasy", "options": {"alpha": 6000}}],
            "metrics": ["nb_jobs", "window_submitted_per_hour", "users.jobs"]}
    out = run_campaign(spec, tmp_path / "c", workers=1, progress=False)
    assert (out["status"] == "ok").all() and out["user_options.model"].iloc[0] == "thesis-phase2"
    jobs = pd.read_csv(tmp_path / "c" / out["jobs_csv"].iloc[0])
    assert out["window_submitted_per_hour"].iloc[0] == pytest.approx((jobs["submission_time"] < 86400).sum() / 24)
    # another window recomputes the metrics from the _jobs.csv files, without a run; the users' counts stay
    again = run_campaign({**spec, "window": [0, 43200]}, tmp_path / "c", workers=1, progress=False)
    assert again["key"].tolist() == out["key"].tolist() and again["users.jobs"].tolist() == out["users.jobs"].tolist()
    assert again["window_submitted_per_hour"].iloc[0] == pytest.approx((jobs["submission_time"] < 43200).sum() / 12)


def test_generated_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(CampaignError, match=r"traces\[0\]\.generate: must be true"):
        load_spec({**SPEC, "traces": [{"generate": "yes"}]})
    with pytest.raises(CampaignError, match=r"unknown key for a generated trace"):
        load_spec({**SPEC, "traces": [{"generate": True, "shake": 60}]})
    with pytest.raises(BatfeedError, match=r"needs a user model that generates its jobs.*not rigid"):
        run_campaign({**SPEC, "users": ["rigid"]}, tmp_path / "r", dry_run=True)
    with pytest.raises(BatfeedError, match=r"a generated trace has no platform of its own"):
        run_campaign({**SPEC, "platforms": ["trace"]}, tmp_path / "t", workers=1, progress=False)
