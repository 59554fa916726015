"""Running a campaign's simulations: one run in a worker (:func:`execute_run`), and the executors that
dispatch them (a local ``concurrent.futures.ProcessPoolExecutor``, or a Dask distributed cluster).

A run writes everything into ``runs/.tmp-KEY-...`` (Batsim's files, the run manifest, ``log.txt``)
and ``result.json`` last, then renames the directory to ``runs/KEY``: a run directory exists only
once it is complete.  A run interrupted (SIGINT) or killed leaves at most a ``.tmp-`` directory,
which the next invocation removes.  An exception in the run is recorded in ``result.json``
(status "failed" and a one-line error) and the directory renamed all the same: the failure is a
result, not retried unless asked (``--retry-failed``).  A ``result.json`` is used only when it is the
record of its directory's run (:func:`record_problem`); a cached input a run finds damaged is made
again, and the record's ``notes`` say so.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batfeed.campaign.jsonfile import read_json
from batfeed.errors import BatfeedError

RESULT = "result.json"
PREFIX = "run"                      # runs/KEY/run_jobs.csv, run_manifest.json, ...


@dataclass
class RunTask:
    """Everything a worker needs for one run (paths are absolute: with Dask, on a shared filesystem)."""

    key: str
    root: str
    workload: str
    platform: str
    scheduler: str
    options: dict[str, Any]
    users: str | None = None
    user_options: dict[str, Any] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)
    shake: float = 0.0
    resample_weeks: int = 0            # a resample of the trace (then shaking): weekly (adapters/resample.py)
    resample_method: str = "weekly"    # or users (users/zf_resample.py, with load factor resample_load), or
    #                                    permute (adapters/resample_permute.py: as long as the log, resample_weeks 0)
    resample_load: float = 1.0
    resample_rb_npw: float = 0.0       # users: rare-behaviour arrivals per week; metrics also without them
    seed: int | None = None            # given to the run (shaking, seed options) when something consumes it
    shaken: str | None = None          # where the shaken workload is cached
    tau: float = 10.0
    window: tuple[float, float] | None = None
    call: str | None = None
    validate: dict[str, Any] | None = None   # a weekly validation run (weekly.py), not one simulation
    lean: bool = False                 # EASY runs without the engine where batfeed/lean.py can (same metrics)

    @property
    def resampled(self) -> bool:
        """The run simulates a resample of the workload (``resample_weeks``, or the "permute" method)."""
        return self.resample_weeks > 0 or self.resample_method == "permute"


def one_line(err: BaseException) -> str:
    """batfeed's own errors as they are (one line); anything else as ``Type: message``."""
    text = str(err) if isinstance(err, BatfeedError) else f"{type(err).__name__}: {err}"
    lines = text.strip().splitlines()
    return lines[0] if lines else type(err).__name__


_IN_POOL = False        # this process is a local pool worker
_RUNNING = False        # ... in the middle of a run (SIGINT interrupts it)
_STOP = False           # ... that got SIGINT: it runs nothing more


def _on_sigint(signum: int, frame: Any) -> None:
    global _STOP
    _STOP = True
    if _RUNNING:
        raise KeyboardInterrupt


def _pool_worker_init() -> None:
    """Local pool workers: SIGINT interrupts the run in progress (its temporary directory is removed)
    and makes the worker refuse the runs still queued for it."""
    global _IN_POOL
    _IN_POOL = True
    signal.signal(signal.SIGINT, _on_sigint)
    logging.getLogger("batsim").setLevel(logging.ERROR)


def _supported(name: str) -> bool:
    from batfeed.runner import run_simulation

    return name in inspect.signature(run_simulation).parameters


