"""End to end on the embedded engine: EASY wrapped by the feedback model, on the first 3,000 jobs of
KTH-SP2 (data/swf, always present).  Every job of the trace must be submitted exactly once and
accounted for (completed, killed at walltime or rejected), with its original submit time in the
metadata; on 50 nodes the jobs larger than the platform are rejected and still release their
sessions."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf
from batfeed.platforms.generate import write_homogeneous_platform
from batfeed.schedulers.easy import Easy
from batfeed.users import UserModelScheduler

from batfeed.engine import EngineConfig, simulate
from batfeed.metrics import compute_lateness, parse_replay_metadata, read_jobs_csv

N = 3000


@pytest.fixture(scope="module")
def kth_head(tmp_path_factory: pytest.TempPathFactory, kth_trace_path: Path) -> Path:
    out = tmp_path_factory.mktemp("kth")
    wl_path = convert_swf(kth_trace_path, out).workload_path
    wl = json.loads(wl_path.read_text())
    wl["jobs"] = sorted(wl["jobs"], key=lambda j: j["subtime"])[:N]
    head = out / "kth_head.json"
    head.write_text(json.dumps(wl))
    return head


@pytest.fixture(scope="module")
def kth_trace_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"


@pytest.mark.parametrize(("model", "nodes"), [("a60", 100), ("a0", 50)])
def test_easy_feedback_submits_every_job_once(tmp_path: Path, kth_head: Path, model: str, nodes: int) -> None:
    trace = {str(j["id"]): j for j in json.loads(kth_head.read_text())["jobs"]}
    platform = write_homogeneous_platform(tmp_path / "p.xml", nodes)
    layer = UserModelScheduler({"scheduler": "easy", "scheduler_options": {"theta": None}, "users": model,
                                "trace": str(kth_head)})
    assert isinstance(layer.inner, Easy)
    result = simulate(platform, [], layer, export=tmp_path / "run", config=EngineConfig(enable_dynamic_jobs=True))

    with open(result.jobs_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    ids = [r["job_id"] for r in rows]
    assert len(ids) == len(set(ids)) == N                 # once each ...
    assert set(ids) == set(trace)                         # ... and exactly the trace's jobs
    c = result.counts
    assert c["submitted"] == N
    assert c["completed_successfully"] + c["completed_walltime_reached"] + c["rejected"] == N
    big = sum(1 for j in trace.values() if j["res"] > nodes)
    assert c["rejected"] == big and (big > 0) == (nodes == 50)
    m = layer.model
    assert m.exhausted and m.nb_submitted == N
    assert all(t is not None for t in m.submitted_at) and all(t is not None for t in m.ended_at)
    # the metadata carries each job's original submit; the replayed submit is the registration time
    df = read_jobs_csv(result.jobs_csv)
    orig, users = parse_replay_metadata(df["metadata"])
    assert all(orig[i] == trace[jid]["subtime"] for i, jid in enumerate(df["job_id"]))
    assert all(users[i] == str(trace[jid]["user"]) for i, jid in enumerate(df["job_id"]))
    late = compute_lateness(df)
    assert late["n"] == N and late["nb_untagged"] == 0
    # sessions without predecessor replay at their recorded time: the first job is never late
    first = min(trace.values(), key=lambda j: (j["subtime"], str(j["id"])))
    assert float(df.loc[df["job_id"] == str(first["id"]), "submission_time"].iloc[0]) == first["subtime"]
