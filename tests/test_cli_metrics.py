"""Metrics are right by default (issue 13, item 7): the platform size comes from the run, percentiles of
wait and slowdown, no "nan" for an empty statistic.  Through the real CLI in a subprocess."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from cli_helpers import error_line, run_cli

WEEK = 7 * 86400


@pytest.fixture(scope="module")
def run126(tmp_path_factory) -> tuple[Path, Path]:
    """126 one-machine jobs on 100 machines, 20 running at a time: FCFS uses machines 0-19 only."""
    tmp = tmp_path_factory.mktemp("m126")
    platform = write_homogeneous_platform(tmp / "p100.xml", 100)
    jobs = [{"id": i, "subtime": 10 * (i // 20), "res": 1, "walltime": 100, "profile": "d10"} for i in range(126)]
    wl = tmp / "w.json"
    wl.write_text(json.dumps({"nb_res": 100, "jobs": jobs, "profiles": {"d10": {"type": "delay", "delay": 10}}}))
    proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", "fcfs", "-o", str(tmp / "run")], tmp)
    assert proc.returncode == 0, proc.stderr
    return tmp / "run_jobs.csv", platform


def test_platform_size_comes_from_the_runs_schedule_csv(run126, tmp_path):
    jobs, _ = run126
    proc = run_cli(["metrics", str(jobs), "--json"], tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    m = json.loads(proc.stdout)
    assert (m["nb_resources"], m["nb_resources_source"]) == (100, "schedule")
    assert m["nb_resources_from"] == f"{jobs.with_name('run_schedule.csv')} nb_computing_machines"
    # 126 jobs x 10 s of one machine over [0, 70) on 100 machines
    assert m["utilisation"] == pytest.approx(126 * 10 / (70 * 100))
    # percentiles of wait and (bounded) slowdown, numpy's linear interpolation
    frame = pd.read_csv(jobs)
    wait = frame["waiting_time"].to_numpy()
    slowdown = (frame["turnaround_time"] / frame["execution_time"]).to_numpy()
    for key, values in (("wait", wait), ("slowdown", slowdown), ("bounded_slowdown", np.maximum(1, slowdown))):
        for p in (50, 90, 99):
            assert m[key][f"p{p}"] == pytest.approx(float(np.percentile(values, p))), (key, p)
    text = run_cli(["metrics", str(jobs)], tmp_path).stdout
    assert re.search(r"resources N +100 \(from .*run_schedule\.csv nb_computing_machines\)", text)
    assert "0.1800 (18.00 %)" in text
    assert re.search(r"^ +mean +p50 +p90 +p99 +max$", text, re.M)
    assert re.search(r"^  wait \(s\) +0\.000 +0\.000 +0\.000 +0\.000 +0\.000$", text, re.M)


def test_platform_option_and_the_inferred_fallback_warns(run126, tmp_path):
    jobs, platform = run126
    alone = tmp_path / "copy.csv"
    shutil.copy(jobs, alone)
    proc = run_cli(["metrics", str(alone)], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [
        "batfeed metrics: warning: platform size unknown (no --platform or --nb-resources, no _schedule.csv next "
        "to the jobs file): N = 20, the highest allocated machine id + 1; the utilisation may be overestimated"]
    assert "20 (inferred from the highest allocated machine id, a lower bound: give --platform or --nb-resources)" \
        in proc.stdout
    proc = run_cli(["metrics", str(alone), "--platform", str(platform), "--json"], tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    m = json.loads(proc.stdout)
    assert (m["nb_resources"], m["nb_resources_source"], m["nb_resources_from"]) == (100, "platform", str(platform))
    m = json.loads(run_cli(["metrics", str(jobs), "--nb-resources", "50", "--json"], tmp_path).stdout)
    assert (m["nb_resources"], m["nb_resources_source"]) == (50, "argument")


@pytest.mark.parametrize("args,message", [
    (["--tau", "0"], "tau must be > 0, got 0.0"),
    (["--nb-resources", "0"], "nb_resources must be a positive integer, got 0"),
])
def test_bad_parameters_are_one_line_errors(run126, tmp_path, args, message):
    jobs, _ = run126
    error_line(run_cli(["metrics", str(jobs), *args], tmp_path), "metrics", re.escape(message))


def test_a_broken_schedule_csv_is_named(run126, tmp_path):
    jobs, _ = run126
    shutil.copy(jobs, tmp_path / "x_jobs.csv")
    (tmp_path / "x_schedule.csv").write_text("makespan,nb_computing_machines\n1.0,zero\n")
    proc = run_cli(["metrics", str(tmp_path / "x_jobs.csv")], tmp_path)
    error_line(proc, "metrics", re.escape(f"{tmp_path / 'x_schedule.csv'}:2: nb_computing_machines must be an integer "
                                          "> 0, got 'zero'"))


def test_empty_statistics_print_na_not_nan(tmp_path):
    empty = tmp_path / "e_jobs.csv"
    shutil.copy(Path(__file__).parent / "data" / "metrics" / "empty_jobs.csv", empty)
    proc = run_cli(["metrics", str(empty)], tmp_path)
    assert proc.returncode == 0 and "nan" not in proc.stdout.lower().replace("n/a", "")
    assert re.search(r"^  wait \(s\) +n/a +n/a +n/a +n/a +n/a$", proc.stdout, re.M)


def test_validate_week_without_scored_jobs_prints_na(tmp_path):
    # no recorded waits (no swf_wait): every target-week job is unscored
    jobs = [{"id": i, "subtime": s, "res": 1, "walltime": 100, "profile": "d5"}
            for i, s in enumerate([0, 100, WEEK + 10, WEEK + 20], 1)]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"d5": {"type": "delay", "delay": 5}}}))
    proc = run_cli(["validate", str(trace), "--out", str(tmp_path / "v"), "--no-plots"], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("week 1:"))
    assert re.fullmatch(r"week 1: 0 jobs scored \(2 not\), error mean n/a, median n/a, std n/a; 0 contention-bound "
                        r"jobs: mean n/a, median n/a; simulated in \d+\.\d\d s", line), line
    assert "nan" not in proc.stdout
