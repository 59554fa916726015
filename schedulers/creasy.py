"""CREASY: EASY backfilling with a criticality-based queue priority (Shmueli's thesis, site-level users;
models.md §C [SHM]).

Users continue a session after a job with response R (minutes) with probability
``p_cont(R) = 0.8 / (0.05·R + 1)`` (Eq. 5.1); a job's *criticality* is how fast that probability falls
while it waits, ``crit_j = |dp/dR| = 0.04 / (0.05·R̂_j + 1)²`` with ``R̂_j`` = waited so far + the user's
estimate (minutes).  The queue is ordered by decreasing

    priority_j = α·crit_j + seniority_j          (seniority = minutes waited)

recomputed at every scheduling decision (the key depends on the current time and is not monotone in the
wait: a short job's criticality drops as it waits while its seniority grows).  Everything else is
:class:`~batfeed.schedulers.easy.Easy` unchanged: one head reservation, the same shadow/extra rule,
backfilling in the same priority order (option ``backfill_policy`` to change it), through the shared
queue and availability profile.

Choices (models.md §C "UNDEF → REC"):

- units: minutes everywhere (the only reading of Eq. 5.1 consistent with the thesis's data);
- ties: submission order (the shared queue's tie-break: submit time, then arrival);
- the estimate is the job's walltime (the thesis ran with exact estimates: give walltime = runtime in
  the workload for that); a job without walltime has R̂ = ∞, so crit = 0 (seniority only);
- ``theta`` (EASY's starvation threshold) is off by default: CREASY is starvation-free on its own,
  α·crit ≤ 0.04·α minutes (4 h at α = 6000) while seniority grows without bound.

With ``alpha = 0`` the priority is the wait alone, i.e. submission order: exactly EASY-FCFS's schedule
(``easy`` with ``theta: null``; tests/test_creasy.py), as the thesis's EASY runs are CREASY α = 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.jobqueue import WaitQueue
from batfeed.schedulers.options import Option, specs
from batfeed.schedulers.policies import Policy

__all__ = ["Creasy", "creasy_policy", "criticality", "p_cont"]


def p_cont(r_min: float) -> float:
    """Probability to continue the session after a job with response ``r_min`` minutes (Eq. 5.1)."""
    return 0.8 / (0.05 * r_min + 1.0)


def criticality(r_hat_min: float) -> float:
    """``|dp_cont/dR|`` at ``r_hat_min`` minutes: ``0.04 / (0.05·R̂ + 1)²`` (0 for an infinite R̂)."""
    d = 0.05 * r_hat_min + 1.0
    return 0.04 / (d * d)


def creasy_policy(alpha: float) -> Policy:
    """The dynamic queue order of CREASY with weight ``alpha``: key = −(α·crit + seniority) at ``now``."""
    def key(e: Any, now: float) -> float:
        wait = (now - e.r) / 60.0
        d = 0.05 * (wait + e.p / 60.0) + 1.0
        return -(alpha * 0.04 / (d * d) + wait)

    def vkey(r: np.ndarray, p: np.ndarray, now: float) -> np.ndarray:   # the same operations, element-wise
        wait = (now - r) / 60.0
        d = 0.05 * (wait + p / 60.0) + 1.0
        return -(alpha * 0.04 / (d * d) + wait)

    return Policy(f"CREASY({alpha:g})", key, True, vkey)


class Creasy(Easy):
    OPTIONS = specs((o for n, o in Easy.OPTIONS.items() if n != "policy"), [
        Option("alpha", "number", 6000.0, "weight α of the criticality in priority = α·crit + minutes waited "
               "(0: EASY-FCFS; the thesis's best: 6000)", minimum=0),
        Option("theta", "number", None, "EASY's starvation threshold (null: none, CREASY is starvation-free)",
               minimum=0, nullable=True, unit="seconds"),
    ])

    def make_queue(self) -> WaitQueue:
        o = self.opts
        return WaitQueue(creasy_policy(float(o["alpha"])), o.get("backfill_policy"), o.get("theta"), o["ties"],
                         o["backfill_theta"])
