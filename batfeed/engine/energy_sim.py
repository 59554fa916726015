"""The engine with Batsim 4.2.1's ``-E``: pstates, machine switches, energy queries and energy outputs.

:class:`EnergySimulator` is the :class:`~batfeed.engine.simulator.Simulator` of a ``-E`` run
(:func:`batfeed.engine.load_simulation` picks it), so that a run without ``-E`` executes none of this.  Following
Batsim's sources, it adds:

- SET_RESOURCE_STATE, the switch actors and RESOURCE_STATE_CHANGED (:mod:`batfeed.engine.energy_switch`);
- QUERY ``consumed_energy`` and its ANSWER (``server_on_sched_tell_me_energy``);
- the jobs' ``consumed_energy`` (``execute_job_process``, ``killer_process``), ``_consumed_energy.csv``,
  ``_pstate_changes.csv``, the machine states' sleeping/switching columns, and the energy columns of
  ``_schedule.csv`` (:mod:`batfeed.engine.energy`, :class:`~batfeed.engine.machines.EnergyMachines`);
- the energy updates SimGrid makes on its own: the end (or cancellation) of a parallel task on its hosts, the
  end of an actor's sleep on its host (a composed job's step on its first machine), a message's arrival from a
  machine (JOB_COMPLETED, SWITCHED_*), a switch's pstate changes and the end of its flop; and the CPU loads
  they read (:meth:`EnergySimulator._usage`);
- the order that SimGrid's simcalls give to actors at one instant (see the comment before ``_flush_deferred``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batfeed.engine import longdouble as ld
from batfeed.engine.energy import EnergyModel
from batfeed.engine.energy_switch import SwitchingSimulator
from batfeed.engine.kinds import E_ANSWER, M_DONE, M_SWITCHED, T_CALL, T_END, T_STEP, T_SWITCH
from batfeed.engine.machines import COMPUTING, IDLE
from batfeed.engine.outputs import fmt
from batfeed.engine.power import COMPUTATION
from batfeed.engine.simulator import BATSIM_VERSION, SimulationResult
from batfeed.engine.workload import KILLED, REJECTED, RUNNING, Job
from batfeed.errors import ProtocolError


def _take(q: Any, n: int) -> list:
    """The messages appended to the deque ``q`` after its first ``n``, removed from it, in order."""
    out = [q.pop() for _ in range(len(q) - n)]
    out.reverse()
    return out


class EnergySimulator(SwitchingSimulator):
    """:class:`~batfeed.engine.simulator.Simulator` with the energy model (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.energy = EnergyModel(self.power, self._usage)
        self.job_energy: dict[str, ld.LD] = {}          # consumed energy of the jobs' machines at their start
        self.tracer.energy = {}
        self.task_hosts: dict[str, list[int]] = {}      # a simple job's executors' machines (EXECUTE_JOB)
        # the parallel tasks whose timer entries are live, by id(entry payload): (job, {host: its ranks' flops,
        # newest first}, rate or Action, payload); host -> those payload ids; job id -> those payload ids
        self.tasks: dict[int, tuple[Job, dict[int, list[float]], Any, tuple]] = {}
        self.host_tasks: dict[int, list[int]] = {}
        self.job_tasks: dict[str, list[int]] = {}
        self.recorded: list[Job] = []   # jobs written since the last message, with a task still running
        self.start_updates = 0      # energy updates (simcalls) of the executors started by the last decisions
        self.exec_updates = 0       # and of the executors ended since the last _post

    # ------------------------------------------------------------------ loads
    def _usage(self, h: int) -> float:
        """SimGrid's ``Host::get_load()`` of machine ``h`` (``Constraint::get_usage``, flop/s): the sum of weight
        x value of the enabled elements of its CPU, newest first: its switch's flop (weight 1, value the virtual
        pstate's speed), else the ranks of the parallel tasks on it (weight their flops; sleeps are disabled
        actions and communications weigh 0 on CPUs)."""
        u = self.switch_usage[h]
        if u:
            return u
        keys = self.host_tasks.get(h)
        if not keys:
            return 0.0
        for key in reversed(keys):
            _, weights, rate, _ = self.tasks[key]
            if rate.__class__ is float:
                value = rate
            else:       # 0 in its latency (disabled); once removed by ptask.System, its last value
                value = rate.value
            for w in weights[h]:
                if w > 0:
                    u += w * value
        return u

    def _sleep(self, duration: float, kind: int, payload: Any, rate: Any = 0.0) -> None:
        if rate and (kind == T_END or kind == T_STEP):    # a job's parallel task starts
            job = payload[0]
            if len(payload) == 4:
                hosts, prof = payload[1].hosts, payload[1].leaf
            else:
                hosts, prof = self.task_hosts[job.id], job.prof
            flops = prof.matrices(len(hosts))[0]
            weights: dict[int, list[float]] = {}
            for r in reversed(range(len(hosts))):
                weights.setdefault(hosts[r], []).append(flops[r])
            key = id(payload)
            self.tasks[key] = (job, weights, rate, payload)
            for h in weights:
                self.host_tasks.setdefault(h, []).append(key)
            self.job_tasks.setdefault(job.id, []).append(key)
        super()._sleep(duration, kind, payload, rate)

    def _refresh_task(self, key: int, t: float) -> None:
        """SimGrid updates the hosts of a task that ends or is cancelled, while it still loads them."""
        for h in self.tasks[key][1]:
            self.energy.refresh(h, t)

    def _purge_tasks(self, job: Job, everything: bool = False) -> None:
        """Forget the job's tasks whose timer entries left the timers (ended or cancelled), or all of them
        (``everything``: the job ended; a task that timed out and runs on is freed with the job, which Batsim
        deletes once the next message is sent, ``Workloads::delete_jobs``: an action freed so triggers no
        energy update, and the task's load is gone at the next one)."""
        keys = self.job_tasks.get(job.id)
        if not keys:
            return
        live = set() if everything else {id(e[3]) for e in getattr(self.timers, "live", ()) if e[4]}
        for key in [k for k in keys if k not in live]:
            _, weights, rate, _ = self.tasks.pop(key)
            keys.remove(key)
            for h in weights:
                self.host_tasks[h].remove(key)
        if not keys:
            del self.job_tasks[job.id]

    def _executor_wakes(self, payload: tuple, t: float, wake: Any) -> bool:
        """An executor's wait ends (``wake``: the base class's ``_executor_ends`` or ``_executor_resumes``): the
        energy SimGrid and Batsim account then."""
        job = payload[0]
        self._switches_due(t)
        key = id(payload)
        if key in self.tasks:                     # this very task ends
            self._refresh_task(key, t)
        live = job.state == RUNNING and (len(payload) != 4 or payload[2] == payload[1].serial)
        if live:                                  # its tasks are cancelled, or the executor asks their energy
            for k in self.job_tasks.get(job.id, ()):
                self._refresh_task(k, t)
        if live and job.state == RUNNING:
            self.energy.refresh(job.intervals[0][0], t)   # the end of its actor's sleep (or timeout)
        ended = wake(payload, t)
        self._purge_tasks(job)
        if ended:
            before = self.energy.updates
            self._job_ends(job, t)
            self.exec_updates += self.energy.updates - before
        return ended

    def _executor_ends(self, payload: tuple, t: float) -> bool:
        return self._executor_wakes(payload, t, super()._executor_ends)

    def _executor_resumes(self, payload: tuple, t: float) -> bool:
        return self._executor_wakes(payload, t, super()._executor_resumes)

    # Under -E the simcalls of Batsim's actors spread one instant over several scheduling rounds: a switch
    # actor's ``set_pstate`` is a simcall, so its flop starts, and the machine changes state and tells the
    # server, one round later than a waiter's sleep or a submitter's message; an executor's every energy
    # query of a host not yet brought up to date is one, so that a job's task starts, and its JOB_COMPLETED
    # leaves, after those of the actors that query nothing (executors query in lockstep: one round per host
    # updated).  Within a round, actors keep their order.  Hence the orders of _flush_deferred and _post.

    def _flush_deferred(self) -> None:
        """The actors created by the last decisions run: a switch sets its virtual pstate and starts its flop;
        waiters sleep at once, switches a round later, executors after their energy queries."""
        c = self.clock
        switches = []
        for entry in self.deferred:
            if entry[1] == T_SWITCH:
                sw = entry[2]
                self.energy.set_pstate(sw.machine, sw.virtual, c)
                self.switch_usage[sw.machine] = entry[3]     # weight 1 x value (the virtual pstate's speed)
                self.energy.update(sw.machine, c)            # Exec::on_start
                switches.append(sw)
        k, self.start_updates = self.start_updates, 0
        if len(self.deferred) > 1 and (switches or k):
            late = 1 + k
            self.deferred.sort(key=lambda e: 1 if e[1] == T_CALL else 2 if e[1] == T_SWITCH else late)
        super()._flush_deferred()
        self.running_switches.extend(switches)

    def _post(self, due: list) -> None:
        """The actors woken now post in round order (see above): those that query nothing first, then the
        switches, then the executors that queried energies, whose messages enter the mailbox once every actor
        of this instant is blocked (``late_posts``: before the next SimGrid step, so after the server's check
        and the request-reply actor's next message)."""
        self._switches_due(self.clock)
        q = self.queue
        switched = [entry[3] for entry in due if entry[2] == T_SWITCH]
        n = len(q)
        super()._post([entry for entry in due if entry[2] != T_SWITCH] if switched else due)
        late, self.exec_updates = self.exec_updates > 0, 0
        if late:
            new = _take(q, n)
            q.extend(m for m in new if m[0] != M_DONE)
            self.late_posts.extend(m for m in new if m[0] == M_DONE)
        for sw in switched:                       # the round after: their states and messages
            self._switch_done(sw, self.clock)
            q.append((M_SWITCHED, sw, None))

    def _post_early(self, date: float, due: list) -> None:
        super()._post_early(date, due)
        self._flush_late()                        # a SimGrid step follows: they are in the mailbox by then

    def _flush_late(self) -> None:
        if self.late_posts:
            self.queue.extend(self.late_posts)
            self.late_posts.clear()

    def _message_step(self, delay: tuple[float, float], src: int = -1) -> None:
        self._flush_late()
        super()._message_step(delay, src)
        self._switches_due(self.clock)

    # ------------------------------------------------------------------ QUERY
    def _msg_query(self, data: dict[str, Any]) -> None:
        """``JsonProtocolReader::handle_query`` then ``server_on_sched_tell_me_energy``."""
        requests = data.get("requests")
        if len(data) != 1 or not isinstance(requests, dict) or not requests:
            raise ProtocolError(f"QUERY: data must be exactly {{requests: non-empty object}} (got {data})")
        for key, value in requests.items():
            if key != "consumed_energy":
                raise ProtocolError(f"QUERY: unknown request '{key}' (Batsim knows consumed_energy)")
            if value != {}:
                raise ProtocolError(f"QUERY consumed_energy: its value must be an empty object (got {value!r})")
            self.out.append((E_ANSWER, self.clock, ld.to_float(self.energy.total_energy(self.clock))))

    # ------------------------------------------------------------------ jobs
    def _do_execute(self, job: Job, ivs: list[tuple[int, int]], n: int, mapping: dict[str, Any] | None = None) -> None:
        st = self.machines.st
        for a, b in ivs:                      # server_on_execute_job's checks under -E
            for m in range(a, min(b, len(st) - 1) + 1):
                if st[m] not in (IDLE, COMPUTING) and not self.machines.unavail[m]:
                    raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {m} ('{self.power[m].name}') cannot compute "
                                        f"jobs now: it is {st[m]} (Batsim aborts)")
                ps = self.energy.pstate[m]
                if self.power[m].types[ps] != COMPUTATION:
                    raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {m} ('{self.power[m].name}') is not in a "
                                        f"computation pstate (pstate {ps}) (Batsim aborts)")
        super()._do_execute(job, ivs, n, mapping)
        if job.state == RUNNING and job.intervals is ivs:     # execute_job_process, before the job runs
            if job.prof.type != "delay" and job.prof.type != "composed":
                alloc = [i for a, b in ivs for i in range(a, b + 1)]
                ranks = None if mapping is None else self._mapping(job, mapping, n)
                self.task_hosts[job.id] = alloc if ranks is None else [alloc[r] for r in ranks]
            c = self.clock
            before = self.energy.updates
            self.job_energy[job.id] = self.energy.energy_on(ivs, c)
            self.energy.add_entry(c, "s")
            self.start_updates += self.energy.updates - before

    def _job_ends(self, job: Job, t: float) -> None:
        """``execute_job_process`` (or ``killer_process``) after the job: its energy and an ``e`` row."""
        self.task_hosts.pop(job.id, None)
        before = self.job_energy.pop(job.id, ld.ZERO)
        energy: Any = self.tracer.energy   # a dict under -E
        energy[job.id] = ld.fmt(ld.sub(self.energy.energy_on(job.intervals, t), before))
        self.energy.job_ended(t)

    def _do_kill(self, jobs: list[Job]) -> None:
        running = [j for j in jobs if j.state == RUNNING and not j.kill_requested]
        for job in running:                   # killer_process: cancel_ptask, or the actor's sleep is cancelled
            for key in self.job_tasks.get(job.id, ()):
                self._refresh_task(key, self.clock)
        super()._do_kill(jobs)
        for job in running:
            self._purge_tasks(job)
            if job.state == KILLED:
                self._job_ends(job, self.clock)

    def _record(self, job: Job) -> None:
        if job.intervals and job.state != KILLED and job.state != REJECTED:
            # JOB_COMPLETED arrived: the communication from the job's first machine updates it
            self.energy.refresh(job.intervals[0][0], self.clock)
        super()._record(job)
        if job.id in self.job_tasks:
            self.recorded.append(job)

    def _delete_finished_jobs(self) -> None:
        super()._delete_finished_jobs()
        for job in self.recorded:                # deleted once the message is sent: their tasks go with them
            self._purge_tasks(job, everything=True)
        self.recorded = []

    def _submitter_collect(self, s: Any, first: bool) -> None:
        i = s.i
        super()._submitter_collect(s, first)
        if s.jobs and i == 0 and s.i > 0:            # static_job_submitter_process: its first job
            self.energy.job_submitted(self.clock)

    # ------------------------------------------------------------------ outputs
    def _result(self, prefix: str | Path | None, wall: float) -> SimulationResult:
        result = super()._result(prefix, wall)
        e = self.energy
        energy_values = {"consumed_joules": fmt(e.consumed_joules()),
                         "nb_grouped_switches": str(e.nb_grouped_switches),
                         "nb_machine_switches": str(e.nb_machine_switches)}
        t = self.tracer
        result.schedule = t.schedule_values(nb_machines=len(self.machines), machine_time=self.machines.time_in_states(),
                                            version=BATSIM_VERSION, scheduling_time=self.scheduling_time,
                                            simulation_time=wall, energy=energy_values)
        if prefix is not None:
            t.write_schedule_csv(str(prefix) + "_schedule.csv", result.schedule)
            e.write(str(prefix))
        return result
