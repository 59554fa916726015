"""Lateness metrics (batfeed.metrics.compute_lateness, metrics.md §3) on a hand-made _jobs.csv.

| job | user | original a | replayed â | lateness | state    |
|-----|------|------------|------------|----------|----------|
| 1   | 1    | 0          | 0          | 0        | success  |
| 2   | 1    | 100        | 400        | 300      | success  |
| 3   | 2    | 200        | 100        | -100     | REJECTED |
| 4   | 2    | 1000       | 1600       | 600      | success  |

n = 4 (the rejected job counts): mean = 800/4 = 200 s; RL = 1 + 200/(1000 - 0) = 1.2;
delta = 2*200/3 = 133.33 s.  User 1: mean 150, RL 1 + 150/100 = 2.5, delta 2*150/1 = 300.
User 2: mean 250, RL 1 + 250/800 = 1.3125, delta 500.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batfeed.metrics import JOBS_COLUMNS, compute_lateness, compute_metrics, format_metrics, read_jobs_csv

ROWS = [
    '1,replay,p1,0.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,0.000000,10.000000,10.000000,0.000000,'
    '10.000000,1.000000,0,-1.000000,"orig_subtime=0.0;user=1"',
    '2,replay,p2,400.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,400.000000,10.000000,410.000000,0.000000,'
    '10.000000,1.000000,0,-1.000000,"orig_subtime=100.0;user=1"',
    '3,replay,p3,100.000000,9,-1.000000,0,REJECTED,,,,,,,,,"orig_subtime=200.0;user=2"',
    '4,replay,p4,1600.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,1600.000000,10.000000,1610.000000,0.000000,'
    '10.000000,1.000000,0,-1.000000,"orig_subtime=1000.0;user=2"',
]


@pytest.fixture
def replay_csv(tmp_path: Path) -> Path:
    path = tmp_path / "r_jobs.csv"
    path.write_text(",".join(JOBS_COLUMNS) + "\n" + "\n".join(ROWS) + "\n")
    return path


def test_lateness_hand_computed(replay_csv: Path) -> None:
    late = compute_lateness(read_jobs_csv(replay_csv))
    assert late["n"] == 4 and late["nb_untagged"] == 0
    assert late["mean_s"] == pytest.approx(200)
    assert late["mean_days"] == pytest.approx(200 / 86400)
    assert late["relative"] == pytest.approx(1.2)
    assert late["delta_s"] == pytest.approx(400 / 3)
    assert (late["min_s"], late["max_s"]) == (-100, 600)
    assert late["per_user"]["1"] == pytest.approx({"n": 2, "mean_s": 150, "mean_days": 150 / 86400,
                                                   "relative": 2.5, "delta_s": 300, "max_s": 300, "min_s": 0})
    assert late["per_user"]["2"]["relative"] == pytest.approx(1.3125)
    assert late["per_user"]["2"]["delta_s"] == pytest.approx(500)
    # per-user delta percentiles over the 2 users (300, 500): p10 = 320, p50 = 400, p90 = 480
    assert late["per_user_delta_s"] == pytest.approx({"users": 2, "p10": 320, "p50": 400, "p90": 480})


def test_metrics_report_shows_lateness(replay_csv: Path) -> None:
    m = compute_metrics(replay_csv)
    assert m["lateness"]["mean_s"] == pytest.approx(200)
    text = format_metrics(m)
    assert "lateness (user-model replay, 4 jobs incl. rejected)" in text
    assert "relative lateness RL" in text and "1.2000" in text
    assert "additional lateness delta (s/job)" in text and "133.33" in text


def test_no_lateness_without_replay_metadata(tmp_path: Path) -> None:
    path = tmp_path / "s_jobs.csv"
    path.write_text(",".join(JOBS_COLUMNS) + "\n" + ROWS[0].rsplit(",", 1)[0] + ',""\n')
    m = compute_metrics(path)
    assert m["lateness"] is None
    assert "relative lateness" not in format_metrics(m)


def test_partially_tagged_and_comma_separated(test_data: Path) -> None:
    # tests/data/metrics/small_jobs.csv: only job3 carries "orig_subtime=90,user=7", submitted at 110
    late = compute_metrics(test_data / "metrics" / "small_jobs.csv")["lateness"]
    assert (late["n"], late["nb_untagged"], late["mean_s"]) == (1, 4, 20)
    assert late["delta_s"] is None and late["relative"] is None       # one job: undefined
