"""The direct driver: the engine calls a batfeed scheduler's pybatsim callbacks itself.

No message is built or parsed: events go from the engine's tuples straight to the callbacks, with the
engine's own :class:`~batfeed.engine.workload.Job` objects, and the scheduler's decisions go straight
to the engine's ``_do_*`` cores.  Semantics are the message path's exactly: one decision round per
Batsim message (the engine decides the messages, :mod:`batfeed.engine.simulator`), callbacks in
pybatsim 3.2.1's order (``Batsim._read_bat_msg``: ``onBeforeEvents``, one callback per event,
``onNoMoreEvents``; ``onAfterBatsimInit`` after the first reply), what the scheduler reads rounded
like Batsim's JSON (6 decimals), decisions sorted by timestamp like pybatsim sends them.

What a scheduler may use is :class:`BatsimFacade` (the part of pybatsim's ``Batsim`` that
:class:`DirectBatsim` serves) and :class:`JobFacade` (the fields of pybatsim's ``Job``), both in
:mod:`batfeed.engine.facade` (interpreted: the test reads their annotations) and re-exported here.  The
schedulers that use nothing else declare ``direct_driver_ok``; ``tests/test_direct_driver.py``
checks that pybatsim's classes and the direct ones both satisfy the facade and that batfeed's
schedulers stay inside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from batsim.batsim import Job as PyJob
from procset import ProcInt, ProcSet

from batfeed.engine.decisions import Decisions
from batfeed.engine.facade import BatsimFacade, JobFacade
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
)
from batfeed.engine.messages import simulation_begins_data
from batfeed.engine.workload import SEP, Job, Profile, r6, round_json
from batfeed.errors import ProtocolError

__all__ = ["BatsimFacade", "DirectBatsim", "DirectDriver", "JobFacade", "rejected_job_id", "supports_direct"]

if TYPE_CHECKING:
    from batfeed.engine.simulator import Simulator

_State = PyJob.State
_SUBMITTED, _RUNNING, _REJECTED, _IN_KILLING, _IN_SUBMISSION = (
    _State.SUBMITTED, _State.RUNNING, _State.REJECTED, _State.IN_KILLING, _State.IN_SUBMISSON)
_FINAL = {s.name: s for s in _State}
_new_tuple = tuple.__new__


class DirectBatsim:
    """Serves :class:`BatsimFacade` from the engine; decisions are kept as engine calls.

    What a scheduler passes is annotated ``Any`` where :class:`BatsimFacade` says more than pybatsim
    checks (a tuple of jobs, an ``int`` time): compiled by mypyc, this class checks (and would convert
    an ``int`` to a ``float``) what its annotations say."""

    def __init__(self, sim: Simulator):
        self._sim: Any = sim              # None once the run is over (DirectDriver.close)
        self._current_time = 0.0
        self._events_to_send: list[tuple] = []
        self.jobs: dict[str, Any] = {}
        self.no_more_static_jobs = False
        self.no_more_external_events = False
        self.running_simulation = False
        cfg = sim.config
        self.dynamic_job_registration_enabled = cfg.enable_dynamic_jobs
        self.ack_of_dynamic_jobs = cfg.acknowledge_dynamic_jobs
        self.profiles_forwarded_on_submission = cfg.forward_profiles_on_submission
        self.forward_unknown_events = cfg.forward_unknown_events
        self.allow_compute_sharing = False
        self.allow_storage_sharing = True
        plat = sim.platform
        self.nb_compute_resources = len(plat.compute)
        self.nb_storage_resources = len(plat.storage)
        self.nb_resources = self.nb_compute_resources + self.nb_storage_resources
        self.batconf: dict[str, Any] = {}
        self.profiles: dict[str, dict[str, Any]] = {}
        self.workloads: dict[str, str] = {}
        self._resources: dict[str, Any] | None = None

    def _simulation_begins(self) -> None:
        """What pybatsim reads from SIMULATION_BEGINS (the machine lists are built on first use)."""
        sim = self._sim
        cfg = sim.config
        self.batconf = cfg.protocol_config()
        self.profiles = {w.name: {n: p.wire for n, p in w.profiles.items()} for w in sim.workloads.values()}
        self.workloads = {w.name: w.path for w in sim.workloads.values()}
        self.running_simulation = True

    def _resource_lists(self) -> dict[str, Any]:
        if self._resources is None:
            self._resources = simulation_begins_data(self._sim)
        return self._resources

    @property
    def machines(self) -> dict[str, list[dict[str, Any]]]:
        d = self._resource_lists()
        return {"compute": d["compute_resources"], "storage": d["storage_resources"]}

    @property
    def compute_resources(self) -> dict[int, dict[str, Any]]:
        return {r["id"]: r for r in self._resource_lists()["compute_resources"]}

    @property
    def storage_resources(self) -> dict[int, dict[str, Any]]:
        return {r["id"]: r for r in self._resource_lists()["storage_resources"]}

    # ------------------------------------------------------------------ time
    def time(self) -> float:
        return self._current_time

    def consume_time(self, t: Any) -> float:
        self._current_time += float(t)
        return self._current_time

    # ------------------------------------------------------------------ decisions
    def execute_jobs(self, jobs: Any, io_jobs: Any = None) -> None:
        if io_jobs is not None:
            raise ProtocolError("EXECUTE_JOB with an I/O job is not modelled by the embedded engine: use real "
                                "Batsim")
        t, do, out = self._current_time, self._sim._do_execute, self._events_to_send
        for job in jobs:
            ps = job.allocation
            if ps is None:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: the job has no allocation")
            # procset 1.x: sorted, disjoint, merged ProcInts, as plain tuples (ProcInt unpacks slowly)
            ivs = [(iv[0], iv[1]) for iv in ps._itvs]
            if not ivs:
                raise ProtocolError(f"EXECUTE_JOB {job.id}: alloc '' is not a non-empty interval set")
            n = 0
            for a, b in ivs:
                n += b - a + 1
            job.job_state = _RUNNING
            out.append((t, do, (job, ivs, n, None)))

    def execute_job(self, job: Any, io_job: Any = None) -> None:
        self.execute_jobs([job], None if io_job is None else {job.id: io_job})

    def reject_jobs(self, jobs: Any) -> None:
        assert len(jobs) > 0, "The list of jobs to reject is empty"
        t, do, out = self._current_time, self._sim._do_reject, self._events_to_send
        for job in jobs:
            out.append((t, do, (job,)))
            job.job_state = _REJECTED

    def reject_jobs_by_id(self, job_ids: Any) -> None:
        self.reject_jobs([self.jobs[j] for j in job_ids])

    def kill_jobs(self, jobs: Any) -> None:
        assert len(jobs) > 0, "The list of jobs to kill is empty"
        for job in jobs:
            job.job_state = _IN_KILLING
        self._events_to_send.append((self._current_time, self._sim._do_kill, (list(jobs),)))

    def change_job_state(self, job: Any, state: Any) -> None:
        self._events_to_send.append((self._current_time, self._sim._do_change_state, (job, state.name)))

    def wake_me_up_at(self, time: Any) -> None:
        self._events_to_send.append((self._current_time, self._sim._do_call_me_later, (float(time),)))

    def notify_registration_finished(self) -> None:
        self._events_to_send.append((self._current_time, self._sim._do_notify, ("registration_finished",)))

    def notify_registration_continue(self) -> None:
        self._events_to_send.append((self._current_time, self._sim._do_notify, ("continue_registration",)))

    def register_profiles(self, workload_name: str, profiles: Any) -> None:
        do, out, t = self._sim._do_register_profile, self._events_to_send, self._current_time
        store = self.profiles.setdefault(workload_name, {})
        for name, profile in profiles.items():
            out.append((t, do, (workload_name, name, profile)))
            store[name] = profile

    def register_job(self, id: str, res: Any, walltime: Any, profile_name: str, subtime: Any = None) -> Job:
        if subtime is None:
            subtime = self.time()
        job_dict = {"profile": profile_name, "id": id, "res": res, "walltime": walltime, "subtime": subtime}
        wl = id.partition(SEP)[0]
        profile = self.profiles[wl][profile_name]    # pybatsim asserts the profile was registered
        pending = Profile(profile_name, "", 0.0, 0, profile, profile)
        job = Job(id, wl, float(subtime), res, float(walltime), pending, job_dict)
        job.job_state = _IN_SUBMISSION
        self._events_to_send.append((self._current_time, self._sim._register_pending, (job,)))
        self.jobs[id] = job
        return job

    def set_job_metadata(self, job_id: str, metadata: Any) -> None:
        job = self.jobs[job_id]
        self._events_to_send.append((self._current_time, self._sim._do_set_metadata, (job, str(metadata))))


def make_procset(ivs: list[tuple[int, int]]) -> ProcSet:
    """ProcSet of sorted, disjoint, merged intervals without ProcSet's generic merge (procset 1.x)."""
    ps = ProcSet()
    ps._itvs = [_new_tuple(ProcInt, iv) for iv in ivs]
    return ps


