"""SWF conversion options (adapters/swf.py + common.py) and Batsim ``_jobs.csv`` -> SWF (jobs_csv.py),
including the SWF -> Batsim -> FCFS -> SWF round trip.

tests/data/swf/basic.swf (MaxProcs 8, MaxNodes 4): kept jobs 1 (2 procs, 50 s, request 100),
2 (3 procs, 12.5 s, request 60), 6 (run 0), 7 (no request), 8 (100 s = request), 9 (200 s >
request 100), 13 (user 3, queue 2); dropped: 3 (no procs), 4 (16 procs), 5 (run -1), the second
job 1, three corrupt lines.  tests/data/adapters/alea.swf: 4 jobs of the wagap trace's extended
form ({cpu node ids} queue node-spec), job 3 with run -1.
"""

from __future__ import annotations

import csv
import json
import lzma
from pathlib import Path

import pytest
from batfeed.adapters.jobs_csv import jobs_csv_to_swf
from batfeed.adapters.swf import convert_swf, read_swf

from batfeed.errors import InputError

SWF = Path(__file__).resolve().parent / "data" / "swf"
DATA = Path(__file__).resolve().parent / "data" / "adapters"
BASIC = SWF / "basic.swf"


def _wl(res) -> dict:
    return json.loads(res.workload_path.read_text())


def _by_id(wl: dict) -> dict[int, dict]:
    return {j["id"]: j for j in wl["jobs"]}


def _delay(wl: dict, job: dict) -> float:
    return wl["profiles"][job["profile"]]["delay"]


@pytest.mark.parametrize("spec,expected", [
    ("none", -1), ("runtime", 30), ("2x", 60), ("max", 100), ("queue", 100), ("900", 900)])
def test_walltime_fallback(tmp_path: Path, spec: str, expected: float) -> None:
    wl = _wl(convert_swf(BASIC, tmp_path, walltime_fallback=spec))
    assert _by_id(wl)[7]["walltime"] == expected  # job 7: run 30 s, no request


def test_over_request_policies(tmp_path: Path) -> None:
    keep = convert_swf(BASIC, tmp_path / "keep")
    assert keep.report["warnings"]["runtime_reaches_request"] == 2  # jobs 8 (=) and 9 (>)
    cap = convert_swf(BASIC, tmp_path / "cap", over_request="cap")
    assert cap.report["modified"]["runtime_capped_at_request"] == 1
    assert _delay(_wl(cap), _by_id(_wl(cap))[9]) == 100
    drop = convert_swf(BASIC, tmp_path / "drop", over_request="drop")
    assert drop.report["dropped"]["runtime_over_request"] == 1 and 9 not in _by_id(_wl(drop))
    raised = convert_swf(BASIC, tmp_path / "raise", over_request="raise")
    jobs = _by_id(_wl(raised))
    assert (jobs[9]["walltime"], jobs[8]["walltime"]) == (201, 101)
    assert raised.report["modified"]["request_raised_above_runtime"] == 2


def test_zero_runtime_and_filters(tmp_path: Path) -> None:
    rep = convert_swf(BASIC, tmp_path / "z", zero_runtime="drop").report
    assert rep["dropped"]["zero_runtime"] == 1 and rep["kept"] == 6
    rep = convert_swf(BASIC, tmp_path / "s", statuses=[1]).report
    assert rep["dropped"]["filtered_status"] == 3 and rep["kept"] == 6  # jobs 3 (5), 5 (0), 6 (0)
    res = convert_swf(BASIC, tmp_path / "u", users=["3"])
    assert [j["id"] for j in _wl(res)["jobs"]] == [13] and res.report["dropped"]["filtered_user"] == 10
    res = convert_swf(BASIC, tmp_path / "w", window=(150, 200))
    assert [j["id"] for j in _wl(res)["jobs"]] == [6, 7, 8, 9, 1]  # the second job 1 (190) is no duplicate now
    res = convert_swf(BASIC, tmp_path / "n", max_jobs=3)
    assert [j["id"] for j in _wl(res)["jobs"]] == [1, 2, 6] and res.report["dropped"]["beyond_max_jobs"] == 4
    for rep in (res.report,):
        assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"] == 14


