"""Tests of the SWF -> Batsim converter (batfeed.adapters.swf)."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from batfeed.adapters.swf import CorruptLine, SwfRecord, convert_swf, format_report, read_swf

from batfeed.errors import InputError


@pytest.fixture
def swf_dir(test_data: Path) -> Path:
    return test_data / "swf"


def _load(result) -> dict:
    return json.loads(result.workload_path.read_text())


def _compute_hosts(platform: Path) -> int:
    root = ET.parse(platform).getroot()
    roles = [prop.get("value") for prop in root.iter("prop") if prop.get("id") == "role"]
    return roles.count("compute_node")


def _jobs(workload: dict) -> dict[int, dict]:
    return {job["id"]: job for job in workload["jobs"]}


# --- read_swf ---------------------------------------------------------------------------------------


def test_read_swf_header(swf_dir: Path) -> None:
    header, records = read_swf(swf_dir / "basic.swf")
    assert header["Version"] == "2.2"
    assert header["Computer"] == "Test machine"
    assert header["Information"] == "http://example.org/"  # continuation line ignored
    assert header["MaxProcs"] == "8" and header["MaxNodes"] == "4"
    assert header["Note"] == "first note\nsecond note"  # repeated key: values joined
    assert "see" not in header and "http" not in header
    first = next(records)
    assert first == SwfRecord(
        11, 1, 100.0, 5.0, 50.0, 2, -1.0, -1.0, 2, 100.0, -1.0, 1, 1, 1, -1, 1, -1, -1, -1.0
    )
    records.close()


def test_read_swf_lines_and_types(swf_dir: Path) -> None:
    corrupt: list[CorruptLine] = []
    _, records = read_swf(swf_dir / "basic.swf", on_corrupt=corrupt.append)
    recs = list(records)
    assert [r.line for r in recs] == [11, 12, 13, 14, 15, 16, 17, 18, 19, 22, 26]
    assert [(e.line, e.job) for e in corrupt] == [(23, 10), (24, 11), (25, 12)]
    assert "expected 18 fields, found 17" in str(corrupt[0])
    assert "field 4 (run) is not a number: 'abc'" in str(corrupt[1])
    assert "field 8 (req_procs) is not an integer: '4.5'" in str(corrupt[2])
    last = recs[-1]
    assert last.submit == 230.5 and isinstance(last.job_id, int) and isinstance(last.run, float)
    assert (last.app, last.queue, last.partition, last.preceding_job, last.think_time) == (7, 2, 4, 1, 5.5)


def test_read_swf_corrupt_raises_by_default(swf_dir: Path) -> None:
    _, records = read_swf(swf_dir / "basic.swf")
    with pytest.raises(CorruptLine) as err:
        list(records)
    assert str(err.value) == f"{swf_dir / 'basic.swf'}:23: corrupt line: expected 18 fields, found 17"


def test_read_swf_gzip(swf_dir: Path) -> None:
    header, records = read_swf(swf_dir / "nodes.swf.gz")
    assert header == {"Version": "2.2", "MaxNodes": "4"}
    assert [(r.line, r.job_id, r.req_procs) for r in records] == [(3, 1, 2), (4, 2, 4), (5, 3, 8)]


def test_read_swf_no_header(swf_dir: Path) -> None:
    header, records = read_swf(swf_dir / "noheader.swf")
    assert header == {}
    assert [r.line for r in records] == [1, 2, 3]


# --- convert_swf: rules ----------------------------------------------------------------------------


def test_convert_report_counts(swf_dir: Path, tmp_path: Path) -> None:
    res = convert_swf(swf_dir / "basic.swf", tmp_path / "out" / "sub")  # out_dir created
    rep = res.report
    assert rep["input"] == str(swf_dir / "basic.swf")
    assert (rep["read"], rep["kept"]) == (14, 7)
    assert rep["dropped"] == {
        "no_processors": 1, "larger_than_machine": 1, "negative_runtime": 1,
        "duplicate_id": 1, "corrupt_line": 3,
    }
    assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
    assert rep["modified"] == {"zero_runtime_set_to_1s": 1, "missing_request": 1}
    assert rep["warnings"] == {"runtime_reaches_request": 2}
    assert (rep["nb_res"], rep["platform_size_from"], res.nb_res) == (8, "MaxProcs", 8)
    assert rep["first_dropped"]["no_processors"] == ["line 13: job 3"]
    assert rep["first_dropped"]["duplicate_id"] == ["line 22: job 1"]
    assert rep["first_dropped"]["corrupt_line"] == ["line 23: job 10", "line 24: job 11", "line 25: job 12"]
    assert json.loads(res.report_path.read_text()) == rep


def test_convert_files_and_jobs(swf_dir: Path, tmp_path: Path) -> None:
    res = convert_swf(swf_dir / "basic.swf", tmp_path)
    assert res.workload_path == tmp_path / "basic.json"
    assert res.platform_path == tmp_path / "basic_platform.xml" and res.platform_path.is_file()
    assert res.report_path == tmp_path / "basic_report.json"
    assert _compute_hosts(res.platform_path) == 8
    wl = _load(res)
    assert wl["nb_res"] == 8 and wl["swf_origin"] == 100.0
    assert wl["swf_header"]["Computer"] == "Test machine"
    jobs = _jobs(wl)
    assert [j["id"] for j in wl["jobs"]] == [1, 2, 6, 7, 8, 9, 13]  # file order
    assert jobs[1]["subtime"] == 0 and jobs[1]["swf_submit"] == 100.0 and jobs[1]["swf_wait"] == 5.0
    assert jobs[13]["subtime"] == 130.5
    assert jobs[2]["res"] == 3  # requested -1 -> allocated
    assert all(type(j["res"]) is int for j in wl["jobs"])
    assert jobs[6]["profile"] == "d1" and wl["profiles"]["d1"] == {"type": "delay", "delay": 1.0}
    assert jobs[7]["walltime"] == -1 and jobs[1]["walltime"] == 100.0
    assert jobs[9]["walltime"] == 100.0 and jobs[9]["profile"] == "d200"  # kept; Batsim stops it
    assert {k: jobs[13][k] for k in ("user", "group", "queue", "partition", "status",
                                     "preceding_job", "think_time")} == {
        "user": 3, "group": 3, "queue": 2, "partition": 4, "status": 1, "preceding_job": 1, "think_time": 5.5}


def test_profiles_runtime_mode(swf_dir: Path, tmp_path: Path) -> None:
    wl = _load(convert_swf(swf_dir / "basic.swf", tmp_path))
    assert sorted(wl["profiles"]) == ["d1", "d100", "d12.5", "d200", "d30", "d50"]
    assert wl["profiles"]["d12.5"] == {"type": "delay", "delay": 12.5}
    jobs = _jobs(wl)
    assert jobs[1]["profile"] == jobs[13]["profile"] == "d50"


def test_profiles_job_mode(swf_dir: Path, tmp_path: Path) -> None:
    wl = _load(convert_swf(swf_dir / "basic.swf", tmp_path, profiles="job"))
    assert sorted(wl["profiles"]) == sorted(f"p{i}" for i in (1, 2, 6, 7, 8, 9, 13))
    assert all(j["profile"] == f"p{j['id']}" for j in wl["jobs"])
    assert wl["profiles"]["p2"] == {"type": "delay", "delay": 12.5}


def test_platform_size_argument(swf_dir: Path, tmp_path: Path) -> None:
    res = convert_swf(swf_dir / "basic.swf", tmp_path, nb_res=16)
    assert (res.nb_res, res.report["platform_size_from"]) == (16, "argument")
    assert "larger_than_machine" not in res.report["dropped"]
    assert _load(res)["nb_res"] == 16


def test_platform_size_max_nodes(swf_dir: Path, tmp_path: Path) -> None:
    res = convert_swf(swf_dir / "nodes.swf.gz", tmp_path, size_from="nodes")
    assert res.workload_path.name == "nodes.json"
    assert (res.nb_res, res.report["platform_size_from"]) == (4, "MaxNodes")
    assert res.report["dropped"] == {"larger_than_machine": 1}
    assert res.report["first_dropped"] == {"larger_than_machine": ["line 5: job 3"]}


def test_platform_size_from_max_job(swf_dir: Path, tmp_path: Path) -> None:
    # nodes.swf.gz has no MaxProcs header; noheader.swf has no header at all
    res = convert_swf(swf_dir / "nodes.swf.gz", tmp_path)
    assert (res.nb_res, res.report["platform_size_from"], res.report["kept"]) == (8, "max_job", 3)
    res = convert_swf(swf_dir / "noheader.swf", tmp_path)
    assert (res.nb_res, res.report["platform_size_from"]) == (6, "max_job")
    assert res.report["dropped"] == {} and res.report["modified"] == {}


def test_origin_shift(swf_dir: Path, tmp_path: Path) -> None:
    wl = _load(convert_swf(swf_dir / "noheader.swf", tmp_path))
    assert wl["swf_origin"] == 1000.0
    assert [j["subtime"] for j in wl["jobs"]] == [0, 10, 20]
    assert [j["swf_submit"] for j in wl["jobs"]] == [1000, 1010, 1020]


def test_unsorted_trace_and_header_spelling(swf_dir: Path, tmp_path: Path) -> None:
    res = convert_swf(swf_dir / "unsorted.swf", tmp_path)
    assert (res.nb_res, res.report["platform_size_from"]) == (16, "MaxProcs")  # "; max procs: 16 (...)"
    assert res.report["warnings"] == {"submit_not_sorted": 1}
    wl = _load(res)
    assert wl["swf_origin"] == 400.0  # earliest kept submit: no negative subtime
    assert [j["subtime"] for j in wl["jobs"]] == [100, 0, 200]


def test_gz_and_plain_give_same_workload(swf_dir: Path, tmp_path: Path) -> None:
    gz = tmp_path / "basic.swf.gz"
    gz.write_bytes(gzip.compress((swf_dir / "basic.swf").read_bytes()))
    a = convert_swf(swf_dir / "basic.swf", tmp_path / "plain")
    b = convert_swf(gz, tmp_path / "gz")
    assert _load(a) == _load(b)
    assert {k: v for k, v in a.report.items() if k != "input"} == {
        k: v for k, v in b.report.items() if k != "input"}


# --- errors ----------------------------------------------------------------------------------------


def test_strict_names_file_line_and_reason(swf_dir: Path, tmp_path: Path) -> None:
    path = swf_dir / "basic.swf"
    with pytest.raises(InputError) as err:
        convert_swf(path, tmp_path, strict=True)
    assert str(err.value) == f"{path}:13: job 3: no processors (fields 5 and 8 are -1)"
    assert (err.value.path, err.value.line) == (str(path), 13)
    assert not (tmp_path / "basic.json").exists()


def test_strict_corrupt_line(swf_dir: Path, tmp_path: Path) -> None:
    path = swf_dir / "corrupt.swf"
    with pytest.raises(InputError, match=r"corrupt\.swf:3: corrupt line: expected 18 fields, found 17"):
        convert_swf(path, tmp_path, strict=True)
    rep = convert_swf(path, tmp_path).report
    assert (rep["read"], rep["kept"], rep["dropped"]) == (2, 1, {"corrupt_line": 1})
    assert rep["first_dropped"] == {"corrupt_line": ["line 3: job 2"]}


def test_strict_accepts_clean_trace(swf_dir: Path, tmp_path: Path) -> None:
    assert convert_swf(swf_dir / "noheader.swf", tmp_path, strict=True).report["kept"] == 3


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.swf"
    with pytest.raises(InputError, match="nope.swf"):
        convert_swf(path, tmp_path)


@pytest.mark.parametrize("content", [b"\x1f\x8b\x08\x00garbage" * 4, b"not gzip at all\n"])
def test_unreadable_gzip(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.swf.gz"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        convert_swf(path, tmp_path / "out")
    assert str(path) in str(err.value)


def test_truncated_gzip(swf_dir: Path, tmp_path: Path) -> None:
    data = gzip.compress((swf_dir / "basic.swf").read_bytes() * 20)
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cut.swf.gz"):
        convert_swf(path, tmp_path / "out")


def test_bad_options(swf_dir: Path, tmp_path: Path) -> None:
    for kwargs in ({"profiles": "size"}, {"size_from": "cores"}, {"nb_res": 0}):
        with pytest.raises(ValueError):
            convert_swf(swf_dir / "basic.swf", tmp_path, **kwargs)


def test_format_report(swf_dir: Path, tmp_path: Path) -> None:
    text = format_report(convert_swf(swf_dir / "basic.swf", tmp_path).report)
    assert "read 14 records, kept 7" in text
    assert "platform 8 resources (from MaxProcs)" in text
    assert any(line.split() == ["dropped", "corrupt_line", "3"] for line in text.splitlines())
    assert any(line.split() == ["warning", "runtime_reaches_request", "2"] for line in text.splitlines())


# --- the shipped KTH-SP2 trace ---------------------------------------------------------------------


def test_kth_sp2(kth_trace: Path, tmp_path: Path) -> None:
    res = convert_swf(kth_trace, tmp_path)
    rep = res.report
    assert (rep["read"], rep["kept"]) == (28_476, 28_475)
    assert rep["dropped"] == {"no_processors": 1}
    assert rep["first_dropped"] == {"no_processors": ["line 27323: job 27313"]}
    assert rep["modified"] == {"zero_runtime_set_to_1s": 8}
    # 475 jobs run longer than requested + 38 exactly as long (Batsim: walltime reached)
    assert rep["warnings"] == {"runtime_reaches_request": 513}
    assert (res.nb_res, rep["platform_size_from"]) == (100, "MaxProcs")
    assert res.workload_path.name == "KTH-SP2-1996-2.1-cln.json"
    assert _compute_hosts(res.platform_path) == 100
    wl = json.loads(res.workload_path.read_text())
    assert wl["nb_res"] == 100 and wl["swf_origin"] == 599_850
    assert wl["swf_header"]["UnixStartTime"] == "843480031"
    assert len(wl["jobs"]) == 28_475 and wl["jobs"][0]["id"] == 15 and wl["jobs"][0]["subtime"] == 0
    assert 27313 not in {j["id"] for j in wl["jobs"]}
    assert all(j["profile"] in wl["profiles"] for j in wl["jobs"])
    assert {j["profile"] for j in wl["jobs"]} == set(wl["profiles"])  # only used profiles
    assert all(p["type"] == "delay" and p["delay"] > 0 for p in wl["profiles"].values())
    assert all(type(j["res"]) is int and 0 < j["res"] <= 100 for j in wl["jobs"])


def test_kth_strict_stops_at_job_27313(kth_trace: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        convert_swf(kth_trace, tmp_path, strict=True)
    assert str(err.value) == f"{kth_trace}:27323: job 27313: no processors (fields 5 and 8 are -1)"
