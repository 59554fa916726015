"""The user-model layer: a pybatsim scheduler that wraps any batfeed (or pybatsim) scheduler and owns
job submission through Batsim's dynamic job registration.

How it works
------------
:class:`UserModelScheduler` is the ``BatsimScheduler`` pybatsim talks to.  It holds the *inner*
scheduler (built by :func:`batfeed.registry.make_scheduler`, or passed in) and a
:class:`UserModel` that decides when each job of the recorded trace is submitted.  The inner
scheduler's ``bs`` is the same pybatsim ``Batsim`` object (set through the ``bs`` property), so its
decisions go out unchanged; every callback is forwarded to it.  In each Batsim message:

1. callbacks are forwarded; a JOB_COMPLETED of a replayed job also tells the model (``job_ended``
   at the completion timestamp), which may free dependent sessions;
2. in ``onNoMoreEvents``, every job due at or before ``now`` (1 µs tolerance) is submitted:
   ``REGISTER_PROFILE`` (unless already registered with profile reuse), ``REGISTER_JOB`` with
   ``subtime = now`` and ``SET_JOB_METADATA`` ``orig_subtime=<a_i>;user=<u>`` (read by
   ``batfeed metrics`` for the lateness metrics: custom job fields do not reach ``_jobs.csv``);
3. the inner scheduler's ``onNoMoreEvents`` runs (it schedules);
4. the message's outgoing events are scanned for ``REJECT_JOB`` (and CHANGE_JOB_STATE REJECTED) of
   replayed jobs: a rejection counts as the job's end at the rejection time (models.md §D REC), and
   sessions it frees that are due now are submitted at once (loop back to 2, 3);
5. once every job of the trace has been registered, ``NOTIFY registration_finished`` is sent (in
   the message of the last registration; with an empty trace, in the reply to SIMULATION_BEGINS);
   otherwise a ``CALL_ME_LATER`` is requested for the next due submission unless an earlier one
   of ours is pending.  REQUESTED_CALLs that answer our own CALL_ME_LATERs are consumed here; any
   extra one (the inner scheduler's) is forwarded to it.

Acknowledgements (both work, with identical schedules):

- **without** ``--acknowledge-dynamic-jobs`` (recommended: one message fewer per submission
  instant) Batsim sends nothing back for a registered job, so the layer itself marks pybatsim's
  ``Job`` SUBMITTED and calls the inner ``onJobSubmission`` right after registering it; the job can
  be started in the same reply;
- **with** it, Batsim echoes JOB_SUBMITTED at the same simulated time in the next message and the
  inner scheduler sees the job through the ordinary pybatsim path (the layer mutes pybatsim's
  "job already in the job list" warning, one per job, see :class:`_LayerWarningsFilter`).

Profiles: without ``--enable-profile-reuse`` Batsim garbage-collects a profile when a job using it
ends, so every job gets its own profile ``p<name>``; with it, each trace profile is registered once
under its own name.

Batsim inputs: the replayed trace is read by the model (option ``trace``), **not** given to Batsim
with ``-w`` (Batsim would submit its jobs at their recorded times itself).  The real-Batsim pair
(see docs/users.md)::

    batsim -p PLATFORM.xml --enable-dynamic-jobs -e OUT/prefix     # no -w; optional:
                                      # --acknowledge-dynamic-jobs, --enable-profile-reuse
    batfeed schedule batfeed.users:UserModelScheduler --options \\
        '{"scheduler": "easy", "users": "a60", "trace": "TRACE.json"}'

(``batfeed simulate PLATFORM TRACE.json --scheduler easy --users a60`` does the same on the
embedded engine; ``--transport zmq`` runs this very ``batfeed schedule`` command in a subprocess.)

Platform scaling (options of this layer, common to every model):

- ``speed_factor`` P̂/P: each job's run time becomes d̂ = d·P/P̂ (``delay`` divided by the factor;
  ``cpu`` of compute profiles likewise); the walltime is kept (ŵ = w, as in the paper), so with a
  factor < 1 some jobs reach their walltime and Batsim kills them (``kill_at_walltime``: true, the
  default, as in Batsim; false raises ŵ to d̂ + 1 s for exactly those jobs so that they complete,
  and the scheduler then sees that walltime too).  The paper's KTH-SP2 numbers are reproduced only
  without killing (perf/2 rigid makespan 471.7 d vs its 471.85; 333 d with killing), so
  ``batfeed reproduce rwf`` runs with ``kill_at_walltime: false``;
- node count: give a platform with that many nodes (``batfeed platform N``); jobs larger than the
  platform are rejected by the scheduler, and a rejection releases dependent sessions.

Options: :data:`batfeed.users.options.LAYER_SPECS` plus the model's own (``batfeed schedulers`` lists them).
"""

from __future__ import annotations

