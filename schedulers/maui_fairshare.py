"""Fairshare usage as Maui's simulator accrues it, poll by poll (issue 29; node mechanics, interval mode).

:class:`~batfeed.schedulers.fairshare.Fairshare` charges running jobs continuously; Maui charges them
at its iterations, and :class:`PollFairshare` follows it:

- **Accrual** (MSim.c ``MSimRMGetInfo`` → MStats.c ``MStatUpdateActiveJobUsage``, FSPOLICY
  DEDICATEDPS): at every poll, before the scheduling pass, each active job is charged processors ×
  min(RMPOLLINTERVAL, now − start) - except at its start poll and at the poll where it completes,
  where the simulator has terminated it first.  A job that starts at poll s and completes at poll c
  (the first at or after its end) is thus charged for [s, c − Δ]: continuous charging from s, cut
  at c − Δ (:meth:`PollFairshare.stop_at`).
- **Windows** (Server.c ``ServerProcessRequests`` → MFS.c ``MFSUpdateData``, rotate): the history
  shifts at the end of the first iteration whose time is in a new FSINTERVAL window (times aligned on
  multiples of FSINTERVAL), so the window boundary is the first poll p at or after k·FSINTERVAL, the
  charge made at p still goes to the old window and the pass at p still ranks with it; the decayed
  sum is MFS.c ``MFSCalcFactor``'s (window i weighs FSDECAY^i, i < FSDEPTH).
- **No usage, no fairshare** (MPriority.c ``MJobGetStartPriority``): the fairshare component counts
  only once the decayed total usage is > 0 (:meth:`PollFairshare.any_usage`).
- **Caps** (MPriority.c ``MJobGetStartPriority``, :func:`fs_component`): FSUSERCAP, FSGROUPCAP,
  FSACCOUNTCAP, FSCLASSCAP cap each credential's factor (target − usage %) from above, FSCAP the
  weighted sum (before FSWEIGHT); 0 is no cap.
- **Fairshare caps of a credential** (``FSTARGET=90000^``, ``FSTARGET=25%``; MFS.c ``MFSCheckCap``,
  :func:`fs_capped`): a job is not selected while one of its credentials' own capped usage would exceed
  the cap; the credential's factor in the priority is 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Iterator
from typing import TYPE_CHECKING

from batfeed.schedulers.fairshare import Fairshare
from batfeed.schedulers.maui_creds import request

if TYPE_CHECKING:
    from batfeed.schedulers.maui_config import MauiConfig, Target
    from batsim.batsim import Job


def make_fairshare(cfg: MauiConfig, interval: float | None) -> Fairshare:
    """:class:`PollFairshare` for Maui's node mechanics in interval mode (``interval``), else the continuous
    :class:`~batfeed.schedulers.fairshare.Fairshare`."""
    on = cfg.fspolicy != "NONE"
    if interval is not None:
        return PollFairshare(cfg.fsinterval, cfg.fsdepth, cfg.fsdecay, on, interval)
    return Fairshare(cfg.fsinterval, cfg.fsdepth, cfg.fsdecay, enabled=on)


def fs_component(cfg: MauiConfig, fs: Fairshare, terms: Iterable[tuple[tuple[str, str], float, Target]]) -> float:
    """The fairshare component before FSWEIGHT (MPriority.c ``MJobGetStartPriority``): Σ sub-weight ×
    MIN(target − usage %, FS<kind>CAP) over the job's credentials with a target, then MIN(that, FSCAP)
    (MIN only when the cap is > 0, MFS.c ``MFSProcessOConfig`` reads the caps as integers)."""
    total = 0.0
    for key, w, target in terms:
        f = target.delta(fs.usage_pct(key))
        cap = getattr(cfg, f"fs{key[0]}cap")
        total += w * (min(f, cap) if cap > 0 else f)
    return min(total, cfg.fscap) if cfg.fscap > 0 else total


def _caps(cfg: MauiConfig, keys: Iterable[tuple[str, str]]) -> Iterator[tuple[tuple[str, str], Target]]:
    """The credentials among ``keys`` whose own FSTARGET is a cap (``^`` or ``%``), with it."""
    for key in keys:
        own = getattr(cfg, "classes" if key[0] == "class" else key[0] + "s").get(key[1])
        if own is not None and own.fstarget is not None and own.fstarget.mode in ("^", "%"):
            yield key, own.fstarget


def fs_capped(cfg: MauiConfig, fs: Fairshare, keys: Iterable[tuple[str, str]], q: int, p: float) -> bool:
    """A job of ``q`` processors and walltime ``p`` with credentials ``keys`` is over one of their own
    fairshare caps (MFS.c ``MFSCheckCap``, called by MPolicy.c ``MQueueCheckSingleJob`` when FSPOLICY is
    not NONE): the credential's decayed usage (FSUsage[0] + FSFactor, processor-seconds) plus the job's
    request (processors × walltime; under DEDICATEDPES its processor-equivalents alone) exceeds
    ``FSTARGET=N^``, or that sum in percent of the decayed total exceeds ``FSTARGET=N%`` (never while
    the total is 0).  Only the credential's own entry counts (no DEFAULT fallback)."""
    if not fs.enabled:
        return False
    req = float(q) if cfg.fspes else q * p
    for key, t in _caps(cfg, keys):
        hist = fs.usage.get(key)
        used = req + (sum(w * u for w, u in zip(fs.weights, hist, strict=True)) if hist else 0.0)
        if t.mode == "%":
            total = sum(w * u for w, u in zip(fs.weights, fs.total, strict=True))
            used = used / total * 100.0 if total > 0 else 0.0
        if used > t.value:
            return True
    return False


