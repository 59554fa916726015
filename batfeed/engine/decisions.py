"""The scheduler's decisions (:class:`Decisions`): Batsim's checks and their effects (reference §4, §6, §12).

The ``_do_*`` methods are the one interface through which a scheduler decides, whatever its driver:
the message drivers read a decision from its JSON (:mod:`batfeed.engine.protocol`, Batsim's
``JsonProtocolReader``) and the direct driver (:mod:`batfeed.engine.direct`) calls them with the job
objects themselves; both hand them to the event loop as ``(timestamp, method, args)``, applied at their
date (:mod:`batfeed.engine.simulator`).  Every decision Batsim 4.2 would abort on raises
:class:`~batfeed.errors.ProtocolError` naming the job and the broken rule, so an invalid scheduler never
corrupts the state.
"""

from __future__ import annotations

from typing import Any

from mypy_extensions import mypyc_attr

from batfeed.engine import intervals
from batfeed.engine.actors import Actors
from batfeed.engine.executor import Executor
from batfeed.engine.kinds import E_SUBMITTED, T_CALL, T_END
from batfeed.engine.workload import (
    FAILED,
    FINAL_STATES,
    KILLED,
    REJECTED,
    RUNNING,
    SEP,
    SUBMITTED,
    SUCCESS,
    WALLTIME,
    Job,
    Workload,
    parse_job,
    parse_profile,
)
from batfeed.errors import InputError, ProtocolError


