"""Maui 3's scheduler state below its iteration (:class:`MauiCore`): options, credentials and their limits,
priorities, fairshare, the job lifecycle and the polling grid.  The iterations sit above it: the
count-based one (:mod:`maui_counts`) and Maui's own node mechanics (:mod:`maui_nodes`), chosen by
:class:`~batfeed.schedulers.maui.Maui` (whose docstring describes the model, models.md §F)."""


from __future__ import annotations

import logging
import math
import re
from typing import Any

from batfeed.schedulers.backfill import BackfillScheduler, OptionError
from batfeed.schedulers.jobqueue import Entry, WaitQueue
from batfeed.schedulers.maui_config import Cred, load_config
from batfeed.schedulers.maui_creds import KINDS, JobInfo, job_info
from batfeed.schedulers.maui_defer import Defer
from batfeed.schedulers.maui_fairshare import PollFairshare, fs_capped, fs_component, fs_never, make_fairshare
from batfeed.schedulers.maui_limits import CredLimits, Use, never, over
from batfeed.schedulers.maui_nodes import Plan
from batfeed.schedulers.maui_order import Order
from batfeed.schedulers.options import Option, specs
from batfeed.schedulers.policies import Policy
from batfeed.schedulers.resources import Intervals, union
from batsim.batsim import Job

log = logging.getLogger("batfeed.schedulers")

INF = float("inf")
NEG_RETRY = 60.0        # s between re-examinations of jobs held for a negative priority (event-driven)
_WARNED: set[str] = set()   # the maui.cfg warnings already said in this process