def _simulate(task: RunTask, tmp: Path, notes: list[str]) -> dict[str, Any]:
    from batfeed.campaign.columns import flatten
    from batfeed.campaign.inputs import derived_workload, shaken_workload
    from batfeed.metrics import compute_metrics
    from batfeed.runner import run_simulation

    if task.validate is not None:
        from batfeed.campaign.weekly import run_validate

        return run_validate(task, tmp)

    def note(line: str) -> None:            # a damaged cached input made again: in the record and log.txt
        notes.append(line)
        print(f"note: {line}")

    workload = task.workload
    if task.resampled and task.seed is not None and task.shaken:
        workload = str(derived_workload(task.workload, task.resample_weeks, task.shake, task.seed, task.shaken,
                                        method=task.resample_method, load=task.resample_load,
                                        rb_npw=task.resample_rb_npw, note=note))
    elif task.shake > 0 and task.seed is not None and task.shaken:
        workload = str(shaken_workload(task.workload, task.shake, task.seed, task.shaken, note=note))
    lean_reason = None
    if task.lean and not task.users and not task.events:
        done = _lean(task, workload, tmp)
        if not isinstance(done, str):
            return done
        lean_reason = done
    extra = {k: v for k, v in (("seed", task.seed), ("call", task.call)) if v is not None and _supported(k)}
    result = run_simulation(task.platform, [workload] if workload else [], scheduler=task.scheduler,
                            options=dict(task.options),
                            events=task.events, users=task.users, user_options=dict(task.user_options) or None,
                            export=tmp / PREFIX, **extra)
    metrics = flatten(compute_metrics(tmp / f"{PREFIX}_jobs.csv", tau=task.tau, window=task.window))
    if task.resample_rb_npw:
        metrics.update(_non_rb_metrics(task, workload, tmp))
    metrics.update({f"users.{k}": v for k, v in (result.user_stats or {}).items()})
    return {"metrics": metrics, "counts": dict(result.counts), "simulated_time": result.simulated_time,
            "simulation_wall_s": result.wall_time, "workload": workload, "simulation": "engine",
            **({"lean_reason": lean_reason} if lean_reason else {})}


def _lean(task: RunTask, workload: str, tmp: Path) -> dict[str, Any] | str:
    """The run without the engine (:mod:`batfeed.lean`: the engine's metrics, no Batsim files), or why it
    needs the engine (the record's ``lean_reason``; the invocation sums them up in one line)."""
    from batfeed.campaign.columns import flatten
    from batfeed.lean import lean_jobs, write_manifest
    from batfeed.metrics import compute_metrics
    from batfeed.run_options import apply_seed

    started, t0 = utc_now(), time.perf_counter()
    options, _ = apply_seed(task.seed, task.scheduler, dict(task.options), None, None)
    run = lean_jobs(task.platform, [workload], task.scheduler, options)
    if isinstance(run, str):
        return run
    wall = time.perf_counter() - t0
    write_manifest(tmp / PREFIX, run, platform=task.platform, workload=workload, scheduler=task.scheduler,
                   options=options, seed=task.seed, call=task.call or "batfeed.lean.lean_jobs", started=started,
                   wall_s=wall)
    metrics = flatten(compute_metrics(run.jobs, tau=task.tau, window=task.window, nb_resources=run.nb_machines))
    return {"metrics": metrics, "counts": run.counts, "simulated_time": run.simulated_time,
            "simulation_wall_s": wall, "workload": workload, "simulation": "lean"}


def _non_rb_metrics(task: RunTask, workload: str, tmp: Path) -> dict[str, Any]:
    """The metrics without the rare-behaviour jobs (``resampled_rb`` in the workload), as Zakay & Feitelson
    report RB experiments (models.md §E), prefixed ``non_rb.``; ``non_rb.nb_rb_jobs`` counts those left out."""
    import pandas as pd

    from batfeed.campaign.columns import flatten
    from batfeed.campaign.inputs import read_workload
    from batfeed.metrics import compute_metrics

    rb = {str(j["id"]) for j in read_workload(workload)["jobs"] if j.get("resampled_rb")}
    jobs = pd.read_csv(tmp / f"{PREFIX}_jobs.csv", dtype={"job_id": str})
    keep = ~jobs["job_id"].isin(rb)
    flat = flatten(compute_metrics(jobs[keep], tau=task.tau, window=task.window, platform=task.platform))
    return {"non_rb.nb_rb_jobs": int((~keep).sum()), **{f"non_rb.{k}": v for k, v in flat.items()}}


