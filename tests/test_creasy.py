"""CREASY (schedulers/creasy.py; Shmueli's thesis, models.md §C): hand-computed p_cont and criticality,
the priority order on 4-job examples where criticality beats seniority and where it does not, and
α = 0 = EASY-FCFS job for job on KTH-SP2."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from batfeed.schedulers.backfill import OptionError
from batfeed.schedulers.creasy import Creasy, creasy_policy, criticality, p_cont
from sched_helpers import starts

from batfeed.registry import make_scheduler


def test_p_cont_and_criticality_values() -> None:
    assert p_cont(0) == pytest.approx(0.8) and p_cont(20) == pytest.approx(0.4) and p_cont(60) == pytest.approx(0.2)
    assert criticality(0) == pytest.approx(0.04) and criticality(20) == pytest.approx(0.01)
    # crit = |dp/dR|: a numerical derivative of p_cont
    assert criticality(35) == pytest.approx((p_cont(35 - 1e-4) - p_cont(35 + 1e-4)) / 2e-4, rel=1e-6)
    assert criticality(float("inf")) == 0


class _E:  # the queue entry attributes the key reads
    def __init__(self, r: float, p: float) -> None:
        self.r, self.p = r, p


def test_priority_key_by_hand() -> None:
    # waited 59 min, estimate 120 min: R̂ = 179, crit = 0.04 / 9.95² = 4.0403e-4; α = 6000: 2.424 + 59
    key = creasy_policy(6000).key
    assert -key(_E(60, 7200), 3600) == pytest.approx(6000 * 0.04 / 9.95 ** 2 + 59)
    assert -creasy_policy(0).key(_E(60, 7200), 3600) == pytest.approx(59)
    assert -key(_E(0, float("inf")), 600) == pytest.approx(10)  # no walltime: seniority only


# Machine of 4; a blocker holds it until t = 3600; four whole-machine jobs (exact estimates) queue behind.
# At 3600 (waits 59, 58, 57, 56 min; R̂ = wait + estimate):
#   J1 (120 min): 59 + 6000·0.04/(0.05·179 + 1)² = 59 + 2.42 = 61.4
#   J2 (1 min):   58 + 6000·0.04/(0.05·59 + 1)²  = 58 + 15.38 = 73.4   -> starts, ends 3660
#   J3 (10 min):  57 + 6000·0.04/(0.05·67 + 1)²  = 57 + 12.68 = 69.7
#   J4 (1 min):   56 + 6000·0.04/(0.05·57 + 1)²  = 56 + 16.19 = 72.2
# at 3660 (one minute more): J4 57 + 15.78 = 72.8, J3 58 + 12.40 = 70.4, J1 60 + 2.40 = 62.4 -> J4, ends 3720;
# then J3 (3720-4320) before J1 (4320): criticality beats seniority.  FCFS (α = 0): J1, J2, J3, J4.
BLOCKED = [("B", 0, 4, 3600, 3600), ("J1", 60, 4, 7200, 7200), ("J2", 120, 4, 60, 60),
           ("J3", 180, 4, 600, 600), ("J4", 240, 4, 60, 60)]


def test_criticality_beats_seniority(tmp_path: Path) -> None:
    assert starts(tmp_path / "a", BLOCKED, Creasy({"alpha": 6000})) == {
        "B": 0, "J2": 3600, "J4": 3660, "J3": 3720, "J1": 4320}
    assert starts(tmp_path / "b", BLOCKED, Creasy({"alpha": 0})) == {
        "B": 0, "J1": 3600, "J2": 10800, "J3": 10860, "J4": 11460}


# Seniority wins: the blocker holds the machine 4 h; J1 (2 h) waited 240 min: 240 + 6000·0.04/(0.05·360 + 1)²
# = 240.66; J2 (1 min, submitted at 14000 s) waited 6.67 min: 6.67 + 6000·0.04/(0.05·7.67 + 1)² = 132.1;
# J3 (1 min, at 14300 s): 1.67 + 6000·0.04/(0.05·2.67 + 1)² = 188.5; J4 (30 min, at 14390 s): 0.17 +
# 6000·0.04/(0.05·30.17 + 1)² = 38.2.  At 14400: J1 (240.66) first, ends 21600; by then seniority dominates:
# J2 126.7 + 4.4, J3 121.7 + 4.7, J4 120.2 + 3.3 (waits + α·crit, minutes): submission order.
SENIOR = [("B", 0, 4, 14400, 14400), ("J1", 0.5, 4, 7200, 7200), ("J2", 14000, 4, 60, 60),
          ("J3", 14300, 4, 60, 60), ("J4", 14390, 4, 1800, 1800)]


def test_seniority_beats_criticality(tmp_path: Path) -> None:
    got = starts(tmp_path / "s", SENIOR, Creasy({"alpha": 6000}))
    assert got["J1"] == 14400                      # the longest waiter goes first despite the others' criticality
    key = creasy_policy(6000).key
    at = 21600.0                                    # J1 ends: J2, J3, J4 ordered by the key then
    rest = sorted(("J2", "J3", "J4"), key=lambda j: key(_E(*[(r, w) for n, r, _, _, w in SENIOR if n == j][0]), at))
    assert rest == ["J2", "J3", "J4"]               # by then seniority dominates: submission order
    assert [got[j] for j in rest] == [21600, 21660, 21720]


def test_alpha_zero_is_easy_fcfs_on_kth(kth_trace: Path, tmp_path: Path) -> None:
    from batfeed.adapters.swf import convert_swf

    from batfeed.runner import run_simulation

    conv = convert_swf(kth_trace, tmp_path / "in", max_jobs=3000)
    out = {}
    for name, sched, opts in (("creasy", "creasy", {"alpha": 0}), ("easy", "easy", {"policy": "FCFS", "theta": None}),
                              ("c6000", "creasy", {"alpha": 6000})):
        run_simulation(conv.platform_path, [conv.workload_path], scheduler=sched, options=opts,
                       export=tmp_path / name)
        with open(tmp_path / f"{name}_jobs.csv", newline="") as f:
            out[name] = sorted((r["job_id"], r["starting_time"], r["allocated_resources"]) for r in csv.DictReader(f))
    assert len(out["easy"]) == 3000 and out["creasy"] == out["easy"]
    assert out["c6000"] != out["easy"]


def test_registered_and_options() -> None:
    s = make_scheduler("creasy", {"alpha": 1500})
    assert isinstance(s, Creasy) and s.opts["alpha"] == 1500 and s.opts["theta"] is None
    with pytest.raises(OptionError):
        Creasy({"alpha": -1})
    with pytest.raises(OptionError):
        Creasy({"policy": "SPF"})                   # the order is CREASY's own


def test_vectorised_key_is_bitwise_the_scalar_key_and_gives_the_same_schedule(kth_trace: Path, tmp_path: Path) -> None:
    """The queue re-keys CREASY with numpy (Policy.vkey): the same floats as the per-entry key, so the same
    order and schedule (here with vkey switched off for comparison, on 3,000 KTH-SP2 jobs)."""
    import numpy as np
    from batfeed.adapters.swf import convert_swf
    from batfeed.schedulers.jobqueue import WaitQueue
    from test_engine_helpers import run

    rng = np.random.default_rng(3)
    r = rng.uniform(0, 1e6, 500)
    p = np.where(rng.random(500) < 0.1, np.inf, rng.uniform(1, 1e5, 500))
    for alpha in (0, 1500, 6000):
        pol = creasy_policy(alpha)
        scalar = np.array([pol.key(_E(a, b), 2e6) for a, b in zip(r, p, strict=True)])
        assert np.array_equal(pol.vkey(r, p, 2e6), scalar)

    class ScalarCreasy(Creasy):
        def make_queue(self) -> WaitQueue:
            pol = creasy_policy(float(self.opts["alpha"]))._replace(vkey=None)
            return WaitQueue(pol, self.opts.get("backfill_policy"), self.opts.get("theta"))

    conv = convert_swf(kth_trace, tmp_path / "in", max_jobs=3000)
    out = []
    for name, sched in (("vec", Creasy({"alpha": 6000})), ("scalar", ScalarCreasy({"alpha": 6000}))):
        run([conv.workload_path], sched, platform=conv.platform_path, export=tmp_path / name)
        out.append((tmp_path / f"{name}_jobs.csv").read_text())
    assert out[0] == out[1]