class MauiCore(BackfillScheduler):
    OPTIONS = specs([BackfillScheduler.OPTIONS["on_machine_down"], BackfillScheduler.OPTIONS["maintenance"]], [
        Option("config", "path", None, "maui.cfg (subset, see docs/maui.md; null: Maui 3.2's defaults)",
               nullable=True, expect="the path of a maui.cfg"),
        Option("interval", "number", None, "scheduling interval (RMPOLLINTERVAL): decisions only at first "
               "submission + k*interval; null or 0: event-driven; absent: the config's RMPOLLINTERVAL if any",
               minimum=0, nullable=True, unit="seconds"),
        Option("poll", "bool", False, "with interval: iterate at every step while jobs wait (Maui's loop)"),
        Option("mechanics", "choice", "nodes", "nodes: Maui 3's node reservations, priority pass and window "
               "backfill (maui_nodes.py); counts: batfeed's earlier count-based model, as before issue 18",
               choices=("nodes", "counts")),
    ])
    PROFILE_ENDS_IN_STEPS = True    # counts (maui_counts) query Profile.earliest; nodes: set off in __init__

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        cfg = self.cfg = load_config(self.opts["config"])
        # the node mechanics read the running jobs, not the step function's levels: no end in its steps
        self.profile.ends_in_steps = self.opts["mechanics"] == "counts"
        notes = list(cfg.warnings)
        if cfg.approximate:
            notes.append(f"{cfg.source}: approximated (batfeed schedulers says how): " + "; ".join(cfg.approximate))
        for w in notes:
            if w not in _WARNED:        # once per process: `batfeed validate` makes one Maui per week
                _WARNED.add(w)
                log.warning("%s", w)
        iv = self.opts["interval"] if "interval" in self.options else cfg.rmpollinterval
        self.interval: float | None = float(iv) if iv else None
        self.fs = make_fairshare(cfg, self.interval if self.opts["mechanics"] == "nodes" else None)
        self._fs_on = cfg.fsweight != 0 and any(getattr(cfg, f"fs{k}weight") for _, k in KINDS)
        self._fs_caps = self.fs.enabled and any(c.fstarget is not None and c.fstarget.mode in ("^", "%")
                                                for kind, _ in KINDS for c in getattr(cfg, kind).values())
        self.info: dict[str, JobInfo] = {}
        self.infos: dict[tuple[str, ...], JobInfo] = {}         # credentials -> their JobInfo (maui_creds)
        self._creds: dict[tuple[str, str], Cred | None] = {}
        self.use_cls: dict[str, list[int]] = {}                # class -> [machines, jobs] running
        self.use_user: dict[tuple[str, str], list[int]] = {}   # (class, user) -> [machines, jobs]
        # kept only when a CLASSCFG limit reads them (_held)
        self._class_use = any(c.maxjob is not None or c.maxnode is not None or c.maxjobperuser is not None
                              or c.maxnodeperuser is not None for c in cfg.classes.values())
        self.use_cred: dict[tuple[str, str], Use] = {}         # (kind, name) with a limit -> running jobs
        self.run_info: dict[str, tuple[JobInfo, int, float]] = {}   # running: info, machines, walltime end
        self.nodesets: dict[str, Intervals] = {}               # class -> HOSTLIST machines
        self._res: list[tuple[float, float, int]] = []          # this iteration's reservations (t, p̃, q)
        self._pins: list[tuple[float, float, Intervals]] = []   # pinned machines (from, to, machines)
        self._neg_held: dict[str, Entry] = {}                   # held for a negative priority
        self._floor: int | None = None                            # min free machines from now on (cache)
        self._deferred = False
        # The priority order cannot change while nothing happens (no XFACTOR, no fairshare, and
        # either negative priorities kept or no credential term to unclamp differently): an
        # iteration with the state of one that started nothing is skipped (it would start nothing).
        creds = cfg.credweight and any(getattr(cfg, f"{k}weight") for _, k in KINDS)
        self._static = (not cfg.xfactorweight * cfg.serviceweight and not (self._fs_on and self.fs.enabled)
                        and (cfg.enablenegjobpriority or cfg.rejectnegpriojobs
                             or (not creds and cfg.queuetimeweight * cfg.serviceweight >= 0)))
        if self.opts["mechanics"] == "nodes" and creds:
            self._static = False     # integer priorities: credential terms and queue minutes may tie later
        if cfg.backfilldepth:
            self._static = False     # as windows shrink, the first BACKFILLDEPTH jobs that fit them change
        self._idle: tuple | None = None
        self.t0: float | None = None                             # first submission: the interval grid
        self._last_submit = -INF
        self.iterations = 0
        self.counts = self.opts["mechanics"] == "counts"
        self.plan = Plan()
        self._overrun: list[tuple[float, Job]] = []               # (release poll, job) of timed-out jobs
        self.limits = CredLimits.make(self)
        self.defer = Defer(self)
        if self.limits is not None or self._fs_caps:
            self._static = False     # queue times restart while a limit blocks a job; fairshare caps lift
        self._overrun_checked = False
        self.order = Order(self)     # the priority re-sort skipped while it is the queue order (maui_order)

    def make_queue(self) -> WaitQueue:
        return WaitQueue(Policy("MAUI", self._key, True))   # dynamic: re-keyed at every iteration

    # ---------------------------------------------------------------- priority
    def _key(self, e: Entry, now: float) -> float:
        return -self.priority(e, now)

    def priority(self, e: Entry, now: float) -> float:
        """Maui's priority of waiting entry ``e`` at ``now`` (schedulers/maui.py's docstring)."""
        if self.limits is not None:
            return self.score(self.info[e.id], e.p, self.limits.wait(e, now))
        wait = now - e.r
        if not self.counts and self.interval is not None and self.t0 is not None:
            # a job seen at the previous poll is ranked by its wait then (MPolicy.c MQueueSelectJobs sets
            # EffQueueDuration after MQueuePrioritizeJobs; MPriority.c MJobGetStartPriority reads it if > 0:
            # a job submitted right at the previous poll is ranked by its whole wait)
            iv = self.interval
            if wait > iv + 1e-9 and now - iv > self.t0 + 1e-6:
                wait -= iv
        return self.score(self.info[e.id], e.p, wait)

    def score(self, info: JobInfo, p_wall: float, wait: float) -> float:
        """Maui's priority of a job with credentials ``info`` and walltime ``p_wall`` ranked by queue time
        ``wait`` s (MPriority.c ``MJobGetStartPriority``)."""
        cfg = self.cfg
        p = info.cred
        if self._fs_on and self.fs.any_usage():
            p += cfg.fsweight * fs_component(cfg, self.fs, info.fs_terms)
        serv = cfg.queuetimeweight * wait / 60.0
        if cfg.xfactorweight:
            if p_wall == INF:
                xf = 1.0
            elif self.counts:
                xf = 1.0 + wait / p_wall
            else:   # MPriority.c MJobGetStartPriority: (queue time + walltime) / MAX(XFMINWCLIMIT, walltime)
                xf = (math.floor(wait) + p_wall) / max(cfg.xfminwclimit, p_wall)
            serv += cfg.xfactorweight * xf
        p += cfg.serviceweight * serv
        if not cfg.enablenegjobpriority and not cfg.rejectnegpriojobs and p < 1:
            p = 1.0        # MPriority.c MJobGetStartPriority clips at 1 only when neither flag is set
        if not self.counts:      # StartPriority is an integer (MQueue.c MQueuePrioritizeJobs), at most 1e9
            p = float(math.trunc(min(p, 1e9)))
        return p

    def _cred(self, kind: str, name: str) -> Cred | None:
        key = (kind, name)
        if key not in self._creds:
            self._creds[key] = self.cfg.cred(kind, name)
        return self._creds[key]

    def _job_info(self, job: Job) -> JobInfo:
        return job_info(self, job)

    # ---------------------------------------------------------------- callbacks
    def onSimulationBegins(self) -> None:
        super().onSimulationBegins()
        names: dict[str, int] | None = None     # host name -> machine, read only for a HOSTLIST (93,312 on Curie)
        for cls, entry in self.cfg.classes.items():
            if entry.hostlist is None:
                continue
            if names is None:
                names = {m["name"]: int(m["id"]) for m in (getattr(self.bs, "machines", None) or {}).get("compute", [])}
            ivs: Intervals = []
            for tok in entry.hostlist:
                m = re.fullmatch(r"(\d+)(?:-(\d+))?", tok)
                if m:
                    a, b = int(m.group(1)), int(m.group(2) or m.group(1))
                    if b < a or b >= self.nb_machines:
                        raise OptionError(f"CLASSCFG[{cls}] HOSTLIST: machines {tok} do not exist "
                                          f"(the platform has {self.nb_machines})")
                elif tok in names:
                    a = b = names[tok]
                else:
                    raise OptionError(f"CLASSCFG[{cls}] HOSTLIST: unknown host '{tok}'")
                ivs = union(ivs, [(a, b)])
            self.nodesets[cls] = ivs
        self.infos.clear()          # their HOSTLIST machines are known now

    def onJobSubmission(self, job: Job) -> None:
        self._last_submit = self.bs.time()
        if self.t0 is None:
            self.t0 = self._last_submit
            if isinstance(self.fs, PollFairshare):
                self.fs.t0 = self.t0
        super().onJobSubmission(job)

    def on_submit(self, job: Job) -> None:
        info = self._job_info(job)
        why = never(job, info) or (self._fs_caps and fs_never(self.cfg, info.keys, job)) or None
        if why:
            self.reject(job, why)
            return
        self.info[job.id] = info
        super().on_submit(job)
        self.order.queued(self.wq.new[-1], info)

    def planned_walltime(self, job: Job) -> float | None:
        """The request kept by ``batfeed convert --overrun`` (Batsim's walltime is request + overrun)."""
        rw = (job.json_dict or {}).get("requested_walltime")
        if self.cfg.jobmaxoverrun is not None and not self._overrun_checked:
            self._check_overrun(job, rw)
        return float(rw) if rw is not None else None

    def _check_overrun(self, job: Job, rw: float | None) -> None:
        """maui.cfg's JOBMAXOVERRUN X only takes effect through the workload (Batsim enforces the
        walltime): warn once when the first job with a walltime was not converted with --overrun X."""
        wall, x = job.requested_time, self.cfg.jobmaxoverrun
        if wall is None or wall <= 0:
            return
        self._overrun_checked = True
        if x == INF:
            log.warning("maui.cfg JOBMAXOVERRUN -1 (no limit): Batsim still kills job %s at its walltime %g s; "
                        "convert with a large --overrun to come close", job.id, wall)
        elif rw is None:
            log.warning("maui.cfg JOBMAXOVERRUN %g s has no effect: Batsim kills jobs at their walltime; convert the "
                        "trace with batfeed convert --overrun %g (job %s has no requested_walltime)", x, x, job.id)
        elif abs(wall - float(rw) - x) > 1e-6:
            log.warning("maui.cfg JOBMAXOVERRUN %g s, but the workload extends requests by %g s (job %s: walltime "
                        "%g, requested_walltime %g): convert with --overrun %g", x, wall - float(rw), job.id, wall,
                        float(rw), x)

    def launch(self, e: Entry, ivs: Intervals, now: float) -> None:
        super().launch(e, ivs, now)
        info = self.info[e.id]
        self.run_info[e.id] = (info, e.q, now + e.p)
        if self._class_use:
            for u in (self.use_cls.setdefault(info.cls, [0, 0]),
                      self.use_user.setdefault((info.cls, info.user), [0, 0])):
                u[0] += e.q
                u[1] += 1
        for key, _ in info.cred_limits:
            self.use_cred.setdefault(key, Use()).add(e.q, now + e.p)
        self.fs.start(info.keys, e.q, now)
        if self.limits is not None:
            self.limits.started(e, now)

    def onJobCompletion(self, job: Job) -> None:
        if (self.interval is not None and not self.counts and job.id in self.running
                and job.job_state == Job.State.COMPLETED_WALLTIME_REACHED
                and (job.json_dict or {}).get("requested_walltime") is not None):
            # Maui cancels a job past walltime + JOBMAXOVERRUN after the first pass at which
            # now - start exceeds it, and its nodes are free at the next poll (MSys.c MSysCheck ->
            # MLimit.c MLimitEnforceAll); Batsim killed it at that limit: hold its nodes till then.
            now = self.bs.time()
            release = self._next_grid(now) + self.interval
            self._overrun.append((release, job))
            if len(self.wq):
                self._call(release)
            return
        self._complete(job)

    def _release_overruns(self, now: float) -> None:
        due = [job for t, job in self._overrun if t <= now + 1e-9]
        if due:
            self._overrun = [(t, j) for t, j in self._overrun if t > now + 1e-9]
            for job in due:
                self._complete(job)

    def _complete(self, job: Job) -> None:
        got = self.run_info.pop(job.id, None)
        if got is not None:
            info, q, end = got
            if self._class_use:
                for u in (self.use_cls[info.cls], self.use_user[(info.cls, info.user)]):
                    u[0] -= q
                    u[1] -= 1
            for key, _ in info.cred_limits:
                self.use_cred[key].remove(q, end)
            self.fs.stop(info.keys, q, self.bs.time())
            if self.limits is not None:
                self.limits.ended(job.id)
        self.info.pop(job.id, None)
        super().onJobCompletion(job)

    # ---------------------------------------------------------------- interval mode
    def _on_grid(self, now: float) -> bool:
        t0, iv = self.t0, self.interval
        assert t0 is not None and iv is not None
        k = round((now - t0) / iv)
        return abs(now - (t0 + k * iv)) <= 1e-6

    def _next_grid(self, now: float) -> float:
        t0, iv = self.t0, self.interval
        assert t0 is not None and iv is not None
        k = math.floor((now - t0) / iv + 1e-9) + 1
        t = t0 + k * iv
        return t if t > now else t + iv

    def _call(self, t: float) -> None:
        if t not in self._calls:
            self._calls.add(t)
            self.bs.wake_me_up_at(t)

    def onNoMoreEvents(self) -> None:
        now = self.bs.time()
        if self._overrun:
            self._release_overruns(now)
        if self.interval is not None and self.t0 is not None:
            # Maui's simulator runs its first pass one poll after the first submission (MSim.c)
            if self._on_grid(now) and (self.counts or now > self.t0 + 1e-6):
                self._changed = self._changed or self._deferred or (self.opts["poll"] and len(self.wq) > 0)
                self._deferred = False
            elif self._changed or self._deferred:
                self._deferred, self._changed = True, False
                if len(self.wq):
                    self._call(self._next_grid(now))
        super().onNoMoreEvents()
        if self.interval is not None and self.opts["poll"] and len(self.wq):
            self._call(self._next_grid(now))
        if self._neg_held:
            self._retry_negative(now)
        if self._overrun and len(self.wq):
            self._call(min(t for t, _ in self._overrun))

    def _retry_negative(self, now: float) -> None:
        cfg = self.cfg
        held = [e for e in self._neg_held.values() if e.where >= 0]
        self._neg_held = {}
        if not held:
            return
        rising = cfg.serviceweight * cfg.queuetimeweight > 0 or cfg.serviceweight * cfg.xfactorweight > 0
        if rising:
            self._call(self._next_grid(now) if self.interval is not None else now + NEG_RETRY)
        elif not self.running and len(self.wq) == len(held):
            for e in held:
                self.wq.remove(e)
                self.info.pop(e.id, None)
                self.reject(e.job, "negative priority with REJECTNEGPRIOJOBS TRUE, and nothing left that "
                                   "could raise it")
            self.flush()

    def _held(self, e: Entry, info: JobInfo, hard: bool = False) -> bool:
        """Blocked now by a credential (its soft limit; ``hard``: the backfill's hard limit) or class limit,
        or by a negative priority (REJECTNEGPRIOJOBS)."""
        cfg = self.cfg
        if self.defer.held(e):                       # deferred, or more machines than are up (maui_defer)
            return True
        if cfg.rejectnegpriojobs and -e.kp[0] < 0:   # MPolicy.c MQueueSelectAllJobs
            self._neg_held[e.id] = e
            return True
        if info.cred_limits and over(info, e.q, e.p, self.use_cred, self.bs.time(), hard):
            return True
        if self._fs_caps and fs_capped(cfg, self.fs, info.keys, e.q, e.p):    # MQueueCheckSingleJob
            return True
        c = info.limits
        if c is None:
            return False
        if c.maxjob is not None or c.maxnode is not None:
            u = self.use_cls.get(info.cls, (0, 0))
            if (c.maxnode is not None and u[0] + e.q > c.maxnode) or (c.maxjob is not None and u[1] + 1 > c.maxjob):
                return True
        if c.maxjobperuser is not None or c.maxnodeperuser is not None:
            u = self.use_user.get((info.cls, info.user), (0, 0))
            if (c.maxnodeperuser is not None and u[0] + e.q > c.maxnodeperuser) or \
                    (c.maxjobperuser is not None and u[1] + 1 > c.maxjobperuser):
                return True
        return False
