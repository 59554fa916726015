"""Flurry (RB) detector of Zakay & Feitelson's user-based resampling (models.md §E [RES]): hand-computed
synthetic workload."""

from __future__ import annotations

from typing import Any

import pytest
from batfeed.users.flurry import Flurry, detect_flurries, split_rb

from batfeed.errors import BatfeedError

D = 86_400
DAYS = 70  # 10 weekly bins, log start T0 = 0


def _counts() -> dict[int, dict[int, int]]:
    """user -> day -> jobs submitted that day."""
    c: dict[int, dict[int, int]] = {
        1: {d: 2 for d in range(DAYS)},      # steady: 14/week, hot iff > 5*14/7 = 10/day -> never
        2: {d: 1 for d in range(DAYS)},      # 7/week; one burst of 500 jobs on days 20-22 (no baseline then)
        3: {d: 1 for d in range(DAYS)},      # 7/week; bursts on days 10-11 and 40, 42 (day 41 cold)
        4: {d: 100 for d in range(DAYS)},    # heavy but steady: 700/week, hot iff > 500/day -> never
    }
    c[2].update({20: 200, 21: 150, 22: 150})  # weeks 2, 3 = 206, 305; median of 10 weeks = 7 -> hot iff > 5
    c[3].update({10: 61, 11: 61, 40: 81, 42: 81})  # median 7 -> hot iff > 5
    return c


def _workload() -> dict[str, Any]:
    jobs: list[dict[str, Any]] = []
    for user, per_day in _counts().items():
        for day, n in per_day.items():
            for k in range(n):
                jobs.append({"id": f"{user}:{len(jobs)}", "user": user, "subtime": day * D + k * D / n,
                             "walltime": 10, "res": 1, "profile": "p"})
    jobs.sort(key=lambda j: j["subtime"])
    return {"nb_res": 4, "jobs": jobs, "profiles": {"p": {"type": "delay", "delay": 1}}}


# Log jobs per day: 2 + 1 + 1 + 100 = 104 except burst days.
# user 2, days 20-22: 500 / (6 + 500 + 3 + 300) = 500/809
# user 3, days 10-11: 122 / (4 + 2 + 122 + 200) = 122/328; days 40-42: 163 / (6 + 3 + 163 + 300) = 163/472
U2 = Flurry(2, 20 * D, 23 * D, 500, 500 / 809)
U3A = Flurry(3, 10 * D, 12 * D, 122, 122 / 328)
U3B = Flurry(3, 40 * D, 43 * D, 163, 163 / 472)


def test_exact_windows() -> None:
    assert detect_flurries(_workload(), min_jobs=100, share=0.2, surge=0) == [U3A, U2, U3B]


def test_min_jobs_keeps_only_large_burst() -> None:
    assert detect_flurries(_workload(), min_jobs=200, share=0.2, surge=0) == [U2]


def test_surge_against_the_logs_mean_rate() -> None:
    wl = _workload()
    t = [j["subtime"] for j in wl["jobs"]]
    rate = len(t) / ((max(t) - min(t)) / D)  # the log's mean jobs per day, ~115
    assert 809 / (3 * rate) == pytest.approx(2.35, abs=0.01)  # U2's 3 days hold 2.35x the mean rate
    assert detect_flurries(wl, min_jobs=100, share=0.4, surge=2.3) == [U2]
    assert detect_flurries(wl, min_jobs=100, share=0.4, surge=2.4) == []


def test_defaults_flag_nothing_in_this_small_log() -> None:
    assert detect_flurries(_workload()) == []  # 500 jobs < min_jobs 1000 (calibrated on real logs)


def test_share_threshold() -> None:
    assert detect_flurries(_workload(), min_jobs=100, share=0.4, surge=0) == [U2]


def test_no_merge_splits_runs() -> None:
    got = detect_flurries(_workload(), min_jobs=50, share=0.1, surge=0, merge_gap_days=0)
    assert got == [U3A, U2, Flurry(3, 40 * D, 41 * D, 81, 81 / (2 + 1 + 81 + 100)),
                   Flurry(3, 42 * D, 43 * D, 81, 81 / (2 + 1 + 81 + 100))]


def test_steady_users_never_flagged() -> None:
    got = detect_flurries(_workload(), min_jobs=1, share=0.0, surge=0)
    assert {f.user for f in got} == {2, 3}


def test_split_keeps_every_job_once() -> None:
    wl = _workload()
    regular, rb = split_rb(wl, detect_flurries(wl, min_jobs=100, share=0.2, surge=0))
    assert len(rb) == 500 + 122 + 163
    assert len(regular) + len(rb) == len(wl["jobs"])
    assert sorted(j["id"] for j in regular + rb) == sorted(j["id"] for j in wl["jobs"])
    assert {j["user"] for j in rb} == {2, 3}
    assert all(not (20 * D <= j["subtime"] < 23 * D) for j in regular if j["user"] == 2)
    assert split_rb(wl, []) == (wl["jobs"], [])


@pytest.mark.parametrize("kw", [{"factor": 0.5}, {"share": 1.5}, {"min_jobs": 0}, {"window_days": float("nan")},
                                {"merge_gap_days": -1}, {"surge": -1}])
def test_bad_params(kw: dict[str, Any]) -> None:
    with pytest.raises(BatfeedError):
        detect_flurries(_workload(), **kw)
