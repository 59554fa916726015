"""The engine against schedulers in other processes, over real ZeroMQ (loopback only).

Batsim is the REQ side and connects; the scheduler is the REP side and binds (batsim-protocol.md §1).
Every test finishes by itself: the engine is given a ``timeout_s`` (or relies on run_simulation's
dead-process check) and every subprocess is killed in a ``finally``.

Platforms are homogeneous, zero-latency clusters (start = decision time, finish = start + delay).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf
from batfeed.platforms.generate import write_homogeneous_platform

from batfeed.engine import simulate
from batfeed.errors import BatfeedError
from batfeed.registry import make_scheduler
from batfeed.runner import free_tcp_port, run_simulation

pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")  # docopt 0.6.2

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
PYBATSIM = str(BIN / "pybatsim")

# Four 1-machine jobs at t=1 ... the contiguity workload used by tests 1 and 4 (platform: 4 hosts, ids 0-3).
#   job  subtime  res  delay
#    1      1      1    10
#    2      1      1     2
#    3      1      1    10
#    4      2      2     3
#    5      4      1     1
# (subtimes >= 1: pybatsim's high-level API asserts on allocations made at time 0)
CONTIGUITY_JOBS = [(1, 1, 1, 10), (2, 1, 1, 2), (3, 1, 1, 10), (4, 2, 2, 3), (5, 4, 1, 1)]


def write_workload(path: Path, jobs: list[tuple[int, float, int, float]], nb_res: int) -> Path:
    data = {
        "nb_res": nb_res,
        "jobs": [{"id": i, "subtime": s, "res": r, "walltime": -1, "profile": f"d{d:g}"} for i, s, r, d in jobs],
        "profiles": {f"d{d:g}": {"type": "delay", "delay": d} for _, _, _, d in jobs},
    }
    path.write_text(json.dumps(data))
    return path


def read_jobs(path: Path) -> dict[str, tuple[float, float, str, str]]:
    """job_id -> (starting_time, finish_time, allocated_resources, final_state)."""
    with open(path, newline="") as f:
        return {row["job_id"]: (float(row["starting_time"]), float(row["finish_time"]),
                                row["allocated_resources"], row["final_state"]) for row in csv.DictReader(f)}


def start(cmd: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def crash_log(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


# ------------------------------------------------------------------------------------------- 1
def test_pybatsim_schedfcfs_launcher_over_zmq_matches_hand_schedule_and_inprocess(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    """pybatsim's own launcher + its shipped ``schedFcfs`` drive the engine over ZeroMQ.

    schedFcfs = pybatsim's high-level filler_sched(abort_on_first_nonfitting=True,
    consecutive_resources_filter): strict FCFS order, contiguous allocations (the first run of
    consecutive free ids, scanning from the lowest).  The high-level API runs the algorithm after
    *every* event of a message, not once per message.  Hand schedule:

    - t=1: one message [SUBMITTED 1, 2, 3] -> 1 on {0}, 2 on {1}, 3 on {2}; ends 11, 3, 11.
    - t=2: 4 (2 machines) arrives, free {3}: waits.
    - t=3: 2 ends, free {1, 3}: not contiguous -> 4 still waits (batfeed's Fcfs would take "1 3").
    - t=4: 5 (1 machine) arrives; the head (4) does not fit -> FCFS stops, 5 waits.
    - t=11: one message [COMPLETED 1, COMPLETED 3] (1 was started first).  After COMPLETED 1 the
      free set is {0, 1, 3} (2 is still held by 3 until its own event is handled): 4 takes {0, 1}
      (ends 14), 5 takes {3}, the only machine left (ends 12).  Then 3's completion frees {2}.
    """
    platform = write_homogeneous_platform(tmp_path / "p4.xml", 4)
    workload = write_workload(tmp_path / "w.json", CONTIGUITY_JOBS, 4)
    port = free_tcp_port()
    log = tmp_path / "pybatsim.log"
    # cwd = tmp_path, not the repo root: the repo's schedulers/ would shadow pybatsim's own package
    proc = start([PYBATSIM, "schedFcfs", "-t", "0", "-s", f"tcp://127.0.0.1:{port}"], tmp_path, log)
    try:
        result = simulate(platform, [workload], socket=f"tcp://127.0.0.1:{port}", export=tmp_path / "zmq",
                          timeout_s=60)
        # pybatsim's launcher exits 0 when submitted == scheduled + rejected
        assert proc.wait(timeout=30) == 0, crash_log(log)
    finally:
        stop(proc)
    assert result.counts["submitted"] == 5 and result.counts["completed_successfully"] == 5
    assert result.simulated_time == 14.0
    ok = "COMPLETED_SUCCESSFULLY"
    assert read_jobs(tmp_path / "zmq_jobs.csv") == {
        "1": (1.0, 11.0, "0", ok),
        "2": (1.0, 3.0, "1", ok),
        "3": (1.0, 11.0, "2", ok),
        "4": (11.0, 14.0, "0-1", ok),
        "5": (11.0, 12.0, "3", ok),
    }
    # the very same scheduler run in this process gives the same _jobs.csv, byte for byte
    monkeypatch.chdir(tmp_path)            # pybatsim's batsim.sched writes out_events.csv in the cwd
    simulate(platform, [workload], make_scheduler("schedFcfs"), export=tmp_path / "inproc")
    assert (tmp_path / "zmq_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()


# ------------------------------------------------------------------------------------------- 2
def test_batfeed_fcfs_over_zmq_equals_inprocess_on_500_kth_jobs(tmp_path: Path, kth_trace: Path) -> None:
    """run_simulation(transport="zmq") starts ``batfeed schedule fcfs`` in a subprocess; the
    schedule cannot depend on the transport, so _jobs.csv must equal the in-process run's."""
    conv = convert_swf(kth_trace, tmp_path / "kth", max_jobs=500)
    workload = conv.workload_path

    zmq = run_simulation(conv.platform_path, [workload], scheduler="fcfs", transport="zmq",
                         export=tmp_path / "zmq", timeout_s=60)
    inproc = run_simulation(conv.platform_path, [workload], scheduler="fcfs", export=tmp_path / "inproc")
    assert zmq.counts == inproc.counts
    assert zmq.counts["submitted"] == 500
    assert zmq.counts["rejected"] == 0  # the converter drops jobs larger than the 100-node machine
    assert zmq.simulated_time == inproc.simulated_time
    assert zmq.messages == inproc.messages
    assert (tmp_path / "zmq_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()


# ------------------------------------------------------------------------------------------- 3
CRASH_SCHED = '''\
from batfeed.schedulers.fcfs import Fcfs


class CrashSched(Fcfs):
    def onJobSubmission(self, job):
        raise RuntimeError("crashSched boom on submission of " + job.id)
'''


def test_dead_scheduler_process_raises_batfeed_error_quickly(tmp_path: Path) -> None:
    """The scheduler answers SIMULATION_BEGINS, then dies on the first JOB_SUBMITTED: the engine's
    dead-process check (about twice a second) turns that into a BatfeedError naming it."""
    platform = write_homogeneous_platform(tmp_path / "p4.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(1, 0, 1, 5)], 4)
    sched = tmp_path / "crashSched.py"
    sched.write_text(CRASH_SCHED)
    t0 = time.monotonic()
    with pytest.raises(BatfeedError) as info:
        run_simulation(platform, [workload], scheduler=str(sched), transport="zmq", timeout_s=60)
    elapsed = time.monotonic() - t0
    message = str(info.value)
    assert "crashSched.py" in message                      # names the scheduler
    assert "exited" in message
    assert "boom on submission of w0!1" in message          # and its last error line
    assert "\n" not in message
    assert elapsed < 15, f"took {elapsed:.1f} s to notice the dead scheduler"


HANG_SCHED = '''\
import time

from batfeed.schedulers.fcfs import Fcfs


class HangSched(Fcfs):
    def onJobSubmission(self, job):
        time.sleep(3600)
'''


def test_silent_scheduler_hits_timeout(tmp_path: Path) -> None:
    """A live scheduler that never answers: simulate(socket=..., timeout_s=2) gives up with a
    BatfeedError naming the endpoint instead of waiting forever like Batsim."""
    platform = write_homogeneous_platform(tmp_path / "p4.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(1, 1, 1, 5)], 4)
    (tmp_path / "hangSched.py").write_text(HANG_SCHED)
    port = free_tcp_port()
    log = tmp_path / "pybatsim.log"
    proc = start([PYBATSIM, str(tmp_path / "hangSched.py"), "-t", "0", "-s", f"tcp://127.0.0.1:{port}"],
                 tmp_path, log)
    try:
        t0 = time.monotonic()
        with pytest.raises(BatfeedError, match=rf"no answer from the scheduler at tcp://127.0.0.1:{port} "
                                               r"within 2 s"):
            simulate(platform, [workload], socket=f"tcp://127.0.0.1:{port}", timeout_s=2)
        assert time.monotonic() - t0 < 15
        assert proc.poll() is None, crash_log(log)  # it was alive and silent, not dead
    finally:
        stop(proc)


# ------------------------------------------------------------------------------------------- 4
def test_repo_fcfs_file_runs_unchanged_under_pybatsim_launcher(tmp_path: Path) -> None:
    """``pybatsim schedulers/fcfs.py -t 0`` from the repo root, as docs/schedulers.md documents.

    batfeed's Fcfs: FCFS order on the lowest free ids, contiguous or not.  Hand schedule on the
    contiguity workload (4 hosts):

    - t=1: 1 on {0}, 2 on {1}, 3 on {2}; ends 11, 3, 11.
    - t=2: 4 (2 machines), free {3}: waits.
    - t=3: 2 ends, free {1, 3} -> 4 starts on "1 3" (not contiguous; schedFcfs would wait), ends 6.
    - t=4: 5 (1 machine), nothing free: waits.
    - t=6: 4 ends, free {1, 3} -> 5 on {1}, ends 7.
    - t=11: 1 and 3 end: makespan 11.
    """
    platform = write_homogeneous_platform(tmp_path / "p4.xml", 4)
    workload = write_workload(tmp_path / "w.json", CONTIGUITY_JOBS, 4)
    port = free_tcp_port()
    log = tmp_path / "pybatsim.log"
    proc = start([PYBATSIM, "schedulers/fcfs.py", "-t", "0", "-s", f"tcp://127.0.0.1:{port}"], REPO, log)
    try:
        result = simulate(platform, [workload], socket=f"tcp://127.0.0.1:{port}", export=tmp_path / "zmq",
                          timeout_s=60)
        assert proc.wait(timeout=30) == 0, crash_log(log)
    finally:
        stop(proc)
    assert "Scheduler: Fcfs" in log.read_text()  # pybatsim loaded the repo file's class Fcfs
    assert result.simulated_time == 11.0
    ok = "COMPLETED_SUCCESSFULLY"
    assert read_jobs(tmp_path / "zmq_jobs.csv") == {
        "1": (1.0, 11.0, "0", ok),
        "2": (1.0, 3.0, "1", ok),
        "3": (1.0, 11.0, "2", ok),
        "4": (3.0, 6.0, "1 3", ok),
        "5": (6.0, 7.0, "1", ok),
    }
    simulate(platform, [workload], make_scheduler("fcfs"), export=tmp_path / "inproc")
    assert (tmp_path / "zmq_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()


# ------------------------------------------------------------------------------------------- bug
CHATTY_SCHED = '''\
import sys

from batfeed.schedulers.fcfs import Fcfs


class ChattySched(Fcfs):
    def onSimulationBegins(self):
        super().onSimulationBegins()
        # ~256 KiB of logging, as pybatsim's high-level schedulers produce on a few hundred jobs
        for _ in range(4096):
            sys.stderr.write("x" * 63 + "\\n")
        sys.stderr.flush()
'''


def test_scheduler_logging_a_lot_to_stderr_does_not_hang(tmp_path: Path) -> None:
    """One job of 1 machine on 4 hosts: 1 on {0} at t=0, ends 5."""
    platform = write_homogeneous_platform(tmp_path / "p4.xml", 4)
    workload = write_workload(tmp_path / "w.json", [(1, 0, 1, 5)], 4)
    (tmp_path / "chattySched.py").write_text(CHATTY_SCHED)
    result = run_simulation(platform, [workload], scheduler=str(tmp_path / "chattySched.py"), transport="zmq",
                            export=tmp_path / "zmq", timeout_s=5)
    assert read_jobs(tmp_path / "zmq_jobs.csv") == {"1": (0.0, 5.0, "0", "COMPLETED_SUCCESSFULLY")}
    assert result.counts["completed_successfully"] == 1
