"""In-memory simulations for what-if studies: jobs in, a pandas DataFrame out, nothing on disk.

>>> import pandas as pd
>>> from batfeed.api import simulate_jobs
>>> jobs = pd.DataFrame({"subtime": [0, 10, 20], "res": [3, 4, 1], "runtime": [100, 50, 30],
...                      "walltime": [100, 60, 40]})
>>> simulate_jobs(jobs, nb_machines=4, scheduler="fcfs")["starting_time"].tolist()
[0.0, 100.0, 150.0]
>>> simulate_jobs(jobs, nb_machines=4, scheduler="easy")["starting_time"].tolist()   # job 3 backfills
[0.0, 100.0, 20.0]

The jobs become a Batsim workload in memory (one ``delay`` profile per distinct run time, as
``batfeed convert swf`` does), the platform is ``nb_machines`` identical link-less hosts (like
``batfeed platform``), and the run is the embedded engine's, with Batsim's semantics and the direct
driver for batfeed's schedulers: the same schedule as writing the files and running ``batfeed
simulate``.  The platform and the scheduler class are built once and reused, so a call costs the
jobs themselves: thousands of calls per process are fine (see ``tests/test_api.py``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from batfeed.engine.events import ExternalEvent, parse_event
from batfeed.engine.platform import COMPUTE, Host, Platform
from batfeed.engine.simulator import EngineConfig, SimulationResult, Simulator
from batfeed.engine.workload import REJECTED, SUCCESS, Job, Profile, Workload, r6
from batfeed.errors import BatfeedError, InputError
from batfeed.manifest import build_manifest, memory_entry, python_call, utc_now, write_manifest
from batfeed.registry import make_scheduler
from batfeed.run_options import resolve_scheduler_options, resolve_user_options
from batfeed.runner import in_process_driver

__all__ = ["simulate_jobs", "jobs_frame", "RESULT_COLUMNS"]

RESULT_COLUMNS = ("job_id", "submission_time", "requested_number_of_resources", "requested_time", "runtime",
                  "final_state", "success", "starting_time", "execution_time", "finish_time", "waiting_time",
                  "turnaround_time", "stretch", "allocated_resources")
_ALIASES = {"subtime": ("subtime", "submit", "submission_time", "submit_time"),
            "res": ("res", "requested_number_of_resources", "requested_resources", "procs", "nodes"),
            "runtime": ("runtime", "run", "delay", "run_time", "execution_time"),
            "walltime": ("walltime", "requested_time", "req_time"),
            "id": ("id", "job_id")}


@lru_cache(maxsize=32)
def homogeneous_platform(nb_machines: int, speed: float = 1e9) -> Platform:
    """``nb_machines`` identical hosts ``node_0000``… (ids in name order, like ``batfeed platform``), no links."""
    if not isinstance(nb_machines, int) or isinstance(nb_machines, bool) or nb_machines < 1:
        raise BatfeedError(f"nb_machines must be an integer >= 1, got {nb_machines!r}")
    width = max(4, len(str(nb_machines - 1)))
    hosts = tuple(Host(i, f"node_{i:0{width}d}", float(speed), 1, COMPUTE, {"role": COMPUTE}, {})
                  for i in range(nb_machines))
    return Platform("", "master_host", hosts, ())


def _column_values(col: Any) -> list[Any]:
    return col.tolist() if hasattr(col, "tolist") else list(col)


def _column(frame: Mapping[str, Any], key: str, required: bool) -> list[Any] | None:
    for name in _ALIASES[key]:
        if name in frame:
            return _column_values(frame[name])
    if required:
        raise InputError(f"jobs need a '{key}' column (or one of {', '.join(_ALIASES[key][1:])})")
    return None


def _workload(jobs: Any, name: str = "w0") -> Workload:
    """Batsim jobs and delay profiles from a DataFrame, a dict of columns or records (dicts)."""
    if isinstance(jobs, Workload):
        return jobs
    if isinstance(jobs, pd.DataFrame) or isinstance(jobs, Mapping):
        frame = jobs
    else:
        frame = pd.DataFrame.from_records(list(jobs))
    sub = _column(frame, "subtime", True)
    res = _column(frame, "res", True)
    run = _column(frame, "runtime", True)
    wall = _column(frame, "walltime", False)
    ids = _column(frame, "id", False)
    known = {a for names in _ALIASES.values() for a in names}
    extra = {c: _column_values(frame[c]) for c in frame if c not in known}   # user, queue… kept in the job
    n = len(sub)
    if ids is None:
        ids = list(range(1, n + 1))
    profiles: dict[str, Profile] = {}
    out: list[Job] = []
    seen: set[str] = set()
    for k in range(n):
        jid = str(ids[k])
        full = f"{name}!{jid}"
        if full in seen:
            raise InputError(f"job {jid}: duplicate job id")
        seen.add(full)
        s, q, d = float(sub[k]), res[k], float(run[k])
        w = -1.0 if wall is None or wall[k] is None or wall[k] != wall[k] or wall[k] <= 0 else float(wall[k])
        if isinstance(q, float) and q.is_integer():
            q = int(q)
        if not isinstance(q, int) or isinstance(q, bool) or q < 0:
            raise InputError(f"job {jid}: 'res' must be an integer >= 0 (got {res[k]!r})")
        if not d > 0 or d == float("inf"):
            raise InputError(f"job {jid}: the run time must be a number > 0 (got {run[k]!r})")
        if s != s or s in (float("inf"), -float("inf")):
            raise InputError(f"job {jid}: the submit time must be a finite number (got {sub[k]!r})")
        pname = f"d{int(d)}" if d.is_integer() else f"d{d!r}"     # batfeed convert's profile names
        prof = profiles.get(pname)
        if prof is None:
            data = {"type": "delay", "delay": d}
            prof = profiles[pname] = Profile(pname, "delay", d, 0, data, {"type": "delay", "delay": r6(d)})
        js = {"id": full, "subtime": s, "res": q, "walltime": w, "profile": pname}
        for c, values in extra.items():
            v = values[k]
            if v is not None and v == v:      # NaN: absent
                js[c] = v
        out.append(Job(full, name, s, q, w, prof, js))
    return Workload(name, "", n, profiles, out)


def simulate_jobs(jobs: Any, nb_machines: int, scheduler: str | Any = "easy", options: dict[str, Any] | None = None,
                  *, events: Iterable[Mapping[str, Any]] = (), speed: float = 1e9, driver: str = "auto",
                  users: str | None = None, user_options: dict[str, Any] | None = None,
                  export: str | Path | None = None, config: EngineConfig | None = None) -> pd.DataFrame:
    """Simulate ``jobs`` on ``nb_machines`` identical hosts with ``scheduler``; one row per job.

    ``jobs``: a DataFrame (or dict of columns, or records) with ``subtime``, ``res``, ``runtime``
    and optionally ``walltime`` (missing, NaN or <= 0: none) and ``id`` (default 1..N); SWF-like
    names (``submit``, ``procs``, ``run``, ``req_time``, ``job_id``…) are accepted.  ``scheduler``:
    a name (``fcfs``, ``easy``, ``conservative``, ``maui``, ``module:Class``) or a scheduler object.
    ``events``: Batsim external events (dicts with ``timestamp``, ``type``, ``resources``).
    ``users``: replay ``jobs`` through a user model (``rigid``, ``a0``, ``a60``…) wrapping
    ``scheduler``; ``jobs`` then needs a ``user`` column for the session models.
    ``export``: also write ``PREFIX_jobs.csv`` etc. like ``batfeed simulate``, and the run manifest
    ``PREFIX_manifest.json`` (:mod:`batfeed.manifest`; the jobs are hashed as given).

    Returns the jobs in input order with Batsim's ``_jobs.csv`` columns (times as floats, NaN for
    rejected jobs); ``.attrs["batfeed"]`` holds the counts, the ``_schedule.csv`` values, the
    number of messages, the wall time and the inputs' description (how the result was made).
    """
    given, started, t0 = dict(locals()), utc_now(), time.perf_counter()
    plat = homogeneous_platform(nb_machines, float(speed))
    cfg = config or EngineConfig()
    if users is not None:
        from batfeed.users.base import LAYER_OPTIONS, UserModelScheduler, make_model
        from batfeed.users.trace import trace_from_workload

        uopts = dict(user_options or {})
        model = make_model(users, trace_from_workload(_workload(jobs)),
                           {k: v for k, v in uopts.items() if k not in LAYER_OPTIONS})
        inner = scheduler if not isinstance(scheduler, str) else make_scheduler(scheduler, options)
        sched: Any = UserModelScheduler({k: v for k, v in uopts.items() if k in LAYER_OPTIONS},
                                        inner=inner, model=model)
        workloads: list[Workload] = []
        cfg = EngineConfig(**{**cfg.__dict__, "enable_dynamic_jobs": True})
    else:
        sched = make_scheduler(scheduler, options) if isinstance(scheduler, str) else scheduler
        workloads = [_workload(jobs)]
    ev_list = [_event(e, k, plat.nb_compute, cfg) for k, e in enumerate(events)]
    ev_list.sort(key=lambda e: (e.timestamp, {"machine_available": 0, "machine_unavailable": 1}.get(e.type, 2)))
    sim = Simulator(plat, workloads, [ev_list] if ev_list else [], cfg, has_events_files=bool(ev_list))
    if not workloads:          # the user model's jobs: kept by the tracer for the frame (else the workload's)
        sim.tracer.jobs = []
    order = list(workloads[0].jobs) if workloads else None      # Simulator.run lets go of the workload's jobs
    result = sim.run(in_process_driver(sched, driver), export)
    frame = results_frame(result, sim, order)
    frame.attrs["batfeed"] = {
        "counts": result.counts, "schedule": result.schedule, "messages": result.messages,
        "driver": result.driver, "wall_time": time.perf_counter() - t0, "nb_machines": nb_machines,
        "speed": speed, "scheduler": scheduler if isinstance(scheduler, str) else type(scheduler).__name__,
        "options": dict(options or {}), "users": users, "user_options": dict(user_options or {}),
        "nb_jobs": len(frame), "engine": "batfeed embedded Batsim 4.2.1",
    }
    if export is not None:
        wall = time.perf_counter() - t0
        write_manifest(export, lambda: _manifest(given, result, started, wall, order, ev_list, cfg))
    return frame


def _manifest(given: dict[str, Any], result: SimulationResult, started: str, wall: float, order: list[Job] | None,
              events: list[ExternalEvent], cfg: EngineConfig) -> dict[str, Any]:
    """The run manifest of an exported in-memory run: the jobs and events are hashed as given."""
    scheduler, users = given["scheduler"], given["users"]
    if isinstance(scheduler, str):
        sched = resolve_scheduler_options(scheduler, given["options"])
    else:
        sched = {"name": type(scheduler).__name__, "class": f"{type(scheduler).__module__}:{type(scheduler).__name__}",
                 "options": getattr(scheduler, "options", None), "options_given": given["options"], "checked": False}
    replayed = _workload(given["jobs"]).jobs if users is not None or order is None else order
    jobs = json.dumps([j.json_dict for j in replayed], sort_keys=True, default=str).encode()
    evs = json.dumps([dict(e) for e in given["events"]], sort_keys=True, default=str).encode()
    inputs = {"platform": {"path": None, "in_memory": True, "nb_machines": given["nb_machines"],
                           "speed": given["speed"]},
              "workloads": [memory_entry(jobs, nb_jobs=len(replayed), what="the jobs' JSON records")],
              "events": [memory_entry(evs, nb_events=len(events))] if events else []}
    return build_manifest(call=python_call(simulate_jobs, given), scheduler=sched,
                          users=resolve_user_options(users, given["user_options"]), seed=None, inputs=inputs,
                          result=result, started=started, wall_time_s=wall, transport="inprocess",
                          switches=dict(cfg.__dict__), prefix=given["export"])


def _event(e: Mapping[str, Any], k: int, nb: int, cfg: EngineConfig) -> ExternalEvent:
    return parse_event(json.dumps(dict(e)), "events", k + 1, nb, cfg.forward_unknown_events)


def results_frame(result: SimulationResult, sim: Simulator, order: list[Job] | None = None) -> pd.DataFrame:
    """Per-job results (Batsim's ``_jobs.csv`` columns, floats) in ``order`` (default: completion order)."""
    jobs = order if order is not None else result.tracer.jobs
    if jobs is None:
        raise BatfeedError("results_frame: give the jobs (order=...) or keep them in the run "
                           "(sim.tracer.jobs = [] before sim.run)")
    nan = float("nan")
    cols: dict[str, list[Any]] = {c: [] for c in RESULT_COLUMNS}
    for j in jobs:
        cols["job_id"].append(j.name)
        cols["submission_time"].append(j.subtime)
        cols["requested_number_of_resources"].append(j.requested_resources)
        cols["requested_time"].append(j.walltime)
        cols["runtime"].append(j.prof.work if j.prof.type == "delay" else nan)
        cols["final_state"].append(j.state)
        cols["success"].append(j.state == SUCCESS)
        if j.state == REJECTED or j.start < 0:
            for c in ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time",
                      "stretch"):
                cols[c].append(nan)
            cols["allocated_resources"].append("")
            continue
        finish = j.start + j.runtime
        cols["starting_time"].append(j.start)
        cols["execution_time"].append(j.runtime)
        cols["finish_time"].append(finish)
        cols["waiting_time"].append(j.start - j.subtime)
        cols["turnaround_time"].append(finish - j.subtime)
        cols["stretch"].append((finish - j.subtime) / j.runtime if j.runtime else nan)
        cols["allocated_resources"].append(j.alloc)
    return pd.DataFrame(cols)


def jobs_frame(jobs_csv: str | Path) -> pd.DataFrame:
    """A ``_jobs.csv`` (Batsim's or batfeed's) as a DataFrame with the same columns."""
    return pd.read_csv(jobs_csv, dtype={"job_id": str, "allocated_resources": str})