import difflib
import heapq
import logging
from typing import Any, ClassVar

from batfeed.schedulers.options import Option, unknown_message, validate
from batfeed.users.options import LAYER_SPECS
from batfeed.users.trace import Trace, TraceJob, load_trace
from batsim.batsim import BatsimScheduler, Job

from batfeed.engine.direct import rejected_job_id, supports_direct
from batfeed.errors import BatfeedError

log = logging.getLogger("batfeed.users")

EPS = 1e-6   # due submissions within 1 µs of now are submitted now (JSON float round-trips)


class UserModelError(BatfeedError):
    """Bad user-model options or a run the model cannot drive."""


class UserModel:
    """Decides when each job of the recorded trace is submitted (subclass: rigid, feedback…).

    The layer calls :meth:`start` once (at SIMULATION_BEGINS, t = 0), :meth:`pop_due` to get the jobs
    to submit now, :meth:`mark_submitted` for each, and :meth:`job_ended` when a replayed job
    completes, is killed or is rejected.  Subclasses call :meth:`release` to schedule a job.
    """

    name: ClassVar[str] = "?"
    GENERATES: ClassVar[bool] = False           # generates its jobs (no trace; appends to self.trace.jobs)
    OPTIONS: ClassVar[dict[str, Option]] = {}   # accepted options (specs: batfeed.schedulers.options)
    FIXED: ClassVar[dict[str, Any]] = {}        # option values a preset (a0, a60) imposes

    def __init__(self, trace: Trace, options: dict[str, Any] | None = None):
        self.trace = trace
        self.opts = validate(self.OPTIONS, options, f"user model '{self.name}'", UserModelError, LAYER_OPTIONS,
                             "the user-model layer")
        self.opts.update(self.FIXED)
        self._due: list[tuple[float, int]] = []
        self.nb_submitted = 0
        self.submitted_at: list[float | None] = [None] * len(trace.jobs)
        self.ended_at: list[float | None] = [None] * len(trace.jobs)
        self.nb_resources: int | None = None       # the platform's compute resources (set before start)

    # -- to implement
    def start(self) -> None:
        raise NotImplementedError

    def on_end(self, index: int, t: float) -> None:
        """A replayed job ended at t (completed, killed or rejected)."""

    def finish(self) -> None:
        """The simulation ended (SIMULATION_ENDS)."""

    # -- helpers
    def release(self, t: float, index: int) -> None:
        """Submit trace job ``index`` at time t (ties: trace order, i.e. Batsim's static order)."""
        heapq.heappush(self._due, (t, index))

    def pop_due(self, now: float) -> list[TraceJob]:
        due, jobs = self._due, self.trace.jobs
        out = []
        while due and due[0][0] <= now + EPS:
            out.append(jobs[heapq.heappop(due)[1]])
        return out

    def next_due(self) -> float | None:
        return self._due[0][0] if self._due else None

    def mark_submitted(self, index: int, t: float) -> None:
        self.submitted_at[index] = t
        self.nb_submitted += 1

    def job_ended(self, index: int, t: float) -> None:
        self.ended_at[index] = t
        self.on_end(index, t)

    @property
    def exhausted(self) -> bool:
        return self.nb_submitted == len(self.trace.jobs)


def model_class(name: str) -> type[UserModel]:
    from batfeed.users import MODELS

    key = str(name).lower()
    if key not in MODELS:
        close = difflib.get_close_matches(key, list(MODELS), 1)
        hint = f"did you mean '{close[0]}'?; " if close else ""
        raise UserModelError(f"unknown user model '{name}' ({hint}available: {', '.join(MODELS)})")
    return MODELS[key]


def make_model(name: str, trace: Trace, options: dict[str, Any] | None = None) -> UserModel:
    return model_class(name)(trace, options)


