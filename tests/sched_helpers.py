"""Helpers of the scheduler tests (test_easy.py, test_conservative.py, test_backfill_properties.py).

:func:`schedule_of` runs a small workload through the embedded engine (in-process, platform
small_4.xml: 4 zero-latency hosts, ids 0-3) and returns ``{job_id: (start, finish, alloc, state)}``.
A job is ``(id, subtime, res, runtime, walltime)``; walltime ``None`` means none (-1).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from test_engine_helpers import SMALL_4, delay, job, run, write_events, write_workload

from batfeed.engine import EngineConfig, SimulationResult

JobSpec = tuple[Any, float, int, float, float | None]


def write_jobs(directory: Path, jobs: list[JobSpec], nb_res: int = 4) -> Path:
    profiles, specs = {}, []
    for jid, r, q, runtime, wall in jobs:
        profiles[f"d{runtime:g}"] = delay(runtime)
        specs.append(job(jid, r, q, f"d{runtime:g}", wall))
    return write_workload(directory, specs, profiles, nb_res=nb_res)


def simulate_jobs(directory: Path, jobs: list[JobSpec], sched: Any, events: list[dict] | None = None,
                  config: EngineConfig | None = None, platform: Path = SMALL_4,
                  nb_res: int = 4) -> tuple[dict[str, tuple[float, float, str, str]], SimulationResult]:
    directory.mkdir(parents=True, exist_ok=True)
    wl = write_jobs(directory, jobs, nb_res)
    evs = [write_events(directory, events)] if events else ()
    result, _ = run([wl], sched, events=evs, config=config, export=directory / "out", platform=platform)
    with open(directory / "out_jobs.csv", newline="") as f:
        rows = {r["job_id"]: (float(r["starting_time"]) if r["starting_time"] else None,
                              float(r["finish_time"]) if r["finish_time"] else None,
                              r["allocated_resources"], r["final_state"]) for r in csv.DictReader(f)}
    return rows, result


def schedule_of(directory: Path, jobs: list[JobSpec], sched: Any, **kw: Any) -> dict[str, tuple]:
    """{job_id: (start, finish, alloc)} (final states are checked separately when they matter)."""
    rows, _ = simulate_jobs(directory, jobs, sched, **kw)
    return {k: v[:3] for k, v in rows.items()}


def starts(directory: Path, jobs: list[JobSpec], sched: Any, **kw: Any) -> dict[str, float | None]:
    return {k: v[0] for k, v in schedule_of(directory, jobs, sched, **kw).items()}
