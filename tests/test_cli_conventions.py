"""Command-line conventions (issue 13, item 9): ``--version``, ``python -m batfeed``, one sub-parser per
convert format, help on every option, one output flag spelling (old spellings kept as aliases)."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from batfeed import __version__
from batfeed.cli import build_parser

BATFEED = str(Path(sys.executable).parent / "batfeed")
TINY = Path(__file__).resolve().parent / "data" / "cli" / "tiny.swf"
VERSION = re.compile(rf"batfeed {re.escape(__version__)} \(pybatsim \d+\.\d+\.\d+, Python \d+\.\d+\.\d+\), "
                     r"(compiled kernel \(\d+ modules(, mypyc [\d.]+)?(, Cython [\d.]+)?\)|pure Python \(.+\))\n")


def run(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("launcher", [[sys.executable, "-P", "-m", "batfeed"], [BATFEED]], ids=["-m", "script"])
def test_version(launcher: list[str]) -> None:
    proc = run(*launcher, "--version")
    assert proc.returncode == 0 and proc.stderr == "" and VERSION.fullmatch(proc.stdout), proc


def test_python_m_batfeed_runs_the_cli(tmp_path: Path) -> None:
    proc = run(sys.executable, "-P", "-m", "batfeed", "convert", "swf", TINY, "-o", tmp_path)
    assert proc.returncode == 0 and f"wrote {tmp_path / 'tiny.json'}" in proc.stdout, proc
    proc = run(sys.executable, "-P", "-m", "batfeed", "convert", "swf", tmp_path / "nope.swf", "-o", tmp_path)
    assert (proc.returncode, proc.stderr) == (1, f"batfeed convert: error: {tmp_path / 'nope.swf'}: no such file\n")
    proc = run(sys.executable, "-P", "-m", "batfeed")
    assert proc.returncode == 2 and "usage: batfeed" in proc.stderr and "Traceback" not in proc.stderr


def _options_of(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", help_text))


def test_convert_format_help_shows_only_its_options() -> None:
    helps = {fmt: run(sys.executable, "-P", "-m", "batfeed", "convert", fmt, "--help")
             for fmt in ("swf", "pbs", "downtimes", "to-swf")}
    assert all(p.returncode == 0 and p.stderr == "" for p in helps.values())
    swf, pbs, down, to_swf = (_options_of(p.stdout) for p in helps.values())
    assert {"--output", "--strict", "--name", "--window", "--extended", "--machines", "--size-from"} <= swf
    assert not swf & {"--nodes", "--tz", "--resources", "--fields", "--platform", "--origin", "--epoch"}
    assert {"--nodes", "--tz", "--window"} <= pbs and not pbs & {"--extended", "--machines", "--resources"}
    assert {"--platform", "--origin", "--horizon", "--min-duration", "--tz"} <= down and "--window" not in down
    assert {"--workload", "--output"} <= to_swf and not to_swf & {"--window", "--unit", "--platform"}
    top = run(sys.executable, "-P", "-m", "batfeed", "convert", "--help").stdout
    for fmt in ("swf", "pbs", "maui", "sacct", "downtimes", "to-swf", "to-maui"):
        assert re.search(rf"^\s+{fmt}\s", top, re.MULTILINE), fmt


def test_option_of_another_format_is_a_one_line_error(tmp_path: Path) -> None:
    proc = run(sys.executable, "-P", "-m", "batfeed", "convert", "swf", TINY, "-o", tmp_path, "--nodes", "n.txt")
    assert (proc.returncode, proc.stderr) == (1, "batfeed convert: error: option --nodes does not apply to format "
                                                 "'swf' (see batfeed convert swf --help)\n")
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


def _parsers(parser: argparse.ArgumentParser, name: str = "batfeed") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _parsers(sub, f"{name} {sub_name}")
    return found


def _hidden_convert_options(name: str, action: argparse.Action) -> bool:
    """``convert FORMAT`` parses every format's options but hides (and refuses) the others'."""
    return name.startswith("batfeed convert ") and action.help == argparse.SUPPRESS


def test_every_option_and_argument_has_help() -> None:
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}"
               for name, parser in _parsers(build_parser()) for a in parser._actions
               if not isinstance(a, argparse._SubParsersAction) and not _hidden_convert_options(name, a)
               and (not a.help or a.help == argparse.SUPPRESS)]
    assert missing == []


def test_one_output_flag_with_the_old_spellings_as_aliases(tmp_path: Path) -> None:
    p = build_parser()
    out = str(tmp_path / "x")
    commands = {
        "simulate": (["simulate", "p.xml", "w.json", "--scheduler", "fcfs"], "export", ["--export"]),
        "sessions": (["sessions", "t.swf", "-t", "0"], "output", []),
        "convert": (["convert", "swf", "t.swf"], "output", []),
        "platform": (["platform", "4"], "output", []),
        "validate": (["validate", "t.swf"], "out", ["--out"]),
        "demo": (["demo"], "out", ["--out"]),
    }
    for command, (args, dest, old) in commands.items():
        for flag in ("-o", "--output", *old):
            assert getattr(p.parse_args([*args, flag, out]), dest) == out, (command, flag)
    # the old spellings still run
    proc = run(BATFEED, "platform", "4", "--output", tmp_path / "p.xml")
    assert proc.returncode == 0, proc.stderr
    assert run(BATFEED, "convert", "swf", TINY, "-o", tmp_path).returncode == 0
    proc = run(BATFEED, "simulate", tmp_path / "p.xml", tmp_path / "tiny.json", "--scheduler", "fcfs", "--export",
               tmp_path / "old")
    assert proc.returncode == 0 and (tmp_path / "old_jobs.csv").is_file(), proc.stderr
