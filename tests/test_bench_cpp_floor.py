"""The C++ floor of benchmarks/drivers.py does the work of batfeed's EASY-FCFS and FCFS: same start times."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pandas as pd
import pytest

from batfeed.api import simulate_jobs

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("cpp_floor", ROOT / "benchmarks" / "cpp_floor.py")
cpp_floor = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpp_floor)

pytestmark = pytest.mark.skipif(cpp_floor.compiler() is None, reason="no C++ compiler")


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    path, how = cpp_floor.build(tmp_path_factory.mktemp("floor"))
    assert path is not None, how
    return path


def workload(seed: int, n: int = 400, machines: int = 16) -> pd.DataFrame:
    """Integer times (exact sums), ties of submissions, jobs killed at their walltime, jobs without
    walltime, and jobs too large for the platform (rejected)."""
    rng = random.Random(seed)
    rows, t = [], 0
    for i in range(n):
        t += rng.choice((0, 0, 1, 5, 30, 200))
        wall = rng.choice((60, 300, 600, 3600))
        run = rng.randint(1, wall + 100) if rng.random() < 0.9 else wall * 2
        if rng.random() < 0.05:
            wall = -1
        res = rng.randint(1, machines) if rng.random() < 0.98 else machines + 3
        rows.append({"id": i + 1, "subtime": float(t), "res": res, "walltime": float(wall), "runtime": float(run)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("mode", ["easy", "fcfs"])
def test_floor_starts_jobs_when_batfeed_does(exe, tmp_path, seed, mode):
    jobs = workload(seed)
    order = sorted(jobs.itertuples(), key=lambda j: (j.subtime, str(j.id)))   # Batsim's submission order
    path = tmp_path / "jobs.txt"
    cpp_floor.write_jobs(path, 16, [(j.subtime, j.res, j.walltime, j.runtime) for j in order])
    floor = cpp_floor.run(exe, mode, path, repeat=2)
    out = simulate_jobs(jobs, nb_machines=16, scheduler=mode)
    started = out["starting_time"].notna()
    assert floor["started"] == started.sum()
    assert floor["rejected"] == (~started).sum() > 0
    assert floor["sum_start"] == out["starting_time"].sum()
    assert floor["mean_wait"] == pytest.approx(out["waiting_time"].mean(), rel=1e-12)
    assert floor["makespan"] == out["finish_time"].max()
    assert floor["seconds"] > 0


def test_dump_workload_and_ratio_cell(tmp_path):
    wl = tmp_path / "w.json"
    wl.write_text('{"nb_res": 4, "jobs": [{"id": 10, "subtime": 5, "res": 2, "walltime": 60, "profile": "a"},'
                  '{"id": 9, "subtime": 5, "res": 1, "walltime": -1, "profile": "b"}],'
                  '"profiles": {"a": {"type": "delay", "delay": 30}, "b": {"type": "delay", "delay": 7.5}}}')
    assert cpp_floor.dump_workload(wl, tmp_path / "j.txt") == 2
    # "10" < "9" as strings: Batsim's order for equal submission times
    assert (tmp_path / "j.txt").read_text() == "4 2\n5.0 2 60.0 30.0\n5.0 1 -1.0 7.5\n"
    floor = {"easy": {"seconds": 0.01}, "fcfs": {"seconds": 0.002}}
    assert cpp_floor.ratio_cell(1.0, "easy", {}, floor) == "100 easy"
    assert cpp_floor.ratio_cell(1.0, "fcfs", {}, floor) == "500 fcfs"
    assert cpp_floor.ratio_cell(2.0, "easy", {"policy": "SQF"}, floor) == "200 easy*"
    assert cpp_floor.ratio_cell(2.0, "los", {}, floor) == "200 easy*"
    assert cpp_floor.ratio_cell(2.0, "los", {}, None) == "-"
