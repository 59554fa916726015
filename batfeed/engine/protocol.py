"""Scheduler -> Batsim decisions: validation and effects (reference §4, §6, §12).

A decision reaches the engine as ``(timestamp, handler, args)``: the message drivers
(:mod:`batfeed.engine.messages`) pass the JSON ``data`` object to a ``_msg_*`` handler, which checks
its form like Batsim's ``JsonProtocolReader`` and calls the matching ``_do_*`` core; the direct
driver (:mod:`batfeed.engine.direct`) calls the ``_do_*`` cores with the job objects themselves.
Every decision Batsim 4.2 would abort on raises :class:`~batfeed.errors.ProtocolError` naming the
job and the broken rule, so an invalid scheduler never corrupts the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batfeed.engine import intervals
from batfeed.engine.executor import Executor
from batfeed.engine.kinds import E_SUBMITTED, T_CALL, T_END
from batfeed.engine.ptask import constant_rate
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

if TYPE_CHECKING:
    from batfeed.engine.simulator import Simulator

_NUM = (int, float)
_NO_EXTRA: frozenset[str] = frozenset()
# alloc strings already parsed -> (intervals, size); the lists are never mutated
_ALLOCS: dict[str, tuple[list[tuple[int, int]], int]] = {}



class DecisionsMixin:
    """Decision handlers of :class:`~batfeed.engine.simulator.Simulator`."""

    # ------------------------------------------------------------------ EXECUTE_JOB
    def _msg_execute(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "EXECUTE_JOB")
        extra = _NO_EXTRA if len(data) == 2 else set(data) - {"job_id", "alloc"}
        if "alloc" not in data or len(extra) > 1 or not extra <= {"mapping", "storage_mapping", "additional_io_job"}:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: data must have 'job_id', 'alloc' and at most one of "
                                f"mapping/storage_mapping/additional_io_job (got {sorted(data)})")
        if extra & {"storage_mapping", "additional_io_job"}:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: {extra.pop()} (I/O) is not modelled by the embedded "
                                "engine: use real Batsim")
        alloc = data["alloc"]
        cached = _ALLOCS.get(alloc) if isinstance(alloc, str) else None
        if cached is None:
            try:
                ivs = intervals.parse(alloc) if isinstance(alloc, str) else None
            except ValueError:
                ivs = None
            if not ivs:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: alloc {alloc!r} is not a non-empty interval set")
            n = intervals.size(ivs)
            if len(_ALLOCS) < 1 << 16:
                _ALLOCS[alloc] = (ivs, n)
        else:
            ivs, n = cached
        mapping = data.get("mapping")
        if mapping is not None and not isinstance(mapping, dict):
            raise ProtocolError(f"EXECUTE_JOB {job.id}: the mapping must be an object")
        self._do_execute(job, ivs, n, mapping)

    def _do_execute(self: Simulator, job: Job, ivs: list[tuple[int, int]], n: int,
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
                holder = next((j.id for j in self.jobs.values() if j.state == RUNNING
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

    def _ptask(self: Simulator, job: Job, prof: Any, hosts: list[int], timed: bool) -> tuple[float, Any]:
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

    def _mapping(self: Simulator, job: Job, mapping: dict[Any, Any], n: int) -> list[int]:
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
    def _msg_reject(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "REJECT_JOB")
        if len(data) != 1:
            raise ProtocolError(f"REJECT_JOB {job.id}: data must be exactly {{job_id}} (got {sorted(data)})")
        self._do_reject(job)

    def _do_reject(self: Simulator, job: Job) -> None:
        if job.state != SUBMITTED:
            raise ProtocolError(f"REJECT_JOB {job.id}: the job is {job.state}; only a SUBMITTED job can be "
                                "rejected (Batsim aborts)")
        job.state = REJECTED
        self.nb_completed += 1
        self._record(job)

    # ------------------------------------------------------------------ KILL_JOB
    def _msg_kill(self: Simulator, data: dict[str, Any]) -> None:
        ids = data.get("job_ids")
        if set(data) != {"job_ids"} or not isinstance(ids, list):
            raise ProtocolError(f"KILL_JOB: data must be exactly {{job_ids: [...]}} (got {data})")
        jobs = []
        for jid in ids:
            job = self.jobs.get(jid) if isinstance(jid, str) else None
            if job is None:
                raise ProtocolError(f"KILL_JOB: job '{jid}' does not exist (Batsim aborts)")
            jobs.append(job)
        self._do_kill(jobs)

    def _do_kill(self: Simulator, jobs: list[Job]) -> None:
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

    def _progress(self: Simulator, job: Job) -> dict[str, Any]:
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
    def _msg_call_me_later(self: Simulator, data: dict[str, Any]) -> None:
        t = data.get("timestamp")
        if len(data) != 1 or not isinstance(t, _NUM) or isinstance(t, bool):
            raise ProtocolError(f"CALL_ME_LATER: data must be exactly {{timestamp: number}} (got {data})")
        self._do_call_me_later(float(t))

    def _do_call_me_later(self: Simulator, t: float) -> None:
        c = self.clock
        if t <= c:
            raise ProtocolError(f"CALL_ME_LATER at {t} is not after the current time {c:f} "
                                "(Batsim aborts: \"You asked to be awaken in the past!\")")
        self.nb_waiters += 1
        # Batsim's waiter sleeps target - now, at least 1e-5 s (jobs_execution.cpp, waiter_process)
        self.deferred.append((t - c if t - c >= 1e-5 else 1e-5, T_CALL, None, 0.0))

    # ------------------------------------------------------------------ dynamic registration
    def _msg_register_profile(self: Simulator, data: dict[str, Any]) -> None:
        wl_name, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile")
        self._check_registration("REGISTER_PROFILE", f"{wl_name}/{name}")
        if not isinstance(wl_name, str) or not isinstance(name, str) or SEP in wl_name:
            raise ProtocolError(f"REGISTER_PROFILE: needs string workload_name and profile_name (got {data})")
        self._do_register_profile(wl_name, name, prof)

    def _do_register_profile(self: Simulator, wl_name: str, name: str, prof: Any) -> None:
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

    def _msg_register_job(self: Simulator, data: dict[str, Any]) -> None:
        jid, js = data.get("job_id"), data.get("job")
        self._check_registration("REGISTER_JOB", str(jid))
        if not isinstance(jid, str) or jid.count(SEP) != 1 or not isinstance(js, dict):
            raise ProtocolError(f"REGISTER_JOB: job_id must be 'workload!name' and job an object (got {data})")
        self._do_register_job(self.make_dynamic_job(jid, js))

    def make_dynamic_job(self: Simulator, jid: str, js: dict[str, Any]) -> Job:
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

    def _register_pending(self: Simulator, job: Job) -> None:
        """Direct driver: register a job made by ``DirectBatsim.register_job`` (validated now, like
        REGISTER_JOB; the scheduler keeps the very object)."""
        self._check_registration("REGISTER_JOB", job.id)
        if job.id.count(SEP) != 1:
            raise ProtocolError(f"REGISTER_JOB: job_id must be 'workload!name' (got {job.id!r})")
        fresh = self.make_dynamic_job(job.id, job.json_dict)
        for slot in ("workload", "name", "subtime", "walltime", "submit_time", "requested_resources",
                     "requested_time", "prof", "profile", "json_dict"):
            setattr(job, slot, getattr(fresh, slot))
        self._do_register_job(job)

    def _do_register_job(self: Simulator, job: Job) -> None:
        self._check_registration("REGISTER_JOB", job.id)
        if job.id in self.jobs:
            raise ProtocolError(f"REGISTER_JOB {job.id}: a job with this id already exists or existed "
                                "(Batsim aborts)")
        job.state = SUBMITTED
        self.jobs[job.id] = job
        self.nb_submitted += 1
        if self.config.acknowledge_dynamic_jobs:
            self.out.append((E_SUBMITTED, self.clock, job))

    def _check_registration(self: Simulator, what: str, name: str) -> None:
        if not self.config.enable_dynamic_jobs:
            raise ProtocolError(f"{what} {name}: dynamic jobs are disabled (Batsim needs --enable-dynamic-jobs)")
        if self.registration_finished:
            raise ProtocolError(f"{what} {name}: sent after NOTIFY registration_finished (Batsim aborts)")

    # ------------------------------------------------------------------ NOTIFY, metadata, job state
    def _msg_notify(self: Simulator, data: dict[str, Any]) -> None:
        self._do_notify(data.get("type"))

    def _do_notify(self: Simulator, kind: Any) -> None:
        if kind == "registration_finished":
            self.registration_finished = True
        elif kind == "continue_registration":
            self.registration_finished = False
        else:
            raise ProtocolError(f"NOTIFY of type {kind!r} from the scheduler: only registration_finished and "
                                "continue_registration exist (Batsim aborts)")

    def _msg_set_metadata(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "SET_JOB_METADATA")
        meta = data.get("metadata")
        if len(data) != 2 or not isinstance(meta, str):
            raise ProtocolError(f"SET_JOB_METADATA {job.id}: data must be exactly {{job_id, metadata: string}}")
        self._do_set_metadata(job, meta)

    def _do_set_metadata(self: Simulator, job: Job, meta: str) -> None:
        if '"' in meta:
            raise ProtocolError(f"SET_JOB_METADATA {job.id}: metadata must not contain double quotes")
        job.metadata = meta

    def _msg_change_state(self: Simulator, data: dict[str, Any]) -> None:
        self._do_change_state(self._job(data, "CHANGE_JOB_STATE"), data.get("job_state"))

    def _do_change_state(self: Simulator, job: Job, new: Any) -> None:
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
    def _msg_set_resource_state(self: Simulator, data: dict[str, Any]) -> None:
        raise ProtocolError(f"SET_RESOURCE_STATE needs the energy model: run with -E/--energy (Batsim aborts without "
                            f"it: \"Receiving a pstate modification request, which is forbidden\") (got {data})")

    def _msg_query(self: Simulator, data: dict[str, Any]) -> None:
        raise ProtocolError(f"QUERY needs the energy model: run with -E/--energy (Batsim aborts without it: "
                            f"\"energy simulation is not enabled\") (got {data})")

    def _msg_ignored(self: Simulator, data: dict[str, Any]) -> None:
        """ANSWER / TO_JOB_MSG: accepted; no modelled profile reads them."""

    # ------------------------------------------------------------------ helpers
    def _slowest(self: Simulator, ivs: list[tuple[int, int]]) -> float:
        """A parallel task ends with its slowest host (SimGrid ptask)."""
        if self.homogeneous:
            return self.speed[0]
        return min(min(self.speed[a:b + 1]) for a, b in ivs)

    def _job(self: Simulator, data: dict[str, Any], what: str) -> Job:
        jid = data.get("job_id")
        job = self.jobs.get(jid) if isinstance(jid, str) else None
        if job is None:
            raise ProtocolError(f"{what}: job '{jid}' does not exist (Batsim aborts)")
        return job


def _any_size(prof: Any) -> bool:
    """A ``parallel_homogeneous_total`` profile, or a sequence of them, runs on any number of machines
    (``server_on_execute_job``)."""
    return prof.type == "parallel_homogeneous_total" or (
        prof.type == "composed" and all(p.type == "parallel_homogeneous_total" for p in prof.subs))


# JSON decision type -> unbound handler taking the event's ``data`` object
MSG_HANDLERS = {
    "EXECUTE_JOB": DecisionsMixin._msg_execute,
    "REJECT_JOB": DecisionsMixin._msg_reject,
    "KILL_JOB": DecisionsMixin._msg_kill,
    "CALL_ME_LATER": DecisionsMixin._msg_call_me_later,
    "REGISTER_PROFILE": DecisionsMixin._msg_register_profile,
    "REGISTER_JOB": DecisionsMixin._msg_register_job,
    "NOTIFY": DecisionsMixin._msg_notify,
    "SET_JOB_METADATA": DecisionsMixin._msg_set_metadata,
    "CHANGE_JOB_STATE": DecisionsMixin._msg_change_state,
    "SET_RESOURCE_STATE": lambda self, data: self._msg_set_resource_state(data),   # the -E subclass's
    "QUERY": lambda self, data: self._msg_query(data),
    "ANSWER": DecisionsMixin._msg_ignored,
    "TO_JOB_MSG": DecisionsMixin._msg_ignored,
}
