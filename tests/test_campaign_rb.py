"""Campaigns with rare behaviours: ``resample_rb_npw`` (users/zf_resample.py, users/flurry.py) resamples
with the detected flurries coming back whole, and every row also has the metrics without the RB jobs
(Zakay & Feitelson report RB experiments that way; models.md §E)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from batfeed.users.flurry import detect_flurries

from batfeed.campaign import load_spec, run_campaign
from batfeed.campaign.inputs import read_workload
from batfeed.campaign.spec import CampaignError

W, D = 604_800, 86_400


def _workload() -> dict[str, Any]:
    """30 weeks: 6 steady long-term users (20 jobs/week), 12 temporary users (3 weeks each), and user 99:
    10 jobs/week plus a flurry of 1,500 one-minute jobs on days 70-71 (the calibrated detector's only find)."""
    subs: list[tuple[float, int]] = []
    for u in range(6):
        subs += [(w * W + k * (W / 20) + u * 600, u) for w in range(30) for k in range(20)]
    for u in range(12):
        subs += [((2 + 2 * u) * W + k * D + 3600, 10 + u) for k in range(21)]
    subs += [(w * W + k * (W / 10) + 300, 99) for w in range(30) for k in range(10)]
    subs += [(70 * D + k * 115, 99) for k in range(1500)]
    subs.sort()
    jobs = [{"id": i, "subtime": t, "res": 1 + i % 2, "walltime": 600, "profile": "p", "user": u}
            for i, (t, u) in enumerate(subs)]
    return {"nb_res": 16, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 60}}}


def test_rb_campaign_reports_metrics_without_the_rb_jobs(tmp_path: Path) -> None:
    data = _workload()
    (flurry,) = detect_flurries(data)
    assert flurry.user == 99 and flurry.jobs == 1503  # with its 3 regular jobs of those 2 days
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    trace = {"path": str(path), "resample": "users", "resample_weeks": 30}
    spec = {"traces": [{**trace, "name": "plain"}, {**trace, "name": "rb", "resample_rb_npw": 0.3}],
            "schedulers": ["easy"], "seeds": [1, 2, 3],
            "metrics": ["nb_jobs", "wait.mean", "non_rb.nb_rb_jobs", "non_rb.nb_jobs", "non_rb.wait.mean"]}
    out = run_campaign(spec, tmp_path / "c", workers=2, progress=False)
    assert (out["status"] == "ok").all()
    rb = out[out["trace"] == "rb"]
    plain = out[out["trace"] == "plain"]
    assert plain["non_rb.nb_jobs"].isna().all()       # no RB columns without rare behaviours
    derived = sorted((tmp_path / "c" / "inputs" / "derived").glob("*-users-f1-rb0.3-*.json.gz"))
    assert len(derived) == 3
    for _, row in rb.iterrows():
        (wl,) = [p for p in derived if p.name.endswith(f"-seed{row['seed']}.json.gz")]
        n_rb = sum(1 for j in read_workload(wl)["jobs"] if j.get("resampled_rb"))
        assert row["non_rb.nb_rb_jobs"] == n_rb
        assert row["non_rb.nb_jobs"] == row["nb_jobs"] - n_rb
    assert rb["non_rb.nb_rb_jobs"].sum() >= 1503     # 30 weeks at 0.3 per week: the flurry came back


def test_rb_spec_errors() -> None:
    base = {"schedulers": ["easy"], "seeds": [1]}
    with pytest.raises(CampaignError, match=r"resample_rb_npw: only the \"users\" resampling"):
        load_spec({**base, "traces": [{"path": "KTH-SP2", "resample_weeks": 4, "resample_rb_npw": 0.1}]})
    with pytest.raises(CampaignError, match=r"resample_rb_npw: needs resample_weeks"):
        load_spec({**base, "traces": [{"path": "KTH-SP2", "resample_rb_npw": 0.1}]})
    with pytest.raises(CampaignError, match=r"resample_rb_npw: must be"):
        load_spec({**base, "traces": [{"path": "KTH-SP2", "resample": "users", "resample_weeks": 4,
                                       "resample_rb_npw": -1}]})
