"""Saturation check of Zakay & Feitelson [RES] (issue 16 item 3), on hand-computed tables.

W = one week (604,800 s); weeks start at the first submission and run to the last one.

- growing backlog: each week k = 0..10, 3 jobs submitted at kW; one finishes at kW + 1000, two never
  (finish 100 W).  Outstanding at kW = 3(k+1) submitted - k finished = 2k + 3 -> [3, 5, ..., 23];
  11 weeks, floor(0.2 * 11) = 2 dropped, kept [3, 5, ..., 19]: slope exactly 2 -> saturated.
- stable: the same 3 jobs a week all finish at kW + 1000 -> 3 outstanding at every week start, plus a
  burst of 10 jobs at 3W + 1 finishing at 5W + 10 -> [3, 3, 3, 3, 13, 13, 3, ...]; the suffix minimum
  is 3 everywhere: slope 0 -> not saturated.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from cli_helpers import run_cli

from batfeed.api import simulate_jobs
from batfeed.errors import InputError
from batfeed.metrics import compute_metrics
from batfeed.saturation import (
    WEEK,
    SaturationError,
    format_saturation,
    outstanding_at,
    saturation,
    suffix_minimum,
)

W = WEEK
OK = "COMPLETED_SUCCESSFULLY"


def table(rows: list[tuple[float, float, str]]) -> pd.DataFrame:
    """(submit, finish, final_state) rows as a jobs table."""
    return pd.DataFrame(rows, columns=["submission_time", "finish_time", "final_state"])


def growing(weeks: int = 11, state_of_stuck: str = OK) -> pd.DataFrame:
    rows = []
    for k in range(weeks):
        rows.append((k * W, k * W + 1000, OK))
        stuck_finish = 100 * W if state_of_stuck != "REJECTED" else np.nan
        rows += [(k * W, stuck_finish, state_of_stuck)] * 2
    return table(rows)


def stable(weeks: int = 11) -> pd.DataFrame:
    rows = [(k * W, k * W + 1000, OK) for k in range(weeks) for _ in range(3)]
    rows += [(3 * W + 1, 5 * W + 10, OK)] * 10
    return table(rows)


def test_growing_backlog_is_saturated_with_slope_2():
    r = saturation(growing())
    assert r["outstanding"] == [2 * k + 3 for k in range(11)]
    assert r["suffix_min"] == r["outstanding"]
    assert (r["nb_weeks"], r["nb_dropped"], r["nb_kept"]) == (11, 2, 9)
    assert r["kept"] == [3, 5, 7, 9, 11, 13, 15, 17, 19]
    assert r["week_starts"] == [k * W for k in range(11)]
    assert r["slope_jobs_per_week"] == pytest.approx(2.0)
    assert r["saturated"] is True
    assert r["reason"].startswith("saturated: suffix-minimum backlog slope 2.000 jobs/week >= 1")
    json.dumps(r)  # JSON-serialisable


def test_stable_system_with_a_transient_burst_is_not_saturated():
    r = saturation(stable())
    assert r["outstanding"] == [3, 3, 3, 3, 13, 13, 3, 3, 3, 3, 3]
    assert r["suffix_min"] == [3] * 11
    assert r["slope_jobs_per_week"] == pytest.approx(0.0)
    assert r["saturated"] is False and r["reason"].startswith("not saturated: ")
    # the threshold is a parameter: slope 2 is not saturated at 2.5, is at exactly 2
    assert saturation(growing(), threshold=2.5)["saturated"] is False
    assert saturation(growing(), threshold=2.0)["saturated"] is True


def test_suffix_minimum_on_a_hand_made_series():
    assert suffix_minimum(np.array([4, 7, 3, 9, 5, 6, 8])).tolist() == [3, 3, 3, 5, 5, 6, 8]
    assert suffix_minimum(np.array([5, 3, 8, 4, 6, 2, 7])).tolist() == [2, 2, 2, 2, 2, 2, 7]
    assert suffix_minimum(np.array([1, 2, 3])).tolist() == [1, 2, 3]     # non-decreasing: unchanged
    assert suffix_minimum(np.array([3, 2, 1])).tolist() == [1, 1, 1]
    assert suffix_minimum(np.array([], dtype=int)).tolist() == []


def one_job_a_week(weeks: int) -> pd.DataFrame:
    return table([(k * W, k * W + 10, OK) for k in range(weeks)])


@pytest.mark.parametrize(("weeks", "dropped", "kept"),
                         [(10, 2, 8), (11, 2, 9), (5, 1, 4), (4, 0, 4), (15, 3, 12), (1, 0, 1)])
def test_the_tail_drop_removes_floor_20_percent_of_the_weeks(weeks, dropped, kept):
    r = saturation(one_job_a_week(weeks))
    assert (r["nb_weeks"], r["nb_dropped"], r["nb_kept"], len(r["kept"])) == (weeks, dropped, kept, kept)
    assert r["kept"] == r["suffix_min"][:kept]


def test_tail_drop_parameter_and_too_few_weeks():
    assert saturation(one_job_a_week(10), tail_drop=0.0)["nb_kept"] == 10
    assert saturation(one_job_a_week(10), tail_drop=0.5)["nb_kept"] == 5
    one = saturation(one_job_a_week(1))
    assert one["slope_jobs_per_week"] is None and one["saturated"] is False
    assert "a slope needs 2" in one["reason"]
    # the weeks end at the last submission: a job finishing 9 weeks later adds no week
    assert saturation(table([(0.0, 9 * W, OK), (W + 5, W + 6, OK)]))["outstanding"] == [1, 1]


def test_rejected_jobs_are_never_outstanding():
    r = saturation(growing(state_of_stuck="REJECTED"))
    assert r["outstanding"] == [1] * 11                # each week's finishing job, submitted at kW
    assert r["slope_jobs_per_week"] == pytest.approx(0.0) and r["saturated"] is False


def test_outstanding_counts_waiting_and_running_jobs():
    # job a: [0, 10]; b: submitted 5, finishes 20; c: submitted 5, never finishes (no finish time)
    counts = outstanding_at(np.array([0.0, 5.0, 10.0, 20.0, 1e9]), np.array([0.0, 5.0, 5.0]),
                            np.array([10.0, 20.0, np.nan]))
    assert counts.tolist() == [1, 3, 2, 1, 1]
    # killed / walltime jobs are finished at their finish_time like the others
    r = saturation(table([(0.0, W + 1, "COMPLETED_KILLED"), (0.0, 10.0, "COMPLETED_WALLTIME_REACHED"),
                          (2 * W, 2 * W + 1, OK)]))
    assert r["outstanding"] == [2, 1, 1]


def test_bad_parameters_and_tables():
    for kwargs in ({"tail_drop": 1.0}, {"tail_drop": -0.1}, {"week": 0.0}, {"threshold": float("nan")}):
        with pytest.raises(SaturationError):
            saturation(stable(), **kwargs)
    with pytest.raises(InputError, match="finish_time"):
        saturation(pd.DataFrame({"submission_time": [0.0], "final_state": [OK]}))
    empty = saturation(table([]))
    assert empty["nb_weeks"] == 0 and empty["saturated"] is False


def weekly_workload(per_week: int, runtime: float, weeks: int = 12) -> pd.DataFrame:
    """``per_week`` one-machine jobs of ``runtime`` s submitted at each week start, for ``weeks`` weeks."""
    subs = [k * W + i for k in range(weeks) for i in range(per_week)]
    return pd.DataFrame({"subtime": subs, "res": 1, "runtime": runtime, "walltime": runtime + 1})


def test_real_engine_overloaded_vs_underloaded(tmp_path):
    # 1 machine, 4 jobs of W/2 a week: 2 weeks of work arrive each week, ~2 jobs/week pile up
    over = simulate_jobs(weekly_workload(4, W / 2), nb_machines=1, scheduler="easy")
    r = saturation(over)
    assert r["saturated"] is True and r["slope_jobs_per_week"] == pytest.approx(2.0, abs=0.2)
    # 4 jobs of W/8 a week: half loaded, everything done within the week
    under = simulate_jobs(weekly_workload(4, W / 8), nb_machines=1, scheduler="easy")
    r = saturation(under)
    assert r["saturated"] is False and r["slope_jobs_per_week"] == pytest.approx(0.0, abs=0.2)
    # compute_metrics carries the slope and verdict (flattened into campaign tables)
    m = compute_metrics(over)
    assert m["saturation"] == {"slope_jobs_per_week": pytest.approx(2.0, abs=0.2), "saturated": True}
    assert compute_metrics(under)["saturation"]["saturated"] is False


def test_cli_metrics_saturation_flag(tmp_path):
    over = simulate_jobs(weekly_workload(4, W / 2), nb_machines=1, scheduler="fcfs", export=tmp_path / "over")
    jobs = tmp_path / "over_jobs.csv"
    assert jobs.is_file() and len(over) == 48
    proc = run_cli(["metrics", str(jobs), "--saturation", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    sat = json.loads(proc.stdout)["saturation"]
    assert sat["saturated"] is True and sat["nb_weeks"] == 12 and len(sat["outstanding"]) == 12
    assert "saturated: suffix-minimum backlog slope" in proc.stderr
    text = run_cli(["metrics", str(jobs), "--saturation"], tmp_path)
    assert text.returncode == 0 and format_saturation(sat) in text.stdout
    plain = run_cli(["metrics", str(jobs), "--json"], tmp_path)
    assert set(json.loads(plain.stdout)["saturation"]) == {"slope_jobs_per_week", "saturated"}


def test_a_large_stable_table():
    """100 weeks of 200,000 short jobs (1 % rejected): not saturated (speed: see docs/performance.md,
    never a timed assertion here)."""
    rng = np.random.default_rng(1)
    n = 200_000
    sub = np.sort(rng.uniform(0, 100 * W, n))
    frame = pd.DataFrame({"submission_time": sub, "finish_time": sub + rng.exponential(3600, n),
                          "final_state": np.where(rng.random(n) < 0.01, "REJECTED", OK)})
    r = saturation(frame)
    assert r["nb_weeks"] == 100 and r["saturated"] is False
