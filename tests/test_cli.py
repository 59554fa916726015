"""The ``batfeed`` command line: ``batfeed.cli.main`` in-process (capsys) and the console script.

Contract (cli.py): errors print one line ``batfeed CMD: error: ...`` on stderr and exit 1, usage
errors exit 2, never a traceback.

Fixtures (tests/data/cli): ``tiny.swf`` (6 jobs, ``MaxProcs: 8``) and ``bad_line.swf`` (line 3 has
9 fields instead of 18).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batfeed.cli import main
from batfeed.runner import free_tcp_port

pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # docopt 0.6.2

CLI_DATA = Path(__file__).resolve().parent / "data" / "cli"
TINY = CLI_DATA / "tiny.swf"
BAD_LINE = CLI_DATA / "bad_line.swf"
BATFEED = str(Path(sys.executable).parent / "batfeed")
OK = "COMPLETED_SUCCESSFULLY"

# Hand-computed FCFS schedule of tiny.swf on 8 machines (ids 0-7).  The converter keeps the six
# jobs, origin = first submit = 0, delay = run time (field 4), res = requested procs (field 8).
#   job  subtime  res  delay
#    1      0      4    100   t=0:   0-3, ends 100
#    2     10      4     50   t=10:  4-7 free -> 4-7, ends 60
#    3     20      2     30   t=20:  nothing free, waits; t=60: 2 ends, free 4-7 -> 4-5, ends 90
#    4     30      8     20   waits for all 8: t=90 only 4-7 free; t=100: 1 ends -> 0-7, ends 120
#    5     40      1     10   behind 4 (FCFS); t=120: lowest free -> 0, ends 130
#    6     50      2      5   t=120: next lowest -> 1-2, ends 125
# Makespan 130 s; waits 0, 0, 40, 70, 80, 70.
TINY_SCHEDULE = {
    "1": (0.0, 100.0, "0-3", OK),
    "2": (10.0, 60.0, "4-7", OK),
    "3": (60.0, 90.0, "4-5", OK),
    "4": (100.0, 120.0, "0-7", OK),
    "5": (120.0, 130.0, "0", OK),
    "6": (120.0, 125.0, "1-2", OK),
}


def _time(text: str) -> float | None:
    return float(text) if text else None  # rejected jobs have empty times


def read_jobs(path: Path) -> dict[str, tuple[float | None, float | None, str, str]]:
    """job_id -> (starting_time, finish_time, allocated_resources, final_state)."""
    with open(path, newline="") as f:
        return {row["job_id"]: (_time(row["starting_time"]), _time(row["finish_time"]),
                                row["allocated_resources"], row["final_state"]) for row in csv.DictReader(f)}


def one_line_error(err: str, command: str) -> str:
    """The stderr of a failed command: exactly one line ``batfeed COMMAND: error: ...``."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"batfeed {command}: error: "), err
    return lines[0]


@pytest.fixture
def inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """(8-host platform from ``batfeed platform``, tiny.swf converted by ``batfeed convert``)."""
    assert main(["platform", "8", "-o", str(tmp_path / "p8.xml")]) == 0
    assert main(["convert", "swf", str(TINY), "-o", str(tmp_path / "conv")]) == 0
    capsys.readouterr()
    return tmp_path / "p8.xml", tmp_path / "conv" / "tiny.json"


