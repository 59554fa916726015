"""Maui's per-credential limits across iterations (issue 29): who is blocked, and what it does to queue time.

USERCFG/GROUPCFG/ACCOUNTCFG/CLASSCFG/QOSCFG ``MAXJOB``/``MAXPROC``/``MAXPS`` (``MAXJOB=4``: soft = hard =
4, MCred.c ``__MCredParseLimit``) are checked by MJob.c ``MJobCheckLimits`` → MPolicy.c
``MPolicyCheckLimit`` (blocked when usage + the job's > limit; a credential without its own limit takes
DEFAULT's, QOSCFG[DEFAULT] for a QOS).  ``MAXPS`` counts processor-seconds (:class:`Use`): the job's
processors × its walltime against the running jobs' processors × remaining walltime (MPolicy.c
``MPolicyAdjustUsage``: ``J->RemainingTime``, which MSim.c ``MSimRMGetInfo`` sets at each poll to start
+ walltime − now, at least 0, and MJob.c ``MJobStart`` to the walltime).  Soft and
hard limits (``MAXJOB=4,6``): the priority pass holds a job over its soft limit (MQueue.c
``MQueueScheduleIJobs``, ``MQueueSelectAllJobs`` at the soft level), the backfill over its hard limit
(MSched.c ``MSchedProcessJobs`` backfills at the hard level, MBF.c ``MBFFirstFit``).  Besides keeping a
job from starting (``MauiCore._held``), a limit changes the job's queue time, which is its priority
under Maui's default weights (with the hard limits):

- **SystemQueueTime resets** (MPolicy.c ``MQueueSelectAllJobs``, hard policy level, the default
  JOBPRIOACCRUALPOLICY QUEUEPOLICY): at the start of every iteration the jobs - idle *and running* - are
  walked in priority order while the running jobs' usage is added up, so an idle job is checked
  against the running jobs ranked before it only; if that partial usage plus the job exceeds the
  limit, its SystemQueueTime becomes now, otherwise it is left alone.
- **EffQueueDuration** (MPolicy.c ``MQueueSelectJobs``, ``MQueueCheckSingleJob``): set to now −
  SystemQueueTime for the jobs that pass the limits with the full usage, and left unchanged for the
  others; MPriority.c ``MJobGetStartPriority`` ranks a job by it when it is > 0, else by now −
  SystemQueueTime (``UseSystemQueueTime`` defaults to ptOFF, whose value is TRUE).  A running job
  keeps the value of its last iteration in the queue.

A job of negative priority under REJECTNEGPRIOJOBS is skipped by the walk before any limit, so its
EffQueueDuration is not set either (its SystemQueueTime is reset only under JOBPRIOACCRUALPOLICY FULLPOLICY).

The priority order of the walk is MQueue.c ``MQueuePrioritizeJobs``'s: StartPriority high to low, ties
in job-table (submission) order.  Used with the node mechanics in interval mode; exact with ``poll``
(Maui iterates at every poll).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

from batfeed.schedulers.maui_creds import has_limit, job_qos, request
from batfeed.schedulers.maui_fairshare import fs_capped
from batfeed.schedulers.resources import count

if TYPE_CHECKING:
    from batfeed.schedulers.jobqueue import Entry
    from batfeed.schedulers.maui_core import MauiCore
    from batfeed.schedulers.maui_creds import JobInfo
    from batsim.batsim import Job


class Use:
    """A credential's running jobs as its limits count them: machines, jobs, and (machines, walltime end)
    per job for MAXPS."""

    __slots__ = ("machines", "jobs", "ends")

    def __init__(self) -> None:
        self.machines = 0
        self.jobs = 0
        self.ends: list[tuple[int, float]] = []

    def add(self, q: int, end: float) -> None:
        self.machines += q
        self.jobs += 1
        self.ends.append((q, end))

    def remove(self, q: int, end: float) -> None:
        self.machines -= q
        self.jobs -= 1
        self.ends.remove((q, end))

    def ps(self, now: float) -> float:
        """Processor-seconds of the remaining walltimes at ``now`` (MPolicy.c ``MPolicyAdjustUsage``)."""
        return sum(q * max(0.0, end - now) for q, end in self.ends)


_NONE = Use()
ALL = "[ALL]"        # MConst.c ALL: the backfill window's credentials


def over(info: JobInfo, q: int, p: float, use: dict[tuple[str, str], Use], now: float, hard: bool = False) -> bool:
    """A job of ``q`` machines and walltime ``p`` exceeds one of its credentials' soft (``hard``: hard)
    MAXJOB/MAXPROC/MAXPS given ``use`` at ``now`` (MJob.c ``MJobCheckLimits``, MPolicy.c
    ``MPolicyCheckLimit``: usage + the job's > limit, a limit of 0 being none)."""
    for key, lim in info.cred_limits:
        u = use.get(key, _NONE)
        mn = lim.maxnode_hard if hard and lim.maxnode_hard is not None else lim.maxnode
        mj = lim.maxjob_hard if hard and lim.maxjob_hard is not None else lim.maxjob
        if (mn is not None and u.machines + q > mn) or (mj is not None and u.jobs + 1 > mj):
            return True
        mps = lim.maxps_hard if hard and lim.maxps_hard is not None else lim.maxps
        if mps and u.ps(now) + q * p > mps:
            return True
    return False


def never(job: Job, info: JobInfo) -> str | None:
    """Why ``job`` can never run under its class's or credentials' limits (rejected at submission), or None:
    walltime over CLASSCFG MAX.WCLIMIT, more machines than MAXNODEPERJOB/MAXNODE/MAXNODEPERUSER of its class,
    than its class's HOSTLIST or than a credential's MAXPROC, or more processor-seconds than its MAXPS."""
    c, q = info.limits, job.requested_resources
    if c is not None:
        wall = job.requested_time
        if c.maxwclimit is not None and wall is not None and wall > c.maxwclimit:
            return f"walltime {wall:g} s exceeds MAX.WCLIMIT {c.maxwclimit:g} s of class {info.cls}"
        for name, lim in (("MAXNODEPERJOB", c.maxnodeperjob), ("MAXNODE", c.maxnode),
                          ("MAXNODEPERUSER", c.maxnodeperuser)):
            if lim is not None and q > lim:
                return f"requests {q} machines, more than {name} {lim} of class {info.cls}"
    if info.nodes is not None and q > count(info.nodes):
        return f"requests {q} machines, class {info.cls} has {count(info.nodes)} (HOSTLIST)"
    for (kind, name), cl in info.cred_limits:
        lim = cl.maxnode_hard if cl.maxnode_hard is not None else cl.maxnode
        if lim is not None and q > lim:     # (Maui would keep it idle for ever)
            return f"requests {q} machines, more than MAXPROC {lim} of {kind} {name}"
        ps = cl.maxps_hard if cl.maxps_hard is not None else cl.maxps
        wall = request(job)
        if ps and wall is not None and q * wall > ps:
            return f"requests {q} machines × {wall:g} s, more than MAXPS {ps} of {kind} {name}"
    return None


def window_blocked(s: MauiCore, now: float) -> bool:
    """No backfill window at all this iteration (MBF.c ``MBFGetWindow``): the window's pseudo-job - user,
    group, account and class [ALL], 1 processor for 1 s, in the default QOS of those credentials - fails
    the soft limits (MJob.c ``MJobCheckLimits``), and then no node is examined.  [ALL] runs nothing, so
    only its QOS can block it: the default QOS (DEFAULT unless USERCFG[DEFAULT] QDEF...) at its soft
    MAXJOB, MAXPROC or MAXPS."""
    if not s.cfg.qos:
        return False
    qos = job_qos(s.cfg, "", {"users": ALL, "groups": ALL, "accounts": ALL, "classes": ALL})
    entry = s._cred("qos", qos)
    if entry is None or not has_limit(entry):
        return False
    return over(SimpleNamespace(cred_limits=((("qos", qos), entry),)), 1, 1.0, s.use_cred, now)  # type: ignore[arg-type]


class CredLimits:
    """SystemQueueTime and EffQueueDuration of the jobs under per-credential limits (module docstring)."""

    def __init__(self, s: MauiCore):
        self.s = s
        self.sqt: dict[str, float] = {}     # SystemQueueTime when reset (else the submission time)
        self.eff: dict[str, float] = {}     # EffQueueDuration (absent: 0)
        self.next: dict[str, float] | None = None   # the EffQueueDurations set by this iteration
        self.run: dict[str, tuple[JobInfo, float, int, int, float, float]] = {}   # info, p̃, seq, q, wait, end

    @staticmethod
    def make(s: MauiCore) -> CredLimits | None:
        """The tracker, when USERCFG/GROUPCFG/ACCOUNTCFG/CLASSCFG/QOSCFG set MAXJOB, MAXPROC or MAXPS, a
        credential has a fairshare cap or REJECTNEGPRIOJOBS is on
        (node mechanics, interval mode); None otherwise (queue time then runs from submission)."""
        cfg = s.cfg
        cl = any(has_limit(c) for kind in ("users", "groups", "accounts", "classes", "qos")
                 for c in getattr(cfg, kind).values())
        cl = cl or cfg.rejectnegpriojobs or s._fs_caps    # a capped job's EffQueueDuration stays too
        return CredLimits(s) if cl and not s.counts and s.interval is not None else None

    def wait(self, e: Entry, now: float) -> float:
        """The queue time Maui ranks waiting job ``e`` by (MPriority.c ``MJobGetStartPriority``)."""
        eff = self.eff.get(e.id, 0.0)
        return eff if eff > 0 else now - self.sqt.get(e.id, e.r)

    def started(self, e: Entry, now: float) -> None:
        self.run[e.id] = (self.s.info[e.id], e.p, e.seq, e.q, now - self.sqt.pop(e.id, e.r), now + e.p)
        self.eff.pop(e.id, None)
        if self.next is not None:
            self.next.pop(e.id, None)

    def ended(self, jid: str) -> None:
        self.run.pop(jid, None)

    def select_all(self, now: float) -> None:
        """MPolicy.c ``MQueueSelectAllJobs`` (hard level) then ``MQueueSelectJobs`` at the start of an
        iteration whose waiting jobs were just re-ranked: the resets and the new EffQueueDurations, which
        rank the jobs from the next iteration on (MQueuePrioritizeJobs ran before them)."""
        s = self.s
        eff = dict(self.eff)
        rows: list[tuple[float, int, Entry | None, tuple[JobInfo, int, float] | None]] = [
            (e.kp[0], e.seq, e, None) for e in s.wq.main]
        for info, p, seq, q, w, end in self.run.values():
            rows.append((-s.score(info, p, w), seq, None, (info, q, end)))
        rows.sort(key=lambda r: (r[0], r[1]))
        use: dict[tuple[str, str], Use] = {}
        for _, _, e, run in rows:
            if e is None:
                info, q, end = run    # type: ignore[misc]
                for key, _ in info.cred_limits:
                    use.setdefault(key, Use()).add(q, end)
                continue
            info = s.info[e.id]
            if s.defer.held(e):
                continue         # held or deferred (maui_defer.py): skipped before the limits, as REJECTNEGPRIOJOBS
            if s.cfg.rejectnegpriojobs and -e.kp[0] < 0:
                continue         # REJECTNEGPRIOJOBS: not selected, so its EffQueueDuration stays as it was
            if info.cred_limits and over(info, e.q, e.p, use, now, hard=True):
                self.sqt[e.id] = now
            elif ((not info.cred_limits or not over(info, e.q, e.p, s.use_cred, now, hard=True))
                  and not (s._fs_caps and fs_capped(s.cfg, s.fs, info.keys, e.q, e.p))):
                eff[e.id] = now - self.sqt.get(e.id, e.r)
        self.next = eff

    def begin(self) -> None:
        """A new iteration: the EffQueueDurations of the last one rank the jobs now."""
        if self.next is not None:
            self.eff, self.next = self.next, None
