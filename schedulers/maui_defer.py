"""Maui's defer holds (DEFERTIME, DEFERCOUNT): a job asking more processors than are up waits aside.

Maui 3 (TempleHPC/maui-scheduler c486472) defers a job it cannot run through MJob.c ``MJobSetHold``
(hold type ``mhDefer``, duration DEFERTIME).  The one trigger batfeed's platforms can produce is MPolicy.c
``MQueueSelectAllJobs``, at the start of every iteration: a job needing more processors than the
partition's *up* ones (``MPar[0].URes.Procs``: MPar.c ``MParUpdate`` counts the nodes ``MNODEISUP``, i.e.
not Down nor Drained; in Batsim, the machines not unavailable) is deferred and skipped.  The rule, as
``MJobSetHold`` and MRM.c ``MRMJobPostUpdate`` write it:

- DEFERTIME <= 0: "defer disabled" - the job is only skipped by that iteration;
- otherwise the job is deferred until now + DEFERTIME (``SyncDeadLine``) and its ``DeferCount`` grows; it
  is restored at the first iteration *after* that instant (``MSched.Time > SyncDeadLine``, at the RM
  update that precedes the scheduling), its queue time restarting (``SystemQueueTime = now``), and
  checked again by that iteration;
- the defer that makes ``DeferCount`` exceed DEFERCOUNT (> 0) places a batch hold, which nothing in a
  simulation releases: batfeed rejects the job then (every job is accounted for: submitted = completed
  + rejected + killed), as it rejects a job deferred for INFINITY, and a job still too large when no
  machine event is left (DEFERTIME <= 0 or DEFERCOUNT 0: Maui would keep it idle for ever).

Maui's other defers cannot happen here or are rejections at submission already: a job larger than the
platform (``MQueueSelectJobs``, configured processors; base.py rejects it), a class limit the job can
never meet (MRM.c ``MRMJobPostLoad`` → ``MJobCheckClassJLimits``: a batch hold at submission,
maui_limits.py ``never``), a job no partition can ever hold (MJob.c ``MJobReserve``, ``MJobPReserve``:
HOSTLIST, rejected at submission), a start that fails (MJob.c ``MJobStart``, DEFERSTARTCOUNT: Batsim
starts every job) and a reserved job that cannot start (MQueue.c ``MQueueScheduleRJobs``: only with
reservations kept across iterations, not RESERVATIONPOLICY CURRENTHIGHEST).

Maui's *simulator* removes a job instead of deferring it whenever DEFERTIME differs from RMPOLLINTERVAL
(``MJobSetHold``: "removed ... (cannot run in simulated environment)"): recorded with nodes down for good,
the same jobs never run.  With DEFERTIME = RMPOLLINTERVAL it defers, and with nodes taken down and brought
back mid-run (docs/maui.md) the restores and batch holds above match it job by job.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from batfeed.schedulers.resources import count

if TYPE_CHECKING:
    from batfeed.schedulers.jobqueue import Entry
    from batfeed.schedulers.maui_core import MauiCore


class Defer:
    """The deferred jobs of a :class:`~batfeed.schedulers.maui_core.MauiCore` (module docstring)."""

    def __init__(self, s: MauiCore):
        self.s = s
        self.until: dict[str, tuple[float, Entry]] = {}   # deferred job -> (SyncDeadLine, its entry)
        self.count: dict[str, int] = {}                    # job -> DeferCount (kept once it starts)
        self.up = 0                                        # machines up at this iteration

    def held(self, e: Entry) -> bool:
        """``e`` is deferred, or skipped by this iteration for asking more machines than are up."""
        return e.id in self.until or e.q > self.up

    def select_all(self, now: float) -> None:
        """The restores of MRM.c ``MRMJobPostUpdate``, then the defers of MPolicy.c ``MQueueSelectAllJobs``
        (via MJob.c ``MJobSetHold``) at the start of an iteration at ``now``."""
        s, cfg = self.s, self.s.cfg
        self.up = s.nb_machines - (count(s.unavailable) if s.unavailable else 0)
        strict = s.interval is not None          # polls: the first one after the deadline
        for jid, (t, e) in list(self.until.items()):
            if (now > t + 1e-9) if strict else (now >= t - 1e-9):
                del self.until[jid]
                self._restart(e, now)
        gone: list[tuple[Entry, str]] = []
        # every machine up: no job asks more (base.py rejects a job larger than the platform at submission)
        for e in s.wq.main if self.up < s.nb_machines else ():
            if e.id in self.until or e.q <= self.up:
                continue
            if cfg.defertime > 0:
                n = self.count[e.id] = self.count.get(e.id, 0) + 1
                if cfg.defercount > 0 and n > cfg.defercount:
                    gone.append((e, f"batch hold after {n} defers (DEFERCOUNT {cfg.defercount}): requests {e.q} "
                                    f"machines, {self.up} are up"))
                    continue
                if math.isinf(cfg.defertime):
                    gone.append((e, f"deferred for ever (DEFERTIME INFINITY): requests {e.q} machines, "
                                    f"{self.up} are up"))
                    continue
            if (cfg.defertime <= 0 or cfg.defercount == 0) and s.bs.no_more_external_events:
                gone.append((e, f"requests {e.q} machines, {self.up} are up and no machine event is left "
                                f"(Maui keeps it idle for ever)"))
                continue
            if cfg.defertime > 0:
                t = now + cfg.defertime
                self.until[e.id] = (t, e)
                s._call(s._next_grid(t) if strict else t)    # restored then (MRM.c MRMJobPostUpdate)
        for e, why in gone:
            self.count.pop(e.id, None)
            s.wq.remove(e)
            s.info.pop(e.id, None)
            s.reject(e.job, why)

    def _restart(self, e: Entry, now: float) -> None:
        """``SystemQueueTime = now``: the restored job's queue time restarts (its priority with it)."""
        s = self.s
        if s.limits is not None:
            s.limits.sqt[e.id] = now
            s.limits.eff.pop(e.id, None)
        else:
            e.r = now
            s.order.off()       # no longer queued in submission order (maui_order.py)
        s._idle = None          # the queue changed though its signature did not