def execute_run(task: RunTask) -> dict[str, Any]:
    """Run one simulation and its metrics into ``runs/KEY`` (atomically); returns its record.

    Any exception of the simulation is caught and recorded (status "failed"); only an interruption
    (KeyboardInterrupt) propagates, after the run's temporary directory is removed."""
    global _RUNNING
    if _IN_POOL and _STOP:
        raise KeyboardInterrupt("the campaign was interrupted")
    logging.getLogger("batsim").setLevel(logging.ERROR)
    runs = Path(task.root) / "runs"
    final = runs / task.key
    done = read_record(final)
    if done is not None:
        return done
    runs.mkdir(parents=True, exist_ok=True)
    tmp = runs / f".tmp-{task.key}-{os.getpid()}-{secrets.token_hex(3)}"
    _RUNNING = _IN_POOL
    try:
        tmp.mkdir()
        from batfeed import __version__

        record: dict[str, Any] = {"key": task.key, "status": "ok", "error": None, "started": utc_now(),
                                  "host": socket.gethostname(), "pid": os.getpid(), "batfeed": __version__,
                                  "seed": task.seed, "metrics_options": {"tau": task.tau, "window": task.window}}
        t0 = time.perf_counter()
        notes: list[str] = []
        with open(tmp / "log.txt", "w", encoding="utf-8") as log, contextlib.redirect_stdout(log), \
                contextlib.redirect_stderr(log):
            try:
                record.update(_simulate(task, tmp, notes))
            except Exception as err:     # noqa: BLE001 - a failed run is a result, the campaign goes on
                record.update(status="failed", error=one_line(err))
                traceback.print_exc(file=log)
        record["wall_s"] = time.perf_counter() - t0
        if notes:
            record["notes"] = notes
        _fix_manifest(tmp, final)
        _write_json(tmp / RESULT, record)      # last: a directory with result.json is complete
        try:
            os.rename(tmp, final)
        except OSError:                          # another worker finished the same run first
            if read_record(final) is None:
                raise
        return record
    finally:
        _RUNNING = False
        shutil.rmtree(tmp, ignore_errors=True)      # gone after the rename; else a partial run


def utc_now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def _fix_manifest(tmp: Path, final: Path) -> None:
    """The run manifests name the output prefix: make it the final directory's, not the temporary one's
    (``run_manifest.json``; a validate run's ``weeks/wkNNN_manifest.json``)."""
    for path in [tmp / f"{PREFIX}_manifest.json", *sorted(tmp.glob("weeks/*_manifest.json"))]:
        if path.is_file():
            path.write_text(path.read_text(encoding="utf-8").replace(str(tmp), str(final)), encoding="utf-8")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_record(run_dir: Path) -> dict[str, Any] | None:
    """The ``result.json`` of a complete run directory, else None (:func:`record_problem`)."""
    return record_problem(run_dir)[0]