def fs_never(cfg: MauiConfig, keys: Iterable[tuple[str, str]], job: Job) -> str | None:
    """Why ``job`` can never pass its credentials' absolute fairshare caps (its request alone exceeds one:
    rejected at submission, Maui keeps it idle), or None."""
    q, p = job.requested_resources, request(job)
    req = float(q) if cfg.fspes else q * (p if p is not None else math.inf)
    for (kind, name), t in _caps(cfg, keys):
        if t.mode == "^" and req > t.value:
            return f"requests {req:g} processor-seconds, more than FSTARGET={t.value:g}^ of {kind} {name}"
    return None


class PollFairshare(Fairshare):
    """Maui's poll-by-poll fairshare accrual (module docstring); ``t0``, the first submission, anchors
    the polls t0 + kΔ and is set once known."""

    def __init__(self, interval: float, depth: int, decay: float, enabled: bool, poll: float):
        super().__init__(interval, depth, decay, enabled)
        self.poll = float(poll)
        self.t0: float | None = None

    def boundary(self, k: int) -> float:
        """The poll at which window k begins to be charged: the first at or after k·FSINTERVAL."""
        b = k * self.interval
        t0 = self.t0 if self.t0 is not None else 0.0
        if b <= t0:
            return t0
        return t0 + math.ceil((b - t0) / self.poll - 1e-9) * self.poll

    def advance(self, now: float) -> None:
        if not self.enabled or now <= self.t:
            return
        while (b := self.boundary(self.window + 1)) < now:   # rolled only after the pass at b
            self._charge(b)
            self._roll()
        self._charge(now)

    def stop(self, keys: Iterable[Hashable], machines: int, now: float) -> None:
        """The job of ``keys`` on ``machines`` machines ends at ``now``: Maui charged it up to the poll
        before its completion poll (the first poll at or after ``now``)."""
        k = math.ceil((now - (self.t0 or 0.0)) / self.poll - 1e-9)
        self.stop_at(keys, machines, now, (self.t0 or 0.0) + (k - 1) * self.poll)

    def stop_at(self, keys: Iterable[Hashable], machines: int, now: float, cut: float) -> None:
        """The job of ``keys`` on ``machines`` machines ends at ``now``, charged up to ``cut`` <= now only."""
        keys = list(keys)
        super().stop(keys, machines, now)
        if not self.enabled or cut >= now:
            return
        hi = now
        for i in range(self.depth):            # hist[i] holds (boundary(window - i), boundary(window - i + 1)]
            lo = max(cut, self.boundary(self.window - i)) if self.window - i > 0 else cut
            if hi > lo:
                amount = machines * (hi - lo)
                for key in keys:
                    hist = self.usage.get(key)
                    if hist is not None:
                        hist[i] -= amount
                self.total[i] -= amount
            hi = lo
            if hi <= cut:
                break
        self._pct = None

    def any_usage(self) -> bool:
        """Maui counts the fairshare component only when the decayed total usage is > 0."""
        return sum(w * u for w, u in zip(self.weights, self.total, strict=True)) > 1e-9
