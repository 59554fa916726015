"""Maui fairshare usage: FSINTERVAL windows, FSDEPTH of them, FSDECAY weights (models.md §F).

Usage is charged continuously (FSPOLICY DEDICATEDPS: machines × seconds of every running job) to
each of the job's credentials (keys such as ``("account", "p12")``) and to the total.  Time is cut
into windows of FSINTERVAL seconds aligned on simulated time 0 (UNDEF in Maui's documentation →
choice); window 0 is the current one, and when a window ends every credential's history shifts by
one (window FSDEPTH − 1 is forgotten).  The effective usage of a credential is::

    usage_pct(c) = 100 · Σ_{i < FSDEPTH} FSDECAY**i · U_c[i]  /  Σ_{i < FSDEPTH} FSDECAY**i · U_total[i]

(0 when nothing has been used yet).  Maui's priority factor of a credential with target T is then
T − usage_pct (``Target.delta`` in maui_config.py).  Each update costs O(credentials with running
jobs); percentages are cached until the next charge.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable


class Fairshare:
    def __init__(self, interval: float, depth: int, decay: float, enabled: bool = True):
        if not interval > 0 or depth < 1 or not 0 < decay <= 1:
            raise ValueError("fairshare needs interval > 0, depth >= 1 and 0 < decay <= 1")
        self.interval, self.depth, self.decay, self.enabled = float(interval), depth, float(decay), enabled
        self.weights = [decay ** i for i in range(depth)]
        self.usage: dict[Hashable, list[float]] = {}     # credential -> usage per window (0 = current)
        self.total = [0.0] * depth
        self.rate: dict[Hashable, float] = {}             # credential -> machines of its running jobs
        self.total_rate = 0.0
        self.t = 0.0                                      # usage charged up to t
        self.window = 0                                   # index of the current window (start = window·interval)
        self._pct: dict[Hashable, float] | None = None
        self._denominator: float | None = None

    # ------------------------------------------------------------------ charging
    def advance(self, now: float) -> None:
        """Charge the running jobs up to ``now``, shifting the windows whose end has passed."""
        if not self.enabled or now <= self.t:
            return
        target = int(math.floor(now / self.interval))
        while self.window < target:
            self._charge((self.window + 1) * self.interval)
            self._roll()
        self._charge(now)

    def _charge(self, t: float) -> None:
        dt = t - self.t
        if dt <= 0:
            return
        if self.total_rate:
            for key, r in self.rate.items():
                if r:
                    hist = self.usage.get(key)
                    if hist is None:
                        hist = self.usage[key] = [0.0] * self.depth
                    hist[0] += r * dt
            self.total[0] += self.total_rate * dt
            self._pct = None
        self.t = t

    def _roll(self) -> None:
        self.window += 1
        for hist in self.usage.values():
            hist.pop()
            hist.insert(0, 0.0)
        self.total.pop()
        self.total.insert(0, 0.0)
        self._pct = None

    def start(self, keys: Iterable[Hashable], machines: int, now: float) -> None:
        """A job of credentials ``keys`` started on ``machines`` machines at ``now``."""
        if not self.enabled:
            return
        self.advance(now)
        for key in keys:
            self.rate[key] = self.rate.get(key, 0.0) + machines
        self.total_rate += machines

    def stop(self, keys: Iterable[Hashable], machines: int, now: float) -> None:
        if not self.enabled:
            return
        self.advance(now)
        for key in keys:
            r = self.rate.get(key, 0.0) - machines
            if r > 1e-9:
                self.rate[key] = r
            else:
                self.rate.pop(key, None)
        self.total_rate = max(self.total_rate - machines, 0.0)

    # ------------------------------------------------------------------ queries
    def any_usage(self) -> bool:
        """Whether the fairshare component counts (always here; see maui_fairshare.PollFairshare)."""
        return True

    def usage_pct(self, key: Hashable) -> float:
        """Decayed share of credential ``key`` in percent of the decayed total (0 if none yet)."""
        if self._pct is None:
            self._pct = {}
            self._denominator = sum(w * u for w, u in zip(self.weights, self.total, strict=True))
        got = self._pct.get(key)
        if got is None:
            hist = self.usage.get(key)
            den = self._denominator
            got = 0.0 if not hist or not den else 100.0 * sum(
                w * u for w, u in zip(self.weights, hist, strict=True)) / den
            self._pct[key] = got
        return got
