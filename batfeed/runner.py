"""Run one simulation from the CLI or a script: inputs, scheduler, transport, progress bar."""

from __future__ import annotations

import os
import socket as pysocket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from batfeed.engine import EngineConfig, SimulationResult, load_simulation
from batfeed.engine.direct import DirectDriver, supports_direct
from batfeed.engine.transport import InProcessTransport, ZmqTransport
from batfeed.errors import BatfeedError
from batfeed.registry import make_scheduler


def free_tcp_port() -> int:
    with closing(pysocket.socket(pysocket.AF_INET, pysocket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_scheduler_process(name: str, options: dict[str, Any], port: int) -> subprocess.Popen[bytes]:
    """Start ``batfeed schedule NAME`` bound to ``tcp://127.0.0.1:PORT`` in a subprocess."""
    import json
    # -P: do not put the cwd on sys.path (a repo checkout has a `schedulers/` folder that would
    # shadow pybatsim's own `schedulers` package)
    if Path(name).suffix == ".py" and Path(name).exists():
        name = str(Path(name).resolve())
    cmd = [sys.executable, "-P", "-m", "batfeed.cli", "schedule", name, "--socket", f"tcp://127.0.0.1:{port}",
           "--options", json.dumps(options)]
    # stderr goes to a file, not a pipe: a pipe nobody reads blocks a chatty scheduler after 64 KiB
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    proc.stderr = log  # type: ignore[assignment]  # read back by _alive_checker
    return proc


def run_simulation(platform: str | Path, workloads: Sequence[str | Path], *, scheduler: str | None = None,
                   options: dict[str, Any] | None = None, events: Sequence[str | Path] = (),
                   export: str | Path | None = None, transport: str = "inprocess", driver: str = "auto",
                   socket: str = "tcp://localhost:28000", progress: bool = False, dynamic: bool = False,
                   ack: bool = False, profile_reuse: bool = False, forward_profiles: bool = False,
                   forward_unknown: bool = False, sched_config: str = "", master_host: str = "master_host",
                   mmax: int | None = None, timeout_s: float | None = None, users: str | None = None,
                   user_options: dict[str, Any] | None = None) -> SimulationResult:
    """``users``: replay ``workloads[0]`` (the recorded trace) through user model ``users`` wrapping
    ``scheduler`` (:mod:`batfeed.users`): the trace is not given to the engine as a static workload,
    dynamic jobs are enabled and ``user_options`` go to the user-model layer.

    ``driver`` (in-process transport): ``"direct"`` (the engine calls the scheduler's callbacks),
    ``"pybatsim"`` (messages through pybatsim's ``Batsim`` class) or ``"auto"`` (direct for the
    schedulers that support it, :func:`batfeed.engine.direct.supports_direct`)."""
    if users is not None:
        scheduler, options, workloads, dynamic = _user_model_setup(scheduler, options, workloads, users,
                                                                   user_options)
    config = EngineConfig(enable_dynamic_jobs=dynamic, acknowledge_dynamic_jobs=ack,
                          enable_profile_reuse=profile_reuse, forward_profiles_on_submission=forward_profiles,
                          forward_unknown_events=forward_unknown, sched_config=sched_config)
    sim = load_simulation(platform, workloads, events, config, master_host, mmax)
    bar = None
    if progress and sim.nb_static >= 5000:
        from tqdm import tqdm
        bar = tqdm(total=sim.nb_static, unit="job", desc="simulating", disable=None, leave=False)

        def on_progress(done: int, total: int) -> None:
            bar.update(done - bar.n)
        sim.on_progress = on_progress
    proc = None
    try:
        if transport == "inprocess":
            if scheduler is None:
                raise BatfeedError("the in-process transport needs a scheduler name")
            link: Any = in_process_driver(make_scheduler(scheduler, options), driver)
        elif transport == "zmq":
            check = None
            if scheduler is not None:
                port = free_tcp_port()
                proc = launch_scheduler_process(scheduler, options or {}, port)
                socket = f"tcp://127.0.0.1:{port}"
                check = _alive_checker(proc, scheduler)
            link = ZmqTransport(socket, timeout_s, check)
        else:
            raise BatfeedError(f"unknown transport '{transport}' (inprocess or zmq)")
        result = sim.run(link, export)
    finally:
        if bar is not None:
            bar.close()
        if proc is not None:
            _reap(proc)
    return result


def in_process_driver(sched: Any, driver: str = "auto") -> Any:
    """The driver for a scheduler object: :class:`DirectDriver` or pybatsim's ``Batsim`` (messages)."""
    if driver not in ("auto", "direct", "pybatsim"):
        raise BatfeedError(f"unknown driver '{driver}' (auto, direct or pybatsim)")
    if driver == "pybatsim" or (driver == "auto" and not supports_direct(sched)):
        return InProcessTransport(sched)
    if not supports_direct(sched):
        raise BatfeedError(f"the direct driver needs a batfeed scheduler (or the user-model layer wrapping one); "
                           f"{type(sched).__name__} may use more of pybatsim: use --driver pybatsim")
    return DirectDriver(sched)


USER_LAYER = "batfeed.users:UserModelScheduler"


def _user_model_setup(scheduler: str | None, options: dict[str, Any] | None, workloads: Sequence[str | Path],
                      users: str, user_options: dict[str, Any] | None
                      ) -> tuple[str, dict[str, Any], list[str | Path], bool]:
    if scheduler is None:
        raise BatfeedError("--users needs --scheduler (the scheduler the user model wraps)")
    if len(workloads) != 1:
        raise BatfeedError(f"--users replays exactly one recorded trace (got {len(workloads)} workloads)")
    layer = {"scheduler": scheduler, "scheduler_options": dict(options or {}), "users": users,
             "trace": str(Path(workloads[0]).resolve()), **(user_options or {})}
    return USER_LAYER, layer, [], True


def _alive_checker(proc: subprocess.Popen[bytes], name: str) -> Callable[[], None]:
    def check() -> None:
        if proc.poll() is not None:
            err = []
            if proc.stderr is not None:
                proc.stderr.seek(0)
                err = proc.stderr.read().decode(errors="replace").strip().splitlines()
            tail = err[-1] if err else "no error output"
            raise BatfeedError(f"scheduler '{name}' exited (code {proc.returncode}) without answering: {tail}")
    return check


def _reap(proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()