class _LayerWarningsFilter(logging.Filter):
    """Mutes two pybatsim warnings the layer makes moot: "dynamic registration is ENABLED, send
    registration_finished" (the layer sends it) and, with acknowledgements, one "job already in the
    job list" per job (the ACK of a registered job)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        return "alredy in the job list" not in msg and "Dynamic registration of jobs is ENABLED" not in msg


_LAYER_FILTER = _LayerWarningsFilter()

LAYER_OPTIONS = tuple(LAYER_SPECS)


class UserModelScheduler(BatsimScheduler):
    """Wraps a scheduler; submits the trace's jobs as a :class:`UserModel` decides (module docstring)."""

    def __init__(self, options: dict[str, Any] | None = None, *, inner: Any = None,
                 model: UserModel | None = None):
        options = dict(options or {})
        super().__init__(options)
        logging.getLogger("batsim.batsim").addFilter(_LAYER_FILTER)   # idempotent
        self._bs: Any = None
        layer = {k: v for k, v in options.items() if k in LAYER_SPECS}
        model_opts = {k: v for k, v in options.items() if k not in LAYER_SPECS}
        if model is not None and model_opts:
            raise UserModelError(unknown_message(sorted(model_opts)[0], "the user-model layer", LAYER_SPECS))
        opts = validate(LAYER_SPECS, layer, "the user-model layer", UserModelError)
        if model is None:
            generates = opts["users"] is not None and model_class(opts["users"]).GENERATES
            for key, what in (("trace", "the recorded workload to replay"),
                              ("users", "rigid, feedback, a0, a60, site-phase1, site-phase2")):
                if opts[key] is None and not (key == "trace" and generates):
                    raise UserModelError(f"the user-model layer needs option '{key}' ({what})")
            validate(model_class(opts["users"]).OPTIONS, model_opts, f"user model '{opts['users']}'",
                     UserModelError, LAYER_SPECS, "the user-model layer")     # before loading the trace
        if inner is None:
            from batfeed.registry import make_scheduler

            inner = make_scheduler(opts["scheduler"], opts["scheduler_options"] or {})
        self.inner = inner
        if model is None:
            trace = Trace("(none)", 0, []) if opts["trace"] is None else load_trace(opts["trace"])
            model = make_model(opts["users"], trace, model_opts)
        self.model = model
        self.workload_name = opts["workload_name"]
        self.speed_factor = opts["speed_factor"]
        self.kill_at_walltime = opts["kill_at_walltime"]
        self.ack = False
        self.profile_reuse = False
        self.registration_finished = False
        self._by_id: dict[str, int] = {}          # replayed jobs not ended yet: Batsim id -> trace index
        self._profiles: set[str] = set()          # registered profile names (profile reuse)
        self._pending: list[float] = []           # our CALL_ME_LATER times not answered yet
        self._scan = 0                            # outgoing events already scanned for rejections
        self.nb_messages_with_submissions = 0

    # ------------------------------------------------------------------ plumbing
    @property
    def direct_driver_ok(self) -> bool:
        """The engine may drive the layer directly when it wraps a scheduler it can drive directly."""
        return supports_direct(self.inner)

    @property
    def bs(self) -> Any:
        return self._bs

    @bs.setter
    def bs(self, value: Any) -> None:
        self._bs = value
        self.inner.bs = value

    # ------------------------------------------------------------------ submission
    def _profile_for(self, tj: TraceJob) -> tuple[str, dict[str, Any]]:
        prof = dict(tj.profile)
        if self.speed_factor != 1.0:
            if prof.get("type") == "delay":
                prof["delay"] = float(prof["delay"]) / self.speed_factor
            elif prof.get("type") in ("parallel_homogeneous", "parallel_homogeneous_total"):
                prof["cpu"] = float(prof["cpu"]) / self.speed_factor
            else:
                raise UserModelError(f"job {tj.name}: cannot scale the run time of a '{prof.get('type')}' "
                                     "profile (speed_factor needs delay or parallel_homogeneous profiles)")
        name = tj.profile_name if self.profile_reuse else f"p{tj.name}"
        return name, prof

    def _walltime(self, tj: TraceJob, prof: dict[str, Any]) -> float:
        w = tj.walltime
        if not self.kill_at_walltime and w > 0 and prof.get("type") == "delay" and prof["delay"] >= w:
            return float(prof["delay"]) + 1.0
        return w

    def _submit_due(self) -> int:
        """Register every job due now; returns how many."""
        bs = self._bs
        due = self.model.pop_due(bs.time())
        if not due:
            return 0
        self.nb_messages_with_submissions += 1
        wl = self.workload_name
        for tj in due:
            now = bs.time()
            pname, prof = self._profile_for(tj)
            if pname not in self._profiles:
                bs.register_profiles(wl, {pname: prof})
                if self.profile_reuse:
                    self._profiles.add(pname)
            jid = f"{wl}!{tj.name}"
            job = bs.register_job(jid, tj.res, self._walltime(tj, prof), pname)
            meta = f"orig_subtime={tj.subtime!r}" + (f";user={tj.user}" if tj.user is not None else "")
            bs.set_job_metadata(jid, meta)
            self._by_id[jid] = tj.index
            self.model.mark_submitted(tj.index, now)
            if not self.ack:
                job.job_state = Job.State.SUBMITTED
                self.inner.onJobSubmission(job)
        return len(due)

    def _collect_rejections(self) -> None:
        events = self._bs._events_to_send   # this message's outgoing decisions, in order
        for ev in events[self._scan:]:
            if isinstance(ev, dict):        # pybatsim 3.2.1's JSON events
                kind = ev["type"]
                rejected = kind == "REJECT_JOB" or (kind == "CHANGE_JOB_STATE"
                                                    and ev["data"].get("job_state") == "REJECTED")
                jid, t = (ev["data"]["job_id"], float(ev["timestamp"])) if rejected else (None, 0.0)
            else:                           # the direct driver's (timestamp, handler, args)
                jid, t = rejected_job_id(ev), float(ev[0])
            if jid is not None:
                idx = self._by_id.pop(jid, None)
                if idx is not None:
                    self.model.job_ended(idx, t)
        self._scan = len(events)

    def _after_decisions(self) -> None:
        bs = self._bs
        while True:
            self._collect_rejections()
            nxt = self.model.next_due()
            if nxt is None or nxt > bs.time() + EPS:
                break
            self._submit_due()
            if self.ack:
                break   # Batsim acknowledges them in the next message, where the inner schedules them
            self.inner.onNoMoreEvents()
        if self.model.exhausted:
            if not self.registration_finished:
                bs.notify_registration_finished()
                self.registration_finished = True
            return
        nxt = self.model.next_due()
        if nxt is not None and not (self._pending and self._pending[0] <= nxt):
            bs.wake_me_up_at(nxt)
            heapq.heappush(self._pending, nxt)

    # ------------------------------------------------------------------ pybatsim callbacks
    def onAfterBatsimInit(self) -> None:
        self.inner.onAfterBatsimInit()

    def onSimulationBegins(self) -> None:
        bs = self._bs
        if not bs.dynamic_job_registration_enabled:
            raise UserModelError("user models submit jobs by dynamic registration: start Batsim with "
                                 "--enable-dynamic-jobs (batfeed simulate --users does it)")
        self.ack = bool(bs.ack_of_dynamic_jobs)
        self.profile_reuse = bool(bs.batconf.get("profile-reuse-enabled", False))
        self.inner.onSimulationBegins()
        self.model.nb_resources = int(getattr(bs, "nb_compute_resources", None) or bs.nb_resources)
        self.model.start()

    def onSimulationEnds(self) -> None:
        self.inner.onSimulationEnds()
        self.model.finish()
        if not self.model.exhausted:
            log.warning("simulation ended with %d trace jobs never submitted",
                        len(self.model.trace.jobs) - self.model.nb_submitted)

    def onDeadlock(self) -> None:
        self.inner.onDeadlock()

    def onBeforeEvents(self) -> None:
        self._scan = 0
        self.inner.onBeforeEvents()

    def onNoMoreEvents(self) -> None:
        self._submit_due()
        self.inner.onNoMoreEvents()
        self._after_decisions()

    def onJobSubmission(self, job: Job) -> None:
        self.inner.onJobSubmission(job)

    def onJobCompletion(self, job: Job) -> None:
        self.inner.onJobCompletion(job)
        idx = self._by_id.pop(job.id, None)
        if idx is not None:
            self.model.job_ended(idx, float(job.finish_time))

    def onRequestedCall(self) -> None:
        if self._pending and self._pending[0] <= self._bs.time() + EPS:
            heapq.heappop(self._pending)   # ours
        else:
            self.inner.onRequestedCall()

    def onJobsKilled(self, jobs: list[Job]) -> None:
        self.inner.onJobsKilled(jobs)

    def onJobMessage(self, timestamp: float, job: Job, message: Any) -> None:
        self.inner.onJobMessage(timestamp, job, message)

    def onMachinePStateChanged(self, nodeid: Any, pstate: Any) -> None:
        self.inner.onMachinePStateChanged(nodeid, pstate)

    def onReportEnergyConsumed(self, consumed_energy: float) -> None:
        self.inner.onReportEnergyConsumed(consumed_energy)

    def onAddResources(self, to_add: Any) -> None:
        self.inner.onAddResources(to_add)

    def onRemoveResources(self, to_remove: Any) -> None:
        self.inner.onRemoveResources(to_remove)

    def onNoMoreJobsInWorkloads(self) -> None:
        self.inner.onNoMoreJobsInWorkloads()

    def onNoMoreExternalEvents(self) -> None:
        self.inner.onNoMoreExternalEvents()

    def onNotifyEventMachineUnavailable(self, machines: Any) -> None:
        self.inner.onNotifyEventMachineUnavailable(machines)

    def onNotifyEventMachineAvailable(self, machines: Any) -> None:
        self.inner.onNotifyEventMachineAvailable(machines)

    def onNotifyGenericEvent(self, event_data: Any) -> None:
        self.inner.onNotifyGenericEvent(event_data)

    def onDatasetArrivedOnStorage(self, dataset_id: Any, source_id: Any, dest_id: Any) -> None:
        self.inner.onDatasetArrivedOnStorage(dataset_id, source_id, dest_id)

    def onDataTransferNotTerminated(self, dataset_id: Any, source_id: Any, dest_id: Any) -> None:
        self.inner.onDataTransferNotTerminated(dataset_id, source_id, dest_id)
