"""Maui-compatible scheduling (Zitzlsberger et al., IT4Innovations, Salomon; models.md §F [MAUI]).

A pybatsim ``BatsimScheduler`` built on the shared backfilling core (:mod:`backfill`): the waiting
jobs sit in the shared :class:`WaitQueue` under a custom *dynamic* key (minus Maui's priority),
reservations are steps of the shared availability :class:`Profile` (models.md §B: reservation
depth k generalises EASY, k = 1, and conservative backfilling, k = ∞), jobs start through the
core's ``launch``/``allocate``, and downtimes and maintenance windows are the core's.

Options (pybatsim ``-o`` JSON / ``batfeed simulate --options``)::

    config           path of a maui.cfg (subset: maui_config.py); none = Maui's defaults
    interval         scheduling interval Δ in s (Maui's RMPOLLINTERVAL); null/0 = event-driven
                     (default; a RMPOLLINTERVAL of the config applies when this option is absent)
    poll             with an interval: also iterate at every grid point while jobs wait (Maui's
                     poll loop) instead of only at the grid point after something happened
    on_machine_down  "ignore" (default), "kill-drop", "kill-resubmit" (requeue)  (backfill.py)
    maintenance      planned windows or a Batsim events file                      (backfill.py)

**Priority** (Maui Admin Guide §5.1; models.md §F), recomputed at every iteration::

    p = CREDWEIGHT · (USERWEIGHT·P_user + GROUPWEIGHT·P_group + ACCOUNTWEIGHT·P_account + CLASSWEIGHT·P_class)
      + FSWEIGHT · Σ_c FS<c>WEIGHT · (FSTARGET_c − usage_pct_c)          (c = user, group, account, class)
      + SERVICEWEIGHT · (QUEUETIMEWEIGHT · wait/60 + XFACTORWEIGHT · (1 + wait/p̃))

with P_x the ``PRIORITY=`` of ``<X>CFG[x]`` (else ``<X>CFG[DEFAULT]``, else 0), wait = now − r in
seconds (Maui counts queue time in minutes), fairshare as in fairshare.py (credentials without a
target contribute 0; ``25+``/``25-`` targets are floors/ceilings).  Without
ENABLENEGJOBPRIORITY, priorities below 1 become 1; with it and REJECTNEGPRIOJOBS TRUE, jobs of
negative priority are not started while they are.  Ties: submission order.

**Iteration** (``mechanics``; RESERVATIONPOLICY CURRENTHIGHEST: MQueue.c ``MQueueScheduleRJobs``
drops the priority reservations of the previous iteration, ``MQueueScheduleIJobs`` makes them again):
``"nodes"`` (default, :mod:`maui_nodes`, Maui 3's source) - reservations hold specific nodes, the
priority pass goes on after a reservation until a job can neither start nor be reserved, then
backfill windows of idle nodes by time to their next reservation; ``"counts"`` (:mod:`maui_counts`,
batfeed's model before issue 18, for reproducing earlier results) - count reservations in the
shared profile, the pass stops at the first job that cannot start, priority-order backfill.

**Class limits** (CLASSCFG): MAXJOB, MAXNODE, MAXJOBPERUSER, MAXNODEPERUSER over the running jobs
of the class (a job that would exceed one waits, without reservation); a job that can never run
(walltime > MAXWCLIMIT, q > MAXNODEPERJOB, MAXNODE, MAXNODEPERUSER or its HOSTLIST) is rejected
at submission with the reason logged.

**Credentials of a job** (workload JSON fields, UNDEF → choice): user ``user``; group ``group``;
account ``account``, else ``project``, else the group (SWF has no account); class
``queue_name`` (Alea extended SWF), else ``queue``, else ``partition``, else ``DEFAULT``; every
value compared as a string (SWF queue 1 is ``CLASSCFG[1]``).

Planned maintenance windows are the core's system reservations (known from the start, so the
machine drains before them, the paper's ramp-down); they do not consume RESERVATIONDEPTH (the
paper's RESDEPTH = 1 + number of windows emulates exactly this with Maui).

**Interval mode** (Δ > 0, Maui's RMPOLLINTERVAL, the paper's time step): decisions are taken only at
t0 + kΔ, t0 = the first submission, k >= 1 with ``nodes`` (Maui's simulator makes its first pass one
poll after its start clock: MSys.c ``MSysUpdateTime``, MSim.c ``MSimGetWorkload``; k >= 0 with
``counts``); a job completes at the first poll at or after its end (MSim.c ``MSimRMGetInfo``); an
arrival, completion or machine event between grid points is acted upon at the next one
(CALL_ME_LATER), so idle time appears as in Maui's simulator; with ``poll`` an iteration also runs
at every grid point while jobs wait. A call is requested only while jobs wait, so the simulation
ends as Batsim requires (no pending call once everything is done). When the priority order cannot
change with time alone (no XFACTOR, no fairshare, no credential term that the clamp at 1 could
reorder), an iteration whose state (profile version, free machines, queue) equals that of an
iteration that started nothing is skipped: it would start nothing either (later spans only meet more
constraints), so ``poll`` then gives exactly the schedule of the default interval mode, faster.

**Priority as Maui stores it** (``nodes``): the sum, clamped at 1, is truncated to an integer and
capped at 10⁹ (MPriority.c ``MJobGetStartPriority``, MQueue.c ``MQueuePrioritizeJobs``: ``StartPriority``
is an unsigned long), so equal integer priorities keep submission order (qsort, stable on glibc); in
interval mode a job already seen at the previous poll is ranked by its wait then (``EffQueueDuration``,
set by MPolicy.c ``MQueueSelectJobs`` after the priorities are computed).

**Walltime overrun** (``nodes``, interval mode; jobs converted with ``batfeed convert --overrun X``,
which keeps the request in ``requested_walltime`` and gives Batsim request + X): the scheduler plans
with the request; a running job past it is expected to end at max(start + p̃, now + 1) (MRes.c
``MResJCreate``); Batsim kills it at start + p̃ + X and its nodes are reused from the poll after the
first poll past that instant, as Maui cancels it after that pass (MSys.c ``MSysCheck`` → MLimit.c
``MLimitEnforceAll``, JOBMAXOVERRUN X, 600 s by default) and frees its nodes at the next one.

Other UNDEF → choices: fairshare usage is charged continuously (machines × seconds) and the
windows are aligned on simulated time 0; queue time runs from submission (Maui's FULL accrual
policy); an iteration starts nothing when no machine is free, so it is skipped then; a requeued
job (kill-resubmit) is a new job whose queue time starts at the requeue; jobs of negative
priority held by REJECTNEGPRIOJOBS are re-examined every Δ (60 s when event-driven) while their
priority can still rise, and rejected when it cannot and nothing else could change it.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any

from batfeed.schedulers.backfill import BackfillScheduler, OptionError
from batfeed.schedulers.fairshare import Fairshare
from batfeed.schedulers.jobqueue import Entry, WaitQueue
from batfeed.schedulers.maui_config import Cred, MauiConfig, Target, load_config
from batfeed.schedulers.maui_counts import CountMechanics
from batfeed.schedulers.maui_nodes import Plan, iterate
from batfeed.schedulers.options import Option, specs
from batfeed.schedulers.policies import Policy
from batfeed.schedulers.resources import Intervals, count, subtract, union
from batsim.batsim import Job

log = logging.getLogger("batfeed.schedulers")

INF = float("inf")
NEG_RETRY = 60.0        # s between re-examinations of jobs held for a negative priority (event-driven)
_WARNED: set[str] = set()   # the maui.cfg warnings already said in this process
KINDS = (("users", "user"), ("groups", "group"), ("accounts", "account"), ("classes", "class"))


class JobInfo:
    """What the priority and the limits need about a waiting or running job."""

    __slots__ = ("user", "group", "account", "cls", "cred", "fs_terms", "keys", "limits", "cred_limits",
                 "nodes", "others")

    def __init__(self, user: str, group: str, account: str, cls: str, cred: float,
                 fs_terms: list[tuple[tuple[str, str], float, Target]], limits: Cred | None,
                 nodes: Intervals | None, others: Intervals,
                 cred_limits: tuple[tuple[tuple[str, str], Cred], ...] = ()):
        self.user, self.group, self.account, self.cls = user, group, account, cls
        self.cred = cred                  # CREDWEIGHT · Σ sub-weight · credential priority
        self.fs_terms = fs_terms          # (fairshare key, FS sub-weight, target) with a target
        self.keys = (("user", user), ("group", group), ("account", account), ("class", cls))
        self.limits = limits              # the class's CLASSCFG entry (or DEFAULT's), if any
        self.cred_limits = cred_limits    # ((kind, name), entry) of USER/GROUP/ACCOUNTCFG with MAXJOB/MAXPROC
        self.nodes = nodes                # HOSTLIST machines, None = all
        self.others = others              # machines outside HOSTLIST


def _field(job: Job, *names: str, default: str) -> str:
    d = job.json_dict or {}
    for n in names:
        v = d.get(n)
        if v is not None and v != "":
            return str(v)
    return default


class Maui(CountMechanics, BackfillScheduler):
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
    PROFILE_ENDS_IN_STEPS = True

    def __init__(self, options: dict[str, Any] | None = None):
        super().__init__(options)
        cfg = self.cfg = load_config(self.opts["config"])
        for w in cfg.warnings:
            if w not in _WARNED:        # once per process: `batfeed validate` makes one Maui per week
                _WARNED.add(w)
                log.warning("%s", w)
        iv = self.opts["interval"] if "interval" in self.options else cfg.rmpollinterval
        self.interval: float | None = float(iv) if iv else None
        self.fs = Fairshare(cfg.fsinterval, cfg.fsdepth, cfg.fsdecay, enabled=cfg.fspolicy != "NONE")
        self._fs_on = cfg.fsweight != 0 and any(getattr(cfg, f"fs{k}weight") for _, k in KINDS)
        self.info: dict[str, JobInfo] = {}
        self._creds: dict[tuple[str, str], Cred | None] = {}
        self.use_cls: dict[str, list[int]] = {}                # class -> [machines, jobs] running
        self.use_user: dict[tuple[str, str], list[int]] = {}   # (class, user) -> [machines, jobs]
        self.use_cred: dict[tuple[str, str], list[int]] = {}   # (kind, name) with a limit -> [machines, jobs]
        self.run_info: dict[str, tuple[JobInfo, int]] = {}
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
                        and (cfg.enablenegjobpriority or (not creds and cfg.queuetimeweight * cfg.serviceweight >= 0)))
        if self.opts["mechanics"] == "nodes" and creds:
            self._static = False     # integer priorities: credential terms and queue minutes may tie later
        self._idle: tuple | None = None
        self.t0: float | None = None                             # first submission: the interval grid
        self._last_submit = -INF
        self.iterations = 0
        self.counts = self.opts["mechanics"] == "counts"
        self.plan = Plan()
        self._overrun: list[tuple[float, Job]] = []               # (release poll, job) of timed-out jobs
        self._overrun_checked = False

    def make_queue(self) -> WaitQueue:
        return WaitQueue(Policy("MAUI", self._key, True))   # dynamic: re-keyed at every iteration

    # ---------------------------------------------------------------- priority
    def _key(self, e: Entry, now: float) -> float:
        return -self.priority(e, now)

    def priority(self, e: Entry, now: float) -> float:
        """Maui's priority of waiting entry ``e`` at ``now`` (module docstring)."""
        cfg, info = self.cfg, self.info[e.id]
        p = info.cred
        if self._fs_on:
            fs = 0.0
            for key, w, target in info.fs_terms:
                fs += w * target.delta(self.fs.usage_pct(key))
            p += cfg.fsweight * fs
        wait = now - e.r
        if not self.counts and self.interval is not None and self.t0 is not None:
            # a job seen at the previous poll is ranked by its wait then (MPolicy.c MQueueSelectJobs sets
            # EffQueueDuration after MQueuePrioritizeJobs; MPriority.c MJobGetStartPriority reads it)
            iv = self.interval
            if wait >= iv - 1e-9 and now - iv > self.t0 + 1e-6:
                wait -= iv
        serv = cfg.queuetimeweight * wait / 60.0
        if cfg.xfactorweight:
            serv += cfg.xfactorweight * (1.0 + wait / e.p if e.p < INF else 1.0)
        p += cfg.serviceweight * serv
        if not cfg.enablenegjobpriority and p < 1:
            p = 1.0
        if not self.counts:      # StartPriority is an integer (MQueue.c MQueuePrioritizeJobs), at most 1e9
            p = float(math.trunc(min(p, 1e9)))
        return p

    def _cred(self, kind: str, name: str) -> Cred | None:
        key = (kind, name)
        if key not in self._creds:
            self._creds[key] = self.cfg.cred(kind, name)
        return self._creds[key]

    def _job_info(self, job: Job) -> JobInfo:
        cfg: MauiConfig = self.cfg
        user = _field(job, "user", default="DEFAULT")
        group = _field(job, "group", default="DEFAULT")
        account = _field(job, "account", "project", "group", default="DEFAULT")
        cls = _field(job, "queue_name", "queue", "partition", default="DEFAULT")
        names = {"users": user, "groups": group, "accounts": account, "classes": cls}
        cred = 0.0
        fs_terms = []
        cred_limits = []
        for kind, short in KINDS:
            entry = self._cred(kind, names[kind])
            if entry is None:
                continue
            if kind != "classes" and (entry.maxjob is not None or entry.maxnode is not None):
                cred_limits.append(((short, names[kind]), entry))
            w = getattr(cfg, f"{short}weight")
            if w and entry.priority:
                cred += w * entry.priority
            fw = getattr(cfg, f"fs{short}weight")
            if fw and entry.fstarget is not None:
                fs_terms.append(((short, names[kind]), fw, entry.fstarget))
        limits = self._cred("classes", cls)
        nodes = self.nodesets.get(cls)
        if nodes is None:
            nodes = self.nodesets.get("DEFAULT")
        others = subtract([(0, self.nb_machines - 1)], nodes) if nodes is not None else []
        return JobInfo(user, group, account, cls, cfg.credweight * cred, fs_terms, limits, nodes, others,
                       tuple(cred_limits))

    # ---------------------------------------------------------------- callbacks
    def onSimulationBegins(self) -> None:
        super().onSimulationBegins()
        names = {m["name"]: int(m["id"]) for m in (getattr(self.bs, "machines", None) or {}).get("compute", [])}
        for cls, entry in self.cfg.classes.items():
            if entry.hostlist is None:
                continue
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

    def onJobSubmission(self, job: Job) -> None:
        self._last_submit = self.bs.time()
        if self.t0 is None:
            self.t0 = self._last_submit
        super().onJobSubmission(job)

    def on_submit(self, job: Job) -> None:
        info = self._job_info(job)
        why = self._never(job, info)
        if why:
            self.reject(job, why)
            return
        self.info[job.id] = info
        super().on_submit(job)

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

    def _never(self, job: Job, info: JobInfo) -> str | None:
        c, q = info.limits, job.requested_resources
        if c is not None:
            wall = job.requested_time
            if c.maxwclimit is not None and wall is not None and wall > c.maxwclimit:
                return f"walltime {wall:g} s exceeds MAXWCLIMIT {c.maxwclimit:g} s of class {info.cls}"
            for name, lim in (("MAXNODEPERJOB", c.maxnodeperjob), ("MAXNODE", c.maxnode),
                              ("MAXNODEPERUSER", c.maxnodeperuser)):
                if lim is not None and q > lim:
                    return f"requests {q} machines, more than {name} {lim} of class {info.cls}"
        if info.nodes is not None and q > count(info.nodes):
            return f"requests {q} machines, class {info.cls} has {count(info.nodes)} (HOSTLIST)"
        for (kind, name), c in info.cred_limits:
            if c.maxnode is not None and q > c.maxnode:
                return f"requests {q} machines, more than MAXPROC {c.maxnode} of {kind} {name}"
        return None

    def launch(self, e: Entry, ivs: Intervals, now: float) -> None:
        super().launch(e, ivs, now)
        info = self.info[e.id]
        self.run_info[e.id] = (info, e.q)
        for table, key in ((self.use_cls, info.cls), (self.use_user, (info.cls, info.user))):
            u = table.setdefault(key, [0, 0])
            u[0] += e.q
            u[1] += 1
        for key, _ in info.cred_limits:
            u = self.use_cred.setdefault(key, [0, 0])
            u[0] += e.q
            u[1] += 1
        self.fs.start(info.keys, e.q, now)

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
            info, q = got
            for table, key in ((self.use_cls, info.cls), (self.use_user, (info.cls, info.user))):
                u = table[key]
                u[0] -= q
                u[1] -= 1
            for key, _ in info.cred_limits:
                u = self.use_cred[key]
                u[0] -= q
                u[1] -= 1
            self.fs.stop(info.keys, q, self.bs.time())
        self.info.pop(job.id, None)
        super().onJobCompletion(job)

    # ---------------------------------------------------------------- interval mode
    def _on_grid(self, now: float) -> bool:
        k = round((now - self.t0) / self.interval)
        return abs(now - (self.t0 + k * self.interval)) <= 1e-6

    def _next_grid(self, now: float) -> float:
        k = math.floor((now - self.t0) / self.interval + 1e-9) + 1
        t = self.t0 + k * self.interval
        return t if t > now else t + self.interval

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

    # ---------------------------------------------------------------- the iteration
    def schedule(self) -> None:
        now = self.bs.time()
        wq = self.wq
        self.fs.advance(now)
        self.profile.prune_windows(now)
        self._ended = False
        wq.new = []
        if self.free.count == 0 and not self.trace_reservations:
            return                      # nothing could start: reservations are recomputed next time
        sig = (self.profile.version, self.free.count, len(wq), wq.seq)
        if (self._static and sig == self._idle and not self.trace_reservations
                and (self.counts or not Plan.overdue(self, now))):
            return                      # same state and order as an iteration that started nothing
        free = self.free.count
        if not self.counts and not self.trace_reservations and all(e.q > free for e in wq.main):
            return                      # no job fits the idle nodes: nothing starts, in the pass or a window
        self.iterations += 1
        self._neg_held = {}
        if self.counts:
            self.iterate_counts(now)
            return
        wq.refresh(now)
        n = len(wq)
        started_any = iterate(self, now)
        idle = not started_any and len(wq) == n and not self._neg_held
        if self.interval is not None and now - self._last_submit < self.interval:
            idle = False     # a job in its first pass is ranked without the one-poll lag: may reorder
        self._idle = sig if idle else None

    def _held(self, e: Entry, info: JobInfo) -> bool:
        """Blocked now by a credential or class limit, or by a negative priority (REJECTNEGPRIOJOBS)."""
        cfg = self.cfg
        if cfg.enablenegjobpriority and cfg.rejectnegpriojobs and -e.kp[0] < 0:
            self._neg_held[e.id] = e
            return True
        for key, lim in info.cred_limits:
            u = self.use_cred.get(key, (0, 0))
            if (lim.maxnode is not None and u[0] + e.q > lim.maxnode) or \
                    (lim.maxjob is not None and u[1] + 1 > lim.maxjob):
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
