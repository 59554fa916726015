"""``batfeed convert FORMAT INPUT... -o DIR [--strict]`` for every format (batfeed.cli.main in-process).

Errors: one line ``batfeed convert: error: FILE:LINE: ...`` and exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batfeed.cli import main

DATA = Path(__file__).resolve().parent / "data"
ADAPTERS = DATA / "adapters"
TINY = DATA / "cli" / "tiny.swf"


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("batfeed convert: error: ") and "Traceback" not in err, err
    return lines[0]


def test_swf_with_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "swf", str(TINY), str(DATA / "swf" / "basic.swf"), "-o", str(tmp_path),
                 "--walltime-fallback", "2x", "--max-jobs", "5", "--status", "1,0", "--window", "0:1000"]) == 0
    out = capsys.readouterr().out
    assert "input: " + str(TINY) in out and "beyond_max_jobs" in out
    assert (tmp_path / "tiny.json").is_file() and (tmp_path / "basic_report.json").is_file()
    rep = json.loads((tmp_path / "tiny_report.json").read_text())
    assert rep["options"]["walltime_fallback"] == "2x" and rep["kept"] == 5


def test_pbs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    days = [str(ADAPTERS / "torque_20200110"), str(ADAPTERS / "torque_20200111")]
    assert main(["convert", "pbs", *days, "-o", str(tmp_path), "--unit", "nodes", "--nodes",
                 str(ADAPTERS / "pbs_nodes.txt"), "--name", "cluster"]) == 0
    out = capsys.readouterr().out
    assert "read 12 jobs, kept 7; platform 7 resources (from pbs_nodes.txt)" in out
    assert f"wrote {tmp_path / 'cluster.json'}" in out
    assert main(["convert", "pbs", *days, "-o", str(tmp_path), "--strict"]) == 1
    assert f"{days[0]}:16: corrupt record" in _one_line_error(capsys.readouterr().err)


def test_maui_both_ways(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "maui", str(ADAPTERS / "maui_workload.txt"), "--resources",
                 str(ADAPTERS / "maui_resources.txt"), "-o", str(tmp_path)]) == 0
    assert (tmp_path / "maui_workload_events.txt").is_file()
    assert main(["convert", "to-maui", str(TINY), "-o", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "read 6 jobs, kept 6" in out and (tmp_path / "m" / "tiny_maui_workload.txt").is_file()
    assert main(["convert", "maui", str(tmp_path / "m" / "tiny_maui_workload.txt"), "--resources",
                 str(tmp_path / "m" / "tiny_maui_resources.txt"), "-o", str(tmp_path / "back")]) == 0
    assert "platform 8 resources" in capsys.readouterr().out


def test_sacct(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "sacct", str(ADAPTERS / "sacct_sample.txt"), "-o", str(tmp_path), "--tz",
                 "America/New_York", "--user", "alice,bob"]) == 0
    out = capsys.readouterr().out
    assert "filtered_user" in out and "kept 2" in out


def test_downtimes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "downtimes", str(ADAPTERS / "maintenance.csv"), "-o", str(tmp_path), "--nb-nodes", "4",
                 "--origin", "2020-01-01T00:00:00", "--horizon", "86400"]) == 0
    out = capsys.readouterr().out
    assert "read 7 node outages, kept 6" in out and f"wrote {tmp_path / 'maintenance_events.txt'}" in out
    assert main(["convert", "downtimes", str(ADAPTERS / "outages.csv"), "-o", str(tmp_path), "--nb-nodes", "3",
                 "--origin", "1577836800", "--strict"]) == 1
    assert "outages.csv:2: node n01: unknown node" in _one_line_error(capsys.readouterr().err)


def test_to_swf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["platform", "8", "-o", str(tmp_path / "p.xml")]) == 0
    assert main(["convert", "swf", str(TINY), "-o", str(tmp_path)]) == 0
    assert main(["simulate", str(tmp_path / "p.xml"), str(tmp_path / "tiny.json"), "--scheduler", "fcfs",
                 "--export", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["convert", "to-swf", str(tmp_path / "run_jobs.csv"), "--workload", str(tmp_path / "tiny.json"),
                 "-o", str(tmp_path / "swf")]) == 0
    assert "read 6 rows, kept 6" in capsys.readouterr().out
    assert (tmp_path / "swf" / "run.swf").read_text().count("\n") == 4 + 6  # 4 header lines, 6 jobs


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "swf", str(TINY), "-o", str(tmp_path), "--resources", "x"]) == 1
    assert "option --resources does not apply to format 'swf'" in _one_line_error(capsys.readouterr().err)
    assert main(["convert", "swf", str(TINY), "-o", str(tmp_path), "--walltime-fallback", "often"]) == 1
    assert "walltime_fallback must be" in _one_line_error(capsys.readouterr().err)
    assert main(["convert", "downtimes", str(ADAPTERS / "outages.csv"), "-o", str(tmp_path)]) == 1
    assert "platform or nb_nodes" in _one_line_error(capsys.readouterr().err)
    assert main(["convert", "maui", str(TINY), str(TINY), "-o", str(tmp_path)]) == 1
    assert "one workload trace" in _one_line_error(capsys.readouterr().err)


# jobs: run time, requested time (-1: none).  1 ends before its request, 2 reaches it (Batsim kills a job whose
# run time equals its walltime), 3 passes it by 100 s and 4 by 700 s (> 600: still killed), 5 has no request.
OVERRUN_SWF = """; MaxProcs: 8
1  0 0  50 2 -1 -1 2  100 -1 1 1 1 -1 1 -1 -1 -1
2 10 0 100 2 -1 -1 2  100 -1 1 1 1 -1 1 -1 -1 -1
3 20 0 300 2 -1 -1 2  200 -1 1 1 1 -1 1 -1 -1 -1
4 30 0 900 2 -1 -1 2  200 -1 1 1 1 -1 1 -1 -1 -1
5 40 0  30 2 -1 -1 2   -1 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_overrun_extends_walltime(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    swf = tmp_path / "over.swf"
    swf.write_text(OVERRUN_SWF)
    assert main(["convert", "swf", str(swf), "-o", str(tmp_path / "out"), "--overrun", "600"]) == 0
    jobs = {j["id"]: j for j in json.loads((tmp_path / "out" / "over.json").read_text())["jobs"]}
    for jid, request in ((1, 100), (2, 100), (3, 200), (4, 200)):
        assert jobs[jid]["requested_walltime"] == request and jobs[jid]["walltime"] == request + 600
    assert jobs[5]["walltime"] == -1 and "requested_walltime" not in jobs[5]
    # after the walltime fallback: the fallback's request is the one extended
    assert main(["convert", "swf", str(swf), "-o", str(tmp_path / "fb"), "--overrun", "0",
                 "--walltime-fallback", "2x"]) == 0
    job5 = next(j for j in json.loads((tmp_path / "fb" / "over.json").read_text())["jobs"] if j["id"] == 5)
    assert job5["walltime"] == job5["requested_walltime"] == 60
    # the simulator accepts the extra field (embedded engine, Batsim's workload checks)
    assert main(["platform", "8", "-o", str(tmp_path / "p.xml")]) == 0
    assert main(["simulate", str(tmp_path / "p.xml"), str(tmp_path / "out" / "over.json"), "--scheduler", "fcfs",
                 "--export", str(tmp_path / "run")]) == 0


def test_overrun_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    swf = tmp_path / "over.swf"
    swf.write_text(OVERRUN_SWF)
    assert main(["convert", "swf", str(swf), "-o", str(tmp_path), "--overrun", "600"]) == 0
    out = capsys.readouterr().out
    assert "overrun: 2 jobs run past their request (limit extended by 600 s); 1 still reach the extended limit " \
           "and are killed" in out
    rep = json.loads((tmp_path / "over_report.json").read_text())
    assert rep["overrun"] == {"seconds": 600, "completed_past_request": 2, "killed_at_limit": 1}
    assert rep["options"]["overrun"] == 600 and rep["warnings"]["runtime_reaches_request"] == 3
    assert main(["convert", "swf", str(swf), "-o", str(tmp_path / "plain")]) == 0
    assert "overrun:" not in capsys.readouterr().out
    assert "overrun" not in json.loads((tmp_path / "plain" / "over_report.json").read_text())


@pytest.mark.parametrize("value", ["-5", "soon", "nan", "inf"])
def test_overrun_bad_value(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert main(["convert", "swf", str(TINY), "-o", str(tmp_path), f"--overrun={value}"]) == 1
    assert "overrun must be a number of seconds >= 0" in _one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "tiny.json").exists()


def test_overrun_other_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "sacct", str(ADAPTERS / "sacct_sample.txt"), "-o", str(tmp_path / "s"),
                 "--overrun", "60"]) == 0
    assert main(["convert", "pbs", str(ADAPTERS / "torque_20200110"), "-o", str(tmp_path / "p"),
                 "--overrun", "60"]) == 0
    assert main(["convert", "maui", str(ADAPTERS / "maui_workload.txt"), "-o", str(tmp_path / "m"),
                 "--overrun", "60"]) == 0
    assert "overrun: " in capsys.readouterr().out
    for wl in (tmp_path / "s").glob("*.json"), (tmp_path / "p").glob("*.json"), (tmp_path / "m").glob("*.json"):
        jobs = [j for f in wl if not f.name.endswith("_report.json") for j in json.loads(f.read_text())["jobs"]]
        assert jobs and all(j["walltime"] == j["requested_walltime"] + 60 for j in jobs if "requested_walltime" in j)
        assert any("requested_walltime" in j for j in jobs)
    assert main(["convert", "downtimes", str(ADAPTERS / "maintenance.csv"), "-o", str(tmp_path), "--nb-nodes", "4",
                 "--overrun", "60"]) == 1
    assert "option --overrun does not apply to format 'downtimes'" in _one_line_error(capsys.readouterr().err)
