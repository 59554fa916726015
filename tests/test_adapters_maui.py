"""Maui workload/resource traces and the Maui export (adapters/maui.py).

Fixture tests/data/adapters/maui_workload.txt: j1 Completed (2 nodes, 4 tasks, 1000 s), j2 Removed
after running 300 s (2 tasks × 2 procs per task), j3 NotRun, j4 a 42-field line (older layout),
j5 a non-numeric wallclock limit, j6 a 10-field line, j7 run 200 s > limit 100 s.
maui_resources.txt: n01 (4 procs), n02 (4 procs, speed 2.0), n03 DRAINED, n04 DEFINED (2 procs),
and a 5-field line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batfeed.adapters.maui import NB_FIELDS, convert_maui, export_maui, read_maui_resources
from batfeed.adapters.swf import convert_swf

from batfeed.engine.events import load_events
from batfeed.engine.platform import load_platform
from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "adapters"
WORKLOAD = DATA / "maui_workload.txt"
RESOURCES = DATA / "maui_resources.txt"


def _load(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def _comparable(wl: dict) -> list[tuple]:
    """(id, subtime, res, walltime, delay, user) of every job."""
    return [(str(j["id"]), j["subtime"], j["res"], j["walltime"], wl["profiles"][j["profile"]]["delay"],
             str(j.get("user"))) for j in wl["jobs"]]


def test_workload_and_resources(tmp_path: Path) -> None:
    res = convert_maui(WORKLOAD, tmp_path, resources=RESOURCES)
    rep = res.report
    assert (rep["read"], rep["kept"]) == (7, 4)
    assert rep["dropped"] == {"corrupt_line": 2, "never_started": 1}
    assert rep["first_dropped"]["corrupt_line"] == ["line 7: job j5", "line 8: job j6"]
    assert rep["warnings"]["runtime_reaches_request"] == 1
    wl = _load(res.workload_path)
    assert [(j["original_id"], j["subtime"], j["res"], j["walltime"], wl["profiles"][j["profile"]]["delay"])
            for j in wl["jobs"]] == [("j1", 0, 4, 3600, 1000), ("j2", 100, 4, 7200, 300), ("j4", 300, 1, 600, 100),
                                     ("j7", 600, 2, 100, 200)]
    j1, j2 = wl["jobs"][0], wl["jobs"][1]
    assert (j1["user"], j1["group"], j1["queue"], j1["account"], j1["hosts"], j1["nodes"]) == (
        "alice", "g1", "batch", "acct1", ["n01", "n02"], 2)
    assert (j2["status"], j2["queue"], j2["trace_wait"]) == ("Removed", "long", 100)
    assert wl["unix_start"] == 1000
    # platform: one host per processor, n01 0-3, n02 4-7 (2 Gflop/s), n03 8-11, n04 12-13
    assert res.nb_res == 14 and rep["resources"]["corrupt_lines"] == 1
    hosts = load_platform(res.platform_path).compute
    assert [h.name for h in hosts][4] == "n02_c00" and hosts[4].speed == 2e9 and hosts[0].speed == 1e9
    events = load_events([tmp_path / "maui_workload_events.txt"], 14)
    assert [(e.timestamp, e.type, e.resources) for e in events] == [(0.0, "machine_unavailable", [(8, 13)])]
    assert rep["resources"]["unavailable_from_start"] == ["n03", "n04"]


def test_nodes_unit(tmp_path: Path) -> None:
    res = convert_maui(WORKLOAD, tmp_path, resources=RESOURCES, unit="nodes", procs_per_node=4)
    wl = _load(res.workload_path)
    assert res.nb_res == 4 and [j["res"] for j in wl["jobs"]] == [2, 1, 1, 1]  # j2: 4 procs / 4 per node
    assert [(h.name, h.cores) for h in load_platform(res.platform_path).compute] == [
        ("n01", 4), ("n02", 4), ("n03", 4), ("n04", 2)]


def test_strict(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        convert_maui(WORKLOAD, tmp_path, strict=True)
    assert str(err.value) == f"{WORKLOAD}:7: job j5: field wallclock limit is not a number: 'abc'"
    with pytest.raises(InputError, match=r"maui_resources.txt:6: corrupt line: expected 21 fields, found 5"):
        read_maui_resources(RESOURCES)


def test_export_fields(tmp_path: Path) -> None:
    conv = convert_swf(DATA.parent / "cli" / "tiny.swf", tmp_path / "in")
    exp = export_maui(conv.workload_path, tmp_path / "maui", epoch=1_000_000)
    lines = exp.workload_path.read_text().splitlines()
    assert lines[0] == "VERSION 230" and len(lines) == 7
    assert all(len(line.split()) == NB_FIELDS for line in lines[1:])
    f = lines[1].split()
    # job 1: 4 tasks, submit 1,000,000, no recorded wait, 100 s, limit 200 s (tiny.swf)
    assert (f[0], f[1], f[2], f[6], f[8], f[9], f[10], f[11]) == (
        "1", "0", "4", "Completed", "1000000", "1000000", "1000000", "1000100")
    assert exp.report["modified"] == {"missing_walltime_set_to_runtime": 1}  # job 6 has no request
    assert len(exp.resources_path.read_text().splitlines()) == 1 + 8
    assert "SIMJOBSUBMISSIONPOLICY NORMAL" in exp.report["maui_cfg"]


def test_kth_export_import_equals_input(kth_trace: Path, tmp_path: Path) -> None:
    """Batsim workload -> Maui trace -> Batsim workload gives the same jobs (ids, submit, size,
    request, run time, user) and the same platform size."""
    conv = convert_swf(kth_trace, tmp_path / "in")
    exp = export_maui(conv.workload_path, tmp_path / "maui")
    assert exp.report["kept"] == exp.report["read"] == 28_475 and exp.report["modified"] == {}
    back = convert_maui(exp.workload_path, tmp_path / "back", resources=exp.resources_path)
    assert back.report["read"] == back.report["kept"] == 28_475
    a, b = _load(conv.workload_path), _load(back.workload_path)
    assert _comparable(a) == _comparable(b)
    assert back.nb_res == conv.nb_res == 100
    assert b["unix_start"] == a["unix_start"] == 843_480_031 + 599_850


def test_export_from_swf_and_nodes_unit(tmp_path: Path) -> None:
    exp = export_maui(DATA.parent / "cli" / "tiny.swf", tmp_path, unit="nodes", procs_per_node=2)
    assert (tmp_path / "tiny.json").is_file()  # the Batsim workload of the same jobs
    f = exp.workload_path.read_text().splitlines()[1].split()
    assert (f[1], f[2]) == ("4", "8")
    back = convert_maui(exp.workload_path, tmp_path / "back", unit="nodes", nb_res=8)
    assert [j["res"] for j in _load(back.workload_path)["jobs"]] == [4, 4, 2, 8, 1, 2]


def test_export_rejects_non_delay_jobs(tmp_path: Path) -> None:
    wl = {"nb_res": 2, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "ph"},
                                {"id": 2, "subtime": 5.5, "res": 2, "profile": "d", "walltime": 10}],
          "profiles": {"ph": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
                       "d": {"type": "delay", "delay": 3.25}}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(wl))
    exp = export_maui(path, tmp_path / "out")
    assert exp.report["dropped"] == {"not_a_delay_job": 1} and exp.report["kept"] == 1
    assert exp.report["modified"] == {"time_rounded_to_seconds": 1}


def test_a_node_with_absurd_processors_is_a_corrupt_record(tmp_path: Path) -> None:
    """10**25 processors on a node (hypothesis found it) once built one host per processor until the
    memory ran out: it is a corrupt line naming the file and the line, dropped and counted when lenient."""
    from batfeed.adapters.common import BadRecord
    from batfeed.adapters.maui import read_maui_resources
    from batfeed.adapters.nodes import MAX_NODE_PROCS
    from batfeed.adapters.report import Tally

    r = tmp_path / "r.txt"
    r.write_text("VERSION 230\nCOMPUTENODE AVAILABLE 0 n01 PBS1 0 4096 0 9999999999999999999999999 -1 -1 1 LINUX "
                 "x86_64 [NONE] [batch:4] [NONE] 1.0 [NONE] [NONE] [NONE]\n")
    with pytest.raises(BadRecord, match=f"more than {MAX_NODE_PROCS} on one node") as err:
        read_maui_resources(r)
    assert err.value.line == 2
    tally = Tally()
    assert read_maui_resources(r, tally) == [] and tally.nb_dropped == 1
