"""The embedded Batsim-4.2-compatible discrete-event engine: state and event loop.

Batsim 4.2 is a set of SimGrid actors exchanging messages with one *server* actor
(``src/server.cpp``): a submitter per workload and per events file, an executor per running job, a
waiter per CALL_ME_LATER, a killer per KILL_JOB and a request-reply actor per message sent to the
scheduler.  The order of the events inside a message and the message boundaries follow from how
those actors run (SimGrid 3.32 with Batsim's ``ptask_L07`` host model), and this engine reproduces it
with two structures, read top to bottom in :meth:`Simulator.run`:

- **timers**: every sleep of an actor is a heap entry (date, creation sequence); sleeps ending at
  the same date end in creation order (L07 finishes its actions in creation order).  A submitter
  sleeps until its next date right after the server received its previous batch; an executor
  sleeps when it starts, i.e. after the request-reply actor took its next step; a waiter likewise
  (``max(date, now + 1e-5)``, Batsim's floor); the request-reply actor sleeps until a decision
  stamped in the future, then until the reply's ``now``.
- **the server's mailbox**: actors woken at one date post their messages in wake order; the server
  handles them one by one and sends everything gathered to the scheduler as soon as the scheduler
  is ready and the mailbox is empty (``mailbox_empty("server")``).  What an actor posts *after* the
  server received its previous message (a submitter's BYE after its last batch, the request-reply
  actor's next decision) arrives after that emptiness check; a killer's KILLING_DONE arrives after
  the server took its next message.  Hence e.g. ``[JOB_SUBMITTED 63, JOB_COMPLETED 61, JOB_COMPLETED
  62]`` when the submitter's sleep was created before the jobs started, and NOTIFY
  ``no_more_static_job_to_submit`` alone when the last batch was the last message of its instant.

Decisions are validated and applied by :class:`~batfeed.engine.protocol.DecisionsMixin`; drivers
(message transports or the direct driver) turn the events into what a scheduler sees.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from batfeed import __version__
from batfeed.engine.clock import ExactTimers, SimGridTimers
from batfeed.engine.events import UNAVAILABLE, ExternalEvent
from batfeed.engine.executor import Executor
from batfeed.engine.kinds import (
    E_BEGINS,
    E_CALL,
    E_COMPLETED,
    E_ENDS,
    E_GENERIC,
    E_KILLED,
    E_MACHINES,
    E_NOTIFY,
    E_SUBMITTED,
    M_BATCH,
    M_BYE,
    M_DECISION,
    M_DONE,
    M_HELLO,
    M_KILLED,
    M_READY,
    M_SWITCHED,
    M_WAITED,
    T_CALL,
    T_END,
    T_ENDED,
    T_RAN,
    T_RR,
    T_STEP,
    T_SUB,
)
from batfeed.engine.machines import Machines
from batfeed.engine.outputs import JobsTracer
from batfeed.engine.platform import Platform
from batfeed.engine.protocol import DecisionsMixin
from batfeed.engine.ptask import Action, System
from batfeed.engine.workload import FAILED, FINAL_STATES, RUNNING, SUBMITTED, SUCCESS, WALLTIME, Job, Workload
from batfeed.errors import BatfeedError, ProtocolError

BATSIM_VERSION = f"4.2.1+batfeed-{__version__}"


class Driver(Protocol):
    """Turns the engine's events into what a scheduler sees, and its answer into decisions."""

    def exchange(self, sim: Simulator, now: float, events: list[tuple]) -> tuple[float, list[tuple]]:
        """Deliver one message; return the reply's ``now`` and its decisions ``(timestamp, handler, args)``."""
        ...

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
    disable_machine_state_tracing: bool = False     # no PREFIX_machine_states.csv (export.cpp)
    energy: bool = False                            # -E: the energy model (batfeed/engine/energy_sim.py)


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
    driver: str = "pybatsim"


class AccountingError(BatfeedError):
    """A run that does not account for every job (a bug, never expected)."""


