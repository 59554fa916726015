"""Tests of batfeed.metrics against hand-computed values on tiny _jobs.csv fixtures.

small_jobs.csv (tau = 10 s unless stated):

| id   | state     | r   | s   | p  | f   | w  | R  | alloc   | q |
|------|-----------|-----|-----|----|-----|----|----|---------|---|
| 1    | SUCCESS   | 100 | 100 | 20 | 120 | 0  | 20 | 0-3     | 4 |
| 2    | WALLTIME  | 105 | 120 | 30 | 150 | 15 | 45 | 4-5     | 2 |
| job3 | SUCCESS   | 110 | 130 | 0  | 130 | 20 | 20 | 6       | 1 |
| 4    | REJECTED  | 112 |     |    |     |    |    |         | 8 |
| 5    | SUCCESS   | 140 | 150 | 5  | 155 | 10 | 15 | 0 2-3   | 3 | (requested 2)
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from batfeed.errors import InputError
from batfeed.metrics import FINAL_STATES, JOBS_COLUMNS, compute_metrics, format_metrics, read_jobs_csv

HEADER = ",".join(JOBS_COLUMNS)
ROW1 = (
    "1,w0,p1,100.000000,4,100.000000,1,COMPLETED_SUCCESSFULLY,100.000000,20.000000,120.000000,"
    '0.000000,20.000000,1.000000,0-3,-1.000000,""'
)


@pytest.fixture
def mdir(test_data: Path) -> Path:
    return test_data / "metrics"


@pytest.fixture
def small(mdir: Path) -> Path:
    return mdir / "small_jobs.csv"


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "x_jobs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------- reading


def test_read_types(small: Path) -> None:
    df = read_jobs_csv(small)
    assert list(df.columns) == list(JOBS_COLUMNS)
    assert len(df) == 5
    assert df["job_id"].tolist() == ["1", "2", "job3", "4", "5"]
    assert df["submission_time"].dtype == np.float64
    assert df["requested_number_of_resources"].dtype == np.float64
    assert df["allocated_resources"].tolist() == ["0-3", "4-5", "6", "", "0 2-3"]
    assert df["metadata"].iloc[2] == "orig_subtime=90,user=7"  # quoted comma kept
    assert np.isnan(df["starting_time"].iloc[3])  # rejected: empty -> NaN


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope_jobs.csv"
    with pytest.raises(InputError, match="not found") as err:
        read_jobs_csv(path)
    assert str(path) in str(err.value)


def test_bad_header_names_file_and_columns(mdir: Path) -> None:
    path = mdir / "bad_header_jobs.csv"
    with pytest.raises(InputError) as err:
        read_jobs_csv(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:1: ")
    assert "missing columns: stretch" in msg
    assert "'foo'" in msg


def test_empty_file_without_header(tmp_path: Path) -> None:
    path = tmp_path / "e_jobs.csv"
    path.write_text("")
    with pytest.raises(InputError, match="empty file"):
        read_jobs_csv(path)


def test_bad_number_names_line(mdir: Path) -> None:
    path = mdir / "bad_row_jobs.csv"
    with pytest.raises(InputError) as err:
        read_jobs_csv(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:3: ")  # header = line 1, row "2" = line 3
    assert "submission_time" in msg and "'abc'" in msg


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        (ROW1.replace("COMPLETED_SUCCESSFULLY", "DONE"), "final_state 'DONE'"),
        (ROW1.replace(",100.000000,20.000000,", ",,20.000000,"), "empty starting_time"),
        (ROW1.replace(",0-3,", ",0-a,"), "allocated_resources '0-a'"),
        (ROW1.replace(",0-3,", ",3-1,"), "allocated_resources '3-1'"),
        (ROW1 + ",extra", "unparsable row"),
    ],
)
def test_bad_rows_name_line(tmp_path: Path, bad: str, needle: str) -> None:
    path = _write(tmp_path, HEADER, ROW1, ROW1, bad)
    with pytest.raises(InputError) as err:
        read_jobs_csv(path)
    assert str(err.value).startswith(f"{path}:4: ")
    assert needle in str(err.value)


def test_blank_lines_skipped_and_line_numbers_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, HEADER, ROW1, "", ROW1.replace("0-3", "x"))
    with pytest.raises(InputError, match=r":4: malformed allocated_resources"):
        read_jobs_csv(path)
    assert len(read_jobs_csv(_write(tmp_path, HEADER, ROW1, "", ROW1, ""))) == 2


def test_non_finite_stretch_and_reordered_header(tmp_path: Path) -> None:
    # Batsim-doc column order (consumed_energy before allocated_resources) is read by name
    cols = list(JOBS_COLUMNS)
    cols[14], cols[15] = cols[15], cols[14]
    # s=100, p=0, f=100, w=0, R=0, stretch=inf, energy=-1, alloc 0-3
    zero = ROW1.replace(
        "20.000000,120.000000,0.000000,20.000000,1.000000,0-3,-1.000000", "0,100,0,0,inf,-1,0-3"
    )
    path = _write(tmp_path, ",".join(cols), zero)
    df = read_jobs_csv(path)
    assert df["allocated_resources"].tolist() == ["0-3"] and df["stretch"].tolist() == [np.inf]
    m = compute_metrics(df)
    assert m["slowdown"] == {**dict.fromkeys(("mean", "median", "p50", "p90", "p99", "max")), "nb_undefined": 1}
    assert m["bounded_slowdown"]["mean"] == 1.0  # max(1, 0 / max(0, 10))
    assert m["batsim_means"]["mean_slowdown"] is None  # inf -> None
    json.dumps(m, allow_nan=False)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "b_jobs.csv"
    path.write_bytes(HEADER.encode() + b"\n\xff\xfe,1\n")
    with pytest.raises(InputError, match="UTF-8"):
        read_jobs_csv(path)


# --------------------------------------------------------------------------- counts and per-job metrics


def test_counts(small: Path) -> None:
    m = compute_metrics(small)
    assert m["nb_jobs"] == 5 and m["nb_executed"] == 4
    assert m["by_state"] == {
        "COMPLETED_SUCCESSFULLY": 3,  # 1, job3, 5
        "COMPLETED_FAILED": 0,
        "COMPLETED_WALLTIME_REACHED": 1,  # 2
        "COMPLETED_KILLED": 0,
        "REJECTED": 1,  # 4
    }
    assert (m["nb_success"], m["nb_rejected"], m["nb_killed"], m["nb_walltime"], m["nb_failed"]) == (
        3,
        1,
        0,
        1,
        0,
    )
    assert "rejected" in m["note"] and "excluded" in m["note"]
    json.dumps(m, allow_nan=False)  # plain JSON, no NaN


def test_per_job_metrics(small: Path) -> None:
    m = compute_metrics(small)
    # wait over executed jobs: 0, 15, 20, 10 -> mean 45/4 = 11.25, median (10+15)/2 = 12.5, max 20
    # percentiles interpolate linearly (numpy): sorted 0 10 15 20 -> p90 at rank 2.7 = 18.5, p99 = 19.85
    assert m["wait"] == pytest.approx({"mean": 11.25, "median": 12.5, "p50": 12.5, "p90": 18.5, "p99": 19.85,
                                       "max": 20.0})
    # response: 20, 45, 20, 15 -> mean 100/4 = 25, sorted 15 20 20 45 -> median 20, max 45
    assert {k: m["response"][k] for k in ("mean", "median", "max")} == pytest.approx(
        {"mean": 25.0, "median": 20.0, "max": 45.0})
    # slowdown R/p: 20/20 = 1, 45/30 = 1.5, job3 p=0 undefined, 15/5 = 3 -> mean 5.5/3, max 3
    assert m["slowdown"]["mean"] == pytest.approx(5.5 / 3)
    assert m["slowdown"]["max"] == pytest.approx(3.0)
    assert m["slowdown"]["nb_undefined"] == 1
    # BSLD tau=10: max(1, 20/20)=1, 45/30=1.5, 20/max(0,10)=2, 15/max(5,10)=1.5 -> mean 6/4=1.5, max 2
    assert m["tau"] == 10.0
    assert {k: m["bounded_slowdown"][k] for k in ("mean", "max")} == pytest.approx({"mean": 1.5, "max": 2.0})
    assert m["slowdown"]["p50"] == pytest.approx(1.5) and m["bounded_slowdown"]["p50"] == pytest.approx(1.5)


def test_bsld_tau(small: Path) -> None:
    # tau=60: 20/60, 45/60, 20/60, 15/60 all < 1 -> every BSLD is 1
    m = compute_metrics(small, tau=60)
    assert m["bounded_slowdown"] == pytest.approx(dict.fromkeys(("mean", "median", "p50", "p90", "p99", "max"), 1.0))
    assert m["tau"] == 60.0
    with pytest.raises(ValueError):
        compute_metrics(small, tau=0)


# --------------------------------------------------------------------------- system metrics


def test_makespans_and_throughput(small: Path) -> None:
    m = compute_metrics(small)
    assert m["first_submit"] == 100.0  # min r over all jobs (rejected included)
    assert m["last_finish"] == 155.0  # job 5
    assert m["makespan"] == pytest.approx(55.0)  # 155 - 100
    assert m["makespan_from_zero"] == 155.0  # Batsim: max f from 0
    # 4 executed jobs / (55 s / 3600) = 14400/55 = 261.8181...
    assert m["throughput_per_hour"] == pytest.approx(14400 / 55)


def test_utilisation_default_window_inferred_n(small: Path) -> None:
    m = compute_metrics(small)
    # N = max id 6 + 1 = 7; window [100, 155) -> 55 s
    assert (m["nb_resources"], m["nb_resources_source"]) == (7, "inferred")
    assert m["utilisation_window"] == [100.0, 155.0]
    # busy = 4*20 + 2*30 + 1*0 + 3*5 (q from "0 2-3" = 3, not requested 2) = 80+60+0+15 = 155
    assert m["mean_busy_resources"] == pytest.approx(155 / 55)
    assert m["utilisation"] == pytest.approx(155 / (7 * 55))  # 0.402597...


def test_utilisation_explicit_n(small: Path) -> None:
    m = compute_metrics(small, nb_resources=10)
    assert (m["nb_resources"], m["nb_resources_source"]) == (10, "argument")
    assert m["utilisation"] == pytest.approx(155 / (10 * 55))  # 0.281818...


def test_utilisation_window(small: Path) -> None:
    m = compute_metrics(small, window=(110, 140))
    # [110,140): job1 [100,120) -> 10 s * 4 = 40; job2 [120,150) -> 20 s * 2 = 40; job3 0; job5 [150,155) 0
    assert m["utilisation_window"] == [110.0, 140.0]
    assert m["utilisation_window_source"] == "argument"
    assert m["utilisation"] == pytest.approx(80 / (7 * 30))  # 0.380952...
    assert compute_metrics(small, window=(110, 140), nb_resources=16)["utilisation"] == pytest.approx(
        80 / 480
    )
    with pytest.raises(ValueError):
        compute_metrics(small, window=(140, 110))


def test_utilisation_falls_back_to_requested(small: Path) -> None:
    df = read_jobs_csv(small)
    df.loc[df["job_id"] == "5", "allocated_resources"] = ""
    m = compute_metrics(df, nb_resources=10)
    # job5 now counts requested q=2: busy = 80 + 60 + 0 + 2*5 = 150
    assert m["utilisation"] == pytest.approx(150 / 550)
    assert compute_metrics(df)["nb_resources"] == 7  # still max id 6 + 1 (job3)


def test_batsim_means_divide_by_all_jobs(small: Path) -> None:
    m = compute_metrics(small)
    # sums over finished jobs / nb_jobs = 5 (rejected included)
    assert m["batsim_means"]["mean_waiting_time"] == pytest.approx(45 / 5)  # 9 (vs 11.25 over executed)
    assert m["batsim_means"]["mean_turnaround_time"] == pytest.approx(100 / 5)  # 20 (vs 25)
    # Batsim's stretch column: 1 + 1.5 + 2e6 (job3: 20/1e-5) + 3 = 2000005.5 -> /5 = 400001.1
    assert m["batsim_means"]["mean_slowdown"] == pytest.approx(400001.1)


def test_dataframe_and_path_agree(small: Path) -> None:
    a = compute_metrics(small)
    b = compute_metrics(read_jobs_csv(small))
    assert a.pop("source") == str(small) and b.pop("source") is None
    assert a == b


# --------------------------------------------------------------------------- edge cases


def test_empty_file(mdir: Path) -> None:
    m = compute_metrics(mdir / "empty_jobs.csv")
    assert m["nb_jobs"] == 0 and m["nb_executed"] == 0
    assert m["by_state"] == dict.fromkeys(FINAL_STATES, 0)
    assert m["wait"] == dict.fromkeys(("mean", "median", "p50", "p90", "p99", "max"))
    assert m["bounded_slowdown"] == dict.fromkeys(("mean", "median", "p50", "p90", "p99", "max"))
    for key in ("makespan", "makespan_from_zero", "first_submit", "throughput_per_hour", "utilisation"):
        assert m[key] is None
    assert m["nb_resources"] is None
    assert m["batsim_means"] == {
        "mean_waiting_time": None,
        "mean_turnaround_time": None,
        "mean_slowdown": None,
    }
    json.dumps(m, allow_nan=False)
    assert "0" in format_metrics(m) and "nan" not in format_metrics(m) and "n/a" in format_metrics(m)


def test_all_rejected(mdir: Path) -> None:
    m = compute_metrics(mdir / "all_rejected_jobs.csv", nb_resources=4)
    assert (m["nb_jobs"], m["nb_executed"], m["nb_rejected"]) == (2, 0, 2)
    assert m["first_submit"] == 50.0
    assert m["last_finish"] is None and m["makespan"] is None
    assert m["response"]["mean"] is None and m["slowdown"]["max"] is None
    assert m["utilisation"] is None
    # Batsim divides a zero sum by nb_jobs = 2
    assert m["batsim_means"]["mean_waiting_time"] == 0.0
    json.dumps(m, allow_nan=False)


def test_format_metrics(small: Path) -> None:
    text = format_metrics(compute_metrics(small))
    for needle in (
        "11.250",  # mean wait
        "12.500",  # median wait
        "25.000",  # mean response
        "1.500",  # mean BSLD
        "tau=10s",
        "55.000",  # makespan
        "155.000",  # makespan from 0
        "0.4026",  # utilisation 155/385
        "7 (inferred from the highest allocated machine id, a lower bound: give --platform or --nb-resources)",
        "400001.100",  # Batsim mean slowdown
        "rejected jobs excluded",
        "COMPLETED_KILLED",
    ):
        assert needle in text, needle
    widths = {line.index("11.250") for line in text.splitlines() if "wait (s)" in line}
    assert len(widths) == 1


@pytest.mark.slow
def test_large_file_is_fast(tmp_path: Path) -> None:
    # 30,000 distinct rows written 10 times = 300,000 rows (fast to generate)
    n = 30_000
    rng = np.random.default_rng(0)
    r = np.arange(n) * 10.0
    s = r + rng.integers(0, 500, n)
    p = rng.integers(0, 5000, n).astype(float)
    q = rng.integers(1, 64, n)
    a = rng.integers(0, 1000, n)
    rejected = np.arange(n) % 50 == 0
    alloc = [f"{x}-{x + y - 1} {x + y + 3}" for x, y in zip(a.tolist(), q.tolist(), strict=True)]
    df = pd.DataFrame({
        "job_id": [f"j{i}" for i in range(n)], "workload_name": "w0", "profile": "p",
        "submission_time": r, "requested_number_of_resources": q, "requested_time": 6000.0,
        "success": (~rejected).astype(int),
        "final_state": np.where(rejected, "REJECTED", "COMPLETED_SUCCESSFULLY"),
        "starting_time": s, "execution_time": p, "finish_time": s + p, "waiting_time": s - r,
        "turnaround_time": s + p - r, "stretch": (s + p - r) / np.maximum(p, 1e-5),
        "allocated_resources": np.where(rejected, "", alloc), "consumed_energy": -1.0, "metadata": "",
    })  # fmt: skip
    times = ["starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time"]
    df.loc[rejected, [*times, "stretch", "consumed_energy"]] = np.nan
    body = df.to_csv(index=False, header=False, float_format="%.6f")
    path = tmp_path / "big_jobs.csv"
    path.write_text(HEADER + "\n" + body * 10)
    t0 = time.perf_counter()
    m = compute_metrics(path)
    elapsed = time.perf_counter() - t0
    assert m["nb_jobs"] == 10 * n and m["nb_rejected"] == 10 * n // 50
    assert m["nb_resources"] == int(np.max((a + q + 3)[~rejected])) + 1
    assert elapsed < 10, elapsed
