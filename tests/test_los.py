"""LOS (schedulers/los.py): the dynamic programming against hand-computed cases and brute force, and
end-to-end runs on the embedded engine with the invariants checked at every decision:

- the started jobs use at most the free machines and come from the lookahead W;
- head fits (Basic_DP): the started Σq is the largest subset sum of W that fits (exact, by sets of sums);
- head blocked (Reservation_DP): the head's shadow time, computed again after the decision, is not later,
  and the started Σq is the largest over subsets of W \\ {head} respecting free and extra;
- every job is accounted for, and the same input gives byte-identical _jobs.csv.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest
from batfeed.adapters.swf import convert_swf
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.los import Los, basic_dp, knapsack, reservation_dp
from batfeed.schedulers.options import OptionError
from batfeed.schedulers.resources import parse
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_helpers import simulate_jobs, starts
from test_easy import DOWN_EVENTS, DOWN_JOBS, MAINT, MAINT_EXPECTED, MAINT_JOBS, never_on_machine_1_while_down
from test_engine_helpers import jobs_rows, run

from batfeed.registry import make_scheduler

INF = float("inf")


# ---------------------------------------------------------------------------- the DP alone
def test_basic_dp_hand_computed():
    assert basic_dp(10, [6, 5, 4]) == [0, 2]                  # {6, 4} = 10
    assert basic_dp(10, [5, 6, 4]) == [1, 2]
    assert basic_dp(9, [6, 5, 4]) == [1, 2]                   # {5, 4} = 9
    assert basic_dp(3, [6, 5, 4]) == []
    assert basic_dp(20, [6, 5, 4]) == [0, 1, 2]               # all fit
    assert basic_dp(10, [5, 5, 4, 6]) == [0, 1]               # ties: the earliest jobs (fcfs)
    # slowdown tie-break: {5, 5} and {4, 6} both use 10; the second has the larger total slowdown
    assert basic_dp(10, [5, 5, 4, 6], [1.0, 1.0, 3.0, 1.0]) == [2, 3]
    assert basic_dp(10, [5, 5, 4, 6], [1.0, 1.0, 1.0, 1.0]) == [0, 1]


def test_reservation_dp_respects_extra():
    # free 6, extra 2: {a, b} (both after the shadow, 6 > extra) and {c, d} (before) use 6; only {c, d}
    # keeps the reservation
    ends, q = [5.0, 1.0, -1.0, -3.0], [4, 2, 3, 3]
    assert reservation_dp(6, 2, ends, q) == [2, 3]
    assert reservation_dp(6, 6, ends, q) == [0, 1]             # enough extra: the earliest set wins
    assert reservation_dp(6, 2, [5.0, 1.0, -1.0, 0.0], [4, 2, 3, 4]) == [1, 3]   # end == shadow: before
    assert reservation_dp(5, 0, [1.0, 1.0], [1, 1]) == []
    assert reservation_dp(0, 0, [-1.0], [1]) == []


def brute(free, extra, ends, q, values):
    n = len(q)
    v = values if values is not None else [0.0] * n
    best, best_key = [], None
    for r in range(n + 1):
        for s in combinations(range(n), r):
            a = sum(q[i] for i in s)
            b = sum(q[i] for i in s if ends[i] > 0)
            if a > free or b > extra:
                continue
            key = (a, sum(v[i] for i in s), tuple(i in s for i in range(n)))
            if best_key is None or key > best_key:
                best, best_key = list(s), key
    return best


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 25), st.integers(0, 25),
       st.lists(st.tuples(st.integers(1, 12), st.sampled_from([-2.0, 0.0, 3.0]), st.integers(0, 4)),
                max_size=8),
       st.booleans())
def test_knapsack_equals_brute_force(free, extra, items, with_values):
    q = [i[0] for i in items]
    ends = [i[1] for i in items]
    values = [float(i[2]) for i in items] if with_values else None    # integers: exact float sums
    got = knapsack(free, extra, ends, q, values)
    assert got == brute(free, extra, ends, q, values)
    assert basic_dp(free, q, values) == brute(free, free, [0.0] * len(q), q, values)


# ---------------------------------------------------------------------------- instrumented scheduler
def max_sum(free, qs):
    sums = {0}
    for q in qs:
        sums |= {s + q for s in sums if s + q <= free}
    return max(sums)


def max_sum_2d(free, extra, items):
    states = {(0, 0)}
    for q, after in items:
        states |= {(a + q, b + q * after) for a, b in states if a + q <= free and b + q * after <= extra}
    return max(a for a, _ in states)


class CheckedLos(Los):
    """Checks the invariants around every decision (tests only)."""

    def __init__(self, options=None):
        super().__init__(options)
        self.decisions = {"basic": 0, "reservation": 0, "started": 0}

    def schedule(self):
        now = self.bs.time()
        head = self.wq.head()
        free = self.free.count
        n0 = len(self._to_start)
        if head is None or free == 0:
            super().schedule()
            assert len(self._to_start) == n0
            return
        W = self.window()
        fits = self.fits(head, now)
        exact = not self.profile.windows      # under maintenance the DP counts machines, not which ones
        if not fits:
            shadow, extra = self.shadow(now, head)
        super().schedule()
        started = self._to_start[n0:]
        used = sum(j.requested_resources for j in started)
        self.decisions["started"] += len(started)
        assert used <= free
        assert {j.id for j in started} <= {e.id for e in W}
        if fits:
            self.decisions["basic"] += 1
            assert used == max_sum(free, [e.q for e in W]) or not exact
        else:
            self.decisions["reservation"] += 1
            assert head.id not in {j.id for j in started}
            assert self.shadow(now, head)[0] <= shadow
            items = [(e.q, now + e.p > shadow) for e in W if e is not head]
            assert used == max_sum_2d(free, min(extra, free), items) or not exact


# ---------------------------------------------------------------------------- end to end
def test_basic_dp_packs_better_than_easy(tmp_path):
    # 4 machines, all at t = 0: EASY starts A (3) and nothing fits beside; LOS starts B + C (4)
    jobs = [("A", 0, 3, 10, 10), ("B", 0, 2, 10, 10), ("C", 0, 2, 10, 10)]
    assert starts(tmp_path / "los", jobs, CheckedLos()) == {"A": 10, "B": 0, "C": 0}
    assert starts(tmp_path / "easy", jobs, Easy()) == {"A": 0, "B": 10, "C": 10}


def test_reservation_dp_packs_better_than_easy(tmp_path):
    # X holds 1 machine until 10; H (4) is blocked, shadow 10, extra 0; J1 (2) and J2 (3) both end by
    # the shadow: EASY backfills J1 first (then J2 no longer fits), LOS takes J2 (3 machines)
    jobs = [("X", 0, 1, 10, 10), ("H", 1, 4, 5, 5), ("J1", 1, 2, 5, 5), ("J2", 1, 3, 5, 5)]
    los = CheckedLos()
    assert starts(tmp_path / "los", jobs, los) == {"X": 0, "H": 10, "J1": 15, "J2": 1}
    assert los.decisions["reservation"] > 0
    assert starts(tmp_path / "easy", jobs, Easy()) == {"X": 0, "H": 10, "J1": 1, "J2": 15}


def test_depth_limits_the_lookahead(tmp_path):
    jobs = [("A", 0, 3, 10, 10), ("B", 0, 2, 10, 10), ("C", 0, 2, 10, 10)]
    got = starts(tmp_path, jobs, CheckedLos({"depth": 2}))      # W = {A, B}: A (3) beats B (2)
    assert got == {"A": 0, "B": 10, "C": 10}


def random_jobs(n, seed, nb_res=4):
    import random

    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        t += rng.choice([0, 0, 1, 3, 7])
        run_t = rng.randint(1, 30)
        wall = rng.choice([run_t, run_t + rng.randint(0, 20), None]) if i % 11 else None
        out.append((f"j{i}", t, rng.randint(1, nb_res), run_t, wall))
    return out


@pytest.mark.parametrize("tie", ["slowdown", "fcfs"])
@pytest.mark.parametrize("seed", range(6))
def test_small_random_workloads(tmp_path, seed, tie):
    jobs = random_jobs(60, seed)
    los = CheckedLos({"tie": tie})
    rows, result = simulate_jobs(tmp_path, jobs, los)
    assert len(rows) == len(jobs)
    assert result.counts["submitted"] == len(jobs)
    assert los.decisions["basic"] + los.decisions["reservation"] > 0


def test_deterministic(tmp_path):
    jobs = random_jobs(80, 42)
    simulate_jobs(tmp_path / "a", jobs, Los())
    simulate_jobs(tmp_path / "b", jobs, Los())
    a, b = (tmp_path / d / "out_jobs.csv" for d in "ab")
    assert a.read_bytes() == b.read_bytes()


@pytest.fixture(scope="module")
def kth_prefix(tmp_path_factory) -> tuple[Path, Path]:
    from conftest import REPO

    out = tmp_path_factory.mktemp("kth")
    conv = convert_swf(REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz", out / "in", max_jobs=2000)
    return conv.platform_path, conv.workload_path


def test_kth_prefix_invariants_and_determinism(kth_prefix, tmp_path):
    platform, wl = kth_prefix
    los = CheckedLos()
    result, _ = run([wl], los, platform=platform, export=tmp_path / "a")    # checks the accounting
    c = result.counts
    assert c["submitted"] == 2000
    assert los.decisions["basic"] > 100 and los.decisions["reservation"] > 100
    run([wl], Los(), platform=platform, export=tmp_path / "b")
    assert (tmp_path / "a_jobs.csv").read_bytes() == (tmp_path / "b_jobs.csv").read_bytes()
    assert len(jobs_rows(tmp_path / "a_jobs.csv")) == 2000


def test_maintenance_and_downtime(tmp_path):
    rows, _ = simulate_jobs(tmp_path / "m", MAINT_JOBS, CheckedLos({"maintenance": MAINT}))
    assert {k: v[:3] for k, v in rows.items()} == MAINT_EXPECTED      # the same as EASY's here
    for start, finish, alloc, _ in rows.values():         # nothing on 0-1 during [50, 100)
        if any(a <= 1 for a, _ in parse(alloc)):
            assert finish <= 50 or start >= 100, (start, finish, alloc)
    rows, _ = simulate_jobs(tmp_path / "d", DOWN_JOBS, CheckedLos(), events=DOWN_EVENTS)
    assert len(rows) == len(DOWN_JOBS)
    never_on_machine_1_while_down({k: v for k, v in rows.items() if k != "1"})


# ---------------------------------------------------------------------------- options and registry
def test_registered_and_options():
    s = make_scheduler("los", {"depth": 7, "tie": "fcfs"})
    assert isinstance(s, Los) and s.depth == 7 and not s.by_slowdown
    assert make_scheduler("LOS").depth == 50


@pytest.mark.parametrize("options", [{"depth": 0}, {"depth": 2.5}, {"tie": "random"}, {"theta": 10}])
def test_bad_options(options):
    with pytest.raises(OptionError):
        Los(options)