# --------------------------------------------------------------------------------------- convert
def test_convert_swf_writes_the_three_files_and_prints_the_report(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["convert", "swf", str(TINY), "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    for name in ("tiny.json", "tiny_platform.xml", "tiny_report.json"):
        assert (out / name).is_file(), name
    # 6 records kept; size from the MaxProcs header; job 6 has no requested time (field 9 = -1)
    assert "read 6 records, kept 6; platform 8 resources (from MaxProcs)" in stdout
    assert "missing_request" in stdout
    assert f"wrote {out / 'tiny.json'}" in stdout
    report = json.loads((out / "tiny_report.json").read_text())
    assert (report["read"], report["kept"], report["nb_res"], report["dropped"]) == (6, 6, 8, {})
    assert report["modified"] == {"missing_request": 1}
    workload = json.loads((out / "tiny.json").read_text())
    assert [(j["id"], j["subtime"], j["res"]) for j in workload["jobs"]] == [
        (1, 0.0, 4), (2, 10.0, 4), (3, 20.0, 2), (4, 30.0, 8), (5, 40.0, 1), (6, 50.0, 2)]
    assert workload["jobs"][5]["walltime"] == -1
    assert (out / "tiny_platform.xml").read_text().count('value="compute_node"') == 8


def test_convert_swf_strict_bad_line_is_one_line_error_with_file_and_line(tmp_path: Path, capsys) -> None:
    assert main(["convert", "swf", str(BAD_LINE), "-o", str(tmp_path / "out"), "--strict"]) == 1
    captured = capsys.readouterr()
    line = one_line_error(captured.err, "convert")
    assert f"{BAD_LINE}:3: corrupt line: expected 18 fields, found 9" in line
    assert captured.out == ""


def test_convert_swf_lenient_bad_line_is_dropped_and_reported(tmp_path: Path, capsys) -> None:
    # without --strict line 3 (job 2) is skipped: 3 records read, 2 kept
    assert main(["convert", "swf", str(BAD_LINE), "-o", str(tmp_path / "out")]) == 0
    stdout = capsys.readouterr().out
    assert "read 3 records, kept 2" in stdout
    assert "first corrupt_line: line 3: job 2" in stdout


def test_convert_unknown_format_and_missing_input(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:  # one sub-parser per format: a usage error (exit 2)
        main(["convert", "gwf", str(TINY), "-o", str(tmp_path)])
    assert exc.value.code == 2
    assert "argument FORMAT: invalid choice: 'gwf' (choose from 'swf'," in capsys.readouterr().err
    assert main(["convert", "swf", str(tmp_path / "nope.swf"), "-o", str(tmp_path)]) == 1
    assert "nope.swf: no such file" in one_line_error(capsys.readouterr().err, "convert")


# ------------------------------------------------------------------------------ simulate / metrics
def test_platform_simulate_metrics(tmp_path: Path, capsys) -> None:
    platform = tmp_path / "X.xml"
    assert main(["platform", "8", "-o", str(platform)]) == 0
    assert f"wrote {platform} (8 hosts)" in capsys.readouterr().out
    assert main(["convert", "swf", str(TINY), "-o", str(tmp_path)]) == 0
    capsys.readouterr()

    prefix = tmp_path / "run" / "P"
    assert main(["simulate", str(platform), str(tmp_path / "tiny.json"), "--scheduler", "fcfs",
                 "--export", str(prefix)]) == 0
    stdout = capsys.readouterr().out
    assert "simulated 130 s" in stdout  # makespan from the hand schedule above
    assert "jobs: submitted=6 = completed=6 + rejected=0 + killed/failed=0" in stdout
    for suffix in ("_jobs.csv", "_schedule.csv", "_machine_states.csv"):
        assert Path(f"{prefix}{suffix}").is_file(), suffix
    jobs_csv = Path(f"{prefix}_jobs.csv")
    assert read_jobs(jobs_csv) == TINY_SCHEDULE

    assert main(["metrics", str(jobs_csv)]) == 0
    table = capsys.readouterr().out
    assert table.startswith(f"batfeed metrics: {jobs_csv}")
    assert "makespan (max finish - min submit, s)  130.000" in table

    assert main(["metrics", str(jobs_csv), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["nb_jobs"] == 6 and metrics["nb_success"] == 6 and metrics["nb_rejected"] == 0
    assert metrics["makespan"] == 130.0
    # waits 0+0+40+70+80+70 = 260 over 6 jobs
    assert metrics["wait"]["mean"] == pytest.approx(260 / 6)
    assert metrics["wait"]["max"] == 80.0
    # busy area 4*100 + 4*50 + 2*30 + 8*20 + 1*10 + 2*5 = 840 machine-s over [0, 130) on N = 8
    # (inferred: highest allocated id 7 + 1)
    assert metrics["nb_resources"] == 8
    assert metrics["utilisation"] == pytest.approx(840 / (130 * 8))


def test_simulate_over_zmq_via_cli_equals_inprocess(inputs, tmp_path: Path, capsys) -> None:
    """--transport zmq --scheduler fcfs: `batfeed schedule fcfs` in a subprocess, real ZeroMQ."""
    platform, workload = inputs
    assert main(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "--transport", "zmq",
                 "--export", str(tmp_path / "zmq")]) == 0
    stdout = capsys.readouterr().out
    assert "jobs: submitted=6 = completed=6 + rejected=0 + killed/failed=0" in stdout
    assert read_jobs(tmp_path / "zmq_jobs.csv") == TINY_SCHEDULE
    assert main(["simulate", str(platform), str(workload), "--scheduler", "fcfs",
                 "--export", str(tmp_path / "inproc")]) == 0
    assert (tmp_path / "zmq_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()


def test_simulate_fillersched_rejects_a_job_larger_than_the_machine(tmp_path: Path, capsys) -> None:
    """Contrast with the never-rejecting scheduler below: pybatsim's fillerSched rejects what
    can never fit (16 > 8 machines), so the run ends and the accounting line shows it.

    fillerSched calls ``consume_time(0.005)`` before each ``execute_jobs``, so its decisions are
    stamped 5 ms after the event that triggered them:
    - t=0: 1 (2 machines) submitted -> starts at 0.005 on 0-1, ends 10.005.
    - t=5: 2 (16 machines) -> rejected at once (REJECTED row, empty times).
    - t=6: 3 (8 machines): only 2-7 free, waits.
    - t=10.005: 1 ends -> 3 starts at 10.010 on 0-7, ends 20.010.
    """
    platform = tmp_path / "p8.xml"
    assert main(["platform", "8", "-o", str(platform)]) == 0
    workload = write_big_workload(tmp_path / "big.json")
    assert main(["simulate", str(platform), str(workload), "--scheduler", "fillerSched",
                 "--export", str(tmp_path / "out")]) == 0
    assert "jobs: submitted=3 = completed=2 + rejected=1 + killed/failed=0" in capsys.readouterr().out
    assert read_jobs(tmp_path / "out_jobs.csv") == {
        "1": (pytest.approx(0.005), pytest.approx(10.005), "0-1", OK),
        "2": (None, None, "", "REJECTED"),
        "3": (pytest.approx(10.010), pytest.approx(20.010), "0-7", OK),
    }


# ------------------------------------------------------------------------------------ error paths
NEVER_REJECT = '''\
from batfeed.schedulers.fcfs import Fcfs


class NeverReject(Fcfs):
    """FCFS that silently ignores jobs larger than the machine instead of rejecting them."""

    def onJobSubmission(self, job):
        if job.requested_resources <= self.nb_machines:
            self.on_submit(job)
'''


def write_big_workload(path: Path) -> Path:
    # 8 machines.  1: t=0, 2 machines, 10 s -> 0-1, ends 10.  2: t=5, 16 machines (never fits).
    # 3: t=6, 8 machines -> waits for 1, runs 10-20 on 0-7.  Then only job 2 is left, at t=20.
    path.write_text(json.dumps({
        "nb_res": 8,
        "jobs": [{"id": 1, "subtime": 0, "res": 2, "walltime": -1, "profile": "d10"},
                 {"id": 2, "subtime": 5, "res": 16, "walltime": -1, "profile": "d10"},
                 {"id": 3, "subtime": 6, "res": 8, "walltime": -1, "profile": "d10"}],
        "profiles": {"d10": {"type": "delay", "delay": 10}},
    }))
    return path


def test_job_larger_than_machine_with_never_rejecting_scheduler(tmp_path: Path, capsys) -> None:
    platform = tmp_path / "p8.xml"
    assert main(["platform", "8", "-o", str(platform)]) == 0
    workload = write_big_workload(tmp_path / "big.json")
    sched = tmp_path / "neverReject.py"
    sched.write_text(NEVER_REJECT)
    capsys.readouterr()
    assert main(["simulate", str(platform), str(workload), "--scheduler", str(sched),
                 "--export", str(tmp_path / "out")]) == 1
    line = one_line_error(capsys.readouterr().err, "simulate")
    assert "the simulation can never end at t=20.000000" in line
    assert "w0!2 asks 16 machines, the platform has 8" in line


@pytest.mark.parametrize(("extra", "workload_name", "platform_name", "expected"), [
    (["--scheduler", "noSuchSched"], None, None, "no scheduler named 'noSuchSched' (module file not found)"),
    (["--scheduler", "fcfs", "--options", "{bad"], None, None, "--options is not valid JSON"),
    (["--scheduler", "fcfs", "--options", "[1, 2]"], None, None, "--options must be a JSON object, got: [1, 2]"),
    (["--scheduler", "fcfs"], "missing.json", None, "missing.json: workload file not found"),
    (["--scheduler", "fcfs"], None, "notxml.xml", "notxml.xml:1: malformed XML"),
    (["--scheduler", "no_such_module:Foo"], None, None, "cannot load scheduler 'no_such_module:Foo'"),
    (["--scheduler", "noSuchSched", "--transport", "zmq"], None, None,
     "scheduler 'noSuchSched' exited (code 1) without answering"),
], ids=["unknown-scheduler", "options-not-json", "options-list", "missing-workload", "platform-not-xml",
        "bad-module-class", "unknown-scheduler-zmq"])
def test_simulate_errors_are_one_line_exit_1(inputs, tmp_path: Path, capsys, extra, workload_name,
                                             platform_name, expected) -> None:
    platform, workload = inputs
    (tmp_path / "notxml.xml").write_text("this is not XML\n")
    if workload_name:
        workload = tmp_path / workload_name
    if platform_name:
        platform = tmp_path / platform_name
    code = main(["simulate", str(platform), str(workload), *extra, "--export", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 1
    assert expected in one_line_error(captured.err, "simulate")
    assert "Traceback" not in captured.out
    assert not (tmp_path / "out_jobs.csv").exists()
    if "--transport" not in extra:
        assert captured.out == ""           # nothing (pybatsim's lookup messages included) on stdout


def test_simulate_without_scheduler_in_process_is_usage_error(inputs, tmp_path: Path, capsys) -> None:
    platform, workload = inputs
    assert main(["simulate", str(platform), str(workload), "--export", str(tmp_path / "out")]) == 2
    assert "--scheduler is required" in one_line_error(capsys.readouterr().err, "simulate")


@pytest.mark.parametrize("argv", [
    ["simulate", "p.xml", "w.json", "--scheduler", "fcfs", "--transport", "tcp", "--export", "x"],
    ["simulate", "p.xml", "w.json", "--scheduler", "fcfs"],  # --export is required
    ["platform", "eight", "-o", "x.xml"],
    ["frobnicate"],
    [],
], ids=["bad-transport", "no-export", "non-int-hosts", "unknown-command", "no-command"])
def test_argparse_usage_errors_exit_2(argv, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: batfeed" in err and "Traceback" not in err


def test_platform_and_metrics_errors(tmp_path: Path, capsys) -> None:
    assert main(["platform", "0", "-o", str(tmp_path / "p.xml")]) == 1
    assert "nb_hosts must be an integer >= 1" in one_line_error(capsys.readouterr().err, "platform")
    assert not (tmp_path / "p.xml").exists()
    assert main(["metrics", str(tmp_path / "none_jobs.csv")]) == 1
    assert "none_jobs.csv: file not found" in one_line_error(capsys.readouterr().err, "metrics")
    (tmp_path / "bad_jobs.csv").write_text("a,b\n1,2\n")
    assert main(["metrics", str(tmp_path / "bad_jobs.csv")]) == 1
    assert "bad_jobs.csv:1: not a Batsim _jobs.csv header" in one_line_error(capsys.readouterr().err, "metrics")


# ------------------------------------------------------------------------------------------ demo
def test_demo_small(tmp_path: Path, capsys) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--jobs", "300", "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "1/3 converting KTH-SP2-1996-2.1-cln.swf.gz" in stdout
    assert "300 jobs in" in stdout
    assert f"batfeed metrics: {out / 'fcfs_jobs.csv'}" in stdout
    assert "jobs                                     300" in stdout
    assert "resources N                            100 (given)" in stdout
    for name in ("fcfs_jobs.csv", "fcfs_schedule.csv", "fcfs_machine_states.csv", "inputs/kth_first_300.json"):
        assert (out / name).is_file(), name
    with open(out / "fcfs_jobs.csv", newline="") as f:
        assert sum(1 for _ in csv.DictReader(f)) == 300


# -------------------------------------------------------------------------------- console script
def run_batfeed(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BATFEED, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})


def test_console_script_end_to_end(tmp_path: Path) -> None:
    """The installed ``batfeed`` script: platform, convert, simulate (tiny.swf schedule), metrics."""
    assert run_batfeed(["platform", "8", "-o", "X.xml"], tmp_path).returncode == 0
    assert run_batfeed(["convert", "swf", str(TINY), "-o", "conv"], tmp_path).returncode == 0
    proc = run_batfeed(["simulate", "X.xml", "conv/tiny.json", "--scheduler", "fcfs", "--export", "out/P",
                        "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "jobs: submitted=6 = completed=6 + rejected=0 + killed/failed=0" in proc.stdout
    assert read_jobs(tmp_path / "out" / "P_jobs.csv") == TINY_SCHEDULE
    proc = run_batfeed(["metrics", "out/P_jobs.csv", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["nb_jobs"] == 6


def test_console_script_errors(tmp_path: Path) -> None:
    proc = run_batfeed(["convert", "swf", str(BAD_LINE), "-o", "out", "--strict"], tmp_path)
    assert proc.returncode == 1
    assert f"{BAD_LINE}:3: corrupt line" in one_line_error(proc.stderr, "convert")
    proc = run_batfeed(["simulate", "X.xml", "w.json", "--scheduler", "fcfs", "--options", "[1]",
                        "--export", "P"], tmp_path)
    assert proc.returncode == 1
    assert "--options must be a JSON object" in one_line_error(proc.stderr, "simulate")
    proc = run_batfeed(["simulate"], tmp_path)
    assert proc.returncode == 2
    assert "usage: batfeed simulate" in proc.stderr and "Traceback" not in proc.stderr


def test_console_script_schedule_and_simulate_over_zmq(tmp_path: Path) -> None:
    """Two processes like Batsim + pybatsim: ``batfeed schedule fcfs`` binds, ``batfeed simulate
    --transport zmq`` (no --scheduler) connects to it.  Both are bounded by timeouts / killed."""
    run_batfeed(["platform", "8", "-o", "X.xml"], tmp_path)
    run_batfeed(["convert", "swf", str(TINY), "-o", "conv"], tmp_path)
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    with open(tmp_path / "schedule.log", "wb") as log:
        sched = subprocess.Popen([BATFEED, "schedule", "fcfs", "--socket", endpoint], cwd=tmp_path,
                                 stdout=log, stderr=subprocess.STDOUT)
    try:
        proc = run_batfeed(["simulate", "X.xml", "conv/tiny.json", "--transport", "zmq", "--socket", endpoint,
                            "--export", "out/Z"], tmp_path, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "jobs: submitted=6 = completed=6 + rejected=0 + killed/failed=0" in proc.stdout
        assert sched.wait(timeout=30) == 0, (tmp_path / "schedule.log").read_text()
    finally:
        if sched.poll() is None:
            sched.kill()
        sched.wait(timeout=10)
    assert read_jobs(tmp_path / "out" / "Z_jobs.csv") == TINY_SCHEDULE