def test_units_and_scaling(tmp_path: Path) -> None:
    res = convert_swf(BASIC, tmp_path / "nodes", unit="nodes")  # MaxProcs 8 / MaxNodes 4 = 2 per node
    wl = _wl(res)
    assert res.nb_res == 4 and res.report["platform_size_from"] == "MaxNodes"
    assert _by_id(wl)[2]["res"] == 2 and _by_id(wl)[1]["res"] == 1  # 3 procs -> 2 nodes, 2 -> 1
    res = convert_swf(BASIC, tmp_path / "scaled", speed=2.0, size_scale=2.0)
    wl = _wl(res)
    assert res.nb_res == 16 and res.report["dropped"]["larger_than_machine"] == 1  # job 4: 32 > 16
    j1 = _by_id(wl)[1]
    assert (j1["res"], _delay(wl, j1), j1["walltime"]) == (4, 25, 50)
    res = convert_swf(BASIC, tmp_path / "o", origin=0)
    assert _by_id(_wl(res))[1]["subtime"] == 100


def test_provenance_and_unix_start(kth_trace: Path, tmp_path: Path) -> None:
    wl = _wl(convert_swf(kth_trace, tmp_path, max_jobs=2))
    assert wl["unix_start"] == 843_480_031 + 599_850 and wl["swf_header"]["TimeZoneString"] == "Europe/Stockholm"
    job = wl["jobs"][0]
    assert set(job) >= {"swf_submit", "swf_wait", "user", "group", "queue", "partition", "status", "preceding_job",
                        "think_time"}


def test_alea_extended(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="alea.swf:1: corrupt line: expected 18 fields, found 21"):
        convert_swf(DATA / "alea.swf", tmp_path, strict=True, machines=DATA / "alea.swf.machines")
    res = convert_swf(DATA / "alea.swf", tmp_path, extended=True, machines=DATA / "alea.swf.machines")
    rep = res.report
    assert (rep["read"], rep["kept"], rep["dropped"]) == (4, 3, {"negative_runtime": 1})
    assert (res.nb_res, rep["platform_size_from"]) == (20 * 80 + 48 * 12, "alea.swf.machines")
    wl = _wl(res)
    assert wl["unix_start"] == 1356996147 and wl["jobs"][0]["subtime"] == 0  # absolute epochs
    assert [(j["queue_name"], j["node_spec"]) for j in wl["jobs"]][:2] == [
        ("q_1d", "1:ppn=64:x86_64:cl_zewura#excl"), ("q_2w", "1:ppn=12")]
    nodes = convert_swf(DATA / "alea.swf", tmp_path / "n", extended=True, unit="nodes",
                        machines=DATA / "alea.swf.machines")
    assert nodes.nb_res == 68 and [j["res"] for j in _wl(nodes)["jobs"]] == [1, 1, 2]
    _, records = read_swf(DATA / "alea.swf", extended=True)
    assert next(records).extra[1:] == ("q_1d", "1:ppn=64:x86_64:cl_zewura#excl")


def test_xz_input(tmp_path: Path) -> None:
    path = tmp_path / "basic.swf.xz"
    path.write_bytes(lzma.compress(BASIC.read_bytes()))
    assert convert_swf(path, tmp_path / "out").report["kept"] == 7


def test_bad_option_values(tmp_path: Path) -> None:
    for kwargs in ({"walltime_fallback": "sometimes"}, {"unit": "cores"}, {"over_request": "x"}, {"speed": 0},
                   {"max_jobs": -1}):
        with pytest.raises(ValueError):
            convert_swf(BASIC, tmp_path, **kwargs)


# ------------------------------------------------------------------------------------ _jobs.csv -> SWF
def _write_jobs_csv(path: Path, rows: list[str]) -> Path:
    from batfeed.engine.outputs import JOBS_HEADER
    path.write_text(JOBS_HEADER + "\n" + "".join(r + "\n" for r in rows))
    return path


