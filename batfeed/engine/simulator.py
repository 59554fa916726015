"""The embedded Batsim-4.2-compatible discrete-event engine: :class:`Simulator`, the server's event loop.

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

The engine's layers, each a class built on the one below (:mod:`batfeed.engine.state`: the state and the
accounting of jobs; :mod:`batfeed.engine.actors`: the actors' sleeps; :mod:`batfeed.engine.decisions`: the
scheduler's decisions, the one interface every driver decides through); :class:`Simulator`, here, adds the
server's event loop and the request-reply actor.  Drivers (message transports through
:class:`~batfeed.engine.messages.MessageDriver`, or the direct driver) turn the events into what a
scheduler sees, and its answer into decisions.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any, Protocol

from mypy_extensions import mypyc_attr

from batfeed.engine.config import BATSIM_VERSION, EngineConfig, SimulationResult
from batfeed.engine.decisions import Decisions
from batfeed.engine.events import UNAVAILABLE, ExternalEvent
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
from batfeed.engine.messages import MessageDriver
from batfeed.engine.state import Submitter
from batfeed.engine.workload import SUBMITTED
from batfeed.errors import ProtocolError

# the engine's face: what a run is given and returns (batfeed.engine.config), and the engine itself
__all__ = ["BATSIM_VERSION", "Driver", "EngineConfig", "SimulationResult", "Simulator"]


class Driver(Protocol):
    """Turns the engine's events into what a scheduler sees, and its answer into decisions."""

    def exchange(self, sim: Simulator, now: float, events: list[tuple]) -> tuple[float, list[tuple]]:
        """Deliver one message; return the reply's ``now`` and its decisions ``(timestamp, method, args)``."""
        ...

    def close(self) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)
class Simulator(Decisions):
    """The engine: the layers below, with the server's event loop and the request-reply actor."""

    # ------------------------------------------------------------------ main loop
    def run(self, driver: Any, export_prefix: str | Path | None = None) -> SimulationResult:
        """Simulate with ``driver`` (a :class:`Driver`, or a message transport with ``exchange(dict)``)."""
        if not hasattr(driver, "direct"):
            driver = MessageDriver(driver)
        self.driver = driver
        wall0 = time.perf_counter()
        for w in self.workloads.values():      # the submitters own the static jobs now: a finished job is
            w.jobs = []                        # freed (the caller keeps its own list to read them after)
        q = self.queue
        # The loaded jobs and platform are long-lived and what a run allocates is freed by reference
        # counting: exempt the former from the cyclic GC and let it run rarely (-20 % run time).
        thresholds = gc.get_threshold()
        self._open_outputs(export_prefix)      # PREFIX_jobs.csv is streamed as the jobs finish
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
        except BaseException:
            self.tracer.discard()              # an aborted run leaves no partial PREFIX_jobs.csv(.part)
            raise
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

    # ------------------------------------------------------------------ the server's messages
    def _batch(self, s: Submitter, items: list[Any]) -> None:
        c, out = self.clock, self.out
        if s.jobs:
            for job in items:
                job.state = SUBMITTED
                out.append((E_SUBMITTED, c, job))
            self.nb_submitted += len(items)
        else:
            for ev in items:
                self._external_event(ev)

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
