"""Batsim 4.2's scheduler-less mode (``--no-sched``, "batexec"): every job runs at once, on machines 0..res-1.

``batexec_job_launcher_process`` (``src/job_submitter.cpp``) starts, at time 0 and for each workload, one
``execute_job_process`` per job (in the order of the workload's ``unordered_map``, :mod:`.cxx_unordered`) on
the machines ``0 .. requested_nb_res - 1`` whatever its submission time, so jobs share machines: their
parallel tasks share the CPUs and links through the L07 system (:mod:`batfeed.engine.ptask`).
No server runs: nothing is written to ``_jobs.csv`` (its header only), a
``_machine_states.csv`` row is written when a job starts or ends (a machine computes while it runs at least
one job, ``Machines::update_machines_on_job_run/end``), and ``_schedule.csv`` has no job statistics.
"""

from __future__ import annotations

import time
from pathlib import Path

from batfeed.engine.clock import SimGridTimers
from batfeed.engine.config import BATSIM_VERSION
from batfeed.engine.cxx_unordered import unordered_order
from batfeed.engine.executor import Executor
from batfeed.engine.outputs import JobsTracer
from batfeed.engine.platform import Platform
from batfeed.engine.ptask import System
from batfeed.engine.workload import Job, Workload
from batfeed.errors import InputError

_TASK, _TIMEOUT = "done", "timeout"


class Batexec:
    """The jobs' executors and the machines they share."""

    def __init__(self, platform: Platform, workloads: list[Workload]):
        hosts = platform.compute
        self.n = len(hosts)
        self.speed = [h.speed for h in hosts]
        self.system = System(platform.network, [h.name for h in hosts], self.speed, [h.cores * h.speed for h in hosts])
        self.timers = SimGridTimers()
        self.timers.attach(self.system)
        self.clock = 0.0
        self.seq = 0
        self.jobs: list[Job] = []
        for w in workloads:       # each workload's launcher walks its unordered_map of jobs
            for k in unordered_order([j.id for j in w.jobs]):
                j = w.jobs[k]
                if j.requested_resources > self.n:
                    raise InputError(f"job {j.id} requests {j.requested_resources} machines, the platform has "
                                     f"{self.n} (Batsim aborts in --no-sched mode)", w.path)
                self.jobs.append(j)
        self.running = [0] * self.n           # jobs each machine computes
        self.since = [0.0] * self.n           # date of the machine's last state change
        self.computing = 0
        self.time_idle = self.time_computing = 0.0
        self.rows: list[tuple[float, int, int]] = []

    def _now(self) -> float:
        return self.clock

    def _machines(self, job: Job, delta: int) -> None:
        """``update_machines_on_job_run`` (+1) / ``_end`` (-1), then a ``_machine_states.csv`` row."""
        t = self.clock
        for m in range(job.requested_resources):
            before = self.running[m]
            self.running[m] = before + delta
            if (before == 0) != (self.running[m] == 0):     # idle <-> computing: close the period
                if before == 0:
                    self.time_idle += t - self.since[m]
                    self.computing += 1
                else:
                    self.time_computing += t - self.since[m]
                    self.computing -= 1
                self.since[m] = t
        self.rows.append((t, self.n - self.computing, self.computing))

    def _request(self, job: Job, ex: Executor, request: tuple) -> None:
        if request[0] == "sleep":
            self._add(request[1], (job, ex, ex.serial, _TASK), 0.0)
            return
        _, prof, timeout = request
        flops, com = prof.matrices(len(ex.hosts))
        act = self.system.make(ex.hosts, flops, com, shared=True)
        assert act is not None
        work = any(f > 0 for f in flops) or len(act.elems) > len(ex.hosts)
        self._add(1.0 if work else 0.0, (job, ex, ex.serial, _TASK), act)
        if timeout >= 0:
            self._add(timeout, (job, ex, ex.serial, _TIMEOUT), 0.0)

    def _add(self, duration: float, payload: tuple, rate: object) -> None:
        self.seq += 1
        self.timers.add(self.clock, duration, self.seq, 0, payload, rate)

    def run(self) -> None:
        for job in self.jobs:        # each actor updates the machines, then starts its first wait
            job.start = 0.0
            ex = Executor(job.prof, job.walltime, self._now, list(range(job.requested_resources)))
            self._machines(job, +1)
            self._request(job, ex, next(ex.gen))
        timers = self.timers
        while timers:
            dt = timers._next()
            self.clock += dt
            for entry in timers._step(dt):
                job, ex, serial, how = entry[3]
                if serial != ex.serial:
                    continue
                ex.serial += 1
                timers.cancel_job(job)
                try:
                    request = ex.gen.send(how)
                except StopIteration:
                    self._machines(job, -1)
                    continue
                self._request(job, ex, request)


def run_batexec(platform: Platform, workloads: list[Workload], prefix: str | Path,
                machine_states: bool = True) -> float:
    """Run ``--no-sched`` and write Batsim's outputs at ``prefix``; returns the simulated time."""
    wall0 = time.perf_counter()
    sim = Batexec(platform, workloads)
    sim.run()
    prefix = str(prefix)
    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    tracer = JobsTracer()
    tracer.write_jobs_csv(Path(prefix + "_jobs.csv"))
    if machine_states:
        with open(prefix + "_machine_states.csv", "w", encoding="utf-8") as fh:
            fh.write("time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n")
            fh.writelines(f"{t:g},0,0,0,{idle},{comp}\n" for t, idle, comp in sim.rows)
    values = tracer.schedule_values(
        nb_machines=sim.n, machine_time={"idle": sim.time_idle, "computing": sim.time_computing, "unavailable": 0.0},
        version=BATSIM_VERSION, scheduling_time=0.0, simulation_time=time.perf_counter() - wall0)
    tracer.write_schedule_csv(Path(prefix + "_schedule.csv"), values)
    return sim.clock
