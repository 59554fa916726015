"""batfeed's schedulers behind a real Batsim 4.2.1 (over ZeroMQ) vs the embedded engine's direct driver.

Needs a Batsim 4.x binary: ``$BATSIM`` or ``batsim`` on PATH; skipped with the reason otherwise (no
Batsim binary is available in CI).  The first 3,000 jobs of KTH-SP2 on the converter's link-less
platform, every batfeed scheduler, a user model and pybatsim's own ``easyBackfill`` (pybatsim path):
``_jobs.csv`` and ``_machine_states.csv`` must be byte-identical (measured on this machine on the full
trace too, see docs/engine.md, "Fidelity").
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf

from batfeed.runner import run_simulation

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
BATSIM = os.environ.get("BATSIM") or shutil.which("batsim")

pytestmark = [pytest.mark.batsim,
              pytest.mark.skipif(BATSIM is None, reason="needs a Batsim 4.x binary ($BATSIM or batsim on PATH)"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]   # pybatsim's docopt regexes


@pytest.fixture(scope="module")
def kth(tmp_path_factory):
    out = tmp_path_factory.mktemp("real")
    return convert_swf(KTH, out, max_jobs=3000, name="kth3000")


def _real(tmp: Path, platform: Path, workloads: list[Path], scheduler: str, options: dict,
          batsim_args: tuple[str, ...] = ()) -> Path:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sched = subprocess.Popen([sys.executable, "-P", "-m", "batfeed.cli", "schedule", scheduler, "--socket",
                              f"tcp://127.0.0.1:{port}", "--options", json.dumps(options)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        cmd = [BATSIM, "-p", str(platform), *[a for w in workloads for a in ("-w", str(w))], "-e", str(tmp / "real"),
               "-s", f"tcp://127.0.0.1:{port}", "--verbosity", "quiet", "--disable-schedule-tracing", *batsim_args]
        subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    finally:
        sched.wait(timeout=60)
    return tmp / "real"


@pytest.mark.parametrize("scheduler,options", [
    ("fcfs", {}), ("easy", {}), ("easy", {"policy": "SQF", "backfill_policy": "LPF"}),
    ("easy", {"reservation": "machines", "theta": None}), ("conservative", {}), ("maui", {"interval": 60}),
    ("maui", {}), ("maui", {"interval": 60, "mechanics": "counts"}),
    ("tuned_easy", {"period": 3600}),     # what-ifs in the scheduler process; profiles from SIMULATION_BEGINS
    ("creasy", {"alpha": 6000}), ("los", {}),
], ids=lambda x: json.dumps(x) if isinstance(x, dict) else x)
def test_schedulers_under_real_batsim_equal_the_direct_driver(tmp_path, kth, scheduler, options):
    real = _real(tmp_path, kth.platform_path, [kth.workload_path], scheduler, options)
    ours = run_simulation(kth.platform_path, [kth.workload_path], scheduler=scheduler, options=options,
                          export=tmp_path / "engine")
    assert ours.driver == "direct"
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{real}{suffix}").read_bytes() == (tmp_path / f"engine{suffix}").read_bytes(), suffix


def test_maui_overrun_under_real_batsim_equals_the_direct_driver(tmp_path):
    """KTH-SP2 converted with --overrun 600 (Batsim's walltime = request + 600): Maui holds the nodes of
    a job killed at that limit until the poll after the next one, through CALL_ME_LATER."""
    conv = convert_swf(KTH, tmp_path / "conv", max_jobs=3000, name="kth3000o", overrun=600)
    data = json.loads(Path(conv.workload_path).read_text())
    assert any(j["walltime"] == j["requested_walltime"] + 600 for j in data["jobs"])
    options = {"interval": 5}
    real = _real(tmp_path, conv.platform_path, [conv.workload_path], "maui", options)
    run_simulation(conv.platform_path, [conv.workload_path], scheduler="maui", options=options,
                   export=tmp_path / "engine")
    jobs = (tmp_path / "engine_jobs.csv").read_text()
    assert "COMPLETED_WALLTIME_REACHED" in jobs
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{real}{suffix}").read_bytes() == (tmp_path / f"engine{suffix}").read_bytes(), suffix


def test_a_user_model_under_real_batsim_equals_the_direct_driver(tmp_path, kth):
    layer = {"scheduler": "easy", "users": "a60", "trace": str(kth.workload_path)}
    real = _real(tmp_path, kth.platform_path, [], "batfeed.users:UserModelScheduler", layer,
                 ("--enable-dynamic-jobs",))
    run_simulation(kth.platform_path, [kth.workload_path], scheduler="easy", users="a60", export=tmp_path / "engine")
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{real}{suffix}").read_bytes() == (tmp_path / f"engine{suffix}").read_bytes(), suffix


def test_site_level_users_under_real_batsim_equal_the_direct_driver(tmp_path):
    """Shmueli's Phase-2 users generate their jobs in the scheduler process: real Batsim with
    --enable-dynamic-jobs and no workload gives the embedded engine's schedule byte for byte."""
    from batfeed.platforms.generate import write_homogeneous_platform

    platform = write_homogeneous_platform(tmp_path / "p128.xml", 128)
    model = {"nb_users": 8, "duration_s": 3 * 86400, "seed": 2, "runtime_scale": 0.1}
    layer = {"scheduler": "creasy", "users": "site-phase2", **model}
    real = _real(tmp_path, platform, [], "batfeed.users:UserModelScheduler", layer, ("--enable-dynamic-jobs",))
    run_simulation(platform, [], scheduler="creasy", users="site-phase2", user_options=model,
                   export=tmp_path / "engine")
    jobs = (tmp_path / "engine_jobs.csv").read_text()
    assert jobs.count("\n") > 20
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{real}{suffix}").read_bytes() == (tmp_path / f"engine{suffix}").read_bytes(), suffix


def test_a_pybatsim_scheduler_under_real_batsim_equals_the_pybatsim_path(tmp_path, kth):
    """pybatsim's own callback-driven ``easyBackfill`` decides on every event, so it sees the event
    order of each Batsim message (measured on full KTH-SP2 too: identical)."""
    real = _real(tmp_path, kth.platform_path, [kth.workload_path], "easyBackfill", {})
    ours = run_simulation(kth.platform_path, [kth.workload_path], scheduler="easyBackfill", export=tmp_path / "engine")
    assert ours.driver == "pybatsim"
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{real}{suffix}").read_bytes() == (tmp_path / f"engine{suffix}").read_bytes(), suffix


def test_batfeed_batsim_is_a_drop_in_for_batsim(tmp_path, kth):
    """The same command line, ``batsim ...`` then ``batfeed batsim ...``, against the same scheduler
    (``batfeed schedule easy``): byte-identical ``_jobs.csv`` and ``_machine_states.csv``."""
    def run(program: list[str], prefix: str) -> Path:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        sched = subprocess.Popen([sys.executable, "-P", "-m", "batfeed.cli", "schedule", "easy", "--socket",
                                  f"tcp://127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            subprocess.run([*program, "-p", str(kth.platform_path), "-w", str(kth.workload_path), "-e",
                            str(tmp_path / prefix), "-s", f"tcp://127.0.0.1:{port}", "-q",
                            "--disable-schedule-tracing", "--forward-profiles-on-submission", "--sched-cfg", "{}"],
                           check=True, capture_output=True, timeout=600)
        finally:
            sched.wait(timeout=60)
        return tmp_path / prefix

    real = run([BATSIM], "real")
    ours = run([sys.executable, "-P", "-m", "batfeed.cli", "batsim"], "ours")
    for suffix in ("_jobs.csv", "_machine_states.csv"):
        assert Path(f"{real}{suffix}").read_bytes() == Path(f"{ours}{suffix}").read_bytes(), suffix
