"""No silent hang over ZeroMQ (docs/cli.md "Timeouts"): ``--timeout`` on ``simulate`` and
``schedule``; without it batfeed waits like Batsim but notices a dead scheduler process and says on
stderr what it awaits (after BATFEED_WAIT_NOTICE seconds here, 60 s by default); bind and endpoint
errors are one line.

Every case drives the real CLI in a subprocess with a bounded wait (``--timeout`` and/or the
subprocess timeout) on free loopback ports, and kills what it started.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zmq
from cli_helpers import CLI, error_line, run_cli, write_inputs

from batfeed.engine import load_simulation
from batfeed.engine.messages import simulation_begins_data
from batfeed.runner import free_tcp_port

HANG_SCHED = '''\
import time

from batfeed.schedulers.fcfs import Fcfs


class HangSched(Fcfs):
    def onJobSubmission(self, job):
        time.sleep(3600)
'''

SLOW_SCHED = '''\
import time

from batfeed.schedulers.fcfs import Fcfs


class SlowSched(Fcfs):
    def onJobSubmission(self, job):
        if self.bs.time() >= 5:
            time.sleep(3)
        super().onJobSubmission(job)
'''

EXIT_SCHED = '''\
import os

from batfeed.schedulers.fcfs import Fcfs


class ExitSched(Fcfs):
    def onJobSubmission(self, job):
        os._exit(3)
'''

# binds a REP socket, says "ready", reads one request and never answers
SILENT_LISTENER = '''\
import sys, time, zmq
s = zmq.Context().socket(zmq.REP)
s.bind(sys.argv[1])
print("ready", flush=True)
s.recv()
time.sleep(120)
'''


def simulate_args(tmp: Path, *extra: str) -> list[str]:
    platform, workload = write_inputs(tmp)
    return ["simulate", str(platform), str(workload), "--export", str(tmp / "out"), *extra]


def no_answer(seconds: str, awaited: str, state: str) -> str:
    return (r"no answer from the scheduler at tcp://127\.0\.0\.1:\d+ within " + seconds + r" s \(awaiting its reply "
            r"to the message at t=" + re.escape(awaited) + r"\): " + re.escape(state))


def test_stalled_scheduler_process_hits_timeout(tmp_path: Path) -> None:
    (tmp_path / "hangSched.py").write_text(HANG_SCHED)
    t0 = time.monotonic()
    proc = run_cli(simulate_args(tmp_path, "--scheduler", "hangSched.py", "--transport", "zmq", "--timeout", "8"),
                   tmp_path, timeout=60)
    error_line(proc, "simulate", no_answer("8", "0.000000 (JOB_SUBMITTED x2)",
                                           "it is connected but silent (stalled or busy)"))
    assert time.monotonic() - t0 < 30          # the stalled process is killed at once, not awaited


def test_nothing_listening_hits_timeout(tmp_path: Path) -> None:
    port = free_tcp_port()
    proc = run_cli(simulate_args(tmp_path, "--transport", "zmq", "--socket", f"tcp://127.0.0.1:{port}",
                                 "--timeout", "1"), tmp_path, timeout=60)
    error_line(proc, "simulate", no_answer("1", "0.000000 (SIMULATION_BEGINS)", "nothing is listening there"))


def test_listener_that_never_answers_hits_timeout(tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    listener = subprocess.Popen([sys.executable, "-c", SILENT_LISTENER, endpoint], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "ready"
        proc = run_cli(simulate_args(tmp_path, "--transport", "zmq", "--socket", endpoint, "--timeout", "1.5"),
                       tmp_path, timeout=60)
    finally:
        listener.kill()
        listener.wait(timeout=10)
    error_line(proc, "simulate", no_answer("1.5", "0.000000 (SIMULATION_BEGINS)",
                                           "it is connected but silent (stalled or busy)"))


NOTICE = (r"batfeed: still waiting after 1 s for the scheduler at tcp://127\.0\.0\.1:\d+ to reply to the message at "
          r"t={t} \({events}\): {state}; no --timeout: waiting on, like Batsim")


def test_without_timeout_a_notice_then_the_run_goes_on(tmp_path: Path) -> None:
    """A scheduler (``batfeed schedule``, started first) 3 s late on one message: one line on stderr
    after 1 s, then the run completes."""
    (tmp_path / "slowSched.py").write_text(SLOW_SCHED)
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    sched = subprocess.Popen([*CLI, "schedule", "slowSched.py", "--socket", endpoint, "--timeout", "60"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert sched.stdout is not None and sched.stdout.readline().startswith("Scheduler: SlowSched")
        proc = run_cli(simulate_args(tmp_path, "--transport", "zmq", "--socket", endpoint), tmp_path,
                       env={"BATFEED_WAIT_NOTICE": "1"}, timeout=60)
        assert sched.wait(timeout=30) == 0
    finally:
        if sched.poll() is None:
            sched.kill()
            sched.wait(timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    notices = [line for line in proc.stderr.splitlines() if line.startswith("batfeed:")]
    assert len(notices) == 1, proc.stderr
    assert re.fullmatch(NOTICE.format(t=r"5\.000000", events="JOB_SUBMITTED",
                                      state=re.escape("it is connected but silent (stalled or busy)")), notices[0])
    assert "jobs: submitted=3 = completed=3" in proc.stdout


def test_without_timeout_nothing_listening_is_said_and_the_wait_goes_on(tmp_path: Path) -> None:
    port = free_tcp_port()
    cmd = [*CLI, *simulate_args(tmp_path, "--transport", "zmq", "--socket", f"tcp://127.0.0.1:{port}")]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BATFEED_WAIT_NOTICE": "1"})
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().rstrip("\n")       # blocks until the notice (the subprocess is bounded below)
        assert re.fullmatch(NOTICE.format(t=r"0\.000000", events="SIMULATION_BEGINS",
                                          state="nothing is listening there"), line), line
        time.sleep(1.5)
        assert proc.poll() is None                        # still waiting, like Batsim
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_dead_scheduler_process_is_noticed_without_timeout(tmp_path: Path) -> None:
    (tmp_path / "exitSched.py").write_text(EXIT_SCHED)
    proc = run_cli(simulate_args(tmp_path, "--scheduler", "exitSched.py", "--transport", "zmq"), tmp_path, timeout=60)
    error_line(proc, "simulate", re.escape("scheduler 'exitSched.py' exited (code 3) without answering: ") + ".+")


@pytest.mark.parametrize(("socket", "message"), [
    ("foo", "cannot connect to 'foo': not a valid ZeroMQ endpoint (expected tcp://HOST:PORT, e.g. tcp://*:28000 "
            "to bind, tcp://localhost:28000 to connect)"),
    ("tcp://localhost", "cannot connect to 'tcp://localhost': not a valid ZeroMQ endpoint (expected tcp://HOST:PORT, "
                        "e.g. tcp://*:28000 to bind, tcp://localhost:28000 to connect)"),
])
def test_simulate_malformed_endpoint(tmp_path: Path, socket: str, message: str) -> None:
    proc = run_cli(simulate_args(tmp_path, "--transport", "zmq", "--socket", socket, "--timeout", "5"), tmp_path,
                   timeout=60)
    error_line(proc, "simulate", re.escape(message))


@pytest.mark.parametrize(("extra", "message"), [
    (["--transport", "zmq", "--timeout", "0"], "--timeout must be > 0 seconds (got 0)"),
    (["--scheduler", "fcfs", "--timeout", "5"],
     "--timeout needs --transport zmq (an in-process scheduler runs in this process; Ctrl-C stops it)"),
])
def test_simulate_bad_timeout(tmp_path: Path, extra: list[str], message: str) -> None:
    error_line(run_cli(simulate_args(tmp_path, *extra), tmp_path, timeout=60), "simulate", re.escape(message))


# ------------------------------------------------------------------------------------------- schedule
def test_schedule_port_in_use(tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    sock = zmq.Context.instance().socket(zmq.REP)
    sock.bind(endpoint)
    try:
        proc = run_cli(["schedule", "fcfs", "--socket", endpoint, "--timeout", "5"], tmp_path, timeout=60)
    finally:
        sock.close(linger=0)
    error_line(proc, "schedule", re.escape(f"cannot bind {endpoint}: address already in use (another program, maybe "
                                           "another scheduler, listens on that port)"))


@pytest.mark.parametrize("socket", ["foo", "bogus://x:1", "tcp://*:port"])
def test_schedule_malformed_endpoint(tmp_path: Path, socket: str) -> None:
    proc = run_cli(["schedule", "fcfs", "--socket", socket, "--timeout", "5"], tmp_path, timeout=60)
    error_line(proc, "schedule", re.escape(f"cannot bind '{socket}': not a valid ZeroMQ endpoint (expected "
                                           "tcp://HOST:PORT, e.g. tcp://*:28000 to bind, tcp://localhost:28000 to "
                                           "connect)"))


def test_schedule_timeout_without_batsim(tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    t0 = time.monotonic()
    proc = run_cli(["schedule", "fcfs", "--socket", endpoint, "--timeout", "1"], tmp_path, timeout=60)
    error_line(proc, "schedule", re.escape(f"no message from Batsim within 1 s (the scheduler listens at {endpoint})"))
    assert time.monotonic() - t0 < 30


def test_schedule_timeout_between_messages(tmp_path: Path) -> None:
    """Batsim's side sends SIMULATION_BEGINS, reads the reply and sends nothing more: the scheduler gives up."""
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    sched = subprocess.Popen([*CLI, "schedule", "fcfs", "--socket", endpoint, "--timeout", "1.5"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        platform, workload = write_inputs(tmp_path)
        sim = load_simulation(platform, [workload])
        sock.send_json({"now": 0.0, "events": [{"timestamp": 0.0, "type": "SIMULATION_BEGINS",
                                                "data": simulation_begins_data(sim)}]})
        assert sock.poll(30_000), "no reply to SIMULATION_BEGINS"
        sock.recv()
        _, err = sched.communicate(timeout=60)
    finally:
        sock.close(linger=0)
        if sched.poll() is None:
            sched.kill()
            sched.wait(timeout=10)
    assert sched.returncode == 1 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (f"batfeed schedule: error: no message from Batsim within 1.5 s (the "
                                            f"scheduler listens at {endpoint})")
