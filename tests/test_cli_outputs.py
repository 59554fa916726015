"""Outputs checked before the work, a closed stdout, and no empty conversion (issue 13, items 3 and 6).

Every test drives the real command line in a subprocess (``python -P -m batfeed ...``) and checks
the exact one-line error, the exit code and that no traceback is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from batfeed.adapters.swf import convert_swf

DATA = Path(__file__).resolve().parent / "data"
TINY = DATA / "cli" / "tiny.swf"                      # 6 jobs, submits 0 .. 50 s, no UnixStartTime
ALEA = DATA / "adapters" / "alea.swf"                 # Alea extended SWF: 21 columns
KTH = Path(__file__).resolve().parent.parent / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
SMALL = Path(__file__).resolve().parent.parent / "platforms" / "small_4.xml"


def batfeed(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "batfeed", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def one_line_error(proc: subprocess.CompletedProcess[str], command: str) -> str:
    """Exit 1 and exactly one line ``batfeed COMMAND: error: ...`` on stderr, no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr.endswith("\n"), proc.stderr
    assert lines[0].startswith(f"batfeed {command}: error: "), proc.stderr
    return lines[0].removeprefix(f"batfeed {command}: error: ")


@pytest.fixture(scope="module")
def tiny_workload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    return convert_swf(TINY, out).workload_path


# ------------------------------------------------------------------- item 3: outputs checked first
def _commands(blocked: Path, workload: Path) -> dict[str, list[str | Path]]:
    """Every writing command, its output under ``blocked`` (a path that cannot be written)."""
    return {
        "convert": ["convert", "swf", TINY, "-o", blocked],
        "simulate": ["simulate", SMALL, workload, "--scheduler", "fcfs", "-o", blocked / "run"],
        "sessions": ["sessions", TINY, "-t", "0", "-o", blocked],
        "platform": ["platform", "4", "-o", blocked / "p.xml"],
        "validate": ["validate", TINY, "-o", blocked],
        "demo": ["demo", "--jobs", "10", "-o", blocked],
    }


@pytest.mark.parametrize("command", ["convert", "simulate", "sessions", "platform", "validate", "demo"])
def test_output_under_a_file_fails_before_the_work(tmp_path: Path, tiny_workload: Path, command: str) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a directory\n")
    args = _commands(afile / "sub", tiny_workload)[command]
    proc = batfeed(*args, cwd=tmp_path)
    shown = args[-1]
    assert one_line_error(proc, command) == f"cannot write to {shown} (-o/--output): {afile} is a file, not a directory"
    assert proc.stdout == ""                             # nothing started: no report, no progress
    assert afile.read_text() == "not a directory\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_output_directory_that_is_a_file_or_cannot_be_created(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    proc = batfeed("convert", "swf", TINY, "-o", afile)
    assert one_line_error(proc, "convert") == f"cannot write to {afile} (-o/--output): it is a file, not a directory"
    too_long = tmp_path / ("x" * 300)
    proc = batfeed("convert", "swf", TINY, "-o", too_long)
    assert one_line_error(proc, "convert") == f"cannot write to {too_long} (-o/--output): File name too long"
    (tmp_path / "run_jobs.csv").mkdir()
    proc = batfeed("simulate", SMALL, TINY, "--scheduler", "fcfs", "--export", tmp_path / "run")
    assert one_line_error(proc, "simulate") == (f"cannot write to {tmp_path / 'run_jobs.csv'} (-o/--output): "
                                                f"it is a directory, not a file")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes into a read-only directory: the permission case cannot fail as root")