@mypyc_attr(allow_interpreted_subclasses=True)
class Decisions(Actors):
    """The actors with the scheduler's decisions (``_do_*``; see the module docstring)."""

    # ------------------------------------------------------------------ EXECUTE_JOB
    def _do_execute(self, job: Any, ivs: list[tuple[int, int]], n: int,
                    mapping: dict[str, Any] | None = None) -> None:
        """Start ``job`` on ``ivs`` (``n`` machines): checks, machine states, its end timer."""
        if job.state != SUBMITTED:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: the job is {job.state}; only a SUBMITTED job can be "
                                "executed (Batsim aborts)")
        m = self.machines
        if ivs[-1][1] >= m.n or ivs[0][0] < 0:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {ivs[-1][1]} does not exist (compute machines "
                                f"are 0-{m.n - 1})")
        prof = job.prof
        ptype = prof.type
        ranks = None if mapping is None else self._mapping(job, mapping, n)
        if (n if ranks is None else len(ranks)) != job.requested_resources and not _any_size(prof):
            if ranks is not None:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: the mapping has {len(ranks)} executors but the "
                                    f"job requests {job.requested_resources} resources (Batsim aborts)")
            raise ProtocolError(f"EXECUTE_JOB {job.id}: allocation {intervals.format_hyphen(ivs)} has {n} "
                                f"machines but the job requests {job.requested_resources} (Batsim aborts)")
        busy, unavail = m.busy, m.unavail
        check_unavail = m.nb_unavailable
        for a, b in ivs:
            i = busy.find(1, a, b + 1)
            if i >= 0:
                holder = next((j.id for j in self.jobs.values() if type(j) is Job and j.state == RUNNING
                               and any(x <= i <= y for x, y in j.intervals)), "?")
                raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {i} ('{m.names[i]}') is already "
                                    f"computing job {holder} (no compute sharing; Batsim aborts)")
            if check_unavail and (i := unavail.find(1, a, b + 1)) >= 0:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {i} ('{m.names[i]}') is unavailable "
                                    "(Batsim aborts)")
        c = self.clock
        wall = job.walltime
        job.state, job.start = RUNNING, c
        job.intervals = ivs
        job.runtime = -1.0
        self.nb_running += 1
        m.start(ivs, c)
        # the executor actor sleeps once it runs, i.e. after the REQ-REP's next step (simulator.py)
        if ptype == "delay":
            if 0 < wall <= prof.work:      # do_delay_task: a delay job reaches a walltime <= its delay
                job.return_code = -1
                self.deferred.append((wall, T_END, (job, WALLTIME, False), 0.0))
            else:
                job.return_code = prof.ret
                self.deferred.append((prof.work, T_END, (job, SUCCESS if prof.ret == 0 else FAILED, False), 0.0))
            return
        # the executors' machines (execute_job_process: the mapping, else one per allocated machine)
        alloc = [i for a, b in ivs for i in range(a, b + 1)]
        hosts = alloc if ranks is None else [alloc[r] for r in ranks]
        if ptype == "composed":
            job.return_code = -1            # Batsim's initial code, kept if the job is killed in a delay
            ex = Executor(prof, wall, self._now, hosts)
            self._executor_request(job, ex, next(ex.gen), deferred=True)
            return
        state = SUCCESS if prof.ret == 0 else FAILED
        job.return_code = prof.ret
        duration, rate = self._ptask(job, prof, hosts, wall > 0)
        if rate and wall > 0:
            # ptask->wait_for(walltime): the task and a timeout sleep, created in this order; the
            # first to end wins (the task on a tie, as it comes first in the step)
            self.deferred.append((duration, T_END, (job, state, True), rate))
            self.deferred.append((wall, T_END, (job, WALLTIME, True), 0.0))
        elif 0 < wall <= duration:
            job.return_code = -1
            self.deferred.append((wall, T_END, (job, WALLTIME, False), rate))
        else:
            self.deferred.append((duration, T_END, (job, state, False), rate))


    def _mapping(self, job: Job, mapping: dict[Any, Any], n: int) -> list[int]:
        """EXECUTE_JOB's ``mapping`` (executor -> index in the allocation) as a list (JsonProtocolReader)."""
        pairs = {}
        for k, v in mapping.items():
            try:
                pairs[int(k)] = int(v)
            except (TypeError, ValueError):
                raise ProtocolError(f"EXECUTE_JOB {job.id}: mapping {k!r}: {v!r}: keys and values must be integers "
                                    "(or strings of integers)") from None
        ranks = []
        for i, (k, v) in enumerate(sorted(pairs.items())):
            if k != i:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: the mapping gives no resource to executor {i}")
            if not 0 <= v < n:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: executor {k} should use the {v}-th resource of the "
                                    f"allocation, which has only {n}")
            ranks.append(v)
        if not ranks:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: the mapping must be a non-empty object")
        return ranks

    # ------------------------------------------------------------------ REJECT_JOB
    def _do_reject(self, job: Any) -> None:
        if job.state != SUBMITTED:
            raise ProtocolError(f"REJECT_JOB {job.id}: the job is {job.state}; only a SUBMITTED job can be "
                                "rejected (Batsim aborts)")
        job.state = REJECTED
        self.nb_completed += 1
        self._record(job)

    # ------------------------------------------------------------------ KILL_JOB
    def _do_kill(self, jobs: list[Any]) -> None:
        """Batsim's killer actor: running jobs stop now (machines freed, progress measured); the server
        reports them (JOB_COMPLETED COMPLETED_KILLED each, then JOB_KILLED) when the killer's
        KILLING_DONE arrives, one message later (see simulator.py)."""
        to_kill = []
        for job in jobs:
            if job.kill_requested:
                continue
            if job.state != RUNNING and job.state not in FINAL_STATES:
                raise ProtocolError(f"KILL_JOB {job.id}: the job is {job.state}, neither running nor complete "
                                    "(killing a queued job makes Batsim abort; reject it instead)")
            job.kill_requested = True
            to_kill.append(job)
        if not to_kill:
            return
        progress = {}
        really = []
        c = self.clock
        for job in to_kill:
            if job.state == RUNNING:
                progress[job.id] = self._progress(job)
                self.timers.cancel_job(job)    # the killed executor's actions end with it
                job.state = KILLED
                # a killed delay job keeps Batsim's initial return code -1; a cancelled ptask returns -2
                ex = self._executor_of(job)
                leaf = job.prof if ex is None else ex.leaf
                job.return_code = -1 if leaf is None or leaf.type == "delay" else -2
                if ex is not None:
                    del self.executors[job.id]
                job.runtime = c - job.start
                self.machines.end(job.intervals, c)
                really.append(job)
        self.nb_killers += 1
        self.killing.append((to_kill, progress, really))

    def _progress(self, job: Job) -> dict[str, Any]:
        """The job's progress tree (``compute_job_progress``): a delay's elapsed share, a parallel task's
        work done (1 - its remaining ratio)."""
        ex = self._executor_of(job)
        leaf = job.prof if ex is None else ex.leaf
        start = job.start if ex is None else ex.leaf_start
        if leaf is None:
            ratio = 0.0
        elif leaf.type == "delay":
            ratio = (self.clock - start) / leaf.work
        else:
            ratio = 1.0 - self.timers.work_left(job)
        if ex is None:
            return {"profile_name": job.profile, "progress": ratio}
        return ex.progress(ratio)

    # ------------------------------------------------------------------ CALL_ME_LATER
    def _do_call_me_later(self, t: float) -> None:
        c = self.clock
        if t <= c:
            raise ProtocolError(f"CALL_ME_LATER at {t} is not after the current time {c:f} "
                                "(Batsim aborts: \"You asked to be awaken in the past!\")")
        self.nb_waiters += 1
        # Batsim's waiter sleeps target - now, at least 1e-5 s (jobs_execution.cpp, waiter_process)
        self.deferred.append((t - c if t - c >= 1e-5 else 1e-5, T_CALL, None, 0.0))

    # ------------------------------------------------------------------ dynamic registration
    def _do_register_profile(self, wl_name: str, name: str, prof: Any) -> None:
        self._check_registration("REGISTER_PROFILE", f"{wl_name}/{name}")
        wl = self.workloads.get(wl_name)
        if wl is None:
            wl = self.workloads[wl_name] = Workload(wl_name, "", 0, {}, [])
        if name in wl.profiles or name in self.gc_profiles.get(wl_name, ()):
            raise ProtocolError(f"REGISTER_PROFILE {wl_name}/{name}: the profile already exists or existed "
                                "(profiles are garbage-collected once a job using them finished; use new names "
                                "or --enable-profile-reuse)")
        try:
            wl.profiles[name] = parse_profile(name, prof, f"REGISTER_PROFILE {wl_name}")
        except InputError as err:
            raise ProtocolError(f"REGISTER_PROFILE {wl_name}/{name}: {err.reason}") from None

    def make_dynamic_job(self, jid: str, js: dict[str, Any]) -> Job:
        """Parse a job registered by the scheduler (Batsim's checks; not yet known to the engine)."""
        wl_name = jid.split(SEP)[0]
        wl = self.workloads.get(wl_name)
        if wl is None:
            raise ProtocolError(f"REGISTER_JOB {jid}: workload '{wl_name}' does not exist (register a profile "
                                "in it first)")
        if jid in self.jobs:
            raise ProtocolError(f"REGISTER_JOB {jid}: a job with this id already exists or existed (Batsim aborts)")
        pname = js.get("profile")
        if pname in self.gc_profiles.get(wl_name, ()) and pname not in wl.profiles:
            raise ProtocolError(f"REGISTER_JOB {jid}: profile '{pname}' existed some time ago but is no longer "
                                "accessible (garbage-collected after a job using it finished)")
        try:
            job = parse_job(js, wl_name, wl.profiles, f"REGISTER_JOB {jid}")
        except InputError as err:
            raise ProtocolError(f"REGISTER_JOB {jid}: {err.reason}") from None
        if job.id != jid:
            raise ProtocolError(f"REGISTER_JOB {jid}: the job's own id '{js.get('id')}' differs from job_id")
        return job

    def _register_pending(self, job: Job) -> None:
        """Direct driver: register a job made by ``DirectBatsim.register_job`` (validated now, like
        REGISTER_JOB; the scheduler keeps the very object)."""
        self._check_registration("REGISTER_JOB", job.id)
        if job.id.count(SEP) != 1:
            raise ProtocolError(f"REGISTER_JOB: job_id must be 'workload!name' (got {job.id!r})")
        fresh = self.make_dynamic_job(job.id, job.json_dict)
        for slot in ("workload", "subtime", "walltime", "submit_time", "requested_resources",
                     "requested_time", "prof", "profile", "json_dict"):
            setattr(job, slot, getattr(fresh, slot))
        self._do_register_job(job)

    def _do_register_job(self, job: Job) -> None:
        self._check_registration("REGISTER_JOB", job.id)
        if job.id in self.jobs:
            raise ProtocolError(f"REGISTER_JOB {job.id}: a job with this id already exists or existed "
                                "(Batsim aborts)")
        job.state = SUBMITTED
        self.jobs[job.id] = job
        self.nb_submitted += 1
        if self.config.acknowledge_dynamic_jobs:
            self.out.append((E_SUBMITTED, self.clock, job))

    def _check_registration(self, what: str, name: str) -> None:
        if not self.config.enable_dynamic_jobs:
            raise ProtocolError(f"{what} {name}: dynamic jobs are disabled (Batsim needs --enable-dynamic-jobs)")
        if self.registration_finished:
            raise ProtocolError(f"{what} {name}: sent after NOTIFY registration_finished (Batsim aborts)")

    # ------------------------------------------------------------------ NOTIFY, metadata, job state
    def _do_notify(self, kind: Any) -> None:
        if kind == "registration_finished":
            self.registration_finished = True
        elif kind == "continue_registration":
            self.registration_finished = False
        else:
            raise ProtocolError(f"NOTIFY of type {kind!r} from the scheduler: only registration_finished and "
                                "continue_registration exist (Batsim aborts)")

    def _do_set_metadata(self, job: Any, meta: str) -> None:
        if '"' in meta:
            raise ProtocolError(f"SET_JOB_METADATA {job.id}: metadata must not contain double quotes")
        job.metadata = meta

    def _do_change_state(self, job: Any, new: Any) -> None:
        if job.state == SUBMITTED and new == RUNNING:
            job.state, job.start = RUNNING, self.clock
            self.nb_running += 1
        elif job.state == SUBMITTED and new == REJECTED:
            self._do_reject(job)
        elif job.state == RUNNING and new in (SUCCESS, FAILED, WALLTIME, KILLED):
            if job.intervals:
                raise ProtocolError(f"CHANGE_JOB_STATE {job.id}: the job was started by EXECUTE_JOB, whose "
                                    "execution goes on and reports it again (Batsim miscounts it); use KILL_JOB")
            # Batsim's server_on_change_job_state: accounted and written, but no JOB_COMPLETED is sent
            job.state = new
            job.runtime = self.clock - job.start
            self.nb_running -= 1
            self.nb_completed += 1
            self._record(job)
        else:
            raise ProtocolError(f"CHANGE_JOB_STATE {job.id}: {job.state} -> {new} is not allowed (only SUBMITTED "
                                "-> RUNNING/REJECTED and RUNNING -> COMPLETED_*)")

    # SET_RESOURCE_STATE and QUERY: modelled under -E (batfeed/engine/energy_sim.py overrides these two)
    def _msg_set_resource_state(self, data: dict[str, Any]) -> None:
        raise ProtocolError(f"SET_RESOURCE_STATE needs the energy model: run with -E/--energy (Batsim aborts without "
                            f"it: \"Receiving a pstate modification request, which is forbidden\") (got {data})")

    def _msg_query(self, data: dict[str, Any]) -> None:
        raise ProtocolError(f"QUERY needs the energy model: run with -E/--energy (Batsim aborts without it: "
                            f"\"energy simulation is not enabled\") (got {data})")


def _any_size(prof: Any) -> bool:
    """A ``parallel_homogeneous_total`` profile, or a sequence of them, runs on any number of machines
    (``server_on_execute_job``)."""
    return prof.type == "parallel_homogeneous_total" or (
        prof.type == "composed" and all(p.type == "parallel_homogeneous_total" for p in prof.subs))
