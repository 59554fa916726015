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
(walltime > MAX.WCLIMIT, q > MAXNODEPERJOB, MAXNODE, MAXNODEPERUSER or its HOSTLIST) is rejected
at submission with the reason logged.

**Credentials of a job** (workload JSON fields, UNDEF → choice): user ``user``; group ``group``;
account ``account``, else ``project``, else the group (SWF has no account); class
``queue_name`` (Alea extended SWF), else ``queue``, else ``partition``, else ``DEFAULT``; every
value compared as a string (SWF queue 1 is ``CLASSCFG[1]``); QOS: the ``qos`` field if the
credentials' QLIST/QDEF allow it, else their default QOS (:mod:`maui_creds`, MQOS.c ``MQOSGetAccess``),
whose QOSCFG PRIORITY × QOSWEIGHT joins the credential term and whose QOSCFG limits apply.

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

**Node allocation** (``nodes``): NODEALLOCATIONPOLICY LASTAVAILABLE (Maui's default), FIRSTAVAILABLE,
MINRESOURCE, CPULOAD chooses which nodes a job gets (:mod:`maui_nodes`, MSched.c ``MJobAllocMNL``).

**Walltime overrun** (``nodes``, interval mode; jobs converted with ``batfeed convert --overrun X``,
which keeps the request in ``requested_walltime`` and gives Batsim request + X): the scheduler plans
with the request; a running job past it is expected to end at max(start + p̃, now + 1) (MRes.c
``MResJCreate``); Batsim kills it at start + p̃ + X and its nodes are reused from the poll after the
first poll past that instant, as Maui cancels it after that pass (MSys.c ``MSysCheck`` → MLimit.c
``MLimitEnforceAll``, JOBMAXOVERRUN X, 600 s by default) and frees its nodes at the next one.

**Limits and fairshare as Maui accounts them** (``nodes``, interval mode): per-credential MAXJOB/MAXPROC/MAXPS
restart and freeze queue times as MPolicy.c ``MQueueSelectAllJobs``/``MQueueSelectJobs`` do
(:mod:`maui_limits`), fairshare usage is charged poll by poll (:mod:`maui_fairshare`); docs/maui.md and
``batfeed schedulers`` give each maui.cfg keyword's status (:mod:`maui_keywords`).

Other UNDEF → choices: event-driven, fairshare usage is charged continuously (machines × seconds); the
windows are aligned on simulated time 0; queue time runs from submission (Maui's FULL accrual
policy); an iteration starts nothing when no machine is free, so it is skipped then; a requeued
job (kill-resubmit) is a new job whose queue time starts at the requeue; jobs of negative
priority held by REJECTNEGPRIOJOBS are re-examined every Δ (60 s when event-driven) while their
priority can still rise, and rejected when it cannot and nothing else could change it.
"""

from __future__ import annotations

from batfeed.schedulers.jobqueue import ScanState
from batfeed.schedulers.maui_core import INF, KINDS, NEG_RETRY, JobInfo, MauiCore
from batfeed.schedulers.maui_counts import MauiCounts
from batfeed.schedulers.maui_keywords import listing as keyword_listing
from batfeed.schedulers.maui_nodes import Plan, iterate

__all__ = ["INF", "KINDS", "NEG_RETRY", "JobInfo", "Maui", "MauiCore"]


class Maui(MauiCounts):
    """Maui 3's scheduling iteration on :class:`~batfeed.schedulers.maui_core.MauiCore` (module docstring):
    its node mechanics (:mod:`maui_nodes`), or the count-based ones (``mechanics: "counts"``)."""

    @staticmethod
    def catalog_notes() -> list[str]:
        """``batfeed schedulers``: the status of each maui.cfg keyword (:mod:`maui_keywords`)."""
        return keyword_listing()

    # ---------------------------------------------------------------- the iteration
    def schedule(self) -> None:
        now = self.bs.time()
        wq = self.wq
        self.fs.advance(now)
        self.profile.prune_windows(now)
        self._ended = False
        wq.new = []
        self.defer.select_all(now)      # MQueueSelectAllJobs's defers first (maui_defer.py)
        if self.limits is not None:     # Maui's MQueueSelectAllJobs runs even when nothing can start
            self.limits.begin()
            wq.refresh(now)
            self.limits.select_all(now)
        keep = self.trace_reservations or self._fs_caps   # a capped job keeps its last reservation
        if self.free.count == 0 and not keep:
            return                      # nothing could start: reservations are recomputed next time
        sig = (self.profile.version, self.free.count, len(wq), wq.seq)
        if (self._static and sig == self._idle and not keep
                and (self.counts or not Plan.overdue(self, now))):
            return                      # same state and order as an iteration that started nothing
        free = self.free.count
        if not self.counts and not keep and next(wq.main.scan(ScanState(free, INF, INF)), None) is None:
            return                      # no job fits the idle nodes: nothing starts, in the pass or a window
        self.iterations += 1
        self._neg_held = {}
        if self.counts:
            self.iterate_counts(now)
            return
        self.order.refresh(now)
        n = len(wq)
        started_any = iterate(self, now)
        idle = not started_any and len(wq) == n and not self._neg_held
        if self.interval is not None and now - self._last_submit < self.interval:
            idle = False     # a job in its first pass is ranked without the one-poll lag: may reorder
        self._idle = sig if idle else None