def test_output_in_a_read_only_directory(tmp_path: Path, tiny_workload: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        proc = batfeed("convert", "swf", TINY, "-o", ro / "out")
        assert one_line_error(proc, "convert") == f"cannot write to {ro / 'out'} (-o/--output): Permission denied"
        proc = batfeed("simulate", SMALL, tiny_workload, "--scheduler", "fcfs", "-o", ro / "run")
        assert one_line_error(proc, "simulate").startswith(f"cannot write to {ro / 'run'} (-o/--output): Permission")
        assert proc.stdout == ""
    finally:
        ro.chmod(0o700)


def test_unwritable_directory_reason_for_any_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The permission case of the test above, whoever runs the tests: the probe file is refused."""
    import tempfile

    from batfeed.errors import BatfeedError
    from batfeed.outpaths import writable_dir

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(kwargs.get("dir")))

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    with pytest.raises(BatfeedError) as err:
        writable_dir(tmp_path / "out", "-o/--output")
    assert str(err.value) == f"cannot write to {tmp_path / 'out'} (-o/--output): Permission denied"


def test_output_directory_is_created(tmp_path: Path, tiny_workload: Path) -> None:
    proc = batfeed("simulate", SMALL, tiny_workload, "--scheduler", "fcfs", "-o", tmp_path / "a" / "b" / "run")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (tmp_path / "a" / "b" / "run_jobs.csv").is_file()
    proc = batfeed("platform", "4", "-o", tmp_path / "c" / "p.xml")
    assert proc.returncode == 0 and (tmp_path / "c" / "p.xml").is_file()
    assert not [p for p in tmp_path.rglob(".batfeed-probe-*")]  # the probe files are gone


def _closed_reader(*args: str | Path) -> tuple[int, str]:
    """Run batfeed with a stdout pipe whose reader is closed at once (``batfeed ... | head -0``)."""
    proc = subprocess.Popen([sys.executable, "-P", "-m", "batfeed", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), err


def test_closed_stdout_ends_quietly(tmp_path: Path, tiny_workload: Path) -> None:
    code, err = _closed_reader("convert", "swf", TINY, "-o", tmp_path / "conv")
    assert (code, err) == (141, "")
    assert (tmp_path / "conv" / "tiny.json").is_file()  # the work is done, only the printing stops
    run = tmp_path / "run"
    assert batfeed("simulate", SMALL, tiny_workload, "--scheduler", "fcfs", "-o", run).returncode == 0
    for args in (["metrics", f"{run}_jobs.csv"], ["metrics", f"{run}_jobs.csv", "--json"]):
        assert _closed_reader(*args) == (141, ""), args
    assert _closed_reader("convert", "swf", "--help")[1] == ""  # argparse's own exit: quiet too


def test_closed_stdout_in_a_shell_pipeline(tmp_path: Path) -> None:
    cmd = f"{sys.executable} -P -m batfeed convert swf {TINY} -o {tmp_path} | head -1; echo \"rc=${{PIPESTATUS[0]}}\""
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert proc.stderr == ""
    assert proc.stdout.splitlines()[0] == f"input: {TINY}"
    assert proc.stdout.splitlines()[-1] in ("rc=0", "rc=141")  # 0 if it wrote all before head exited


# ---------------------------------------------------------------- item 6: no empty result with exit 0
def test_window_matching_nothing_says_why(tmp_path: Path) -> None:
    proc = batfeed("convert", "swf", TINY, "-o", tmp_path / "w", "--window", "1000:2000")
    assert one_line_error(proc, "convert") == (
        f"{TINY}: no job kept: all 6 records fall outside --window 1000:2000 (the trace's submit times span "
        "0 .. 50 s); choose a window within that span (seconds on the trace's time axis, or dates)")
    assert proc.stdout == "" and list((tmp_path / "w").iterdir()) == []   # nothing written


def test_window_dates_on_a_real_trace(tmp_path: Path) -> None:
    proc = batfeed("convert", "swf", KTH, "-o", tmp_path, "--window", "2020-01-01:2020-02-01")
    assert one_line_error(proc, "convert") == (
        f"{KTH}: no job kept: all 28476 records fall outside --window 2020-01-01:2020-02-01 (the trace's submit "
        "times span 599850 .. 29363618 s = 1996-09-30 .. 1997-08-29 Europe/Stockholm); choose a window within "
        "that span (seconds on the trace's time axis, or dates)")
    # a day, in the trace's time zone (TimeZoneString: Europe/Stockholm), then the same with an offset
    for window in ("1997-01-01:1997-01-02", "1996-12-31T23:00Z..1997-01-01T23:00Z"):
        proc = batfeed("convert", "swf", KTH, "-o", tmp_path, "--window", window, "--name", "day")
        assert proc.returncode == 0, proc.stderr
        wl = json.loads((tmp_path / "day.json").read_text())
        stamps = [wl["unix_start"] + j["subtime"] for j in wl["jobs"]]
        zone = ZoneInfo("Europe/Stockholm")
        lo, hi = (datetime(1997, 1, d, tzinfo=zone).timestamp() for d in (1, 2))
        assert len(stamps) == 57 and lo <= min(stamps) and max(stamps) < hi
        assert "kept 57" in proc.stdout and "outside_window" in proc.stdout


def test_window_errors(tmp_path: Path) -> None:
    cases = {
        "2020-01-01:": f"{TINY}: --window dates need the trace's start time, which this trace does not give (no "
                       "UnixStartTime header): give the window in seconds since the trace start",
        "50:10": "--window 50:10 is empty: START must be before END",
        "yesterday:": "--window bound 'yesterday' is neither seconds nor an ISO date (e.g. 2020-01-31 or "
                      "2020-01-31T12:00)",
        "2020-01-01T10:00:2020-02-01": "--window must be START:END or START..END (use '..' when a bound has a time "
                                       "of day), got '2020-01-01T10:00:2020-02-01'",
    }
    for window, message in cases.items():
        assert one_line_error(batfeed("convert", "swf", TINY, "-o", tmp_path, "--window", window),
                              "convert") == message, window


def test_extended_swf_without_extended_suggests_it(tmp_path: Path) -> None:
    proc = batfeed("convert", "swf", ALEA, "-o", tmp_path / "a")
    assert one_line_error(proc, "convert") == (
        f"{ALEA}: no job kept: all 4 records are corrupt (first: {ALEA}:1: corrupt line: expected 18 fields, "
        "found 21); this looks like an extended SWF (more than 18 columns): add --extended")
    assert list((tmp_path / "a").iterdir()) == []
    assert batfeed("convert", "swf", ALEA, "-o", tmp_path / "a", "--extended").returncode == 0


def test_several_inputs_name_those_converted_before_the_empty_one(tmp_path: Path) -> None:
    proc = batfeed("convert", "swf", TINY, ALEA, "-o", tmp_path)
    assert one_line_error(proc, "convert").endswith(f"add --extended (converted before the error: {TINY})")
    assert f"wrote {tmp_path / 'tiny.json'}" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.json", "tiny_platform.xml", "tiny_report.json"]


def test_every_format_refuses_an_empty_result(tmp_path: Path) -> None:
    adapters = DATA / "adapters"
    empty_csv = tmp_path / "empty_jobs.csv"
    empty_csv.write_text("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,"
                         "success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,"
                         "stretch,allocated_resources,consumed_energy,metadata\n")
    cases = [
        (["swf", TINY, "--status", "7"], f"{TINY}: no job kept: all 6 records were dropped as filtered_status; "
                                          "check --status (values as written in the trace, e.g. 1 for SWF's "
                                          "completed)"),
        (["sacct", adapters / "sacct_sample.txt", "--user", "nobody"],
         f"{adapters / 'sacct_sample.txt'}: no job kept: 6 of the 10 records were dropped as filtered_user and 2 of "
         f"the 10 records are corrupt (first: {adapters / 'sacct_sample.txt'}:9: job 1099: corrupt line: expected "
         "26 '|'-separated fields, found 5); check --user (names or ids as written in the trace)"),
        (["maui", adapters / "maui_workload.txt", "--max-jobs", "0"], "no job kept: 4 of the 7 records were dropped "
                                                                      "as beyond_max_jobs"),
        (["pbs", adapters / "torque_20200110", "--window", "2021-01-01:2021-02-01"],
         "records fall outside --window 2021-01-01:2021-02-01 (the trace's submit times span "),
        (["downtimes", adapters / "maintenance.csv", "--nb-nodes", "4", "--origin", "2020-01-01T00:00:00",
          "--min-duration", "1e9"], "no outage kept: 6 of the 7 records were dropped as shorter_than_threshold"),
        (["to-swf", empty_csv], f"{empty_csv}: no job to export (the file has none)"),
    ]
    for args, message in cases:
        out = tmp_path / f"out_{args[0]}"
        line = one_line_error(batfeed("convert", *args, "-o", out), "convert")
        if message.startswith(str(args[1])):   # the whole message
            assert line == message, (args, line)
        else:                                  # its stable part
            assert line.startswith(f"{args[1]}: ") and message in line, (args, line)
        assert list(out.iterdir()) == [], args


def test_library_still_writes_an_empty_conversion_by_default(tmp_path: Path) -> None:
    res = convert_swf(TINY, tmp_path, window=(1000, 2000))
    assert res.report["kept"] == 0 and res.workload_path.is_file()
