"""Scheduler names from a notebook or ``python -c`` started at the repository root.

There the current directory comes first on ``sys.path`` and the repository's ``schedulers/`` folder
(batfeed's, installed as ``batfeed.schedulers``) shadows pybatsim's own ``schedulers`` package, where
pybatsim's scheduler names (``schedFcfs``, ``easyBackfill``…) live.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CODE = """
import schedulers                              # what a notebook at the repository root imports first
assert schedulers.__file__.startswith(REPO), schedulers.__file__
from batfeed.registry import make_scheduler
from batfeed.api import simulate_jobs
for name in ("schedFcfs", "easyBackfill", "fcfs", "easy"):
    make_scheduler(name)
out = simulate_jobs({"subtime": [1, 2], "res": [1, 2], "runtime": [5, 5]}, nb_machines=2, scheduler="easyBackfill")
print(out["starting_time"].tolist())
"""


def test_pybatsim_names_work_from_the_repository_root():
    proc = subprocess.run([sys.executable, "-c", f"REPO = {str(REPO)!r}\n{CODE}"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[1.0, 6.0]"
