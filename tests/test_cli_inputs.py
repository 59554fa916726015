"""Inputs users have (issue 13, item 8): ``.json.gz`` workloads, runs without any workload (dynamic jobs
only, as Batsim without ``-w``), a warning when EASY & co. get jobs without walltime, and ``batfeed demo``
from a regular (non-editable) install.  Through the real CLI in a subprocess."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from cli_helpers import CLI, error_line, run_cli, write_inputs

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "cli"
BATSIM = os.environ.get("BATSIM") or shutil.which("batsim")


def test_gzipped_workloads_are_read(tmp_path):
    platform, workload = write_inputs(tmp_path)
    gz = tmp_path / "w.json.gz"
    gz.write_bytes(gzip.compress(workload.read_bytes()))
    runs = [run_cli(["simulate", str(platform), str(w), "--scheduler", "fcfs", "-o", str(tmp_path / name)], tmp_path)
            for w, name in ((workload, "plain"), (gz, "gz"))]
    assert all(p.returncode == 0 for p in runs), [p.stderr for p in runs]
    assert (tmp_path / "gz_jobs.csv").read_text() == (tmp_path / "plain_jobs.csv").read_text()
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gz.read_bytes()[:20])
    proc = run_cli(["simulate", str(platform), str(broken), "--scheduler", "fcfs", "-o", str(tmp_path / "b")], tmp_path)
    error_line(proc, "simulate", re.escape(f"{broken}: cannot read gzip-compressed workload: Compressed file ended "
                                           "before the end-of-stream marker was reached"))
    bad_json = tmp_path / "bad.json.gz"
    bad_json.write_bytes(gzip.compress(b'{"nb_res": 4,\n "jobs": [}'))
    proc = run_cli(["simulate", str(platform), str(bad_json), "--scheduler", "fcfs", "-o", str(tmp_path / "b")],
                   tmp_path)
    error_line(proc, "simulate", re.escape(f"{bad_json}:2: invalid JSON: Expecting value (column 11)"))


def test_no_workload_needs_dynamic_jobs(tmp_path):
    platform, _ = write_inputs(tmp_path)
    proc = run_cli(["simulate", str(platform), "--scheduler", "fcfs", "-o", str(tmp_path / "o")], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == ["batfeed simulate: error: no workload: give workload files, or "
                                        "--enable-dynamic-jobs for a scheduler that registers all its jobs (Batsim "
                                        "without -w)"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _drive(tmp: Path, command: list[str]) -> list[dict]:
    """Run ``command`` (a Batsim-like simulator connecting to {endpoint}) against dyn_register.py; its log."""
    endpoint = f"tcp://127.0.0.1:{_free_port()}"
    log = tmp / f"log{_free_port()}.jsonl"
    sched = subprocess.Popen([sys.executable, str(DATA / "dyn_register.py"), endpoint, str(log)],
                             stderr=subprocess.PIPE, text=True)
    try:
        proc = subprocess.run([c.format(endpoint=endpoint) for c in command], cwd=tmp, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert sched.wait(timeout=30) == 0, sched.stderr.read()
    finally:
        if sched.poll() is None:
            sched.kill()
            sched.wait()
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_no_workload_drives_a_dynamic_scheduler_as_batsim_does(tmp_path):
    """``simulate --enable-dynamic-jobs`` without workload, over ZeroMQ, against an external scheduler that
    registers every job: the very messages and _jobs.csv that real Batsim 4.2.1 gave without ``-w``
    (recorded in tests/data/cli/dyn_nowl), and no ``no_more_static_job_to_submit``."""
    platform = shutil.copy(REPO / "platforms" / "small_4.xml", tmp_path / "small_4.xml")
    got = _drive(tmp_path, [*CLI, "simulate", str(platform), "--enable-dynamic-jobs", "--transport", "zmq",
                            "--socket", "{endpoint}", "-o", str(tmp_path / "ours")])
    expected = [json.loads(line) for line in (DATA / "dyn_nowl" / "messages.jsonl").read_text().splitlines()]
    assert got == expected
    assert "no_more_static_job_to_submit" not in json.dumps(got)
    assert got[0]["events"][0]["data"]["workloads"] == {}
    for out in ("jobs", "machine_states"):
        assert (tmp_path / f"ours_{out}.csv").read_text() == (DATA / "dyn_nowl" / f"out_{out}.csv").read_text(), out


@pytest.mark.batsim
@pytest.mark.skipif(BATSIM is None, reason="needs a Batsim 4.x binary ($BATSIM or batsim on PATH)")
def test_the_recording_is_what_real_batsim_sends(tmp_path):
    platform = shutil.copy(REPO / "platforms" / "small_4.xml", tmp_path / "small_4.xml")
    got = _drive(tmp_path, [BATSIM, "-p", str(platform), "--enable-dynamic-jobs", "-e", str(tmp_path / "real"),
                            "-s", "{endpoint}", "--verbosity", "quiet", "--disable-schedule-tracing"])
    assert got == [json.loads(line) for line in (DATA / "dyn_nowl" / "messages.jsonl").read_text().splitlines()]
    for out in ("jobs", "machine_states"):
        assert (tmp_path / f"real_{out}.csv").read_text() == (DATA / "dyn_nowl" / f"out_{out}.csv").read_text()


WALLTIME_WARNING = ("warning: {n} of {total} jobs of w0 have no walltime: {cls} counts them as never ending, so it "
                    "cannot reserve or backfill around them (give walltimes, e.g. batfeed convert --walltime-fallback)")


@pytest.mark.parametrize("scheduler,cls", [("easy", "Easy"), ("conservative", "Conservative"), ("maui", "Maui"),
                                           ("fcfs", None)])
def test_backfilling_without_walltimes_warns_once(tmp_path, scheduler, cls):
    platform = write_homogeneous_platform(tmp_path / "p.xml", 4)
    jobs = [{"id": i, "subtime": i, "res": 1, "profile": "d5", **({"walltime": 50} if i % 3 == 0 else {})}
            for i in range(12)]
    wl = tmp_path / "w.json"
    wl.write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": {"d5": {"type": "delay", "delay": 5}}}))
    proc = run_cli(["simulate", str(platform), str(wl), "--scheduler", scheduler, "-o", str(tmp_path / "o")], tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ([WALLTIME_WARNING.format(n=8, total=12, cls=cls)] if cls else [])


def _uv() -> str | None:
    local = REPO / ".tools" / "bin" / "uv"
    return str(local) if local.exists() else shutil.which("uv")


@pytest.mark.skipif(_uv() is None, reason="needs uv to build the wheel")
def test_a_regular_install_runs_the_demo(tmp_path):
    """Build the sdist and the wheel from a copy of the sources (uv build, offline), unpack the wheel as pip
    would into site-packages (it is pure Python) and run ``batfeed demo`` from there, outside the checkout."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    for name in ("batfeed", "schedulers", "users", "adapters", "platforms", "data"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    build = subprocess.run([_uv(), "build", "--offline", "-o", str(tmp_path / "dist"), str(src)],
                           capture_output=True, text=True, timeout=300)
    if build.returncode and "network was disabled" in build.stderr:
        pytest.skip("uv build --offline: the build requirements are not in uv's cache")
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next((tmp_path / "dist").glob("batfeed-*.whl"))
    trace = "batfeed/data/swf/KTH-SP2-1996-2.1-cln.swf.gz"
    with zipfile.ZipFile(wheel) as zf:
        assert trace in zf.namelist()
        site = tmp_path / "site"
        zf.extractall(site)
    # the unpacked wheel comes first on sys.path (the dev install's editable finder comes after PathFinder)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-P", "-c", "import batfeed.demo as d; print(d.__file__); "
                            "print(d.kth_trace())"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.stdout.splitlines() == [str(site / "batfeed" / "demo.py"), str(site / trace)], where.stderr
    run = tmp_path / "run"
    run.mkdir()
    proc = subprocess.run([sys.executable, "-P", "-m", "batfeed.cli", "demo", "--jobs", "300", "--out", "demo"],
                          capture_output=True, text=True, env=env, cwd=run, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "1/3 converting KTH-SP2-1996-2.1-cln.swf.gz" in proc.stdout and "3/3 metrics" in proc.stdout
    assert (run / "demo" / "fcfs_jobs.csv").is_file()
