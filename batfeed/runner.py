"""Run one simulation from the CLI or a script: inputs, scheduler, transport, progress bar."""

from __future__ import annotations

import gc
import os
import socket as pysocket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import zmq
from batsim.network import NetworkHandler

from batfeed.crash import SchedulerError, callback_error, debug_enabled, message_error, scheduler_time
from batfeed.engine import EngineConfig, SimulationResult, load_simulation
from batfeed.engine.direct import DirectDriver, supports_direct
from batfeed.engine.transport import InProcessTransport, ZmqTransport, endpoint_error
from batfeed.errors import BatfeedError
from batfeed.manifest import Prefetch, build_manifest, input_entries, python_call, utc_now, write_manifest
from batfeed.registry import make_scheduler
from batfeed.run_options import (
    apply_log,
    apply_seed,
    needs_profiles,
    resolve_scheduler_options,
    resolve_user_options,
    spec_of,
)


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
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"BATFEED_DEBUG": "1"} if debug_enabled() else {})}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
    proc.stderr = log  # type: ignore[assignment]  # read back by _alive_checker
    return proc


def run_simulation(platform: str | Path, workloads: Sequence[str | Path], *, scheduler: str | None = None,
                   options: dict[str, Any] | None = None, events: Sequence[str | Path] = (),
                   export: str | Path | None = None, transport: str = "inprocess", driver: str = "auto",
                   socket: str = "tcp://localhost:28000", progress: bool = False, dynamic: bool = False,
                   ack: bool = False, profile_reuse: bool = False, forward_profiles: bool = False,
                   forward_unknown: bool = False, sched_config: str = "", master_host: str = "master_host",
                   mmax: int | None = None, timeout_s: float | None = None, users: str | None = None,
                   user_options: dict[str, Any] | None = None, seed: int | None = None,
                   call: str | None = None, machine_states: bool = True, energy: bool = False,
                   prefetch: Prefetch | None = None) -> SimulationResult:
    """Simulate ``platform`` + ``workloads`` with ``scheduler``; with ``export``, write Batsim's files
    ``PREFIX_jobs.csv`` … and the run manifest ``PREFIX_manifest.json`` (:mod:`batfeed.manifest`).

    ``seed``: recorded in the manifest, and given to the scheduler and the user model as option
    ``seed`` when their option specs declare one (an explicit option wins).  With ``export``, a
    scheduler declaring a ``log`` option and a ``LOG_SUFFIX`` gets ``log = PREFIX + LOG_SUFFIX``
    unless given; ``forward_profiles`` is turned on for schedulers with ``NEEDS_PROFILES``.  ``call``: how the run was
    invoked, for the manifest (the CLI gives its command line; default: this Python call).
    ``machine_states``: False does not write ``PREFIX_machine_states.csv`` (Batsim's
    ``--disable-machine-state-tracing``).  ``energy``: Batsim's ``-E`` (pstates, switches, energy queries,
    ``PREFIX_consumed_energy.csv`` and ``PREFIX_pstate_changes.csv``; :mod:`batfeed.engine.energy_sim`).
    ``prefetch``: the manifest's :class:`~batfeed.manifest.Prefetch` of these inputs, if the caller started it
    (default: started here, with ``export``).

    ``users``: replay ``workloads[0]`` (the recorded trace) through user model ``users`` wrapping
    ``scheduler`` (:mod:`batfeed.users`): the trace is not given to the engine as a static workload,
    dynamic jobs are enabled and ``user_options`` go to the user-model layer.

    ``driver`` (in-process transport): ``"direct"`` (the engine calls the scheduler's callbacks),
    ``"pybatsim"`` (messages through pybatsim's ``Batsim`` class) or ``"auto"`` (direct for the
    schedulers that support it, :func:`batfeed.engine.direct.supports_direct`)."""
    given, started, t_start = dict(locals()), utc_now(), time.perf_counter()
    if timeout_s is not None and (transport != "zmq" or not timeout_s > 0):
        raise BatfeedError(f"--timeout must be > 0 seconds (got {timeout_s:g})" if transport == "zmq" else
                           "--timeout needs --transport zmq (an in-process scheduler runs in this process; "
                           "Ctrl-C stops it)")
    if export is not None and prefetch is None:     # versions, git, host and input hashes, during the run
        prefetch = Prefetch([platform, *workloads, *events])
    label, context = scheduler, f"user model {users}" if users else ""
    options, user_options = apply_seed(seed, scheduler, options, users, user_options)
    options = apply_log(export, scheduler, options)            # tuned_easy: PREFIX_tuning.csv
    forward_profiles = forward_profiles or needs_profiles(scheduler)   # tuned_easy: actual run times
    asked = (scheduler, options, list(workloads), user_options)        # for the manifest
    if users is not None:
        scheduler, options, workloads, dynamic = _user_model_setup(scheduler, options, workloads, users,
                                                                   user_options)
    config = EngineConfig(enable_dynamic_jobs=dynamic, acknowledge_dynamic_jobs=ack,
                          enable_profile_reuse=profile_reuse, forward_profiles_on_submission=forward_profiles,
                          forward_unknown_events=forward_unknown, sched_config=sched_config,
                          disable_machine_state_tracing=not machine_states, energy=energy)
    sched = None                        # options first: a bad option is the one line, before any warning
    if transport == "inprocess":
        if scheduler is None:
            raise BatfeedError("the in-process transport needs a scheduler name")
        sched = make_scheduler(scheduler, options)
    elif transport == "zmq" and scheduler is not None:
        check_options(scheduler, options)
    with _loading():
        sim = load_simulation(platform, workloads, events, config, master_host, mmax)
    bar = None
    proc = None
    ok = False
    try:
        from batfeed.schedulers.backfill import walltime_warnings
        for line in walltime_warnings(scheduler, sim.workloads.values()):   # EASY & co. without walltimes
            print(line, file=sys.stderr)
        if progress and sim.nb_static >= 5000:
            from tqdm import tqdm
            bar = tqdm(total=sim.nb_static, unit="job", desc="simulating", disable=None, leave=False)

            def on_progress(done: int, total: int) -> None:
                bar.update(done - bar.n)
            sim.on_progress = on_progress
        if transport == "inprocess":
            link: Any = in_process_driver(sched, driver)
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
        try:
            result = sim.run(link, export)
        except BatfeedError:
            raise
        except Exception as err:           # the scheduler's own code failed (not the engine's, see crash.py)
            crash = callback_error(err, str(label), sched, sim.clock, context)
            if crash is None:
                raise
            raise crash from err
        result.user_stats = user_stats(sched)
        ok = True
    finally:
        gc.unfreeze()                      # what _loading() froze (Simulator.run unfreezes it too)
        if bar is not None:
            bar.close()
        if proc is not None:
            _reap(proc, wait=ok)
    if export is not None:
        wall = time.perf_counter() - t_start
        write_manifest(export, lambda: _manifest(given, asked, result, started, wall, transport, config,
                                                 master_host, mmax, events, prefetch))
    return result


