"""Confidence intervals across seeds: mean ± t·s/√n (Student t, n − 1 degrees of freedom).

scipy is not a dependency: the t quantile comes from the closed form of Student's t CDF for an
integer number of degrees of freedom (Abramowitz & Stegun 26.7.3–26.7.4), inverted by bisection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["mean_ci", "t_quantile"]


def _two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's T with ``df`` (integer >= 1) degrees of freedom (A&S 26.7.3/4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:                         # odd: (2/π)(θ + sinθ cosθ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + …))
        if df == 1:
            return 2 * theta / math.pi
        term, total = 1.0, 1.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0             # even: sinθ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + …)
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_quantile(level: float, df: int) -> float:
    """The t such that P(|T| <= t) = ``level`` (e.g. 0.95, df = 4: 2.776)."""
    if not 0 < level < 1 or df < 1:
        raise ValueError(f"need 0 < level < 1 and df >= 1, got {level}, {df}")
    lo, hi = 0.0, 1.0
    while _two_sided(hi, df) < level:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _two_sided(mid, df) < level:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return (lo + hi) / 2


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float | None, float | None]:
    """(mean, half-width of the ``level`` confidence interval) of ``values`` (NaN/None dropped);
    half-width None with fewer than two values (no interval from one seed)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return None, None
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, None
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return mean, t_quantile(level, n - 1) * sd / math.sqrt(n)
