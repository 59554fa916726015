"""Batsim's actors as the engine runs them (:class:`Actors`): their sleeps, the job executors, the submitters.

Every wait of an actor is a timer entry (``batfeed.engine.clock``): a submitter sleeps until its next
date, a job's executor until its task (or a composed job's next step) ends, a waiter until its
CALL_ME_LATER date.  The actors a decision creates sleep once the request-reply actor took its next
step (:meth:`Actors._flush_deferred`, called by the event loop of :mod:`batfeed.engine.simulator`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

from batfeed.engine.executor import Executor
from batfeed.engine.kinds import M_BATCH, M_BYE, T_STEP, T_SUB
from batfeed.engine.ptask import Action, System, constant_rate
from batfeed.engine.state import EngineState, Submitter
from batfeed.engine.workload import FAILED, RUNNING, SUCCESS, WALLTIME, Job
from batfeed.errors import ProtocolError


@mypyc_attr(allow_interpreted_subclasses=True)
class Actors(EngineState):
    """The engine's state with the actors' sleeps: submitters, job executors and their parallel tasks."""

    # ------------------------------------------------------------------ sleeps
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

    # ------------------------------------------------------------------ job executors
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

    def _ptask(self, job: Job, prof: Any, hosts: list[int], timed: bool) -> tuple[float, Any]:
        """A parallel task of ``prof`` on ``hosts`` (one per rank): (1 if it has work else 0, its rate: a
        constant when it shares nothing, else its ``L07Action``).  A ``timed`` task (waited for with a
        timeout) always has an action: if the timeout wins it runs on, and shares its hosts with later jobs."""
        if prof.type == "parallel" and len(hosts) != len(prof.cpu):
            raise ProtocolError(f"job {job.id}: profile '{prof.name}' has {len(prof.cpu)} ranks but runs on "
                                f"{len(hosts)} executors (Batsim aborts: \"the number of resources given by the "
                                "allocation is different from the number of resources given by the profile data\")")
        flops, com = prof.matrices(len(hosts))
        act = self.ptask_system().make(hosts, flops, com, shared=timed)
        if act is None:
            rate = constant_rate(hosts, flops, self.speed)
            return (1.0 / rate if rate else 0.0), rate
        work = any(f > 0 for f in flops) or len(act.elems) > len(hosts)
        return (1.0 if work else 0.0), act

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
    def _submitter_collect(self, s: Submitter, first: bool) -> None:
        """A submitter runs (after HELLO, or woken by its sleep: ``first``, the item it slept for is
        taken whatever the clock says): it posts what is due (date <= its current date), else sleeps
        until its next date, else says BYE (job_submitter.cpp / event_submitter.cpp)."""
        times, i, n, now = s.times, s.i, len(s.times), s.current
        j = i + 1 if first and i < n else i
        while j < n and times[j] <= now:
            j += 1
        if j > i:
            s.i = j
            self.queue.append((M_BATCH, s, s.take(i, j)))
        elif i < n:
            self._sleep(times[i] - now, T_SUB, s)
        else:
            self.queue.append((M_BYE, s, None))

    def _submitter_after_put(self, s: Submitter) -> None:
        if s.i < len(s.times):
            self._sleep(s.times[s.i] - s.current, T_SUB, s)
        else:
            self.queue.append((M_BYE, s, None))