def record_problem(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, None)`` for a sound run directory ``runs/KEY``; ``(None, why)`` when it cannot be
    used (``why`` names the file: no or an unreadable ``result.json``, the record of another run,
    status ok without metrics, ...); ``(None, None)`` when there is no such directory."""
    path = run_dir / RESULT
    if not run_dir.is_dir():
        return None, None
    try:
        record, unread = read_json(path)
    except FileNotFoundError:
        return None, f"{run_dir}: no {RESULT} (an incomplete run)"
    if unread:
        return None, unread
    why = _record_error(record, run_dir.name)
    return (None, f"{path}: {why}") if why else (record, None)


def _record_error(record: Any, key: str) -> str | None:
    if not isinstance(record, dict):
        return "not a run record (a JSON object)"
    if record.get("key") != key:
        other = record.get("key")
        return f"record of run {other}, not {key}" if isinstance(other, str) else f"record without the key {key}"
    status = record.get("status")
    if status == "ok" and not isinstance(record.get("metrics"), dict):
        return "status ok without metrics"
    if status == "failed" and not (isinstance(record.get("error"), str) and record["error"]):
        return "status failed without an error"
    if status not in ("ok", "failed"):
        return f"status {json.dumps(status, default=str)}, not \"ok\" or \"failed\""
    return None


# --------------------------------------------------------------------------- executors
def longest_first(tasks: list[RunTask]) -> list[RunTask]:
    """``tasks`` in the order to dispatch them: the largest workload file first (Graham's LPT rule, within
    4/3 of the best makespan on identical workers; a run's cost grows with its jobs), ties in spec order.
    Dispatch order changes no result: each run is independent and the table follows the spec."""
    def size(t: RunTask) -> int:           # sorted() calls it once per task
        try:
            return os.path.getsize(t.workload)
        except OSError:
            return 0
    return sorted(tasks, key=size, reverse=True)


Done = Callable[[RunTask, dict[str, Any] | None, str | None], None]   # (task, record, or a lost run's error)


def run_local(tasks: list[RunTask], workers: int, done: Done) -> None:
    """Run ``tasks`` on a local process pool of ``workers``, calling ``done`` as each ends.

    On KeyboardInterrupt: cancel the runs not started, interrupt the running ones (their workers get
    SIGINT; from a terminal they already have it), wait for the workers to exit, re-raise."""
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_pool_worker_init)
    futures: dict[Future[dict[str, Any]], RunTask] = {}
    try:
        for t in tasks:
            futures[pool.submit(execute_run, t)] = t
        for fut in as_completed(futures):
            _report(futures[fut], fut, done)
    except KeyboardInterrupt:
        with _ignoring_sigint():
            for fut in futures:
                fut.cancel()
            for proc in set(multiprocessing.active_children()) - before:
                with contextlib.suppress(OSError):
                    os.kill(proc.pid, signal.SIGINT)
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        with _ignoring_sigint():
            pool.shutdown(wait=True, cancel_futures=True)


def _report(task: RunTask, fut: Any, done: Done) -> None:
    try:
        record = fut.result()
    except KeyboardInterrupt:
        raise
    except BaseException as err:       # noqa: BLE001 - a lost worker: the run is retried next time
        done(task, None, f"worker lost ({one_line(err)}); the run is retried at the next invocation")
        return
    done(task, record, None)


@contextlib.contextmanager
def _ignoring_sigint() -> Iterator[None]:
    """A second Ctrl-C while the workers stop does not interrupt the cleanup (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def run_dask(tasks: list[RunTask], workers: int, address: str | None, done: Done) -> None:
    """Run ``tasks`` on a Dask distributed cluster: the scheduler at ``address``, or a LocalCluster of
    ``workers`` single-threaded worker processes started (and stopped) here.  On KeyboardInterrupt
    the runs not finished are cancelled (a run already running on a remote worker may still finish
    and be kept: its directory appears complete or not at all)."""
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError as err:         # pragma: no cover - a regular dependency
        raise BatfeedError(f"--executor dask needs dask.distributed ({err})") from None
    cluster = None
    if address is None:
        import dask

        # its processes inherit SIG_IGN (Ctrl-C is this process's to handle) and run without Dask's
        # statistical profiler, which samples every thread's stack every 10 ms and slows the runs
        with _ignoring_sigint(), dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
    try:
        try:
            client = Client(address or cluster, timeout="20s")
        except (OSError, TimeoutError) as err:
            raise BatfeedError(f"cannot connect to the Dask scheduler at {address}: {one_line(err)}") from None
        futures: dict[Any, RunTask] = {}
        try:
            token = secrets.token_hex(3)
            for t in tasks:
                futures[client.submit(execute_run, t, key=f"batfeed-run-{t.key}-{token}", pure=False)] = t
            for fut in dask_completed(list(futures)):
                _report(futures[fut], fut, done)
        except KeyboardInterrupt:
            with _ignoring_sigint():
                client.cancel(list(futures))
            raise
        finally:
            with _ignoring_sigint():
                client.close()
    finally:
        if cluster is not None:
            with _ignoring_sigint():
                cluster.close()
