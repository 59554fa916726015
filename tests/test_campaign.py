"""``batfeed campaign`` end to end (issue 14): 2 traces × 3 schedulers × 2 seeds, interrupted with
SIGINT half way and resumed, gives the table of an uninterrupted run; so does a Dask LocalCluster.

Tables are compared on every column but the wall-clock ones (``WALL_CLOCK_COLUMNS``: ``wall_s``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from batfeed.campaign import WALL_CLOCK_COLUMNS, run_campaign

SPEC = Path(__file__).resolve().parent / "data" / "campaign" / "small.toml"
CLI = [sys.executable, "-P", "-m", "batfeed"]


def table(root: Path) -> pd.DataFrame:
    """The CSV table without its wall-clock columns (and the Parquet one equals it)."""
    csv = pd.read_csv(root / "results.csv")
    parquet = pd.read_parquet(root / "results.parquet")
    assert list(parquet.columns) == list(csv.columns) and len(parquet) == len(csv)
    return csv.drop(columns=list(WALL_CLOCK_COLUMNS))


def complete_runs(root: Path) -> list[str]:
    runs = root / "runs"
    return sorted(p.name for p in runs.iterdir() if not p.name.startswith(".")) if runs.is_dir() else []


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The campaign run once, uninterrupted, by the CLI (2 local workers)."""
    root = tmp_path_factory.mktemp("campaign") / "reference"
    proc = subprocess.run([*CLI, "campaign", str(SPEC), "-o", str(root), "--workers", "2"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "12 runs (9 simulations); 0 runs reused" in proc.stdout
    return root


def test_uninterrupted_table(reference: Path) -> None:
    t = table(reference)
    assert len(t) == 12 and (t["status"] == "ok").all() and t["error"].isna().all()
    assert list(t["run"]) == list(range(12))                              # expansion order, not completion order
    assert list(t["trace"]) == ["kth"] * 6 + ["kth200"] * 6
    assert list(t["scheduler"]) == ["fcfs", "fcfs", "easy", "easy", "easy", "easy"] * 2
    assert list(t["seed"]) == [1, 2] * 6
    # kth is shaken: each seed is its own run; kth200 is not: seeds 1 and 2 share one simulation
    kth, kth200 = t[t["trace"] == "kth"], t[t["trace"] == "kth200"]
    assert kth["seed_used"].all() and kth["key"].nunique() == 6
    assert not kth200["seed_used"].any() and kth200["key"].nunique() == 3
    assert kth["wait.mean"].nunique() == 6
    assert (t["nb_jobs"] == [1500] * 6 + [200] * 6).all()
    for rel in t["jobs_csv"].tolist() + t["manifest"].tolist():
        assert (reference / rel).is_file(), rel
    assert (reference / "spec.toml").read_text() == SPEC.read_text()
    assert (reference / "campaign.json").is_file()


def test_sigint_half_way_then_resume_equals_uninterrupted(reference: Path, tmp_path: Path) -> None:
    root = tmp_path / "interrupted"
    cmd = [*CLI, "campaign", str(SPEC), "-o", str(root), "--workers", "1"]
    # SIGINT back to its default in the child: a suite started in the background by a non-interactive shell
    # inherits it ignored, and Python then never turns it into KeyboardInterrupt (the campaign would run on)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(complete_runs(root)) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert proc.poll() is None, "the campaign ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"resume with: batfeed campaign {SPEC} -o {root}" in err and "Traceback" not in err
    half = table(root)
    done = (half["status"] == "ok").sum()
    assert 3 <= done < 12 and set(half["status"]) == {"ok", "pending"}
    assert not [p for p in (root / "runs").iterdir() if p.name.startswith(".tmp-")]    # no partial run left
    for key in complete_runs(root):                 # every run directory on disk is complete
        assert (root / "runs" / key / "result.json").is_file()

    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"{done} runs reused" in proc.stdout
    pd.testing.assert_frame_equal(table(root), table(reference))

    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)     # finished: nothing to run
    assert proc.returncode == 0 and "12 runs reused (9 simulations done before); 0 to run" in proc.stdout
    pd.testing.assert_frame_equal(table(root), table(reference))


def test_dask_local_cluster_gives_the_same_table(reference: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cl:
        out = run_campaign(SPEC, tmp_path / "dask", executor="dask", scheduler_address=cl.scheduler_address,
                           progress=False)
    assert (out["status"] == "ok").all()
    pd.testing.assert_frame_equal(table(tmp_path / "dask"), table(reference))


def test_dask_without_address_starts_a_local_cluster(reference: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    root = tmp_path / "dask_cli"
    proc = subprocess.run([*CLI, "campaign", str(SPEC), "-o", str(root), "--executor", "dask", "--workers", "2"],
                          capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stderr
    assert "on a Dask LocalCluster of 2 worker process(es)" in proc.stdout
    pd.testing.assert_frame_equal(table(root), table(reference))


def test_runs_are_dispatched_largest_workload_first_ties_in_spec_order(tmp_path):
    from batfeed.campaign.execute import RunTask, longest_first

    sizes = {"a": 10, "b": 300, "c": 10, "d": 2000}
    tasks = []
    for key, n in sizes.items():
        (tmp_path / f"{key}.json").write_text("x" * n)
        tasks.append(RunTask(key, str(tmp_path), str(tmp_path / f"{key}.json"), "p.xml", "easy", {}))
    tasks.append(RunTask("e", str(tmp_path), str(tmp_path / "made-by-the-run.json"), "p.xml", "easy", {}))
    assert [t.key for t in longest_first(tasks)] == ["d", "b", "a", "c", "e"]
