"""Errors are one line and come first (issue 25, class 4), through the real CLI in a subprocess.

- a ``_jobs.csv`` row with an extra field: pandas' parser message (two lines) became one actionable line in
  ``metrics`` and ``report``; the CLI's printer also folds any message a library made multi-line;
- a bad scheduler option is the only line even when the workload would warn (jobs without walltime) or the
  maui.cfg would (unknown keyword): options are checked before the inputs are read (in-process and ZeroMQ);
- ``validate`` says a maui.cfg warning once, not once per simulated week.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from cli_helpers import error_line, run_cli, write_inputs

from batfeed.cli import _one_line

DATA = Path(__file__).resolve().parent / "data" / "maui"


@pytest.fixture(scope="module")
def jobs_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real _jobs.csv (3 jobs) whose 3rd line (2nd row) has one field too many."""
    tmp = tmp_path_factory.mktemp("rows")
    platform, workload = write_inputs(tmp)
    proc = run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "-o", str(tmp / "o")], tmp)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp / "o_jobs.csv").read_text().splitlines()
    lines[2] += ",extra"
    bad = tmp / "bad_jobs.csv"
    bad.write_text("\n".join(lines) + "\n")
    return bad


@pytest.mark.parametrize("command", ["metrics", "report"])
def test_a_row_with_an_extra_field_is_one_line(tmp_path, jobs_csv, command):
    args = [command, str(jobs_csv)] + (["-o", str(tmp_path / "rep")] if command == "report" else [])
    proc = run_cli(args, tmp_path)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    error_line(proc, command, rf"{jobs_csv}:3: unparsable row: 18 fields, the header has 17")


def test_any_multi_line_message_is_printed_on_one_line():
    assert _one_line("x.csv:5: unparsable row (Error tokenizing data. C error: Expected 17 fields\n)\n") == \
        "x.csv:5: unparsable row (Error tokenizing data. C error: Expected 17 fields )"
    assert _one_line("first\n   second\n\nthird") == "first second third"


def _no_walltime_workload(tmp: Path) -> tuple[Path, Path]:
    platform = write_homogeneous_platform(tmp / "p4.xml", 4)
    wl = tmp / "nowall.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                              "profiles": {"d": {"type": "delay", "delay": 10}}}))
    return platform, wl


@pytest.mark.parametrize("transport", ["inprocess", "zmq"])
def test_a_bad_option_comes_before_the_walltime_warning(tmp_path, transport):
    platform, wl = _no_walltime_workload(tmp_path)
    proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", "easy", "--options", '{"polcy": "SQF"}',
                    "--transport", transport, "-o", str(tmp_path / "o")], tmp_path)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    error_line(proc, "simulate", r"unknown option 'polcy' for Easy \(did you mean 'policy'\?; known: .*\)")
    good = run_cli(["simulate", str(platform), str(wl), "--scheduler", "easy", "-o", str(tmp_path / "o")], tmp_path)
    assert good.returncode == 0 and "have no walltime" in good.stderr, "the warning is still given when due"


def test_a_bad_option_comes_before_the_maui_cfg_warning(tmp_path):
    platform, wl = _no_walltime_workload(tmp_path)
    cfg = tmp_path / "maui.cfg"
    cfg.write_text("FOOBAR 3\nRESERVATIONDEPTH 1\n")
    for bad, pattern in [('"interval": -3', r"option 'interval' for Maui must be a number of seconds >= 0 or null, "
                                            r"got -3"),
                         ('"bogus": 1', r"unknown option 'bogus' for Maui \(known: .*\)")]:
        proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", "maui", "--options",
                        f'{{"config": "{cfg}", {bad}}}', "-o", str(tmp_path / "o")], tmp_path)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        error_line(proc, "simulate", pattern)


def test_validate_says_a_maui_cfg_warning_once(tmp_path):
    cfg = tmp_path / "maui.cfg"
    cfg.write_text("FOOBAR 3\n")
    proc = run_cli(["validate", str(DATA / "three_weeks.swf"), "--config", str(cfg), "--no-plots",
                    "-o", str(tmp_path / "v")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert out.count("FOOBAR") == 1, out
    assert f"{cfg}: ignored (not supported by batfeed's Maui): FOOBAR (line 1)" in out
    assert out.count("week ") >= 2, "several weeks were simulated"