class DirectDriver:
    """Drives a batfeed scheduler object through :class:`DirectBatsim` (see the module docstring)."""

    direct = True
    name = "direct"

    def __init__(self, scheduler: Any):
        self.scheduler = scheduler
        self.bs: DirectBatsim | None = None
        # pybatsim's Batsim.jobs keeps every job; a scheduler that never looks a finished job up there
        # (``forgets_finished_jobs``, batfeed's own) lets it go after the message that reports its end
        self.forget = bool(getattr(scheduler, "forgets_finished_jobs", False))

    def exchange(self, sim: Simulator, now: float, events: list[tuple]) -> tuple[float, list[tuple]]:
        sched = self.scheduler
        bs = self.bs
        first = bs is None
        if bs is None:
            bs = self.bs = DirectBatsim(sim)
            sched.bs = bs
        bs._current_time = now if now.is_integer() else r6(now)
        bs._events_to_send = []
        sched.onBeforeEvents()
        ended = []
        for ev in events:
            kind = ev[0]
            if kind == E_COMPLETED:
                job = ev[2]
                t = ev[1]
                job.finish_time = t if t.is_integer() else r6(t)
                job.job_state = _FINAL[job.state]
                ended.append(job.id)
                sched.onJobCompletion(job)
            elif kind == E_SUBMITTED:
                job = ev[2]
                old = bs.jobs.get(job.id)
                if old is not None and old is not job:
                    job.metadata = old.metadata
                job.job_state = _SUBMITTED
                bs.jobs[job.id] = job
                sched.onJobSubmission(job)
            elif kind == E_CALL:
                sched.onRequestedCall()
            elif kind == E_MACHINES:
                ps = make_procset(ev[3])
                if ev[2] == "event_machine_unavailable":
                    sched.onNotifyEventMachineUnavailable(ps)
                else:
                    sched.onNotifyEventMachineAvailable(ps)
            elif kind == E_NOTIFY:
                if ev[2] == "no_more_static_job_to_submit":
                    bs.no_more_static_jobs = True
                    sched.onNoMoreJobsInWorkloads()
                else:
                    bs.no_more_external_events = True
                    sched.onNoMoreExternalEvents()
            elif kind == E_KILLED:
                progress = ev[3]
                killed = []
                for jid in ev[2]:
                    p = progress.get(jid)
                    if p is not None:  # pybatsim 3.2.1: a job without progress (it ended first) is not
                        j = bs.jobs[jid]   # reported (pybatsim raises KeyError when only some lack it)
                        j.progress = round_json(p)
                        killed.append(j)
                if killed:
                    sched.onJobsKilled(killed)
            elif kind == E_GENERIC:
                if not bs.forward_unknown_events:
                    raise ProtocolError(f"generic event {ev[2]!r} reached a scheduler that does not forward "
                                        "unknown events")
                sched.onNotifyGenericEvent(ev[2])
            elif kind == E_BEGINS:
                bs._simulation_begins()
                sched.onSimulationBegins()
            elif kind == E_ENDS:
                bs.running_simulation = False
                sched.onSimulationEnds()
        sched.onNoMoreEvents()
        if ended and self.forget:
            jobs = bs.jobs
            for jid in ended:
                jobs.pop(jid, None)
        out = bs._events_to_send
        if len(out) > 1:
            t0 = out[0][0]
            if any(d[0] != t0 for d in out):
                out.sort(key=lambda d: d[0])      # pybatsim sorts the events it sends by timestamp
        if first:
            sched.onAfterBatsimInit()             # pybatsim calls it once the first reply is sent
        return bs._current_time, out

    def close(self) -> None:
        if self.bs is not None:       # the facade outlives the run (scheduler.bs) but not its engine
            self.bs._sim = None
            self.bs._events_to_send = []


_REJECT, _CHANGE_STATE = Decisions._do_reject.__name__, Decisions._do_change_state.__name__


def rejected_job_id(decision: Any) -> str | None:
    """The job id of a direct-driver rejection decision (REJECT_JOB or CHANGE_JOB_STATE REJECTED)."""
    name = getattr(decision[1], "__name__", None)     # a bound method, compiled or not (no __func__ then)
    if name == _REJECT:
        return decision[2][0].id
    if name == _CHANGE_STATE and decision[2][1] == "REJECTED":
        return decision[2][0].id
    return None


def supports_direct(scheduler: Any) -> bool:
    """True for schedulers that only use :class:`BatsimFacade` (batfeed's own, and the user-model
    layer wrapping one of them)."""
    return bool(getattr(scheduler, "direct_driver_ok", False))
