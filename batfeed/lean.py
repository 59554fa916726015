"""EASY runs without the engine, for the metrics of many-run studies (issue 28's Table 3 at R = 60).

A run of batfeed's :class:`~batfeed.schedulers.easy.Easy` on one workload of delay jobs whose submission
times, delays and walltimes are whole seconds, on a platform whose messages take no time (no links: the
engine then keeps exact dates, docs/engine.md), is the event loop of :func:`batfeed.schedulers.replay.easy_starts`:
the what-if replays of ``tuned_easy`` already run so (``tests/test_whatif_replay.py``).  :func:`lean_jobs`
runs it and returns the jobs table the engine's ``_jobs.csv`` would give :func:`batfeed.metrics.compute_metrics`
(the same values, read back through the same ``%f`` formatting, rows in the order the jobs end), without the
allocations (EASY allocates exactly the requested count, which the metrics then read), or the reason the
run needs the engine.  ``tests/test_lean.py`` checks it against the engine, metric by metric, on both kernel
paths.  Campaigns use it with ``lean: true`` (:mod:`batfeed.campaign.execute`): five times faster on
SDSC-BLUE's 208,215 jobs.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from batfeed.engine.workload import FAILED, FINAL_STATES, REJECTED, SUCCESS, WALLTIME


@dataclass
class LeanRun:
    """A lean run's jobs table (``_jobs.csv``'s columns that the metrics read), machine count, the counts
    of :class:`~batfeed.runner.SimulationResult` and its simulated time (the last event's date)."""

    jobs: pd.DataFrame
    nb_machines: int
    counts: dict[str, int]
    simulated_time: float


def _csv(values: np.ndarray) -> np.ndarray:
    """``values`` as ``_jobs.csv`` gives them back (Batsim's ``%f``: whole numbers as they are)."""
    out = values.copy()
    odd = np.flatnonzero(values != np.floor(values))
    out[odd] = [float(f"{v:f}") for v in values[odd].tolist()]
    return out


def lean_jobs(platform: str | Path, workloads: list[str | Path], scheduler: str,
              options: dict[str, Any] | None) -> LeanRun | str:
    """The run of ``scheduler`` with ``options`` on ``platform`` and ``workloads`` without the engine, or
    the reason it needs the engine (one line)."""
    enabled = gc.isenabled()
    gc.disable()            # as the engine's runs: no collection passes over the jobs, which all live on
    try:
        return _lean(platform, workloads, scheduler, options)
    finally:
        if enabled:
            gc.enable()


def _lean(platform: str | Path, workloads: list[str | Path], scheduler: str,
          options: dict[str, Any] | None) -> LeanRun | str:
    from batfeed.engine.clock import ExactTimers
    from batfeed.engine.platform import load_platform
    from batfeed.engine.state import EngineState
    from batfeed.engine.workload_file import load_workload
    from batfeed.registry import make_scheduler
    from batfeed.schedulers.easy import Easy
    from batfeed.schedulers.replay import ReplayJob, easy_starts, exact, replays

    sched = make_scheduler(scheduler, dict(options or {}))
    if type(sched) is not Easy or not replays(sched):
        return f"scheduler {scheduler} with these options is not EASY's compiled pass"
    if len(workloads) != 1:
        return f"{len(workloads)} workloads (one is replayed lean)"
    plat = load_platform(platform)
    if not isinstance(EngineState(plat, []).timers, ExactTimers):
        return f"{platform}: messages take time on this platform (links): the engine's dates are SimGrid's"
    wl = load_workload(workloads[0], "w0")
    jobs, subs, delays, walls, rets = [], [], [], [], []
    for i, j in enumerate(wl.jobs):
        if j.prof.type != "delay":
            return f"job {j.id}: a {j.prof.type} profile (lean runs replay delay jobs)"
        jobs.append(ReplayJob(j.id, j.subtime, j.requested_resources, j.walltime, j, i))   # JSON: if read
        subs.append(j.subtime)
        delays.append(j.prof.work)
        walls.append(j.walltime)
        rets.append(j.prof.ret)
    if not (exact(subs) and exact(delays) and exact(walls)):
        return "a submission time, delay or walltime is not a whole number of seconds"
    sub, wall, delay = (np.array(v, dtype=np.float64) for v in (subs, walls, delays))
    killed = (wall > 0) & (wall <= delay)               # do_delay_task: the walltime ends the delay
    held = np.where(killed, wall, delay)
    order: list[int] = []
    start = np.array(easy_starts(jobs, held.tolist(), plat.nb_compute, sched.wq, sched.profile, order),
                     dtype=np.float64)
    return _table(wl.jobs, sub, wall, held, killed, np.array(rets), start, order, plat.nb_compute)


def _table(jobs: list[Any], sub: np.ndarray, wall: np.ndarray, held: np.ndarray, killed: np.ndarray,
           rets: np.ndarray, start: np.ndarray, order: list[int], nb: int) -> LeanRun:
    """The table of the ``_jobs.csv`` columns the metrics read: started jobs in the order they end (ends at
    one date in start order, as the engine's sleeps), then the rejected ones (their times empty)."""
    ran = np.array(order, dtype=np.int64)
    ran = ran[np.lexsort((np.arange(len(ran)), start[ran] + held[ran]))]
    rejected = np.flatnonzero(np.isnan(start))
    rows = np.concatenate([ran, rejected])
    runtime = np.where(held[ran] == 0, 1e-5, held[ran])    # Batsim: "computed in null time", epsilon
    st, sb = start[ran], sub[ran]
    finish = st + runtime
    turnaround = finish - sb
    state = np.where(killed[ran], WALLTIME, np.where(rets[ran] == 0, SUCCESS, FAILED))
    empty = np.full(len(rejected), np.nan)

    def ran_only(values: np.ndarray) -> np.ndarray:
        return np.concatenate([values, empty])

    frame = pd.DataFrame({
        "job_id": [jobs[i].name for i in rows],
        "submission_time": sub[rows],
        "requested_number_of_resources": [jobs[i].requested_resources for i in rows],
        "requested_time": wall[rows],
        "final_state": np.concatenate([state, np.full(len(rejected), REJECTED)]),
        "starting_time": ran_only(st),
        "execution_time": ran_only(_csv(runtime)),
        "finish_time": ran_only(_csv(finish)),
        "waiting_time": ran_only(st - sb),
        "turnaround_time": ran_only(_csv(turnaround)),
        "stretch": ran_only(_csv(turnaround / runtime)),
        "allocated_resources": [""] * len(rows),
    })
    counts = {"submitted": len(jobs), **{s.lower(): 0 for s in FINAL_STATES}}      # EngineState's result
    for s, c in zip(*np.unique(frame["final_state"].to_numpy(dtype=str), return_counts=True), strict=True):
        counts[str(s).lower()] = int(c)
    last = max(float(np.max(finish)) if len(ran) else 0.0, float(np.max(sub)) if len(sub) else 0.0)
    return LeanRun(frame, nb, counts, last)


def write_manifest(prefix: str | Path, run: LeanRun, *, platform: str | Path, workload: str | Path, scheduler: str,
                   options: dict[str, Any] | None, seed: int | None, call: str, started: str, wall_s: float) -> None:
    """``PREFIX_manifest.json`` of a lean run: :func:`batfeed.manifest.run_record`, its ``engine`` naming this
    module, and no output files (a lean run writes none)."""
    from batfeed import manifest as m
    from batfeed.run_options import resolve_scheduler_options

    sched = resolve_scheduler_options(scheduler, options)
    engine = {"name": "batfeed lean EASY run (batfeed/lean.py: schedulers/replay.py's event loop, no engine)",
              "simulated_time_s": run.simulated_time}

    def build() -> dict[str, Any]:       # inside write_manifest's guard, as the engine's manifest is built
        return m.run_record(call=call, scheduler=sched, users=None, seed=seed, engine=engine, counts=run.counts,
                            inputs=m.input_entries(platform, [workload], [], sched, None), outputs={},
                            started=started, wall_time_s=wall_s)
    m.write_manifest(prefix, build)
