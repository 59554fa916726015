"""The recorded trace a user model replays: one :class:`TraceJob` per job of a Batsim workload.

A user model reads the workload JSON itself (Batsim is started *without* ``-w``, see
:mod:`batfeed.users.base`).  Fields used, as written by ``batfeed convert swf``:

- ``subtime`` → recorded submit a_i (seconds from the trace origin);
- the profile's ``delay`` → recorded run time d_i (SWF field 4; 0 was raised to 1 s by the converter);
- ``swf_wait`` → recorded wait (SWF field 3), so the recorded finish is f_i = a_i + wait_i + d_i;
  missing or negative (SWF -1 = unknown) → 0, i.e. the job is taken to have started at once;
- ``user`` → the user (SWF field 12); required by the session-based models;
- ``res``, ``walltime`` → replayed unchanged (ŵ = w, models.md §D).

Jobs are ordered like Batsim orders simultaneous static submissions: by (subtime, ``"w0!<id>"``
string), so a rigid replay hands jobs to the scheduler in exactly the order a static run does.
SWF traces (``.swf``, ``.swf.gz``, ``.swf.xz``) are first converted with ``batfeed convert swf``'s cleaning
(:func:`batfeed.adapters.workload.workload_or_swf`: one stderr line says what was read, kept and dropped;
the report is :attr:`Trace.conversion`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batfeed.engine.workload import Workload
from batfeed.engine.workload_file import load_workload
from batfeed.errors import InputError


@dataclass(slots=True)
class TraceJob:
    index: int           # position in trace order (subtime, id string)
    name: str            # the job's id in the trace, without "w0!" (reused as the dynamic job's name)
    user: str | None
    subtime: float       # recorded submit a_i
    wait: float          # recorded wait (>= 0)
    runtime: float       # recorded run time d_i (delay profiles) or NaN
    res: int
    walltime: float      # -1 = none
    profile_name: str
    profile: dict[str, Any]

    @property
    def finish(self) -> float:
        """Recorded finish f_i = a_i + wait_i + d_i."""
        return self.subtime + self.wait + self.runtime


@dataclass
class Trace:
    path: str
    nb_res: int
    jobs: list[TraceJob]
    conversion: dict[str, Any] | None = None  # cleaning report of an SWF trace converted on the fly

    def by_user(self) -> dict[str, list[TraceJob]]:
        """Jobs of each user in trace order; raises when a job has no ``user`` field."""
        users: dict[str, list[TraceJob]] = {}
        for j in self.jobs:
            if j.user is None:
                raise InputError(f"job {j.name} has no 'user' field: session-based user models need one "
                                 "(convert SWF traces with 'batfeed convert swf')", self.path)
            users.setdefault(j.user, []).append(j)
        return users


def load_trace(path: str | Path) -> Trace:
    """Read a Batsim workload JSON (or an SWF trace, converted on the fly with a one-line summary on
    stderr) as a recorded trace."""
    from batfeed.adapters.workload import workload_or_swf

    with workload_or_swf(path) as (workload, report):
        trace = trace_from_workload(load_workload(workload, "w0"), str(path))
    trace.conversion = report
    return trace


def trace_from_workload(wl: Workload, shown: str = "(in memory)") -> Trace:
    """The recorded trace of a loaded (or in-memory, :mod:`batfeed.api`) Batsim workload."""
    jobs = sorted(wl.jobs, key=lambda j: (j.subtime, j.id))
    out = []
    for i, j in enumerate(jobs):
        js = j.json_dict
        wait = js.get("swf_wait", 0.0)
        wait = float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 0 else 0.0
        user = js.get("user")
        runtime = j.prof.work if j.prof.type == "delay" else float("nan")
        out.append(TraceJob(i, j.name, None if user is None else str(user), j.subtime, wait, runtime,
                            j.requested_resources, j.walltime, j.profile, dict(j.prof.json)))
    return Trace(shown, wl.nb_res, out)
