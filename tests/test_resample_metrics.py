"""Validation metrics of Zakay & Feitelson's user-based resampling (models.md §E): stack depths, Hurst R/S."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from batfeed.users.resample_metrics import (
    COLUMNS,
    compare,
    hurst_rs,
    rs_points,
    stack_depths,
    validation_metrics,
)

NAN = float("nan")


def test_stack_depths_exact_by_hand():
    # stack (top first) before each item -> 0-based depth of the match (NaN = not found, pushed):
    # 1: []         -> NaN   2: [1]       -> NaN   1: [2,1]     -> 1   3: [1,2] -> NaN
    # 2: [3,1,2]    -> 2     2: [2,3,1]   -> 0     4: [2,3,1]   -> NaN 1: [4,2,3,1] -> 3
    depths, summary = stack_depths([1, 2, 1, 3, 2, 2, 4, 1], "exact")
    np.testing.assert_array_equal(depths, [NAN, NAN, 1, NAN, 2, 0, NAN, 3])
    assert summary == {"mean": 1.5, "median": 1.5, "not_found": 0.5, "n": 8.0}  # (1+2+0+3)/4, 4 of 8 new


def test_stack_depths_tolerance_by_hand():
    # 5 % of the stacked value; a matched entry keeps its value:
    # 100: []            -> NaN
    # 104: [100]         -> |4| <= 5: depth 0, entry stays 100
    # 200: [100]         -> NaN
    # 106: [200,100]     -> 6 > 5 (it would match 104: the entry was not replaced) -> NaN
    #  96: [106,200,100] -> 10 > 5.3, 104 > 10, 4 <= 5: depth 2
    # 209: [100,106,200] -> 9 <= 10: depth 2
    values = [100, 104, 200, 106, 96, 209]
    depths, summary = stack_depths(values, "5%")
    np.testing.assert_array_equal(depths, [NAN, 0, NAN, NAN, 2, 2])
    assert summary["mean"] == pytest.approx(4 / 3)
    assert summary["not_found"] == 0.5
    # exact matching: all distinct, nothing found
    depths, summary = stack_depths(values, "exact")
    assert np.isnan(depths).all() and math.isnan(summary["mean"]) and summary["not_found"] == 1.0


def test_stack_depths_empty_and_bad_match():
    depths, summary = stack_depths([], "exact")
    assert len(depths) == 0 and math.isnan(summary["mean"])
    with pytest.raises(ValueError):
        stack_depths([1], "close")


def _anis_lloyd(n: int) -> float:
    """E[R/S] of n i.i.d. normal values (Anis & Lloyd 1976)."""
    g = math.exp(math.lgamma((n - 1) / 2) - math.lgamma(n / 2)) / math.sqrt(math.pi)
    return g * sum(math.sqrt((n - i) / i) for i in range(1, n))


def test_hurst_white_noise():
    # 2^16 i.i.d. values: H = 0.5 asymptotically, but R/S is biased upward for small n; the expected
    # slope over our window sizes (Anis-Lloyd E[R/S]) is 0.532; over 30 seeds H = 0.528 ± 0.012
    # (range 0.50-0.55), so ± 0.03 around the expectation (≈ 2.5 sd) and 0.5 ≤ H ≤ 0.58.
    x = np.random.default_rng(1).standard_normal(2**16)
    ns, _ = rs_points(x)
    expected = np.polyfit(np.log(ns), np.log([_anis_lloyd(int(n)) for n in ns[ns <= 300]] +
                                             [math.sqrt(n * math.pi / 2) for n in ns[ns > 300]]), 1)[0]
    assert 0.5 < expected < 0.56
    h = hurst_rs(x)
    assert abs(h - expected) < 0.03
    assert 0.5 <= h <= 0.58


def test_hurst_persistent_and_spacing():
    x = np.cumsum(np.random.default_rng(2).standard_normal(2**14))  # random walk: R/S ~ n, H ≈ 1
    assert hurst_rs(x) > 0.9
    ns, rs = rs_points(x)
    assert ns[0] == 8 and ns[-1] <= 2**13 and np.all(np.diff(ns) > 0)
    assert np.all(ns[1:] / ns[:-1] <= 1.2 + 1 / 8 + 1e-9)  # ×1.2 up to rounding
    assert math.isnan(hurst_rs(np.ones(100)))  # S = 0 everywhere: no point
    assert math.isnan(hurst_rs(np.arange(10.0)))  # too short for 2 window sizes


def _tiny() -> dict:
    def job(i, t, res, wall, prof):
        return {"id": i, "subtime": t, "res": res, "walltime": wall, "profile": prof}
    return {
        "nb_res": 8,
        # out of subtime order on purpose: sorted -> a, b, c, d
        "jobs": [job("d", 30, 2, 98, "p50"), job("a", 0, 4, 100, "p50"), job("c", 20, 4, 300, "p200"),
                 job("b", 10, 2, 102, "p52")],
        "profiles": {"p50": {"type": "delay", "delay": 50}, "p52": {"type": "delay", "delay": 52},
                     "p200": {"type": "delay", "delay": 200}},
    }


def test_validation_metrics_tiny():
    m = validation_metrics(_tiny())
    # runtime  [50, 52, 200, 50]:   NaN, 0 (2 <= 2.5), NaN, 1 (under 200)  -> mean 0.5
    # walltime [100, 102, 300, 98]: NaN, 0, NaN, 1                          -> mean 0.5
    # cpus     [4, 2, 4, 2]:        NaN, NaN, 1, 1                          -> mean 1
    assert (m["runtime_depth"], m["maxruntime_depth"], m["cpus_depth"]) == (0.5, 0.5, 1.0)
    assert m["runtime_not_found"] == m["maxruntime_not_found"] == m["cpus_not_found"] == 0.5
    assert math.isnan(m["hurst"]) and m["jobs"] == 4.0  # 30 s: one hourly bin


def test_compare_and_determinism(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_tiny()))
    np.testing.assert_equal(validation_metrics(path), validation_metrics(_tiny()))  # NaN == NaN here
    res = [dict.fromkeys(COLUMNS, 1.0), dict.fromkeys(COLUMNS, 3.0)]
    df = compare(path, res)
    assert list(df.index) == list(COLUMNS)
    assert df.loc["cpus_depth", "original"] == 1.0
    assert df["mean"].tolist() == [2.0] * 4
    assert df["sd"].tolist() == pytest.approx([math.sqrt(2)] * 4)
    assert (df["n"] == 2).all()
    x = np.random.default_rng(3).standard_normal(5000)
    assert hurst_rs(x) == hurst_rs(x.copy())