class _Submitter:
    """A static job submitter (one per workload) or event submitter (one per events file)."""

    __slots__ = ("items", "times", "i", "jobs", "current")

    def __init__(self, items: list[Any], times: list[float], jobs: bool):
        self.items, self.times, self.i, self.jobs = items, times, 0, jobs
        self.current = 0.0     # the date at which it last resumed (its current_submission_date)


class Simulator(DecisionsMixin):
    def __init__(self, platform: Platform, workloads: list[Workload],
                 event_lists: list[list[ExternalEvent]] | None = None, config: EngineConfig | None = None,
                 has_events_files: bool = False):
        self.platform = platform
        self.config = config or EngineConfig()
        self.workloads: dict[str, Workload] = {w.name: w for w in workloads}
        self.machines = Machines([h.name for h in platform.compute])
        self.speed = [h.speed for h in platform.compute]
        self.homogeneous = len(set(self.speed)) <= 1
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
        self.timers: ExactTimers | SimGridTimers = SimGridTimers() if timed else ExactTimers()
        self.woken: list = []               # sleeps that ended during the last message's step
        self.seq = 0
        self.queue: deque[tuple[int, Any, Any]] = deque()   # the server's mailbox
        self.out: list[tuple] = []                          # events gathered for the next message
        self.deferred: list[tuple[float, int, Any]] = []    # sleeps of actors created by a decision
        self.killing: list[tuple] = []                      # killers started by a decision
        self.kd_wait: list[tuple[int, Any, Any]] = []       # KILLING_DONE posted after the next receive
        self.late_posts: list[tuple[int, Any, Any]] = []    # -E: posted once this instant's actors are blocked
        self.ready = False
        self.ended = False
        self.end_sent = False
        self.tracer = JobsTracer()
        self.jobs: dict[str, Job] = {}
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
        self.subs: list[_Submitter] = []
        nb_static = 0
        for w in workloads:
            jobs = sorted(w.jobs, key=lambda j: (j.subtime, j.id))
            for j in jobs:
                self.jobs[j.id] = j
            nb_static += len(jobs)
            self.subs.append(_Submitter(jobs, [j.subtime for j in jobs], True))
        self.nb_static = nb_static
        self.job_subs_left = len(workloads)
        ev_lists = event_lists or []
        if has_events_files or ev_lists:
            for lst in ev_lists:
                self.subs.append(_Submitter(lst, [e.timestamp for e in lst], False))
        self.event_subs_left = len(ev_lists)

    # ------------------------------------------------------------------ main loop
    def run(self, driver: Any, export_prefix: str | Path | None = None) -> SimulationResult:
        """Simulate with ``driver`` (a :class:`Driver`, or a message transport with ``exchange(dict)``)."""
        from batfeed.engine.messages import MessageDriver

        if not hasattr(driver, "direct"):
            driver = MessageDriver(driver)
        self.driver = driver
        wall0 = time.perf_counter()
        q = self.queue
        # The loaded jobs and platform are long-lived and what a run allocates is freed by reference
        # counting: exempt the former from the cyclic GC and let it run rarely (-20 % run time).
        thresholds = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(100_000, 50, 100)
        try:
            for s in self.subs:                  # every submitter says hello, then the server starts
                q.append((M_HELLO, s, None))
            self.out.append((E_BEGINS, 0.0))
            self._send()
            self._rr_step()
            late = self.late_posts
            while not self.ended:
                if late:                         # -E: posts of actors that queried energies (energy_sim.py)
                    q.extend(late)
                    late.clear()
                if not q:                        # the next step: the actors whose sleep ends then post
                    if not self.timers:
                        raise ProtocolError(self._deadlock_reason())
                    self.clock, due = self.timers.next_step(self.clock)
                    self._post(due)
                    continue
                kind, a, b = q.popleft()
                if not self.timers.exact:        # the message's own SimGrid steps
                    if kind == M_DONE or kind == M_SWITCHED:   # M_SWITCHED (-E): from the switched machine
                        self._message_step(self.host_delay[a.intervals[0][0]], a.intervals[0][0])
                    else:
                        self._message_step(self.master_delay)
                if self.kd_wait:
                    q.extend(self.kd_wait)
                    self.kd_wait = []
                if kind == M_DECISION:      # ready is False while the request-reply actor forwards
                    a[1](*a[2])
                    if self.woken:
                        self._post_woken()
                    self._rr_step()
                    continue
                if kind == M_DONE:
                    self.nb_running -= 1
                    self.nb_completed += 1
                    self.out.append((E_COMPLETED, self.clock, a))
                    self._record(a)
                    sent = self.ready and not q and self._check()
                    if self.woken:
                        self._post_woken()
                elif kind == M_BATCH:
                    self._batch(a, b)
                    sent = self.ready and not q and self._check()
                    if self.woken:
                        self._post_woken()
                    self._submitter_after_put(a)
                else:
                    sent = self._other(kind, a)
                if sent:
                    self._rr_step()
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()
            driver.close()
            # no reference cycle outlives the run (decisions hold bound methods of this object), so
            # memory goes back at once when a caller drops the result (many runs per process)
            self.rr, self.deferred, self.killing, self.kd_wait = [], [], [], []
        self._check_accounting()
        result = self._result(export_prefix, time.perf_counter() - wall0)
        self.driver = None
        return result

    def _other(self, kind: int, a: Any) -> bool:
        """The rarer server messages: HELLO, BYE, WAITING_DONE, KILLING_DONE, SCHED_READY."""
        if kind == M_READY:
            self.ready = True
        elif kind == M_WAITED:
            self.nb_waiters -= 1
            self.out.append((E_CALL, self.clock))
        elif kind == M_KILLED:
            self._killing_done(a)
        elif kind == M_BYE:
            if a.jobs:
                self.job_subs_left -= 1
                if not self.job_subs_left:
                    self.out.append((E_NOTIFY, self.clock, "no_more_static_job_to_submit"))
            else:
                self.event_subs_left -= 1
                if not self.event_subs_left:
                    self.out.append((E_NOTIFY, self.clock, "no_more_external_event_to_occur"))
        else:   # M_HELLO: the submitter then starts
            sent = self._check()
            if self.woken:
                self._post_woken()
            a.current = self.clock
            self._submitter_collect(a, first=False)
            return sent
        sent = self._check()
        if self.woken:
            self._post_woken()
        return sent

    def _check(self) -> bool:
        """The server's test after each message: send when the scheduler is ready and the mailbox empty."""
        if not self.ready or self.queue:
            return False
        if self.out:
            self._send()
            return True
        if not self.end_sent and self._finished():
            self.out.append((E_ENDS, self.clock))
            self.end_sent = True
            self._send()
            return True
        return False

    def _send(self) -> None:
        events, self.out = self.out, []
        self.ready = False
        t0 = time.perf_counter()
        now, decisions = self.driver.exchange(self, self.clock, events)
        self.scheduling_time += time.perf_counter() - t0
        self.messages += 1
        self._delete_finished_jobs()      # Batsim deletes them right after sending (server.cpp)
        if self.zombies_done:             # ... and with them the tasks that timed out and ran on
            for job in self.zombies_done:
                self.timers.cancel_job(job)
            self.zombies_done = []
        if self.end_sent:
            if decisions:
                raise ProtocolError("the scheduler answered SIMULATION_ENDS with decisions; nothing can "
                                    "happen after the end")
            self.ended = True
            return
        self.rr, self.rr_i, self.rr_now = decisions, 0, now

    def _rr_step(self) -> None:
        """The request-reply actor's next steps: forward its next decision, or SCHED_READY.

        Then the actors the last decision created (executors, waiters) sleep, and a killer posts its
        KILLING_DONE (after the server's next receive when something is queued).  Fast path: while
        nothing else is queued, the server receives the actor's message at once, so a decision due
        now (or SCHED_READY) is handled here without going through the mailbox."""
        q = self.queue
        while not self.ended:
            c = self.clock
            rr, i = self.rr, self.rr_i
            if i < len(rr):
                d = rr[i]
                if d[0] > c:                      # Batsim sleeps until the decision's date
                    self._sleep(d[0] - c, T_RR, None)
                else:
                    self.rr_i = i + 1
                    if not q and not self.killing:
                        if self.deferred:
                            self._flush_deferred()
                        if not self.timers.exact:
                            self._message_step(self.master_delay)
                        d[1](*d[2])
                        if self.woken:
                            self._post_woken()
                        continue
                    q.append((M_DECISION, d, None))
            elif self.rr_now > c:
                self._sleep(self.rr_now - c, T_RR, None)
            elif not q and not self.killing:
                if self.deferred:
                    self._flush_deferred()
                if not self.timers.exact:
                    self._message_step(self.master_delay)
                self.ready = True
                sent = self._check()
                if self.woken:
                    self._post_woken()
                if sent:
                    continue                      # a new message was sent: forward its reply
                return
            else:
                q.append((M_READY, None, None))
            if self.deferred:
                self._flush_deferred()
            if self.killing:
                for killed in self.killing:
                    (self.kd_wait if q else q).append((M_KILLED, killed, None))
                self.killing = []
            return

    def _flush_deferred(self) -> None:
        for d, kind, payload, rate in self.deferred:
            self._sleep(d, kind, payload, rate)
        self.deferred = []

    def _sleep(self, duration: float, kind: int, payload: Any, rate: Any = 0.0) -> None:
        """An actor sleeps ``duration`` seconds from now (the duration Batsim computes), or runs a
        parallel task at ``rate`` (its work per second)."""
        self.seq += 1
        timers = self.timers
        if timers.exact and (rate or not duration.is_integer()):   # from now on, steps can round
            timers = self.timers = timers.to_simgrid(self.clock)
        if rate and rate.__class__ is Action:
            timers.attach(self.ptasks)
        timers.add(self.clock, duration, self.seq, kind, payload, rate)

    def _message_step(self, delay: tuple[float, float], src: int = -1) -> None:
        """SimGrid's steps for the message the server just received from machine ``src`` (-1: the master;
        ``delay``: its route's latency and transfer time): sleeps ending before it arrives post at once, those
        ending as it arrives post after the server's check (:meth:`_post_woken`).  A message whose route
        crosses a link a parallel task uses shares it (its action in the L07 system)."""
        act = None
        if self.ptasks is not None and self.ptasks.actions:
            master = self.platform.master
            act = self.ptasks.message(master if src < 0 else self.platform.compute[src].name, master)
        self.clock, due = self.timers.message_step(self.clock, delay[0], delay[1], self._post_early, act)
        if due:
            for entry in due:       # executors run before the server: their machines are freed at once
                if entry[2] == T_END:
                    entry[2] = T_ENDED if self._executor_ends(entry[3], self.clock) else T_RAN
                elif entry[2] == T_STEP:
                    entry[2] = T_ENDED if self._executor_resumes(entry[3], self.clock) else T_RAN
            self.woken.extend(due)

    def _post_early(self, date: float, due: list) -> None:
        before, self.clock = self.clock, date
        self._post(due)
        self.clock = before

    def _post_woken(self) -> None:
        due, self.woken = self.woken, []
        self._post(due)

    def _post(self, due: list) -> None:
        """The actors whose sleep ended wake up (in creation order) and post their messages."""
        t, q = self.clock, self.queue
        for entry in due:
            kind, payload = entry[2], entry[3]
            if kind == T_END:
                if self._executor_ends(payload, t):
                    q.append((M_DONE, payload[0], None))
            elif kind == T_ENDED:
                q.append((M_DONE, payload[0], None))
            elif kind == T_SUB:
                payload.current = t
                self._submitter_collect(payload, first=True)
            elif kind == T_CALL:
                q.append((M_WAITED, None, None))
            elif kind == T_RR:
                if self.rr_i < len(self.rr):
                    d = self.rr[self.rr_i]
                    self.rr_i += 1
                    q.append((M_DECISION, d, None))
                else:
                    q.append((M_READY, None, None))
            elif kind == T_STEP:
                if self._executor_resumes(payload, t):
                    q.append((M_DONE, payload[0], None))
            # T_RAN: an executor that already ran and goes on posts nothing

    def _executor_ends(self, payload: tuple, t: float) -> bool:
        """A job's executor wakes up at ``t``: the job ends and its machines are freed, before the server
        hears of it; False when the job was killed meanwhile."""
        job = payload[0]
        if job.state != RUNNING:
            return False
        state = job.state = payload[1]
        job.return_code = -1 if state == WALLTIME else 0 if state == SUCCESS else job.prof.ret
        job.runtime = t - job.start
        self.machines.end(job.intervals, t)
        if payload[2]:                # a parallel task with a walltime: the timeout ends with the task; a task
            self.timers.cancel_job(job, keep_task=state == WALLTIME)    # that timed out runs on
        return True

    def _executor_resumes(self, payload: tuple, t: float) -> bool:
        """A composed job's executor (``T_STEP``): its wait ended; it starts its next wait, or the job ends
        (True: its machines are freed, the server is to hear of it)."""
        job, ex, serial, how = payload
        if job.state != RUNNING or serial != ex.serial:   # killed, or the other half of a finished wait
            return False
        ex.serial += 1
        self.timers.cancel_job(job, keep_task=how == "timeout")   # a task that timed out runs on
        try:
            request = ex.gen.send(how)
        except StopIteration as stop:
            ret = stop.value
            job.state = SUCCESS if ret == 0 else FAILED if ret > 0 else WALLTIME
            job.return_code = ret
            job.runtime = t - job.start
            self.machines.end(job.intervals, t)
            del self.executors[job.id]
            return True
        self._executor_request(job, ex, request, deferred=False)
        return False

    def _executor_request(self, job: Job, ex: Executor, request: tuple, deferred: bool) -> None:
        """What the executor waits for next: a sleep, or a parallel task (and its timeout sleep)."""
        if deferred:                  # its first wait: the actor runs after the request-reply actor
            self.executors[job.id] = ex
            sleep: Callable[..., None] = lambda d, kind, payload, rate=0.0: self.deferred.append(  # noqa: E731
                (d, kind, payload, rate))
        else:
            sleep = self._sleep
        if request[0] == "sleep":
            sleep(request[1], T_STEP, (job, ex, ex.serial, "done"))
            return
        _, prof, timeout = request
        duration, rate = self._ptask(job, prof, ex.hosts, timeout >= 0)
        sleep(duration, T_STEP, (job, ex, ex.serial, "done"), rate)
        if timeout >= 0:
            sleep(timeout, T_STEP, (job, ex, ex.serial, "timeout"))

    def _executor_of(self, job: Job) -> Executor | None:
        return self.executors.get(job.id) if self.executors else None

    def _now(self) -> float:
        return self.clock

    def ptask_system(self) -> System:
        """The lmm system of the parallel tasks that share resources (created at the first)."""
        if self.ptasks is None:
            hosts = self.platform.compute
            self.ptasks = System(self.platform.network, [h.name for h in hosts], self.speed,
                                 [h.cores * h.speed for h in hosts])
        return self.ptasks

    # ------------------------------------------------------------------ submitters
    def _submitter_collect(self, s: _Submitter, first: bool) -> None:
        """A submitter runs (after HELLO, or woken by its sleep: ``first``, the item it slept for is
        taken whatever the clock says): it posts what is due (date <= its current date), else sleeps
        until its next date, else says BYE (job_submitter.cpp / event_submitter.cpp)."""
        times, i, n, now = s.times, s.i, len(s.times), s.current
        j = i + 1 if first and i < n else i
        while j < n and times[j] <= now:
            j += 1
        if j > i:
            s.i = j
            self.queue.append((M_BATCH, s, s.items[i:j]))
        elif i < n:
            self._sleep(times[i] - now, T_SUB, s)
        else:
            self.queue.append((M_BYE, s, None))

    def _submitter_after_put(self, s: _Submitter) -> None:
        if s.i < len(s.times):
            self._sleep(s.times[s.i] - s.current, T_SUB, s)
        else:
            self.queue.append((M_BYE, s, None))

    def _batch(self, s: _Submitter, items: list[Any]) -> None:
        c, out = self.clock, self.out
        if s.jobs:
            for job in items:
                job.state = SUBMITTED
                out.append((E_SUBMITTED, c, job))
            self.nb_submitted += len(items)
        else:
            for ev in items:
                self._external_event(ev)

    # ------------------------------------------------------------------ happenings
    def _killing_done(self, killed: tuple) -> None:
        """Batsim's server_on_killing_done: JOB_COMPLETED for the jobs really killed, then JOB_KILLED."""
        asked, progress, really = killed
        c = self.clock
        for job in really:
            self.nb_running -= 1
            self.nb_completed += 1
            self.out.append((E_COMPLETED, c, job))
            self._record(job)
        self.out.append((E_KILLED, c, [j.id for j in asked], progress))
        self.nb_killers -= 1

    def _record(self, job: Job) -> None:
        """Write the job's _jobs.csv row; Batsim deletes it after the next message is sent."""
        self.tracer.write_job(job)
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

    def _external_event(self, ev: ExternalEvent) -> None:
        m, c = self.machines, self.clock
        if not ev.resources:
            if ev.type in ("machine_available", "machine_unavailable"):
                return   # an empty set is ignored
            self.out.append((E_GENERIC, c, ev.data))
            return
        for a, b in ev.resources:
            for i in range(a, b + 1):
                if m.unavail[i] == (ev.type == UNAVAILABLE):
                    raise ProtocolError(f"{ev.where}: {ev.type} on machine {i} ('{m.names[i]}') which is "
                                        f"{'already' if m.unavail[i] else 'not'} unavailable (Batsim aborts)")
        if ev.type == UNAVAILABLE:
            m.set_unavailable(ev.resources, c)
            self.out.append((E_MACHINES, c, "event_machine_unavailable", ev.resources))
        else:
            m.set_available(ev.resources, c)
            self.out.append((E_MACHINES, c, "event_machine_available", ev.resources))

    # ------------------------------------------------------------------ end of simulation
    def _finished(self) -> bool:
        """Batsim's is_simulation_finished (server.cpp)."""
        return (not self.job_subs_left and not self.event_subs_left
                and (not self.config.enable_dynamic_jobs or self.registration_finished)
                and self.nb_completed == self.nb_submitted
                and self.nb_running == 0 and self.nb_waiters == 0 and self.nb_killers == 0)

    def _deadlock_reason(self) -> str:
        stuck = [j for j in self.jobs.values() if j.state == SUBMITTED]
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
        schedule = t.schedule_values(nb_machines=len(self.machines), machine_time=self.machines.time_in_states(),
                                     version=BATSIM_VERSION, scheduling_time=self.scheduling_time,
                                     simulation_time=wall)
        jobs_csv = schedule_csv = None
        if prefix is not None:
            prefix = str(prefix)
            Path(prefix).parent.mkdir(parents=True, exist_ok=True)
            jobs_csv, schedule_csv = Path(prefix + "_jobs.csv"), Path(prefix + "_schedule.csv")
            t.write_jobs_csv(jobs_csv)
            t.write_schedule_csv(schedule_csv, schedule)
            if not self.config.disable_machine_state_tracing:
                self.machines.write_states_csv(prefix + "_machine_states.csv")
        return SimulationResult(jobs_csv, schedule_csv, counts, schedule, self.clock, wall, self.messages, t,
                                getattr(self.driver, "name", "pybatsim"))
