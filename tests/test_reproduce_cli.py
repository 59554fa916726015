"""``batfeed reproduce NAME``: the names, the options every reproduction takes, the one-line error
naming the missing Parallel Workloads Archive logs, the cell verdicts, and a small real run."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from cli_helpers import run_cli

from batfeed.reproduce import NAMES
from batfeed.reproduce.cells import Cell, counts, markdown

REPO = Path(__file__).resolve().parents[1]


def test_help_lists_the_five_names(tmp_path: Path) -> None:
    r = run_cli(["reproduce", "--help"], tmp_path)
    assert r.returncode == 0
    for name in ("tuning", "rwf", "resampling", "site-users", "maui"):
        assert name in r.stdout
    assert set(NAMES) == {"tuning", "rwf", "resampling", "site-users", "maui"}


@pytest.mark.parametrize("name", ["rwf", "resampling", "site-users", "maui"])
def test_each_moved_printer_takes_the_common_options(name: str, tmp_path: Path) -> None:
    r = run_cli(["reproduce", name, "--help"], tmp_path)
    assert r.returncode == 0, r.stderr
    for option in ("--quick", "--data", "--out", "--workers", "--executor", "--summary-only"):
        assert option in r.stdout, (name, option)


@pytest.mark.parametrize(("name", "files"), [
    ("resampling", ["SDSC-BLUE-2000-4.2-cln.swf.gz", "HPC2N-2002-2.1-cln.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz"]),
    ("rwf", ["SDSC-SP2-1998-4.2-cln.swf.gz"]),
    ("maui", ["HPC2N-2002-2.1-cln.swf.gz"]),
])
def test_missing_logs_is_one_line_naming_them(name: str, files: list[str], tmp_path: Path) -> None:
    r = run_cli(["reproduce", name, "--data", str(tmp_path / "nonexistent"), "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Parallel Workloads Archive" in lines[0] and "--data" in lines[0]
    for f in files:
        assert f in lines[0]
    assert "KTH-SP2" not in lines[0]          # shipped with batfeed: never asked for
    assert not (tmp_path / "o" / "runs").exists()


def test_cell_verdicts() -> None:
    assert Cell(10.0, 11.0, 9.0, 12.0).verdict == "within band"
    assert Cell(10.0, 10.5, rel=0.10, signed=False, digits=2).verdict == "close"
    assert Cell(10.0, 13.0, tol=5).verdict == "close"
    assert Cell(-20.0, -14.0, rel=0.10).verdict == "sign agrees"
    assert Cell(5.0, 9.0, signed=False, reason="documented").verdict == "differs: documented"
    assert Cell(5.0, -9.0).verdict == "DIFFERS"
    assert Cell(5.0, None).verdict == "not run"
    assert Cell(5.0, math.nan).verdict == "not run"
    assert Cell(None, 3.0).verdict == "no paper value"
    # "0.00" prints as zero: no sign to agree with
    assert Cell(0.001, 0.5, digits=2).verdict == "DIFFERS"
    c = Cell(332.91, 333.5, 330.0, 335.0, signed=False, rel=0.1, digits=2)
    assert c.text() == "332.91 | 333.50 [330.00, 335.00] | within band"
    assert Cell(-3.36, -2.31, digits=2).text() == "-3.36 | -2.31 | sign agrees"
    table = markdown(["exp", "replay", "x"], [("EASY | a0", [c])])
    assert table.splitlines()[2] == "| EASY | a0 | 332.91 · 333.50 [330.00, 335.00] · within band |"
    assert counts([c, Cell(5.0, 9.0, signed=False, reason="r"), Cell(5.0, None)]) == {
        "within band": 1, "differs": 1, "not run": 1}


def test_rwf_quick_end_to_end(tmp_path: Path) -> None:
    """The real command on 2000 KTH-SP2 jobs, one scenario, one replay: Tables 1 and 2 with the paper."""
    out = tmp_path / "rwf"
    args = ["reproduce", "rwf", "--quick", "--head", "2000", "--models", "a0", "--scenarios", "baseline",
            "--workers", "1", "--out", str(out), "--csv", str(tmp_path / "rwf.csv")]
    r = run_cli(args, REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "| exp | replay | makespan (d) | mean wait (d) | max wait (d) |" in r.stdout
    assert "| exp | replay | mean lateness ℓ̄ (d) | RL | δ (s) |" in r.stdout
    row = next(line for line in r.stdout.splitlines() if line.startswith("| EASY | a0 | 366.14 · "))
    assert any(v in row for v in ("within band", "close", "sign agrees", "differs: --head 2000", "DIFFERS"))
    assert (out / "results.csv").is_file() and (tmp_path / "rwf.csv").read_text().count("\n") == 2
    # a second invocation reuses the run
    again = run_cli([*args, "--summary-only"], REPO, timeout=60)
    assert again.returncode == 0 and row in again.stdout


def test_site_users_end_to_end(tmp_path: Path) -> None:
    """E7, E1/E2 on the thesis's workloads as campaigns, two days of activity: the cells, the open-loop
    replays built from the site-level runs' outputs, and a second invocation that runs nothing."""
    import pandas as pd

    from batfeed.reproduce.site_users import main
    from batfeed.reproduce.site_users_report import e12_rows

    out = tmp_path / "s"
    args = ["--quick", "--days", "2", "--seeds", "2", "--workers", "2", "--out", str(out)]
    assert main(args) == 0
    root = out / "days2"
    text = (root / "tables.md").read_text()
    for line in ("| CREASY-6000 | 50 | 28.0 · ", "| EASY | 250 | 47.0 · ",
                 "error %: 'EASY trace on FCFS' vs 'site FCFS'", "throughput gain over EASY at 250 users",
                 "≤ 1 min: -83 | "):
        assert line in text, line
    e7 = pd.read_csv(root / "e7" / "results.csv")
    assert len(e7) == 8 and (e7["status"] == "ok").all() and (e7["user_options.model"] == "thesis-phase2").all()
    assert (e7["users.jobs"] == e7["nb_jobs"]).all()            # every generated job ran
    site, opened = (pd.read_csv(root / g / "results.csv") for g in ("e12-site", "e12-open"))
    assert len(site) == 4 and len(opened) == 8 and (opened["status"] == "ok").all()
    rows = e12_rows(site, opened).set_index(["setup", "seed"])
    # a site-level schedule replayed open-loop on the same scheduler is the same schedule
    for sched in ("EASY", "FCFS"):
        same, orig = rows.loc[f"{sched} trace on {sched}"], rows.loc[f"site {sched}"]
        assert (same["jobs"] == orig["jobs"]).all()
        assert same["wait_h"].to_numpy() == pytest.approx(orig["wait_h"].to_numpy(), abs=1e-9)
    assert (root / "figures" / "e7.png").stat().st_size > 10_000
    before = (root / "e7" / "results.csv").stat().st_mtime_ns
    assert main([*args, "--summary-only"]) == 0
    assert (root / "e7" / "results.csv").stat().st_mtime_ns >= before
