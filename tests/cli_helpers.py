"""Run the real ``batfeed`` CLI in a subprocess (as a user does) and check its one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

# -P: the cwd is not put on sys.path (a repo checkout's schedulers/ would shadow pybatsim's package)
CLI = [sys.executable, "-P", "-m", "batfeed.cli"]

# 3 one-machine jobs on 4 hosts, walltime 100.  FCFS: w0!1 on 0 and w0!2 on 1 at t=0; w0!2 ends
# at 2; w0!3 arrives at 5 (on 1), ends 15; w0!1 ends 10.
JOBS = [(1, 0, 1, 10), (2, 0, 1, 2), (3, 5, 1, 10)]


def write_inputs(tmp: Path, jobs: list[tuple[int, float, int, float]] = JOBS) -> tuple[Path, Path]:
    """A 4-host platform and workload ``jobs`` (id, subtime, res, delay) in ``tmp``."""
    from batfeed.platforms.generate import write_homogeneous_platform

    platform = write_homogeneous_platform(tmp / "p4.xml", 4)
    data = {"nb_res": 4,
            "jobs": [{"id": i, "subtime": s, "res": r, "walltime": 100, "profile": f"d{d:g}"} for i, s, r, d in jobs],
            "profiles": {f"d{d:g}": {"type": "delay", "delay": d} for *_, d in jobs}}
    workload = tmp / "w.json"
    workload.write_text(json.dumps(data))
    return platform, workload


def run_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``batfeed ARGS`` in ``cwd``; ``BATFEED_DEBUG`` is unset unless ``env`` sets it."""
    full = {k: v for k, v in os.environ.items() if k != "BATFEED_DEBUG"}
    full.update(env or {})
    return subprocess.run([*CLI, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


def error_line(proc: subprocess.CompletedProcess[str], command: str, pattern: str) -> str:
    """Exit 1, no traceback, and the last stderr line is ``batfeed COMMAND: error: `` + ``pattern`` (a regex,
    matched whole); returns the line."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert lines, "nothing on stderr"
    line = lines[-1]
    prefix = f"batfeed {command}: error: "
    assert line.startswith(prefix), line
    assert re.fullmatch(pattern, line[len(prefix):]), f"\n{line[len(prefix):]}\ndoes not match\n{pattern}"
    return line