def test_jobs_csv_states_and_bad_rows(tmp_path: Path) -> None:
    path = _write_jobs_csv(tmp_path / "x_jobs.csv", [
        '1,w0,d10,0.000000,2,20.000000,1,COMPLETED_SUCCESSFULLY,5.000000,10.000000,15.000000,5.000000,'
        '15.000000,1.500000,0-1,-1.000000,""',
        '2,w0,d10,3.000000,1,-1.000000,0,REJECTED,,,,,,,,-1.000000,""',
        '3,w0,d50,4.000000,3,20.000000,0,COMPLETED_WALLTIME_REACHED,4.000000,20.000000,24.000000,0.000000,'
        '20.000000,1.000000,2-3 5,-1.000000,""',
        '4,w0,d10,1.000000,1,20.000000,0,NOT_A_STATE,1.000000,10.000000,11.000000,0.000000,10.000000,1.0,0,-1,""',
    ])
    exp = jobs_csv_to_swf(path, tmp_path / "out")
    assert exp.swf_path.name == "x.swf"
    assert (exp.report["read"], exp.report["kept"], exp.report["dropped"]) == (4, 3, {"corrupt_line": 1})
    lines = [line.split() for line in exp.swf_path.read_text().splitlines() if not line.startswith(";")]
    assert lines[0] == ["1", "0", "5", "10", "2", "-1", "-1", "2", "20", "-1", "1"] + ["-1"] * 7
    assert lines[1][:11] == ["2", "3", "-1", "-1", "-1", "-1", "-1", "1", "-1", "-1", "5"]
    assert lines[2][:11] == ["3", "4", "0", "20", "3", "-1", "-1", "3", "20", "-1", "0"]
    with pytest.raises(InputError, match=r"x_jobs.csv:5: job 4: corrupt row"):
        jobs_csv_to_swf(path, tmp_path / "out", strict=True)


def _max_concurrent(wl: dict) -> int:
    points: list[tuple[float, int]] = []
    for j in wl["jobs"]:
        points += [(j["subtime"], j["res"]), (j["subtime"] + _delay(wl, j), -j["res"])]
    level = peak = 0
    for _, d in sorted(points, key=lambda p: (p[0], p[1])):  # ends before starts at equal times
        level += d
        peak = max(peak, level)
    return peak


def test_round_trip_swf_batsim_fcfs_swf(kth_trace: Path, tmp_path: Path) -> None:
    """KTH-SP2 -> Batsim -> FCFS on a machine where nothing waits -> SWF: every job keeps its submit
    time, processors and request; its run time too, except the 8 run-0 jobs (1 s, the converter's
    repair) and the 513 reaching their request (Batsim stops them at the request: status 0)."""
    from batfeed.platforms.generate import write_homogeneous_platform

    from batfeed.runner import run_simulation

    conv = convert_swf(kth_trace, tmp_path / "in")
    wl = _wl(conv)
    size = _max_concurrent(wl)
    platform = write_homogeneous_platform(tmp_path / "big.xml", size)
    run_simulation(platform, [conv.workload_path], scheduler="fcfs", export=tmp_path / "run" / "fcfs")
    exp = jobs_csv_to_swf(tmp_path / "run" / "fcfs_jobs.csv", tmp_path / "swf", workloads=[conv.workload_path])
    assert exp.report["read"] == exp.report["kept"] == 28_475
    header, records = read_swf(exp.swf_path)
    assert header["UnixStartTime"] == "843480031" and header["MaxProcs"] == "100"
    back = {r.job_id: r for r in records}
    _, originals = read_swf(kth_trace, on_corrupt=lambda e: None)
    changed = {"zero": 0, "request": 0}
    for rec in originals:
        if rec.job_id == 27313:  # no processors: dropped by the converter
            assert rec.job_id not in back
            continue
        b = back.pop(rec.job_id)
        assert (b.submit, b.req_time, b.req_procs, b.wait) == (rec.submit, rec.req_time, rec.req_procs, 0)
        assert (b.user, b.group, b.queue, b.partition) == (rec.user, rec.group, rec.queue, rec.partition)
        if rec.run == 0:
            changed["zero"] += 1
            assert b.run == 1
        elif rec.run >= rec.req_time:
            changed["request"] += 1
            assert (b.run, b.status) == (rec.req_time, 0)
        else:
            assert b.run == rec.run and b.alloc_procs == rec.req_procs
    assert back == {} and changed == {"zero": 8, "request": 513}
    with open(tmp_path / "run" / "fcfs_jobs.csv", newline="") as f:
        assert all(float(r["waiting_time"]) == 0 for r in csv.DictReader(f))
