"""The engine's state (:class:`EngineState`): what Batsim's server and its actors hold, and the accounting of jobs.

The layers of the engine, each a class built on the one below (every file imports only below itself):

- :class:`EngineState` (here): the platform, the machines, the jobs, the timers, the server's mailbox and
  counters; a finished job's ``_jobs.csv`` row (streamed, :class:`JobsTracer`); the end condition and the run's result;
- :class:`~batfeed.engine.actors.Actors`: the SimGrid actors' sleeps (submitters, job executors);
- :class:`~batfeed.engine.decisions.Decisions`: the scheduler's decisions, the one interface every driver
  decides through (:mod:`batfeed.engine.protocol` reads them from JSON, :mod:`batfeed.engine.direct` calls
  them itself);
- :class:`~batfeed.engine.simulator.Simulator`: the server's event loop and the request-reply actor.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mypy_extensions import mypyc_attr

from batfeed.engine.clock import ExactTimers, SimGridTimers
from batfeed.engine.config import BATSIM_VERSION, AccountingError, EngineConfig, SimulationResult
from batfeed.engine.events import ExternalEvent
from batfeed.engine.executor import Executor
from batfeed.engine.machines import Machines
from batfeed.engine.outputs import JobsTracer
from batfeed.engine.platform import Platform
from batfeed.engine.ptask import System
from batfeed.engine.workload import FINAL_STATES, RUNNING, SUBMITTED, WALLTIME, Job, Workload


class Submitter:
    """A static job submitter (one per workload) or event submitter (one per events file).

    It owns its items until it posts them (:meth:`take`): then its slots are cleared, so that a job
    the engine has finished with is freed (memory does not grow with the trace, docs/engine.md)."""

    __slots__ = ("items", "times", "i", "jobs", "current")

    def __init__(self, items: list[Any], times: list[float], jobs: bool):
        self.items, self.times, self.i, self.jobs = items, array("d", times), 0, jobs
        self.current = 0.0     # the date at which it last resumed (its current_submission_date)

    def take(self, i: int, j: int) -> list[Any]:
        """Items ``i..j-1``, posted now: the submitter lets go of them."""
        items = self.items
        batch = items[i:j]
        items[i:j] = [None] * (j - i)
        return batch


class Finished:
    """What the engine keeps of a finished job that a later message names (Batsim keeps every job: a
    KILL_JOB of a finished job is reported in JOB_KILLED, an EXECUTE_JOB of it aborts, its id cannot be
    registered again).  Made on demand from the final state that :meth:`EngineState._record` leaves."""

    __slots__ = ("id", "state", "kill_requested", "metadata")

    def __init__(self, id: str, state: str, kill_requested: bool = False):
        self.id, self.state, self.kill_requested, self.metadata = id, state, kill_requested, ""


@mypyc_attr(allow_interpreted_subclasses=True)
class EngineState:
    """The state of a run (see the module docstring); the layers above add what changes it."""

    def __init__(self, platform: Platform, workloads: list[Workload],
                 event_lists: list[list[ExternalEvent]] | None = None, config: EngineConfig | None = None,
                 has_events_files: bool = False):
        self.platform = platform
        self.config = config or EngineConfig()
        self.workloads: dict[str, Workload] = {w.name: w for w in workloads}
        self.machines = Machines([h.name for h in platform.compute])
        self.speed = [h.speed for h in platform.compute]
        self.clock = 0.0
        # a message to the server: (latency, transfer time) from the master (submitters, waiters, killers,
        # the request-reply actor) or from a job's first machine (its executor's JOB_COMPLETED)
        net = platform.network
        if net is None or net.delay_free():  # routes not modelled: every message crosses the slowest link
            self.master_delay = (0.0, platform.min_bandwidth if net is None else 0.0)
            self.host_delay = [self.master_delay] * len(platform.compute)
        else:
            self.master_delay = net.message_delay(platform.master, platform.master)
            self.host_delay = [net.message_delay(h.name, platform.master) for h in platform.compute]
        timed = self.master_delay != (0.0, 0.0) or any(d != (0.0, 0.0) for d in self.host_delay)
        # sleeps: exact dates while nothing can round, else SimGrid's own steps (clock.py)
        self.timers: Any = SimGridTimers() if timed else ExactTimers()
        self.woken: list = []               # sleeps that ended during the last message's step
        self.seq = 0
        self.queue: deque[tuple[int, Any, Any]] = deque()   # the server's mailbox
        self.out: list[tuple] = []                          # events gathered for the next message
        self.deferred: list[tuple[float, int, Any, Any]] = []    # sleeps of actors created by a decision
        self.killing: list[tuple] = []                      # killers started by a decision
        self.kd_wait: list[tuple[int, Any, Any]] = []       # KILLING_DONE posted after the next receive
        self.late_posts: list[tuple[int, Any, Any]] = []    # -E: posted once this instant's actors are blocked
        self.ready = False
        self.ended = False
        self.end_sent = False
        self.tracer = JobsTracer()
        # every job by id; a finished job's entry is its final state (a str), or a Finished once a
        # message names it again (:meth:`job`): the Job itself is freed once nothing else holds it
        self.jobs: dict[str, Job | Finished | str] = {}
        self.executors: dict[str, Executor] = {}       # the running composed jobs' executors
        self.ptasks: System | None = None
        self.zombies_done: list[Job] = []   # jobs whose timed-out task runs until they are deleted
        self.to_delete: list[Job] = []
        self.gc = self.config.enable_dynamic_jobs and not self.config.enable_profile_reuse
        self.gc_profiles: dict[str, set[str]] = {}
        self.nb_submitted = self.nb_completed = self.nb_running = self.nb_waiters = 0
        self.nb_killers = 0
        self.registration_finished = False
        self.messages = 0
        self.scheduling_time = 0.0
        self.rr: list[tuple] = []          # the reply being forwarded by the request-reply actor
        self.rr_i = 0
        self.rr_now = 0.0
        self.on_progress: Callable[[int, int], None] | None = None
        self.driver: Any = None
        # one submitter per workload (jobs by (subtime, id string), Batsim's job_comparator_subtime_number)
        self.subs: list[Submitter] = []
        nb_static = 0
        for w in workloads:
            jobs = sorted(w.jobs, key=lambda j: (j.subtime, j.id))
            for j in jobs:
                self.jobs[j.id] = j
            nb_static += len(jobs)
            self.subs.append(Submitter(jobs, [j.subtime for j in jobs], True))
        self.nb_static = nb_static
        self.job_subs_left = len(workloads)
        ev_lists = event_lists or []
        if has_events_files or ev_lists:
            for lst in ev_lists:
                self.subs.append(Submitter(lst, [e.timestamp for e in lst], False))
        self.event_subs_left = len(ev_lists)

    # ------------------------------------------------------------------ finished jobs
    def job(self, jid: str) -> Job | Finished | None:
        """The job ``jid`` names (a :class:`Finished` if it has finished), or None if there is none."""
        job = self.jobs.get(jid)
        if type(job) is str:
            job = self.jobs[jid] = Finished(jid, job)
        return job  # type: ignore[return-value]

    def _record(self, job: Job) -> None:
        """Write the job's _jobs.csv row; Batsim deletes it after the next message is sent.  The engine
        keeps only its final state (see :class:`Finished`)."""
        self.tracer.write_job(job)
        if self.jobs.get(job.id) is job:         # a kill asked already is not asked again (_do_kill)
            self.jobs[job.id] = Finished(job.id, job.state, True) if job.kill_requested else job.state
        if self.ptasks is not None and job.state == WALLTIME and self.ptasks.actions:
            self.zombies_done.append(job)
        if self.gc:
            self.to_delete.append(job)
        if self.on_progress is not None and self.tracer.nb_jobs % 1024 == 0:
            self.on_progress(self.tracer.nb_jobs, self.nb_static)

    def _delete_finished_jobs(self) -> None:
        """Profile garbage collection (Batsim >= 4.0); only dynamic registrations can observe it."""
        if not self.to_delete:
            return
        if self.config.enable_dynamic_jobs and not self.config.enable_profile_reuse:
            for job in self.to_delete:
                wl = self.workloads[job.workload]
                todo = [job.profile]
                while todo:           # Profiles::remove_profile: a composed profile's sequence goes too
                    name = todo.pop()
                    prof = wl.profiles.pop(name, None)
                    if prof is not None:
                        self.gc_profiles.setdefault(job.workload, set()).add(name)
                        todo.extend(prof.seq)
        self.to_delete = []

    # ------------------------------------------------------------------ end of simulation
    def _finished(self) -> bool:
        """Batsim's is_simulation_finished (server.cpp)."""
        return (not self.job_subs_left and not self.event_subs_left
                and (not self.config.enable_dynamic_jobs or self.registration_finished)
                and self.nb_completed == self.nb_submitted
                and self.nb_running == 0 and self.nb_waiters == 0 and self.nb_killers == 0)

    def _deadlock_reason(self) -> str:
        stuck = [j for j in self.jobs.values() if type(j) is Job and j.state == SUBMITTED]
        if stuck:
            j = stuck[0]
            n = j.requested_resources
            hint = (f" ({j.id} asks {n} machines, the platform has {len(self.machines)})"
                    if n > len(self.machines) else f" (first: {j.id}, res={n})")
            return (f"the simulation can never end at t={self.clock:f}: {len(stuck)} submitted job(s) were "
                    f"never executed nor rejected{hint}; schedulers must reject what they will never run")
        if self.config.enable_dynamic_jobs and not self.registration_finished:
            return (f"the simulation can never end at t={self.clock:f}: dynamic jobs are enabled and the "
                    "scheduler never sent NOTIFY registration_finished")
        return f"the simulation can never end at t={self.clock:f}: nothing left to simulate"

    def _open_outputs(self, prefix: str | Path | None) -> None:
        """Start streaming ``PREFIX_jobs.csv`` (as ``.part`` until the run ends, :class:`JobsTracer`)."""
        if prefix is not None:
            prefix = str(prefix)
            Path(prefix).parent.mkdir(parents=True, exist_ok=True)
            self.tracer.open(prefix + "_jobs.csv")

    def _check_accounting(self) -> None:
        t = self.tracer
        left = [j.id for j in self.jobs.values() if type(j) is Job and j.state in (SUBMITTED, RUNNING)]
        done = t.nb_success + t.nb_killed + t.nb_rejected
        if left or t.nb_jobs != self.nb_submitted or done != self.nb_submitted:
            t.discard()
            raise AccountingError(f"job accounting broken: submitted={self.nb_submitted}, written={t.nb_jobs}, "
                                  f"finished+rejected={done}, still queued/running={left[:5]}")

    def _result(self, prefix: str | Path | None, wall: float) -> SimulationResult:
        t = self.tracer
        states = {s: 0 for s in FINAL_STATES}
        for j in self.jobs.values():
            state = j if isinstance(j, str) else j.state
            if state in states:
                states[state] += 1
        counts = {"submitted": self.nb_submitted, **{s.lower(): n for s, n in states.items()}}
        schedule = t.schedule_values(nb_machines=len(self.machines), machine_time=self.machines.time_in_states(),
                                     version=BATSIM_VERSION, scheduling_time=self.scheduling_time,
                                     simulation_time=wall)
        jobs_csv = schedule_csv = None
        if prefix is not None:
            prefix = str(prefix)
            Path(prefix).parent.mkdir(parents=True, exist_ok=True)
            schedule_csv = Path(prefix + "_schedule.csv")
            jobs_csv = t.finish()
            if jobs_csv is None:       # not streamed (the run did not open it): the jobs kept, if any
                jobs_csv = Path(prefix + "_jobs.csv")
                t.write_jobs_csv(jobs_csv)
            t.write_schedule_csv(schedule_csv, schedule)
            if not self.config.disable_machine_state_tracing:
                self.machines.write_states_csv(prefix + "_machine_states.csv")
        return SimulationResult(jobs_csv, schedule_csv, counts, schedule, self.clock, wall, self.messages, t,
                                getattr(self.driver, "name", "pybatsim"))