@contextmanager
def _loading() -> Iterator[None]:
    """The cyclic GC paused while the inputs are read and the engine's state is built, which then stays out
    of its reach (``gc.freeze``) until the run's end: all those objects live on, so its passes over them
    (millions for a big trace) free nothing; with them, loading CEA-Curie took 1.5 times as long, and the
    first collection after the loading another 0.6 s."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
        gc.freeze()
    finally:
        if enabled:
            gc.enable()


def _manifest(given: dict[str, Any], asked: tuple[Any, ...], result: SimulationResult, started: str, wall: float,
              transport: str, config: EngineConfig, master_host: str, mmax: int | None,
              events: Sequence[str | Path], prefetch: Prefetch | None) -> dict[str, Any]:
    scheduler, options, workloads, user_options = asked
    sched = resolve_scheduler_options(scheduler, options)
    users = resolve_user_options(given["users"], user_options)
    if users is not None:
        users["replays"] = str(workloads[0]) if workloads else None
    call = given["call"] or python_call(run_simulation, given, skip=("call", "prefetch"))
    switches = {**config.__dict__, "master_host": master_host, "mmax": mmax}
    return build_manifest(call=call, scheduler=sched, users=users, seed=given["seed"],
                          inputs=input_entries(given["platform"], workloads, events, sched, users, prefetch),
                          result=result, started=started, wall_time_s=wall, transport=transport, switches=switches,
                          prefix=given["export"], prefetch=prefetch)


def user_stats(sched: Any) -> dict[str, Any] | None:
    """The stats of the generating user model ``sched`` wraps (users/site.py ``stats``), else None."""
    stats = getattr(getattr(sched, "model", None), "stats", None)
    return stats() if callable(stats) else None


def check_options(scheduler: str, options: dict[str, Any] | None) -> None:
    """Check the options of a scheduler with option specs (batfeed's) as its constructor would, for a
    scheduler that runs in another process (``--transport zmq``): the error comes before any input warning."""
    from batfeed.schedulers.options import validate

    target, specs = spec_of(scheduler)
    if target is not None and specs is not None:
        validate(specs, dict(options or {}), target.rpartition(":")[2])


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
    from batfeed.users.base import model_class

    cls = model_class(users)
    if cls.GENERATES:           # site-level users generate their jobs: no trace (Batsim without -w)
        if workloads:
            raise BatfeedError(f"user model '{users}' generates its jobs: give no workload")
    elif len(workloads) != 1:
        raise BatfeedError(f"--users replays exactly one recorded trace (got {len(workloads)} workloads)")
    layer = {"scheduler": scheduler, "scheduler_options": dict(options or {}), "users": users,
             **({"trace": str(Path(workloads[0]).resolve())} if workloads else {}), **(user_options or {})}
    return USER_LAYER, layer, [], True


def _alive_checker(proc: subprocess.Popen[bytes], name: str) -> Callable[[], None]:
    def check() -> None:
        if proc.poll() is not None:
            err = ""
            if proc.stderr is not None:
                proc.stderr.seek(0)
                err = proc.stderr.read().decode(errors="replace").strip()
            lines = err.splitlines()
            tail = lines[-1].removeprefix("batfeed schedule: error: ") if lines else "no error output"
            if tail.startswith("scheduler '") and " raised " in tail:     # its own one-line report (crash.py)
                tail = f"scheduler '{name}'" + tail[tail.index("'", len("scheduler '")) + 1:]  # not the resolved path
                raise SchedulerError(f"{tail} (the scheduler process exited with code {proc.returncode})", err)
            raise SchedulerError(f"scheduler '{name}' exited (code {proc.returncode}) without answering: {tail}",
                                 err)
    return check


def _reap(proc: subprocess.Popen[bytes], wait: bool = True) -> None:
    """Let a scheduler process finish (10 s at most) after a run; kill it at once after a failure."""
    deadline = time.monotonic() + (10 if wait else 0)
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stderr is not None:
        proc.stderr.close()


def serve_scheduler(name: str, options: dict[str, Any], endpoint: str, timeout_s: float | None = None) -> int:
    """``batfeed schedule``: serve scheduler ``name`` to a Batsim at ``endpoint`` (REP, bound) with
    pybatsim's launcher.  A bind failure, ``timeout_s`` without a message from Batsim and an exception
    in the scheduler's code are one-line errors (:class:`BatfeedError`)."""
    import batsim.batsim as pybatsim
    from batsim.tools.launcher import launch_scheduler

    if timeout_s is not None and not timeout_s > 0:
        raise BatfeedError(f"--timeout must be > 0 seconds (got {timeout_s:g})")
    scheduler = make_scheduler(name, options)
    original = pybatsim.NetworkHandler
    pybatsim.NetworkHandler = lambda endpoint, timeout=None, type=zmq.REP: _Handler(endpoint, timeout_s, type)
    try:
        return launch_scheduler(scheduler, endpoint, None, scheduler.options, -1, False)
    except BatfeedError:
        raise
    except Exception as err:
        t = scheduler_time(scheduler)
        crash = callback_error(err, name, scheduler, t) or message_error(err, t)
        if crash is None:
            raise
        raise crash from err
    finally:
        pybatsim.NetworkHandler = original


class _Handler(NetworkHandler):
    """pybatsim's socket handler with one-line bind errors and batfeed's ``--timeout`` (per message)."""

    def __init__(self, endpoint: str, timeout_s: float | None, kind: int):
        super().__init__(endpoint, -1, kind)
        self.timeout_s = timeout_s

    def bind(self) -> None:
        try:
            super().bind()
        except zmq.ZMQError as err:
            self.close()
            raise BatfeedError(endpoint_error("bind", self.socket_endpoint, err)) from None

    def recv_string(self, blocking: bool = False) -> str | None:
        limit = None if self.timeout_s is None else time.monotonic() + self.timeout_s
        while not self.connection.poll(_slice_ms(limit)):
            if limit is not None and time.monotonic() >= limit:
                raise BatfeedError(f"no message from Batsim within {self.timeout_s:g} s (the scheduler listens at "
                                   f"{self.socket_endpoint})")
        return super().recv_string(blocking=True)


def _slice_ms(limit: float | None) -> int:
    """How long to wait for a message before looking at the clock again: 500 ms, less near ``limit``."""
    return 500 if limit is None else int(min(500, max(1, (limit - time.monotonic()) * 1000)))
