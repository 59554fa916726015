"""Scheduler -> Batsim decisions: validation and effects (reference §4, §6, §12).

Every decision Batsim 4.2 would abort on raises :class:`~batfeed.errors.ProtocolError` naming
the event, the job and the broken rule, so an invalid scheduler never corrupts the state.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from batfeed.engine import intervals
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
# alloc strings already parsed -> (intervals, Batsim's hyphen form, size); the lists are never mutated
_ALLOCS: dict[str, tuple[list[tuple[int, int]], str, int]] = {}
# heap priorities of same-instant happenings (external events and static submissions use lists)
P_END, P_CALL, P_REPLY, P_READY = 0, 3, 4, 5


class DecisionsMixin:
    """Decision handlers of :class:`~batfeed.engine.simulator.Simulator`."""

    # ------------------------------------------------------------------ Batsim -> scheduler
    def _simulation_begins(self: Simulator) -> dict[str, Any]:
        cfg, plat = self.config, self.platform

        def res(h: Any) -> dict[str, Any]:
            props = dict(h.properties)
            props.setdefault("role", "")  # Batsim reads a missing role as ""
            return {"id": h.id, "name": h.name, "state": "idle", "properties": props,
                    "zone_properties": dict(h.zone_properties)}

        data = {
            "nb_resources": len(plat.compute) + len(plat.storage),
            "nb_compute_resources": len(plat.compute),
            "nb_storage_resources": len(plat.storage),
            "allow_compute_sharing": False,
            "allow_storage_sharing": True,
            "config": {
                "redis-enabled": False, "redis-hostname": "127.0.0.1", "redis-port": 6379,
                "redis-prefix": "default",
                "profiles-forwarded-on-submission": cfg.forward_profiles_on_submission,
                "dynamic-jobs-enabled": cfg.enable_dynamic_jobs,
                "dynamic-jobs-acknowledged": cfg.acknowledge_dynamic_jobs,
                "profile-reuse-enabled": cfg.enable_profile_reuse,
                "sched-config": cfg.sched_config,
                "forward-unknown-events": cfg.forward_unknown_events,
            },
            "compute_resources": [res(h) for h in plat.compute],
            "storage_resources": [res(h) for h in plat.storage],
            "workloads": {w.name: w.path for w in self.workloads.values()},
            "profiles": {w.name: {n: p.json for n, p in w.profiles.items()} for w in self.workloads.values()},
        }
        return {"timestamp": 0.0, "type": "SIMULATION_BEGINS", "data": data}

    def _submitted_data(self: Simulator, job: Job) -> dict[str, Any]:
        if self.config.forward_profiles_on_submission:
            return {"job_id": job.id, "job": job.json, "profile": job.profile.json}
        return {"job_id": job.id, "job": job.json}

    # ------------------------------------------------------------------ applying a reply
    def _start_reply(self: Simulator, reply: Any) -> None:
        try:
            events, now = reply["events"], reply["now"]
            ok = isinstance(events, list) and isinstance(now, _NUM) and not isinstance(now, bool)
        except (TypeError, KeyError):
            ok = False
        if not ok:
            raise ProtocolError(f"malformed reply at t={self.clock:f}: a message needs a number 'now' and an "
                                f"array 'events' (got {str(reply)[:200]})")
        self.reply, self.reply_idx, self.reply_now = events, 0, float(now)
        self._continue_reply()

    def _continue_reply(self: Simulator) -> None:
        events, now = self.reply, self.reply_now
        while self.reply_idx < len(events):
            ev = events[self.reply_idx]
            try:
                ts, handler, data = ev["timestamp"], _HANDLERS.get(ev["type"]), ev["data"]
                ok = isinstance(ts, _NUM) and isinstance(data, dict)
            except (TypeError, KeyError):
                ok = False
            if not ok:
                raise ProtocolError(f"malformed event in reply at t={self.clock:f}: each event needs a number "
                                    f"'timestamp', a string 'type' and an object 'data' (got {str(ev)[:200]})")
            if handler is None:
                raise ProtocolError(f"unknown event type {ev['type']!r} from the scheduler at t={self.clock:f}")
            if ts > now:
                raise ProtocolError(f"{ev['type']} has timestamp {ts} later than the reply's now ({now}) "
                                    "(Batsim aborts)")
            if ts > self.clock:   # Batsim sleeps until the decision's date
                self.push(float(ts), P_REPLY, None)
                return
            self.reply_idx += 1
            handler(self, data)
        if now > self.clock:
            self.push(now, P_READY, None)
        else:
            self.ready = True

    # ------------------------------------------------------------------ decisions
    def _execute_job(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "EXECUTE_JOB")
        extra = _NO_EXTRA if len(data) == 2 else set(data) - {"job_id", "alloc"}
        if "alloc" not in data or len(extra) > 1 or not extra <= {"mapping", "storage_mapping", "additional_io_job"}:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: data must have 'job_id', 'alloc' and at most one of "
                                f"mapping/storage_mapping/additional_io_job (got {sorted(data)})")
        if extra & {"storage_mapping", "additional_io_job"}:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: {extra.pop()} (I/O) is not modelled by the embedded "
                                "engine: use real Batsim")
        if job.state != SUBMITTED:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: the job is {job.state}; only a SUBMITTED job can be "
                                "executed (Batsim aborts)")
        alloc = data["alloc"]
        cached = _ALLOCS.get(alloc) if isinstance(alloc, str) else None
        if cached is None:
            try:
                ivs = intervals.parse(alloc) if isinstance(alloc, str) else None
            except ValueError:
                ivs = None
            if ivs and len(_ALLOCS) < 1 << 16:
                _ALLOCS[alloc] = (ivs, intervals.format_hyphen(ivs), intervals.size(ivs))
        else:
            ivs = cached[0]
        if not ivs:
            raise ProtocolError(f"EXECUTE_JOB {job.id}: alloc {data['alloc']!r} is not a non-empty interval set")
        m = self.machines
        if ivs[-1][1] >= len(m):
            raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {ivs[-1][1]} does not exist (compute machines "
                                f"are 0-{len(m) - 1})")
        n = cached[2] if cached else intervals.size(ivs)
        mapping = data.get("mapping")
        if job.profile.type != "parallel_homogeneous_total":
            if mapping is not None:
                if not isinstance(mapping, dict) or len(mapping) != job.res:
                    raise ProtocolError(f"EXECUTE_JOB {job.id}: the mapping has {len(mapping or {})} executors "
                                        f"but the job requests {job.res} resources")
                if job.profile.type != "delay":
                    raise ProtocolError(f"EXECUTE_JOB {job.id}: a custom mapping on a {job.profile.type} "
                                        "profile is not modelled by the embedded engine: use real Batsim")
            elif n != job.res:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: allocation {data['alloc']} has {n} machines but the "
                                    f"job requests {job.res} (Batsim aborts)")
        for a, b in ivs:
            busy = m.first_busy(a, b)
            if busy is not None:
                holder = next((j.id for j in self.jobs.values() if j.state == RUNNING
                               and any(x <= busy <= y for x, y in j.intervals)), "?")
                raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {busy} ('{m.names[busy]}') is already "
                                    f"computing job {holder} (no compute sharing; Batsim aborts)")
            down = m.first_unavailable(a, b)
            if down is not None:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: machine {down} ('{m.names[down]}') is unavailable "
                                    "(Batsim aborts)")
        c = self.clock
        duration = job.profile.duration(n, self._slowest(ivs))
        if 0 < job.walltime <= duration:
            end, state, rc = c + job.walltime, WALLTIME, -1
        else:
            end = c + duration
            state, rc = (SUCCESS, 0) if job.profile.ret == 0 else (FAILED, job.profile.ret)
        job.state, job.start = RUNNING, c
        job.intervals, job.alloc = ivs, cached[1] if cached else intervals.format_hyphen(ivs)
        self.nb_running += 1
        m.start(job, ivs, c)
        self.seq += 1
        job.end_seq = self.seq
        heapq.heappush(self.heap, (end, P_END, self.seq, (job, state, rc)))

    def _reject_job(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "REJECT_JOB")
        if set(data) != {"job_id"}:
            raise ProtocolError(f"REJECT_JOB {job.id}: data must be exactly {{job_id}} (got {sorted(data)})")
        if job.state != SUBMITTED:
            raise ProtocolError(f"REJECT_JOB {job.id}: the job is {job.state}; only a SUBMITTED job can be "
                                "rejected (Batsim aborts)")
        job.state = REJECTED
        self.nb_completed += 1
        self._record(job)

    def _kill_job(self: Simulator, data: dict[str, Any]) -> None:
        ids = data.get("job_ids")
        if set(data) != {"job_ids"} or not isinstance(ids, list):
            raise ProtocolError(f"KILL_JOB: data must be exactly {{job_ids: [...]}} (got {data})")
        to_kill = []
        for jid in ids:
            job = self.jobs.get(jid) if isinstance(jid, str) else None
            if job is None:
                raise ProtocolError(f"KILL_JOB: job '{jid}' does not exist (Batsim aborts)")
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
        for job in to_kill:
            if job.state == RUNNING:
                done = self.clock - job.start
                total = job.profile.duration(intervals.size(job.intervals), self._slowest(job.intervals)) \
                    if job.intervals else 0.0
                progress[job.id] = {"profile_name": job.profile.name,
                                    "progress": min(1.0, done / total) if total > 0 else 1.0}
                self._finish_job(job, KILLED, -2)
        self.out.append({"timestamp": self.clock, "type": "JOB_KILLED",
                         "data": {"job_ids": [j.id for j in to_kill], "job_progress": progress}})

    def _call_me_later(self: Simulator, data: dict[str, Any]) -> None:
        t = data.get("timestamp")
        if set(data) != {"timestamp"} or not isinstance(t, _NUM) or isinstance(t, bool):
            raise ProtocolError(f"CALL_ME_LATER: data must be exactly {{timestamp: number}} (got {data})")
        if t <= self.clock:
            raise ProtocolError(f"CALL_ME_LATER at {t} is not after the current time {self.clock:f} "
                                "(Batsim aborts: \"You asked to be awaken in the past!\")")
        self.nb_waiters += 1
        self.push(float(t), P_CALL, None)

    def _register_profile(self: Simulator, data: dict[str, Any]) -> None:
        wl_name, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile")
        self._check_registration("REGISTER_PROFILE", f"{wl_name}/{name}")
        if not isinstance(wl_name, str) or not isinstance(name, str) or SEP in wl_name:
            raise ProtocolError(f"REGISTER_PROFILE: needs string workload_name and profile_name (got {data})")
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

    def _register_job(self: Simulator, data: dict[str, Any]) -> None:
        jid, js = data.get("job_id"), data.get("job")
        self._check_registration("REGISTER_JOB", str(jid))
        if not isinstance(jid, str) or jid.count(SEP) != 1 or not isinstance(js, dict):
            raise ProtocolError(f"REGISTER_JOB: job_id must be 'workload!name' and job an object (got {data})")
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
        job.state = SUBMITTED
        self.jobs[jid] = job
        self.nb_submitted += 1
        if self.config.acknowledge_dynamic_jobs:
            self.out.append({"timestamp": self.clock, "type": "JOB_SUBMITTED", "data": self._submitted_data(job)})

    def _check_registration(self: Simulator, what: str, name: str) -> None:
        if not self.config.enable_dynamic_jobs:
            raise ProtocolError(f"{what} {name}: dynamic jobs are disabled (Batsim needs --enable-dynamic-jobs)")
        if self.registration_finished:
            raise ProtocolError(f"{what} {name}: sent after NOTIFY registration_finished (Batsim aborts)")

    def _notify_from_scheduler(self: Simulator, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "registration_finished":
            self.registration_finished = True
        elif kind == "continue_registration":
            self.registration_finished = False
        else:
            raise ProtocolError(f"NOTIFY of type {kind!r} from the scheduler: only registration_finished and "
                                "continue_registration exist (Batsim aborts)")

    def _set_job_metadata(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "SET_JOB_METADATA")
        meta = data.get("metadata")
        if set(data) != {"job_id", "metadata"} or not isinstance(meta, str):
            raise ProtocolError(f"SET_JOB_METADATA {job.id}: data must be exactly {{job_id, metadata: string}}")
        if '"' in meta:
            raise ProtocolError(f"SET_JOB_METADATA {job.id}: metadata must not contain double quotes")
        job.metadata = meta

    def _change_job_state(self: Simulator, data: dict[str, Any]) -> None:
        job = self._job(data, "CHANGE_JOB_STATE")
        new = data.get("job_state")
        if job.state == SUBMITTED and new == RUNNING:
            job.state, job.start = RUNNING, self.clock
            self.nb_running += 1
        elif job.state == SUBMITTED and new == REJECTED:
            self._reject_job({"job_id": job.id})
        elif job.state == RUNNING and new in (SUCCESS, FAILED, WALLTIME, KILLED):
            self._finish_job(job, new, job.return_code)
        else:
            raise ProtocolError(f"CHANGE_JOB_STATE {job.id}: {job.state} -> {new} is not allowed (only SUBMITTED "
                                "-> RUNNING/REJECTED and RUNNING -> COMPLETED_*)")

    def _unsupported(self: Simulator, data: dict[str, Any]) -> None:
        raise ProtocolError(f"energy/pstate requests need Batsim's -E mode, which the embedded engine does not "
                            f"model (got {data}); use real Batsim")

    def _ignored(self: Simulator, data: dict[str, Any]) -> None:
        """ANSWER / TO_JOB_MSG: accepted; no modelled profile reads them."""

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


_HANDLERS = {
    "EXECUTE_JOB": DecisionsMixin._execute_job,
    "REJECT_JOB": DecisionsMixin._reject_job,
    "KILL_JOB": DecisionsMixin._kill_job,
    "CALL_ME_LATER": DecisionsMixin._call_me_later,
    "REGISTER_PROFILE": DecisionsMixin._register_profile,
    "REGISTER_JOB": DecisionsMixin._register_job,
    "NOTIFY": DecisionsMixin._notify_from_scheduler,
    "SET_JOB_METADATA": DecisionsMixin._set_job_metadata,
    "CHANGE_JOB_STATE": DecisionsMixin._change_job_state,
    "SET_RESOURCE_STATE": DecisionsMixin._unsupported,
    "QUERY": DecisionsMixin._unsupported,
    "ANSWER": DecisionsMixin._ignored,
    "TO_JOB_MSG": DecisionsMixin._ignored,
}
