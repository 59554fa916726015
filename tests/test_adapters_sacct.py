"""Slurm sacct --parsable2 (adapters/sacct.py).

Fixture tests/data/adapters/sacct_sample.txt (header line, 2020-01-01 UTC): 1001 ran 1 h on n[01-02]
(8 CPUs), its step 1001.batch, array element 1002_1 cancelled after 1 day, 1003 pending (start
Unknown), 1004 still running, 1005 limit UNLIMITED, 1006 limit Partition_Limit (elapsed "01:00" =
60 s), a 5-field line, 1007 with month 13, 1008 cancelled at start (elapsed 0).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from batfeed.adapters.nodes import expand_hostlist
from batfeed.adapters.sacct import DEFAULT_FIELDS, convert_sacct

from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "adapters"
SAMPLE = DATA / "sacct_sample.txt"
JAN1 = 1577836800  # 2020-01-01T00:00:00 UTC


def test_hostlists() -> None:
    assert expand_hostlist("cpn-f13-03-[01-02],cpn-f13-04-[01-02]") == [
        "cpn-f13-03-01", "cpn-f13-03-02", "cpn-f13-04-01", "cpn-f13-04-02"]
    assert expand_hostlist("n[1,3-4]x,m") == ["n1x", "n3x", "n4x", "m"]
    assert expand_hostlist("r[1-2]n[08-09]") == ["r1n08", "r1n09", "r2n08", "r2n09"]
    for bad in ("n[1-", "n[a-b]", "n[3-1]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


def test_sample(tmp_path: Path) -> None:
    res = convert_sacct([SAMPLE], tmp_path)
    rep = res.report
    assert (rep["read"], rep["kept"]) == (10, 5)
    assert rep["dropped"] == {"job_step": 1, "never_started": 1, "no_end_record": 1, "corrupt_line": 2}
    assert rep["first_dropped"]["corrupt_line"] == ["line 9: job 1099", "line 10: job 1007"]
    assert rep["modified"] == {"missing_request": 2, "zero_runtime_set_to_1s": 1}
    wl = json.loads(res.workload_path.read_text())
    assert wl["unix_start"] == JAN1
    assert [(j["original_id"], j["subtime"], j["res"], j["walltime"], wl["profiles"][j["profile"]]["delay"],
             j["status"]) for j in wl["jobs"]] == [
        ("1001", 0, 8, 7200, 3600, "COMPLETED"), ("1002_1", 600, 4, 172800, 86400, "CANCELLED"),
        ("1005", 3000, 4, -1, 300, "TIMEOUT"), ("1006", 3600, 2, -1, 60, "COMPLETED"),
        ("1008", 4800, 1, 1800, 1, "CANCELLED")]
    first = wl["jobs"][0]
    assert (first["user"], first["account"], first["partition"], first["trace_wait"], first["hosts"]) == (
        "alice", "acc1", "batch", 10, ["n01", "n02"])
    # platform from the node lists: n01, n02 (4 CPUs each: 8 over 2 nodes), n03 4, n04 4, n05 1
    assert res.nb_res == 17 and rep["platform_size_from"] == "nodelist"


def test_time_zone_and_nodes_unit(tmp_path: Path) -> None:
    res = convert_sacct([SAMPLE], tmp_path, tz="Europe/Prague", unit="nodes")
    wl = json.loads(res.workload_path.read_text())
    assert wl["unix_start"] == JAN1 - 3600 and res.report["time_zone"] == "Europe/Prague"
    assert [j["res"] for j in wl["jobs"]] == [2, 1, 1, 1, 1] and res.nb_res == 5


def test_headerless_default_fields_gzip_and_walltime_fallback(tmp_path: Path) -> None:
    lines = SAMPLE.read_text().splitlines()[1:]
    path = tmp_path / "noheader.log.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert len(DEFAULT_FIELDS) == 26
    res = convert_sacct([path], tmp_path / "out", walltime_fallback="2x")
    wl = json.loads(res.workload_path.read_text())
    assert res.report["read"] == 10 and res.workload_path.name == "noheader.json"
    assert [j["walltime"] for j in wl["jobs"]][2:4] == [600, 120]


def test_strict(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        convert_sacct([SAMPLE], tmp_path, strict=True)
    assert str(err.value) == f"{SAMPLE}:9: job 1099: corrupt line: expected 26 '|'-separated fields, found 5"


def test_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text("JobID|Submit|End\n1|2020-01-01T00:00:00|2020-01-01T00:00:01\n")
    with pytest.raises(InputError, match=r"x.txt:2: the sacct columns lack start, state"):
        convert_sacct([path], tmp_path)


@pytest.mark.parametrize("name,jobs,states", [
    ("pozidriv", 11_704, {"COMPLETED": 10_134, "FAILED": 1_007, "CANCELLED": 468, "PREEMPTED": 86, "TIMEOUT": 9}),
    ("phillips", 4_285, {"COMPLETED": 2_324, "FAILED": 1_717, "CANCELLED": 243, "TIMEOUT": 1}),
])
def test_real_xdmod_files(shared_data: Path, tmp_path: Path, name: str, jobs: int, states: dict) -> None:
    path = shared_data / "slurm_sacct" / f"xdmod-referencedata-{name}.sacct.log.gz"
    res = convert_sacct([path], tmp_path)
    rep = res.report
    assert rep["read"] == rep["kept"] == jobs and rep["dropped"] == {}
    wl = json.loads(res.workload_path.read_text())
    counts: dict[str, int] = {}
    for j in wl["jobs"]:
        counts[j["status"]] = counts.get(j["status"], 0) + 1
    assert counts == states
    assert max(j["nodes"] for j in wl["jobs"]) == (4 if name == "pozidriv" else 8)
    assert max(j["res"] for j in wl["jobs"]) == (80 if name == "pozidriv" else 64)
    # elapsed 00:00:00 jobs: run time set to 1 s; Partition_Limit time limits: missing request
    expected = {"pozidriv": {"missing_request": 58, "zero_runtime_set_to_1s": 1031},
                "phillips": {"zero_runtime_set_to_1s": 261}}[name]
    assert rep["modified"] == expected
