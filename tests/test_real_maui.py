"""batfeed's ``maui`` against the reference Maui 3 simulator on KTH-SP2 and HPC2N-2002 (issue 29's larger
comparisons).

Needs the simulator: ``$MAUI`` (TempleHPC/maui-scheduler c486472 with the trace-time patch, built outside
the repository: ``../shared/tools/maui-ref/README.md``); skipped with the reason otherwise.

- **KTH-SP2**: the first 3,000 jobs at 60 s polls and the first 1,000 at 5 s (converted with ``--overrun
  600``, Maui's JOBMAXOVERRUN, users and groups from the trace) on 100 single-processor nodes, for each
  maui.cfg of :data:`CONFIGS`.
- **HPC2N-2002** (``../shared/data/swf``, skipped without it): the first 5,000 jobs at 60 s polls (the
  prefix reaches the trace's second group, g2, from its 3,686th job) and the first 1,000 at 5 s, converted
  the same way, for each maui.cfg of :data:`HPC2N_CONFIGS`.  batfeed converts HPC2N by processors
  (``MaxProcs`` 240: 240 single-processor machines), so Maui gets 240 single-processor nodes and each job
  its processors as tasks, as for KTH-SP2; Seth's 120 two-processor nodes would let Maui pack two tasks
  of a job on one node, which batfeed's machines do not model.  The trace's users and groups are named
  ``u<user>``/``g<group>`` on both sides (:func:`~conformance.maui.compare.name_credentials`).

Each test prints Maui's and batfeed's mean wait, their difference, the jobs at another poll than Maui's and
the share within one poll, and checks them against the measured values of :data:`MEASURED` (all exact).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf
from conformance.maui.compare import kth_jobs, name_credentials, simulate_workload
from conformance.maui.record import run_jobs
from conformance.maui.scenarios import FS, T0

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
HPC2N = "HPC2N-2002-2.1-cln.swf.gz"
MAUI = os.environ.get("MAUI")

pytestmark = pytest.mark.skipif(not MAUI, reason="needs the reference Maui 3 simulator ($MAUI)")

CONFIGS = {
    "default": (),
    "bestfit_depth3": ("BACKFILLPOLICY BESTFIT", "RESERVATIONDEPTH 3"),
    "maxjob4": ("USERCFG[DEFAULT] MAXJOB=4",),
    "fairshare": FS,
}

# HPC2N "Seth": its visible per-user limit (MAXJOB=60: no user of the first 5,000 jobs reaches it, so it
# schedules as the default), tighter per-user limits that bind (each of MAXJOB and MAXPROC alone moves
# 790 / 2,322 of the 5,000 jobs at 60 s; no job is wider than 128), fairshare by user and group, and a QOS
# with a group limit
SETH = tuple(line for line in (REPO / "schedulers" / "examples" / "hpc2n-seth-maui.cfg").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#"))
HPC2N_CONFIGS = {
    "default": (),
    "bestfit_depth3": ("BACKFILLPOLICY BESTFIT", "RESERVATIONDEPTH 3"),
    "seth": SETH,
    "user_limits": ("USERCFG[DEFAULT] MAXJOB=8 MAXPROC=128",),
    "fairshare": ("FSPOLICY DEDICATEDPS", "FSWEIGHT 1", "FSUSERWEIGHT 100", "FSGROUPWEIGHT 10", "FSINTERVAL 86400",
                  "FSDEPTH 7", "FSDECAY 0.80", "USERCFG[DEFAULT] FSTARGET=5", "GROUPCFG[g1] FSTARGET=90",
                  "GROUPCFG[g2] FSTARGET=10"),
    # a QOS of priority 5,000 and a MAXPROC of its own for user u22's and group g2's jobs, a group MAXPROC
    "qos_group": ("QOSWEIGHT 1", "QOSCFG[hi] PRIORITY=5000 MAXPROC=128", "USERCFG[u22] QDEF=hi", "GROUPCFG[g2] QDEF=hi",
                  "GROUPCFG[g1] MAXPROC=200"),
}

# (trace, jobs, poll, config) -> (jobs at another poll than Maui's, jobs within one poll, batfeed's mean
# wait - Maui's in s), measured on this machine (tests/conformance/maui; see docs/maui.md); absent: all
# jobs at Maui's poll
MEASURED: dict[tuple[str, int, int, str], tuple[int, int, float]] = {}


def _compare(trace: str, njobs: int, poll: int, config: str, lines: tuple[str, ...], nodes: int, conv,
             tmp_path: Path) -> None:
    cfg = "".join(line + "\n" for line in lines)
    js = kth_jobs(conv.workload_path)
    name_credentials(conv.workload_path)
    ref = {r["job"]: r["start"] - T0 for r in run_jobs(js, nodes, poll, cfg, str(MAUI), tmp_path / "maui", 3000)}
    got = simulate_workload(conv.platform_path, conv.workload_path, poll, cfg, tmp_path / "batfeed")
    sub = {j.name: j.submit - T0 for j in js}
    assert set(got) == set(ref)
    mw_maui = sum(ref[j] - sub[j] for j in ref) / len(ref)
    mw_bf = sum(got[j] - sub[j] for j in ref) / len(ref)
    other = sum(abs(got[j] - ref[j]) > 1e-6 for j in ref)
    near = sum(abs(got[j] - ref[j]) <= poll + 1e-6 for j in ref)
    print(f"{trace} {njobs} jobs, {poll} s, {config}: mean wait Maui {mw_maui:.1f} s, batfeed {mw_bf:.1f} s "
          f"({100 * (mw_bf - mw_maui) / mw_maui:+.2f} %), {other} jobs at another poll "
          f"({100 * (len(ref) - other) / len(ref):.1f} % at Maui's), {100 * near / len(ref):.1f} % within one poll")
    key = (trace, njobs, poll, config)
    assert (other, near, round(mw_bf - mw_maui, 1)) == MEASURED.get(key, (0, len(ref), 0.0))


@pytest.mark.parametrize("njobs,poll", [(3000, 60), (1000, 5)])
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_kth_against_maui(tmp_path, njobs, poll, config):
    conv = convert_swf(KTH, tmp_path / "in", max_jobs=njobs, name=f"kth{njobs}", overrun=600)
    _compare("KTH-SP2", njobs, poll, config, CONFIGS[config], 100, conv, tmp_path)


@pytest.mark.parametrize("njobs,poll", [(5000, 60), (1000, 5)])
@pytest.mark.parametrize("config", sorted(HPC2N_CONFIGS))
def test_hpc2n_against_maui(tmp_path, shared_data, njobs, poll, config):
    trace = shared_data / "swf" / HPC2N
    if not trace.exists():
        pytest.skip(f"{trace} not found")
    conv = convert_swf(trace, tmp_path / "in", max_jobs=njobs, name=f"hpc2n{njobs}", overrun=600)
    assert conv.nb_res == 240                      # MaxProcs: single-processor machines
    _compare("HPC2N-2002", njobs, poll, config, HPC2N_CONFIGS[config], 240, conv, tmp_path)
