"""batfeed's ``maui`` against the reference Maui 3 simulator on KTH-SP2 (issue 29's larger comparisons).

Needs the simulator: ``$MAUI`` (TempleHPC/maui-scheduler c486472 with the trace-time patch, built outside
the repository: ``../shared/tools/maui-ref/README.md``); skipped with the reason otherwise.  The first
3,000 KTH-SP2 jobs at 60 s polls and the first 1,000 at 5 s (converted with ``--overrun 600``, Maui's
JOBMAXOVERRUN, users and groups from the trace) on 100 single-processor nodes, for each maui.cfg of
:data:`CONFIGS`: Maui's and batfeed's start of every job, the mean-wait difference and the share of jobs
within one poll of Maui's start (printed), checked against the measured values of :data:`MEASURED`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf
from conformance.maui.compare import kth_jobs, simulate_workload
from conformance.maui.record import run_jobs
from conformance.maui.scenarios import FS, T0

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
MAUI = os.environ.get("MAUI")

pytestmark = pytest.mark.skipif(not MAUI, reason="needs the reference Maui 3 simulator ($MAUI)")

CONFIGS = {
    "default": (),
    "bestfit_depth3": ("BACKFILLPOLICY BESTFIT", "RESERVATIONDEPTH 3"),
    "maxjob4": ("USERCFG[DEFAULT] MAXJOB=4",),
    "fairshare": FS,
}

# (jobs, poll, config) -> (jobs at another poll than Maui's, jobs within one poll, batfeed's mean wait -
# Maui's in s), measured on this machine (tests/conformance/maui; see docs/maui.md)
MEASURED: dict[tuple[int, int, str], tuple[int, int, float]] = {}


@pytest.mark.parametrize("njobs,poll", [(3000, 60), (1000, 5)])
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_kth_against_maui(tmp_path, njobs, poll, config):
    conv = convert_swf(KTH, tmp_path / "in", max_jobs=njobs, name=f"kth{njobs}", overrun=600)
    cfg = "".join(line + "\n" for line in CONFIGS[config])
    js = kth_jobs(conv.workload_path)
    ref = {r["job"]: r["start"] - T0 for r in run_jobs(js, 100, poll, cfg, str(MAUI), tmp_path / "maui", 3000)}
    got = simulate_workload(conv.platform_path, conv.workload_path, poll, cfg, tmp_path / "batfeed")
    sub = {j.name: j.submit - T0 for j in js}
    assert set(got) == set(ref)
    mw_maui = sum(ref[j] - sub[j] for j in ref) / len(ref)
    mw_bf = sum(got[j] - sub[j] for j in ref) / len(ref)
    other = sum(abs(got[j] - ref[j]) > 1e-6 for j in ref)
    near = sum(abs(got[j] - ref[j]) <= poll + 1e-6 for j in ref)
    print(f"KTH-SP2 {njobs} jobs, {poll} s, {config}: mean wait Maui {mw_maui:.1f} s, batfeed {mw_bf:.1f} s "
          f"({100 * (mw_bf - mw_maui) / mw_maui:+.2f} %), {other} jobs at another poll, "
          f"{100 * near / len(ref):.1f} % within one poll")
    key = (njobs, poll, config)
    assert (other, near, round(mw_bf - mw_maui, 1)) == MEASURED.get(key, (0, len(ref), 0.0))
