"""The embedded Batsim-4.2-compatible discrete-event engine: state and event loop.

Batsim's timing rules (reference §2, §5) in one loop, read top to bottom in :meth:`Simulator.run`:

1. the first message is SIMULATION_BEGINS alone, at time 0;
2. everything that happens at the current instant is processed before anything is sent, in this
   fixed order: job completions, external events, static submissions (then NOTIFY
   ``no_more_static_job_to_submit``), REQUESTED_CALLs, then the resumption of a scheduler reply
   whose decisions were stamped in the future;
3. when the scheduler is ready and there is something to send, one message carries it, with
   ``now`` = the clock; the reply's decisions are applied in order, each at its timestamp, and
   the scheduler is ready again at the reply's ``now``;
4. when nothing is left to send and Batsim's end condition holds, SIMULATION_ENDS is sent alone.

Decisions are validated and applied by :class:`~batfeed.engine.protocol.DecisionsMixin`.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from batfeed import __version__
from batfeed.engine.events import UNAVAILABLE, ExternalEvent
from batfeed.engine.machines import Machines
from batfeed.engine.outputs import JobsTracer
from batfeed.engine.platform import Platform
from batfeed.engine.protocol import P_CALL, P_END, P_READY, P_REPLY, DecisionsMixin
from batfeed.engine.workload import FINAL_STATES, RUNNING, SUBMITTED, Job, Workload
from batfeed.errors import BatfeedError, ProtocolError

BATSIM_VERSION = f"4.2.1+batfeed-{__version__}"


class Transport(Protocol):
    def exchange(self, message: dict[str, Any]) -> dict[str, Any]: ...
    def close(self) -> None: ...


@dataclass
class EngineConfig:
    """Batsim command-line switches the engine emulates (names as in ``batsim --help``)."""

    enable_dynamic_jobs: bool = False
    acknowledge_dynamic_jobs: bool = False
    enable_profile_reuse: bool = False
    forward_profiles_on_submission: bool = False
    forward_unknown_events: bool = False
    sched_config: str = ""


@dataclass
class SimulationResult:
    jobs_csv: Path | None
    schedule_csv: Path | None
    counts: dict[str, int]
    schedule: dict[str, str]
    simulated_time: float
    wall_time: float
    messages: int
    tracer: JobsTracer = field(repr=False)


class AccountingError(BatfeedError):
    """A run that does not account for every job (a bug, never expected)."""


class Simulator(DecisionsMixin):
    def __init__(self, platform: Platform, workloads: list[Workload], events: list[ExternalEvent] | None = None,
                 config: EngineConfig | None = None, has_events_files: bool = False):
        self.platform = platform
        self.config = config or EngineConfig()
        self.workloads: dict[str, Workload] = {w.name: w for w in workloads}
        self.machines = Machines([h.name for h in platform.compute])
        self.speed = [h.speed for h in platform.compute]
        self.homogeneous = len(set(self.speed)) <= 1
        self.clock = 0.0
        self.heap: list[tuple[float, int, int, Any]] = []
        self.seq = 0
        self.out: list[dict[str, Any]] = []
        self.ready = False
        self.ended = False
        self.tracer = JobsTracer()
        self.jobs: dict[str, Job] = {}
        self.to_delete: list[Job] = []
        self.gc_profiles: dict[str, set[str]] = {}
        self.nb_submitted = self.nb_completed = self.nb_running = self.nb_waiters = 0
        self.registration_finished = False
        self.messages = 0
        self.scheduling_time = 0.0
        self.reply: list[dict[str, Any]] = []
        self.reply_idx = 0
        self.reply_now = 0.0
        # static submissions, sorted by (subtime, full id) like Batsim's submitters
        statics = sorted((j for w in workloads for j in w.jobs), key=lambda j: (j.subtime, j.id))
        for j in statics:
            self.jobs[j.id] = j
        self.statics = statics
        self.static_times = [max(j.subtime, 0.0) for j in statics]
        self.sub_idx = 0
        self.nb_static = len(statics)
        # "static_notify" / "ext_notify": the NOTIFY that closes these streams is still to be sent
        self.static_notify = bool(workloads)
        self.ext = events or []
        self.ext_idx = 0
        self.ext_notify = has_events_files or bool(self.ext)
        self.on_progress: Callable[[int, int], None] | None = None

    # ------------------------------------------------------------------ main loop
    def run(self, transport: Transport, export_prefix: str | Path | None = None) -> SimulationResult:
        wall0 = time.perf_counter()
        try:
            self._send([self._simulation_begins()], transport)
            while not self.ended:
                self._process_instant()
                if self.ready:
                    if self.out:
                        self._send(self.out, transport)
                        continue
                    if self._finished():
                        self._send([{"timestamp": self.clock, "type": "SIMULATION_ENDS", "data": {}}],
                                   transport, final=True)
                        break
                self.clock = self._next_time()
        finally:
            transport.close()
        self._check_accounting()
        return self._result(export_prefix, time.perf_counter() - wall0)

    def _next_time(self) -> float:
        cands = []
        if self.heap:
            cands.append(self.heap[0][0])
        if self.sub_idx < self.nb_static:
            cands.append(self.static_times[self.sub_idx])
        if self.ext_idx < len(self.ext):
            cands.append(self.ext[self.ext_idx].timestamp)
        if not cands:
            raise ProtocolError(self._deadlock_reason())
        return min(cands)

    def _process_instant(self) -> None:
        """Everything due at the current clock, in the documented order (module docstring)."""
        c, heap = self.clock, self.heap
        due = []
        while heap and heap[0][0] <= c:
            due.append(heapq.heappop(heap))
        for _, prio, seq, payload in due:
            if prio == P_END:
                self._job_ends(seq, payload)
        if self.ext_notify:
            ext = self.ext
            while self.ext_idx < len(ext) and ext[self.ext_idx].timestamp <= c:
                self._external_event(ext[self.ext_idx])
                self.ext_idx += 1
            if self.ext_idx == len(ext):
                self.ext_notify = False
                self._notify("no_more_external_event_to_occur")
        if self.static_notify:
            statics, times, out, i, n = self.statics, self.static_times, self.out, self.sub_idx, self.nb_static
            if i < n and times[i] <= c:
                while i < n and times[i] <= c:
                    job = statics[i]
                    i += 1
                    job.state = SUBMITTED
                    out.append({"timestamp": c, "type": "JOB_SUBMITTED", "data": self._submitted_data(job)})
                self.nb_submitted += i - self.sub_idx
                self.sub_idx = i
            if i == n:
                self.static_notify = False
                self._notify("no_more_static_job_to_submit")
        for _, prio, _, _ in due:
            if prio == P_CALL:
                self.nb_waiters -= 1
                self.out.append({"timestamp": c, "type": "REQUESTED_CALL", "data": {}})
            elif prio == P_REPLY:
                self._continue_reply()
            elif prio == P_READY:
                self.ready = True

    def _send(self, events: list[dict[str, Any]], transport: Transport, final: bool = False) -> None:
        message = {"now": self.clock, "events": events}
        self.out = []
        self.ready = False
        self._delete_finished_jobs()
        t0 = time.perf_counter()
        reply = transport.exchange(message)
        self.scheduling_time += time.perf_counter() - t0
        self.messages += 1
        if final:
            self.ended = True
            if isinstance(reply, dict) and reply.get("events"):
                raise ProtocolError("the scheduler answered SIMULATION_ENDS with decisions "
                                    f"({[e.get('type') for e in reply['events']]}); nothing can happen after the end")
            return
        self._start_reply(reply)

    def push(self, t: float, prio: int, payload: Any) -> int:
        self.seq += 1
        heapq.heappush(self.heap, (t, prio, self.seq, payload))
        return self.seq

    def _notify(self, kind: str) -> None:
        self.out.append({"timestamp": self.clock, "type": "NOTIFY", "data": {"type": kind}})

    # ------------------------------------------------------------------ happenings
    def _job_ends(self, seq: int, payload: tuple[Job, str, int]) -> None:
        job, state, rc = payload
        if job.end_seq != seq:   # killed (or changed) meanwhile
            return
        self._finish_job(job, state, rc)

    def _finish_job(self, job: Job, state: str, rc: int) -> None:
        c = self.clock
        job.end_seq = 0
        job.state = state
        job.runtime = c - job.start
        job.return_code = rc
        if job.intervals:
            self.machines.end(job.intervals, c)
        self.nb_running -= 1
        self.nb_completed += 1
        self.out.append({"timestamp": c, "type": "JOB_COMPLETED",
                         "data": {"job_id": job.id, "job_state": state, "return_code": rc, "alloc": job.alloc}})
        self._record(job)

    def _record(self, job: Job) -> None:
        """Write the job's _jobs.csv row; Batsim deletes it after the next message is sent."""
        self.tracer.write_job(job)
        self.to_delete.append(job)
        if self.on_progress is not None and self.tracer.nb_jobs % 1024 == 0:
            self.on_progress(self.tracer.nb_jobs, len(self.statics))

    def _delete_finished_jobs(self) -> None:
        if not self.to_delete:
            return
        if not (self.config.enable_dynamic_jobs and self.config.enable_profile_reuse):
            for job in self.to_delete:   # profile garbage collection (Batsim >= 4.0)
                wl = self.workloads[job.workload]
                if wl.profiles.pop(job.profile.name, None) is not None:
                    self.gc_profiles.setdefault(job.workload, set()).add(job.profile.name)
        self.to_delete = []

    def _external_event(self, ev: ExternalEvent) -> None:
        m, c = self.machines, self.clock
        if not ev.resources:
            if ev.type in ("machine_available", "machine_unavailable"):
                return   # an empty set is ignored
            self.out.append({"timestamp": c, "type": "NOTIFY", "data": ev.data})
            return
        for a, b in ev.resources:
            for i in range(a, b + 1):
                if m.unavail[i] == (ev.type == UNAVAILABLE):
                    raise ProtocolError(f"{ev.where}: {ev.type} on machine {i} ('{m.names[i]}') which is "
                                        f"{'already' if m.unavail[i] else 'not'} unavailable (Batsim aborts)")
        if ev.type == UNAVAILABLE:
            m.set_unavailable(ev.resources, c)
            kind = "event_machine_unavailable"
        else:
            m.set_available(ev.resources, c)
            kind = "event_machine_available"
        self.out.append({"timestamp": c, "type": "NOTIFY",
                         "data": {"type": kind, "resources": ev.data["resources"]}})

    # ------------------------------------------------------------------ end of simulation
    def _finished(self) -> bool:
        return (self.nb_completed == self.nb_submitted and not self.static_notify
                and self.ext_idx == len(self.ext) and not self.ext_notify
                and (not self.config.enable_dynamic_jobs or self.registration_finished)
                and self.nb_running == 0
                and self.nb_waiters == 0)

    def _deadlock_reason(self) -> str:
        stuck = [j for j in self.jobs.values() if j.state == SUBMITTED]
        if stuck:
            j = stuck[0]
            hint = (f" ({j.id} asks {j.res} machines, the platform has {len(self.machines)})"
                    if j.res > len(self.machines) else f" (first: {j.id}, res={j.res})")
            return (f"the simulation can never end at t={self.clock:f}: {len(stuck)} submitted job(s) were "
                    f"never executed nor rejected{hint}; schedulers must reject what they will never run")
        if self.config.enable_dynamic_jobs and not self.registration_finished:
            return (f"the simulation can never end at t={self.clock:f}: dynamic jobs are enabled and the "
                    "scheduler never sent NOTIFY registration_finished")
        return f"the simulation can never end at t={self.clock:f}: nothing left to simulate"

    def _check_accounting(self) -> None:
        t = self.tracer
        left = [j.id for j in self.jobs.values() if j.state in (SUBMITTED, RUNNING)]
        done = t.nb_success + t.nb_killed + t.nb_rejected
        if left or t.nb_jobs != self.nb_submitted or done != self.nb_submitted:
            raise AccountingError(f"job accounting broken: submitted={self.nb_submitted}, written={t.nb_jobs}, "
                                  f"finished+rejected={done}, still queued/running={left[:5]}")

    def _result(self, prefix: str | Path | None, wall: float) -> SimulationResult:
        t = self.tracer
        states = {s: 0 for s in FINAL_STATES}
        for j in self.jobs.values():
            if j.state in states:
                states[j.state] += 1
        counts = {"submitted": self.nb_submitted, **{s.lower(): n for s, n in states.items()}}
        schedule = t.schedule_values(nb_machines=len(self.machines), machine_time=self.machines.time,
                                     version=BATSIM_VERSION, scheduling_time=self.scheduling_time,
                                     simulation_time=wall)
        jobs_csv = schedule_csv = None
        if prefix is not None:
            prefix = str(prefix)
            Path(prefix).parent.mkdir(parents=True, exist_ok=True)
            jobs_csv, schedule_csv = Path(prefix + "_jobs.csv"), Path(prefix + "_schedule.csv")
            t.write_jobs_csv(jobs_csv)
            t.write_schedule_csv(schedule_csv, schedule)
            self.machines.write_states_csv(prefix + "_machine_states.csv")
        return SimulationResult(jobs_csv, schedule_csv, counts, schedule, self.clock, wall, self.messages, t)
