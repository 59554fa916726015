"""A plain ``batfeed simulate`` imports what it uses (issue 27, start-up time): not pandas, numpy, matplotlib,
YAML, tqdm, Dask or Arrow, which other commands and the Python API load when they need them.  Checked on the
modules a fresh interpreter holds afterwards (``sys.modules``), not on timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import write_inputs

HEAVY = {"numpy", "pandas", "matplotlib", "yaml", "tqdm", "dask", "distributed", "pyarrow", "scipy"}
ROOT = Path(__file__).resolve().parent.parent


def loaded_after(code: str, cwd: Path) -> set[str]:
    """The top-level packages a fresh interpreter (``-P``: not the cwd's ``schedulers/``) has imported
    after running ``code``."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted({m.partition('.')[0] for m in sys.modules})))\n"
    out = subprocess.run([sys.executable, "-P", "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_the_command_line_loads_no_library():
    got = loaded_after("import batfeed.cli; batfeed.cli.build_parser()", ROOT)
    assert not got & (HEAVY | {"zmq", "batsim", "procset"})


@pytest.mark.parametrize("scheduler", ["fcfs", "easy", "maui"])
def test_a_plain_simulate_loads_no_heavy_library(tmp_path, scheduler):
    platform, workload = write_inputs(tmp_path)
    argv = ["simulate", str(platform), str(workload), "--scheduler", scheduler, "-o", str(tmp_path / "run")]
    got = loaded_after(f"import batfeed.cli\nassert batfeed.cli.main({argv!r}) == 0", tmp_path)
    assert (tmp_path / "run_jobs.csv").is_file() and (tmp_path / "run_manifest.json").is_file()
    assert "batsim" in got                          # the schedulers are pybatsim's
    assert not got & HEAVY
