"""evalys (oar-team's analysis toolkit, a dev dependency) reads batfeed's ``_jobs.csv`` and agrees with it.

The first 500 KTH-SP2 jobs are simulated with EASY backfilling twice: on the trace's 100 processors
(492 jobs complete, 8 reach their walltime: COMPLETED_WALLTIME_REACHED, killed by the engine) and on
64 processors (the 7 jobs wider than 64 are REJECTED: empty start, finish and allocation, as Batsim
writes them).  ``evalys.jobset.JobSet.from_csv`` loads both files unchanged: every job, with its id,
start and finish; rejected jobs get an empty allocation (0 processors) and are left out of evalys'
utilisation, as batfeed leaves them out of its own.  evalys' mean utilisation is a mean number of busy
processors (batfeed's ``mean_busy_resources``), over [first start, last finish] by default; it cannot
start a window before the first start (NotImplemented in evalys 4.0.7), so the windows compared here
start at a job start.  Without ``resource_bounds`` evalys sizes the platform from the lowest to the
highest allocated processor.  Skipped when evalys is not installed.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from batfeed.adapters.swf import convert_swf
from batfeed.platforms.generate import write_homogeneous_platform

from batfeed.metrics import compute_metrics
from batfeed.runner import run_simulation

evalys_jobset = pytest.importorskip("evalys.jobset", reason="evalys not installed (dev dependency)")

REL = 1e-6
# evalys 4.0.7 calls DataFrame.rename(inplace=True), deprecated by pandas (its problem, not ours)
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, int]]:
    """{name: (_jobs.csv, processors)}: the first 500 KTH-SP2 jobs under EASY on 100 and 64 processors."""
    kth = Path(__file__).resolve().parent.parent / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
    tmp = tmp_path_factory.mktemp("evalys")
    conv = convert_swf(kth, tmp / "wl", max_jobs=500)
    small = write_homogeneous_platform(tmp / "p64.xml", 64)
    out = {}
    for name, platform, n in (("kth", conv.platform_path, 100), ("kth64", small, 64)):
        run_simulation(platform, [conv.workload_path], scheduler="easy", export=tmp / name)
        out[name] = (tmp / f"{name}_jobs.csv", n)
    return out


def load(path: Path, n: int | None = None):
    return evalys_jobset.JobSet.from_csv(str(path), resource_bounds=(0, n - 1) if n else None)


@pytest.mark.parametrize("name, states", [
    ("kth", {"COMPLETED_SUCCESSFULLY": 492, "COMPLETED_WALLTIME_REACHED": 8}),
    ("kth64", {"COMPLETED_SUCCESSFULLY": 486, "COMPLETED_WALLTIME_REACHED": 7, "REJECTED": 7}),
])
def test_evalys_reads_every_job(runs, name, states):
    path, n = runs[name]
    ours = pd.read_csv(path, dtype={"job_id": str})
    js = load(path)
    df = js.df
    assert ours["final_state"].value_counts().to_dict() == states
    assert len(df) == len(ours) == 500
    assert list(df["jobID"]) == list(ours["job_id"])
    for col in ("submission_time", "starting_time", "finish_time"):
        pd.testing.assert_series_equal(df[col], ours[col], check_names=False, rtol=0, atol=1e-6)
    rejected = (ours["final_state"] == "REJECTED").to_numpy()
    assert (df["proc_alloc"][rejected] == 0).all()
    executed = df[~rejected]
    assert (executed["proc_alloc"] == executed["requested_number_of_resources"]).all()
    assert (js.MaxProcs, str(js.res_bounds)) == (n, f"0-{n - 1}")  # every processor used at least once


@pytest.mark.parametrize("name", ["kth", "kth64"])
def test_evalys_utilisation_is_batfeeds(runs, name):
    path, n = runs[name]
    m = compute_metrics(path)
    js = load(path, n)
    t0, t1 = m["utilisation_window"]
    first_start = js.df["starting_time"].min()
    assert t0 == first_start == 0.0  # both windows start at the first submission (a start here)
    ev_mean = js.mean_utilisation()  # default window: first start to last finish
    assert ev_mean == pytest.approx(m["mean_busy_resources"], rel=REL)
    assert js.mean_utilisation(t0, t1) == pytest.approx(m["mean_busy_resources"], rel=REL)
    assert ev_mean / js.MaxProcs == pytest.approx(m["utilisation"], rel=REL)
    # a window cutting through running jobs: both clip them the same way
    starts = sorted(js.df["starting_time"].dropna())
    a, b = starts[len(starts) // 4], starts[3 * len(starts) // 4]
    part = compute_metrics(path, window=(a, b))
    assert js.mean_utilisation(a, b) == pytest.approx(part["mean_busy_resources"], rel=REL)
    # the load curve never exceeds the platform
    assert js.utilisation["load"].max() <= n and not math.isnan(ev_mean)
