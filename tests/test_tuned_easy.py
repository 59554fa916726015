"""TunedEasy: EASY(P_t, Θ) whose policy is chosen every period (models.md §A, "Online selection").

Hand-computed cases run in memory (``batfeed.api.simulate_jobs`` with the scheduler object, 4
machines, direct driver).  A job is (id, submit, machines q, run time); its walltime p̃ equals its
run time.  Two workloads are reused:

P0 (submitted in [0, 1000)): 1: r=0 q=4 p=100; 2: r=10 q=4 p=100; 3: r=20 q=1 p=10.
   1 runs 0-100 on every machine; 2 and 3 wait.  At 100 the policy decides who goes first:
   - 2 first (FCFS, LPF, LQF, SEXP, LRF, LAF): 2 runs 100-200; 3 (head, 1 machine) waits for 2's
     end at 200 (no machine free before): waits 0 + 90 + 180 = 270;
   - 3 first (LCFS, SPF, SQF, LEXP, SRF, SAF): 3 runs 100-110 on one machine; 2 needs 4, shadow 110:
     waits 0 + 80 + 100 = 180.
   (LEXP at 100: expansion of 2 = 1 + 90/100 = 1.9, of 3 = 1 + 80/10 = 9: 3 first; SEXP: 2 first.)
P1 (the same shape in [1000, 2000)): 4: r=1000 q=4 p=100; 5: r=1010 q=4 p=40; 6: r=1020 q=4 p=50.
   - 5 first (FCFS, SPF, LQF, SQF, LEXP, SRF, SAF; LQF/SQF: same q, ties by submission): 5 runs
     1100-1140, 6 1140-1190: waits 90 + 120 = 210;
   - 6 first (LCFS, LPF, SEXP, LRF, LAF): 6 1100-1150, 5 1150-1190: waits 80 + 140 = 220.
   (LEXP at 1100: 5: 1 + 90/40 = 3.25, 6: 1 + 80/50 = 2.6: 5 first.)
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from batfeed.adapters.swf import convert_swf
from batfeed.schedulers.backfill import OptionError
from batfeed.schedulers.jobqueue import WaitQueue
from batfeed.schedulers.policies import get_policy
from batfeed.schedulers.tuned_easy import TUNE_POLICIES, TunedEasy
from batfeed.schedulers.whatif import PastJob, WhatIf, never_contend
from hypothesis import given
from hypothesis import strategies as st
from test_backfill_properties import PROPS, RefEasy, run_on, workload_st
from test_engine_helpers import job, write_workload

from batfeed.api import simulate_jobs
from batfeed.cli import main
from batfeed.engine import simulate
from batfeed.errors import BatfeedError
from batfeed.manifest import manifest_for, read_manifest
from batfeed.registry import make_scheduler
from batfeed.run_options import apply_log, needs_profiles
from batfeed.runner import free_tcp_port, run_simulation

REPO = Path(__file__).resolve().parent.parent
KTH = REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz"
P0 = [(1, 0, 4, 100), (2, 10, 4, 100), (3, 20, 1, 10)]
P1 = [(4, 1000, 4, 100), (5, 1010, 4, 40), (6, 1020, 4, 50)]
COST_P0 = dict(zip(TUNE_POLICIES, (270, 180, 180, 270, 270, 180, 180, 270, 270, 180, 270, 180), strict=True))
COST_P1 = dict(zip(TUNE_POLICIES, (210, 220, 210, 220, 210, 210, 210, 220, 220, 210, 220, 210), strict=True))
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")   # pybatsim's logger.warn, docopt


def frame(jobs):
    return {"id": [j[0] for j in jobs], "subtime": [j[1] for j in jobs], "res": [j[2] for j in jobs],
            "runtime": [j[3] for j in jobs], "walltime": [j[3] for j in jobs]}


def shifted(jobs, dt, first_id):
    return [(first_id + k, r + dt, q, p) for k, (_, r, q, p) in enumerate(jobs)]


def run(jobs, tmp_path, nb_machines=4, **options):
    """Simulate with a TunedEasy logging to tmp_path/log.csv; (scheduler, results, log rows)."""
    sched = TunedEasy({"log": str(tmp_path / "log.csv"), **options})
    out = simulate_jobs(frame(jobs), nb_machines, sched)
    with open(tmp_path / "log.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return sched, out, rows


def waits(out):
    return dict(zip(out["job_id"], out["waiting_time"], strict=True))


def rng_sequence(seed, n, switches, epsilon=None):
    """What the scheduler draws at each switch: an index (random) or (u < ε, index or None) (bandit)."""
    rng = np.random.default_rng(seed)
    if epsilon is None:
        return [int(rng.integers(n)) for _ in range(switches)]
    return [(e, int(rng.integers(n)) if e else None) for e in (bool(rng.random() < epsilon) for _ in range(switches))]


# ------------------------------------------------------------------------------------------ 1 switch time
def test_the_policy_switches_at_the_first_event_at_or_after_a_boundary_also_after_empty_periods(tmp_path):
    # Δ = 100.  Messages at 50 (A submitted), 99 (A ends: still period 0), 130 (B submitted: first event
    # of period 1), 200 (B ends exactly at the boundary of period 2), 520 (C submitted: periods 3 and 4
    # had no event at all, so there is one switch, into period 5), 530 (C ends).
    jobs = [("A", 50, 1, 49), ("B", 130, 1, 70), ("C", 520, 1, 10)]
    sched, out, rows = run(jobs, tmp_path, period=100, strategy="random", seed=11)
    draws = rng_sequence(11, 12, 3)
    assert sched.choices == [(0, 0.0, "FCFS"), (1, 130.0, TUNE_POLICIES[draws[0]]),
                             (2, 200.0, TUNE_POLICIES[draws[1]]), (5, 520.0, TUNE_POLICIES[draws[2]])]
    assert [(r["period"], r["start"], r["time"], r["evaluated"]) for r in rows] == [
        ("0", "0", "0", ""), ("1", "100", "130", "0"), ("2", "200", "200", "1"), ("5", "500", "520", "2")]
    assert list(out["waiting_time"]) == [0, 0, 0]


def test_no_switch_before_the_boundary(tmp_path):
    # Period 100; messages at 0, 10 (1 ends), 99 (2 submitted): period 0; 100 (2 ends): period 1.
    sched, _, rows = run([(1, 0, 1, 10), (2, 99, 1, 1)], tmp_path, period=100, strategy="random")
    assert [c[:2] for c in sched.choices] == [(0, 0.0), (1, 100.0)]
    assert [r["time"] for r in rows] == ["0", "100"]


# ------------------------------------------------------------------------------------------ 2 full feedback
def test_full_feedback_chooses_the_argmin_lowest_index_on_ties(tmp_path):
    # Period 0 = P0 (FCFS in force: 3 waits until 200).  At 1000 (job 4, period 1) the what-if costs
    # of P0 are COST_P0: the minimum 180 is reached by LCFS, SPF, SQF, LEXP, SRF, SAF -> LCFS (index 1).
    # At 2000 the cumulated costs are COST_P0 + COST_P1: FCFS 480, LCFS 400, SPF 390, ... -> SPF (390,
    # index 2, the lowest of SPF, SQF, LEXP, SRF, SAF).
    sched, out, rows = run(P0 + P1 + [(7, 2000, 1, 1)], tmp_path, period=1000)
    assert waits(out)["3"] == 180 and waits(out)["2"] == 90              # FCFS in period 0
    assert [c[2] for c in sched.choices] == ["FCFS", "LCFS", "SPF"]
    assert {p: float(rows[1][f"cost_{p}"]) for p in TUNE_POLICIES} == COST_P0
    assert {p: float(rows[2][f"cost_{p}"]) for p in TUNE_POLICIES} == COST_P1
    assert {p: float(rows[2][f"cum_{p}"]) for p in TUNE_POLICIES} == {p: COST_P0[p] + COST_P1[p] for p in TUNE_POLICIES}
    assert (rows[1]["jobs"], rows[2]["jobs"]) == ("3", "3")
    # period 1 ran under LCFS: 6 before 5 (waits 80 and 140), as in the what-if of LCFS
    assert (waits(out)["5"], waits(out)["6"]) == (140, 80)


def test_full_feedback_with_a_subset_of_policies(tmp_path):
    # Only FCFS (270), LPF (270) and SAF (180) are candidates: SAF, the unique argmin.
    sched, _, rows = run(P0 + [(7, 1000, 1, 1)], tmp_path, period=1000, policies=["fcfs", "LPF", "saf"])
    assert [c[2] for c in sched.choices] == ["FCFS", "SAF"]
    assert [k for k in rows[0] if k.startswith("cost_")] == ["cost_FCFS", "cost_LPF", "cost_SAF"]


def test_discount_changes_the_choice(tmp_path):
    # FCFS vs LCFS; P0 then P1, choice at 2000: w(→2) = λ·w(0) + w(1).
    #   λ = 1:    FCFS 270 + 210 = 480, LCFS 180 + 220 = 400           -> LCFS
    #   λ = 1/16: FCFS 270/16 + 210 = 226.875, LCFS 180/16 + 220 = 231.25 -> FCFS (the recent period wins)
    jobs = P0 + P1 + [(7, 2000, 1, 1)]
    for lam, cum, choice in ((1, (480, 400), "LCFS"), (1 / 16, (226.875, 231.25), "FCFS")):
        sched, _, rows = run(jobs, tmp_path, period=1000, policies=["FCFS", "LCFS"], discount=lam)
        assert (float(rows[2]["cum_FCFS"]), float(rows[2]["cum_LCFS"])) == cum
        assert sched.choices[2][2] == choice


def test_discount_over_a_gap_of_empty_periods(tmp_path):
    # P0 in period 0, then nothing until 4000 (period 4): w(→4) = λ³·w(0) + λ²·0 + λ·0 + 0... with the
    # sum's exponent T−1−t = 3 for t = 0: FCFS 270/8 = 33.75, LCFS 180/8 = 22.5 (λ = 1/2).
    sched, _, rows = run(P0 + [(7, 4000, 1, 1)], tmp_path, period=1000, policies=["FCFS", "LCFS"], discount=0.5)
    assert (rows[1]["period"], rows[1]["evaluated"]) == ("4", "0")
    assert (float(rows[1]["cum_FCFS"]), float(rows[1]["cum_LCFS"])) == (33.75, 22.5)
    assert sched.choices[1][2] == "LCFS"


# ------------------------------------------------------------------------------------------ 3 noisy
@pytest.mark.parametrize("seed,rho,choice", [
    (0, (1.0547846749285816, 0.9079146855055481), "LCFS"),    # 221.50 vs 199.74: the noise flips the choice
    (1, (1.0047286498801027, 1.180185478530374), "FCFS"),     # 210.99 vs 259.64
])
def test_noisy_multiplies_each_cost_by_its_draw(tmp_path, seed, rho, choice):
    # P1's shape at t = 0 (FCFS 210, LCFS 220); ρ = default_rng(seed).uniform(0.8, 1.2, 2).
    assert np.random.default_rng(seed).uniform(0.8, 1.2, size=2).tolist() == list(rho)
    jobs = shifted(P1, -1000, 1) + [(9, 1000, 1, 1)]
    sched, _, rows = run(jobs, tmp_path, period=1000, policies=["FCFS", "LCFS"], strategy="noisy", seed=seed)
    assert (float(rows[1]["rho_FCFS"]), float(rows[1]["rho_LCFS"])) == rho       # exact (the CSV keeps repr)
    assert (float(rows[1]["cost_FCFS"]), float(rows[1]["cost_LCFS"])) == (210, 220)
    assert (float(rows[1]["cum_FCFS"]), float(rows[1]["cum_LCFS"])) == (210 * rho[0], 220 * rho[1])
    assert sched.choices[1][2] == choice


# ------------------------------------------------------------------------------------------ 4 bandit
def bandit_periods(n, period=1000):
    """Each period: a (q=4, p=100) at its start, b (q=1, p=10) 10 s later: b waits 90 s whatever the
    policy (one waiting job), so the period's observation is 2 jobs, total wait 90."""
    jobs = []
    for k in range(n):
        jobs += [(f"a{k}", k * period, 4, 100), (f"b{k}", k * period + 10, 1, 10)]
    return jobs


def reference_bandit(seed, switches, epsilon, n=12, wait=90.0, count=2, lam=1.0):
    """ε-greedy of models.md §A, transcribed: sums start at 0 and counts at 1 (optimistic)."""
    rng = np.random.default_rng(seed)
    sums, counts, used, seq, explored = [0.0] * n, [1.0] * n, 0, [0], []
    for _ in range(switches):
        sums = [lam * s + (wait if i == used else 0.0) for i, s in enumerate(sums)]
        counts[used] += count
        est = [s / c for s, c in zip(sums, counts, strict=True)]
        e = bool(rng.random() < epsilon)
        used = int(rng.integers(n)) if e else min(range(n), key=lambda i: (est[i], i))
        seq.append(used)
        explored.append(e)
    return seq, explored


def test_bandit_optimistic_start_tries_every_arm_in_order(tmp_path):
    # ε = 0: after period k (policy k), arm k's estimate is 90 / (1 + 2) = 30 > 0 = every untried arm's
    # (sum 0, count 1): the next period takes the next untried arm in index order.  After 12 periods all
    # are at 30: FCFS again (lowest index), whose estimate becomes 180 / 5 = 36, then LCFS, ...
    sched, out, rows = run(bandit_periods(15), tmp_path, strategy="bandit", epsilon=0, period=1000)
    assert [c[2] for c in sched.choices] == list(TUNE_POLICIES) + ["FCFS", "LCFS", "SPF"]
    assert [float(rows[1][f"est_{p}"]) for p in TUNE_POLICIES] == [30] + [0] * 11
    assert [float(rows[1][f"n_{p}"]) for p in TUNE_POLICIES] == [3] + [1] * 11
    assert float(rows[13]["est_FCFS"]) == 36 and float(rows[13]["sum_FCFS"]) == 180
    assert all(r["explored"] == "0" for r in rows[1:]) and {r["jobs"] for r in rows[1:]} == {"2"}


def test_bandit_explores_with_probability_epsilon(tmp_path):
    n = 400
    sched, _, rows = run(bandit_periods(n), tmp_path, strategy="bandit", epsilon=0.1, seed=3, period=1000)
    seq, explored = reference_bandit(3, n - 1, 0.1)
    assert [c[2] for c in sched.choices] == [TUNE_POLICIES[i] for i in seq]
    assert [r["explored"] == "1" for r in rows[1:]] == explored
    assert explored == [e for e, _ in rng_sequence(3, 12, n - 1, 0.1)]
    k = sum(explored)                       # Binomial(399, 0.1): mean 39.9, sd 6
    assert 20 <= k <= 60, k
    # exploitation: the argmin of the estimates logged in the same row (lowest index on ties)
    for r, e in zip(rows[1:], explored, strict=True):
        if not e:
            est = [float(r[f"est_{p}"]) for p in TUNE_POLICIES]
            assert r["policy"] == TUNE_POLICIES[min(range(12), key=lambda i: (est[i], i))]


def test_bandit_started_or_finished_jobs(tmp_path):
    # Δ = 100, ε = 0.  At 150 every estimate is 0 (FCFS saw no wait): FCFS again (lowest index); at 250
    # FCFS's estimate is 140/3 > 0: LCFS, untried.
    # a: r=0 q=4 p=150 (ends 150, in period 1); b: r=10 q=1 p=10 waits until 150 (wait 140, ends 160);
    # c: r=250 (period 2).  The switch into period 1 happens at 150, before a's completion is handled.
    #   started:  period 0 saw a start (wait 0): FCFS sum 0, n 1 + 1 = 2; period 1: b (140): sum 140, n 3
    #   finished: period 0 saw nothing: sum 0, n 1; period 1: a (0) and b (140) end: sum 140, n 3
    jobs = [("a", 0, 4, 150), ("b", 10, 1, 10), ("c", 250, 1, 1)]
    for mode, n1 in (("started", 2), ("finished", 1)):
        sched, _, rows = run(jobs, tmp_path, period=100, strategy="bandit", epsilon=0, bandit_jobs=mode)
        assert [(r["time"], r["policy"]) for r in rows] == [("0", "FCFS"), ("150", "FCFS"), ("250", "LCFS")]
        assert (float(rows[1]["sum_FCFS"]), float(rows[1]["n_FCFS"])) == (0, n1)
        assert (float(rows[2]["sum_FCFS"]), float(rows[2]["n_FCFS"])) == (140, 3)
        assert float(rows[2]["est_FCFS"]) == pytest.approx(140 / 3) and float(rows[2]["est_LCFS"]) == 0


# ------------------------------------------------------------------------------------------ 5 random
def test_random_is_uniform_seeded_and_reproducible(tmp_path):
    jobs = [(k, 10 * k, 1, 1) for k in range(1201)]            # one event per 10 s period
    first, _, _ = run(jobs, tmp_path, period=10, strategy="random", seed=42)
    again, _, _ = run(jobs, tmp_path, period=10, strategy="random", seed=42)
    other, _, _ = run(jobs, tmp_path, period=10, strategy="random", seed=43)
    picked = [c[2] for c in first.choices[1:]]
    assert picked == [TUNE_POLICIES[i] for i in rng_sequence(42, 12, 1200)]
    assert first.choices == again.choices and first.choices != other.choices
    counts = {p: picked.count(p) for p in TUNE_POLICIES}       # 1200 draws: 100 ± 9.6 each
    assert all(60 <= c <= 140 for c in counts.values()), counts


# ------------------------------------------------------------------------------------------ 6 what-if
@pytest.fixture(scope="module")
def kth(tmp_path_factory):
    out = tmp_path_factory.mktemp("kth1500")
    conv = convert_swf(KTH, out, max_jobs=1500, name="kth1500")
    return conv.platform_path, conv.workload_path


def test_a_what_if_equals_a_standalone_simulation_of_the_same_jobs(kth, tmp_path, monkeypatch):
    """The costs of every policy for two busy days of KTH-SP2 equal batfeed.api.simulate_jobs with
    scheduler easy on the same jobs (total and per job), and a period the shortcut skips costs 0
    in simulate_jobs too."""
    seen = []
    original = WhatIf.costs

    def recording(self, jobs, policies, queued=()):
        costs = original(self, jobs, policies, queued)
        seen.append((list(jobs), costs, self.nb_machines))
        return costs
    monkeypatch.setattr(WhatIf, "costs", recording)
    run_simulation(kth[0], [kth[1]], scheduler="tuned_easy", options={"period": "day"})
    busy = sorted((s for s in seen if sum(s[1])), key=lambda s: -sum(s[1]))[:2]
    quiet = [s for s in seen if s[0] and never_contend(s[0], s[2])]
    assert len(busy) == 2 and quiet
    for jobs, costs, m in [*busy, quiet[0]]:
        df = {"id": [j.id for j in jobs], "subtime": [j.subtime for j in jobs], "res": [j.res for j in jobs],
              "runtime": [j.runtime for j in jobs], "walltime": [j.walltime for j in jobs]}
        for policy, cost in zip(TUNE_POLICIES, costs, strict=True):
            ref = simulate_jobs(df, m, "easy", {"policy": policy})["waiting_time"]
            assert ref.sum() == cost, (policy, ref.sum(), cost)
    jobs, _, m = busy[0]
    ref = simulate_jobs({"id": [j.id for j in jobs], "subtime": [j.subtime for j in jobs],
                         "res": [j.res for j in jobs], "runtime": [j.runtime for j in jobs],
                         "walltime": [j.walltime for j in jobs]}, m, "easy", {"policy": "SAF", "theta": 3600})
    assert WhatIf(m, {"theta": 3600.0}).waits(jobs, "SAF") == ref["waiting_time"].tolist()


def test_never_contend_is_exact():
    # closed intervals: 1 ends at 10 when 2 starts, so 4 + 1 > 4 counts as contention
    a = [PastJob("1", 0, 4, 10, 10, {}), PastJob("2", 10, 1, 5, 5, {})]
    b = [PastJob("1", 0, 3, 10, 10, {}), PastJob("2", 10, 4, 5, 5, {}), PastJob("3", 2, 1, 30, 30, {})]
    assert not never_contend(a, 4) and never_contend(a, 5)
    assert not never_contend(b, 4) and never_contend([b[0], b[2]], 4)
    wi = WhatIf(4, {"theta": 144000.0})
    assert wi.costs([b[0], b[2]], ["FCFS", "LAF"]) == [0.0, 0.0] and (wi.replays, wi.skipped) == (0, 2)
    assert wi.costs(a, ["FCFS"]) == [0.0] and wi.replays == 1        # simulated: 2 starts at 10 anyway


@PROPS
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 4), st.integers(1, 30)), min_size=1, max_size=12))
def test_the_shortcut_never_hides_a_wait(jobs):
    past = [PastJob(str(i), r, q, p, p, {}) for i, (r, q, p) in enumerate(jobs)]
    if never_contend(past, 4):
        for policy in ("FCFS", "LCFS", "SEXP", "LAF"):
            assert WhatIf(4, {"theta": 10.0}).cost(past, policy) == 0


# ------------------------------------------------------------------------------------------ 7 EASY reused
def test_set_policies_orders_the_queue_as_a_fresh_queue(tmp_path):
    class J:
        def __init__(self, i, r, q, p):
            self.id, self.submit_time, self.requested_resources, self.requested_time = str(i), r, q, p
    jobs = [J(i, r, q, p) for i, (r, q, p) in enumerate([(0, 3, 50), (1, 1, 10), (2, 2, 70), (3, 1, 10), (4, 4, 5)])]
    cases = (("FCFS", "SAF", None), ("SQF", "LEXP", None), ("LCFS", "SPF", "LAF"), ("SPF", "LAF", "LAF"))
    for p_old, p_new, b in cases:
        wq = WaitQueue(p_old, b, None)
        for j in jobs:
            wq.push(j, 5)
        wq.set_policies(p_new, b, 9)
        fresh = WaitQueue(p_new, b, None)
        for j in jobs:
            fresh.push(j, 5)
        wq.refresh(9)
        fresh.refresh(9)
        assert [e.id for e in wq.ordered()] == [e.id for e in fresh.ordered()]
        assert [e.id for e in wq.backfill_order()] == [e.id for e in fresh.backfill_order()]
        assert wq.P is get_policy(p_new) and (wq.main_b is None) == (b is None or b == p_new)


@pytest.mark.parametrize("policy", ["FCFS", "SQF", "LEXP"])
def test_a_single_candidate_is_easy_byte_for_byte(kth, tmp_path, policy):
    run_simulation(kth[0], [kth[1]], scheduler="tuned_easy", options={"policy": policy, "policies": [policy]},
                   export=tmp_path / "tuned")
    run_simulation(kth[0], [kth[1]], scheduler="easy", options={"policy": policy}, export=tmp_path / "easy")
    assert (tmp_path / "tuned_jobs.csv").read_bytes() == (tmp_path / "easy_jobs.csv").read_bytes()


class RefTuned(RefEasy):
    """The pseudo-code EASY of test_backfill_properties with P replaced at the messages (and by the
    policies) where a TunedEasy switched; a changed order gets a decision."""

    def __init__(self, choices, period, theta):
        super().__init__(choices[0][2], None, theta)
        self.choices, self.period, self.next = choices, period, 1

    def onBeforeEvents(self):
        now = self.bs.time()
        if self.next < len(self.choices) and now >= (self.choices[self.next - 1][0] + 1) * self.period:
            k, t, policy = self.choices[self.next]
            assert t == now and k == int(now // self.period)
            self.next += 1
            if get_policy(policy) is not self.P:
                self.P = self.B = get_policy(policy)
                self.changed = True


@PROPS
@given(workload_st, st.sampled_from(["random", "bandit", "full"]), st.sampled_from([7, 15, 25]),
       st.integers(0, 5), st.sampled_from([None, 30]))
def test_each_period_takes_the_decisions_of_the_pseudo_code_with_its_policy(jobs, strategy, period, seed, theta):
    tuned = TunedEasy({"strategy": strategy, "period": period, "seed": seed, "theta": theta, "epsilon": 0.5})
    got = run_on(jobs, tuned, "tuned")
    ref = RefTuned(tuned.choices, period, theta)
    assert run_on(jobs, ref, "ref") == got
    assert ref.next == len(tuned.choices)


# ------------------------------------------------------------------------------------------ 8 determinism, runner
@pytest.mark.parametrize("options", [{"strategy": "noisy", "seed": 5}, {"strategy": "bandit", "seed": 5},
                                     {"strategy": "random", "seed": 5, "period": 3600}])
def test_same_seed_same_outputs(kth, tmp_path, options):
    for k in (1, 2):
        run_simulation(kth[0], [kth[1]], scheduler="tuned_easy", options=options, export=tmp_path / f"r{k}")
    for suffix in ("_jobs.csv", "_tuning.csv"):
        assert (tmp_path / f"r1{suffix}").read_bytes() == (tmp_path / f"r2{suffix}").read_bytes()
    # the runner's seed reaches the option (an explicit option wins)
    run_simulation(kth[0], [kth[1]], scheduler="tuned_easy", options={k: v for k, v in options.items() if k != "seed"},
                   seed=5, export=tmp_path / "r3")
    assert (tmp_path / "r3_tuning.csv").read_bytes() == (tmp_path / "r1_tuning.csv").read_bytes()
    assert read_manifest(manifest_for(tmp_path / "r3"))["scheduler"]["options"]["seed"] == 5


def test_the_runner_forwards_profiles_and_names_the_log(kth, tmp_path):
    assert needs_profiles("tuned_easy") and not needs_profiles("easy") and not needs_profiles("schedFcfs")
    assert apply_log(tmp_path / "p", "tuned_easy", None) == {"log": f"{tmp_path / 'p'}_tuning.csv"}
    assert apply_log(tmp_path / "p", "tuned_easy", {"log": None}) == {"log": None}      # explicit: no log
    assert apply_log(None, "tuned_easy", {"seed": 1}) == {"seed": 1}
    assert apply_log(tmp_path / "p", "easy", {}) == {}
    run_simulation(kth[0], [kth[1]], scheduler="tuned_easy", export=tmp_path / "t")
    manifest = read_manifest(manifest_for(tmp_path / "t"))
    assert manifest["engine"]["batsim_switches"]["forward_profiles_on_submission"] is True
    assert manifest["scheduler"]["options"]["log"] == f"{tmp_path / 't'}_tuning.csv"
    rows = list(csv.DictReader(open(tmp_path / "t_tuning.csv", newline="")))
    assert rows[0]["policy"] == "FCFS" and len(rows) > 10
    run_simulation(kth[0], [kth[1]], scheduler="easy", export=tmp_path / "e")
    switches = read_manifest(manifest_for(tmp_path / "e"))["engine"]["batsim_switches"]
    assert switches["forward_profiles_on_submission"] is False
    assert not (tmp_path / "e_tuning.csv").exists()


def test_the_log_is_buffered_and_bounded(tmp_path, monkeypatch):
    import batfeed.schedulers.tuned_easy as te
    monkeypatch.setattr(te, "FLUSH_ROWS", 3)
    sizes = []
    original = TunedEasy._flush

    def flush(self):
        sizes.append(len(self._rows))
        original(self)
    monkeypatch.setattr(TunedEasy, "_flush", flush)
    jobs = [(k, 10 * k, 1, 1) for k in range(10)]
    sched, _, rows = run(jobs, tmp_path, period=10, strategy="random")
    assert [r["period"] for r in rows] == [str(k) for k in range(10)]
    assert sizes == [3, 3, 3, 1]              # 3 flushes during the run, the last row at the end


def test_a_job_without_delay_profile_is_a_one_line_error(tmp_path, capsys):
    wl = write_workload(tmp_path, [job(1, 0, 1, "p", 10)], {"p": {"type": "parallel_homogeneous", "cpu": 1e9,
                                                                  "com": 0}})
    plat = REPO / "platforms" / "small_4.xml"
    with pytest.raises(BatfeedError, match=r"job w0!1: its profile 'p' has type 'parallel_homogeneous'; .*"
                                           r"--forward-profiles-on-submission"):
        run_simulation(plat, [wl], scheduler="tuned_easy")
    run_simulation(plat, [wl], scheduler="tuned_easy", options={"strategy": "bandit"})     # no replay needed
    assert main(["simulate", str(plat), str(wl), "--scheduler", "tuned_easy", "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--forward-profiles-on-submission" in err[0]


@pytest.mark.parametrize("options,message", [
    ({"strategy": "ful"}, 'option \'strategy\' for TunedEasy must be one of "full", "noisy", "bandit", "random", '
                          'got "ful" (did you mean "full"?)'),
    ({"period": "dya"}, 'must be "day", "week" or a number of seconds > 0, got "dya" (did you mean "day"?)'),
    ({"period": 0}, "got 0"),
    ({"policies": ["FCFS", "SQX"]}, '(did you mean "SQF"?)'),
    ({"policies": ["FCFS", "fcfs"]}, "distinct"),
    ({"policies": []}, "non-empty"),
    ({"discount": 1.5}, "must be a number >= 0 and <= 1, got 1.5"),
    ({"epsilon": -0.1}, "must be a number >= 0 and <= 1"),
    ({"seed": 1.5}, "must be an integer >= 0, got 1.5"),
    ({"bandit_jobs": "ended"}, 'one of "started", "finished"'),
    ({"stratgy": "full"}, "unknown option 'stratgy' for TunedEasy (did you mean 'strategy'?"),
])
def test_bad_options_are_one_line_errors(options, message):
    with pytest.raises(OptionError) as err:
        TunedEasy(options)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_unwritable_log_fails_at_once(tmp_path):
    with pytest.raises(OptionError, match="option 'log' for TunedEasy: cannot write .*nowhere/x.csv"):
        TunedEasy({"log": str(tmp_path / "nowhere" / "x.csv")})


# ------------------------------------------------------------------------------------------ 9 pybatsim
def test_the_file_loads_unchanged_with_pybatsims_loader():
    code = ("from batsim.tools.launcher import instanciate_scheduler as load\n"
            "s = load('schedulers/tuned_easy.py', {'strategy': 'bandit', 'period': 'week'})\n"
            "print(type(s).__name__, s.opts['strategy'], s.delta, s.candidates[5])\n")
    out = subprocess.run([sys.executable, "-P", "-c", code], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["TunedEasy", "bandit", "604800.0", "SQF"]
    assert type(make_scheduler("tuned_easy")).__name__ == "TunedEasy"


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
def test_pybatsim_launcher_runs_the_repo_file_over_zmq(tmp_path):
    """``pybatsim schedulers/tuned_easy.py -t 0`` with the engine as Batsim, profiles not forwarded
    (pybatsim keeps SIMULATION_BEGINS' profiles): what-ifs run inside the scheduler process, and the
    outputs and the log equal the in-process run's."""
    jobs = P0 + P1 + [(7, 2000, 1, 1)]
    profiles = {f"d{p}": {"type": "delay", "delay": p} for *_, p in jobs}
    wl = write_workload(tmp_path, [job(i, r, q, f"d{p}", p) for i, r, q, p in jobs], profiles)
    plat = REPO / "platforms" / "small_4.xml"
    port = free_tcp_port()
    options = {"period": 1000, "log": str(tmp_path / "zmq_tuning.csv")}
    with open(tmp_path / "pybatsim.log", "wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).parent / "pybatsim"), "schedulers/tuned_easy.py", "-t",
                                 "0", "-s", f"tcp://127.0.0.1:{port}", "-o", json.dumps(options)],
                                cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        simulate(plat, [wl], socket=f"tcp://127.0.0.1:{port}", export=tmp_path / "zmq", timeout_s=60)
        assert proc.wait(timeout=30) == 0, (tmp_path / "pybatsim.log").read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
    run_simulation(plat, [wl], scheduler="tuned_easy", options={"period": 1000}, export=tmp_path / "inproc")
    assert (tmp_path / "zmq_jobs.csv").read_bytes() == (tmp_path / "inproc_jobs.csv").read_bytes()
    zmq_log = (tmp_path / "zmq_tuning.csv").read_text().splitlines()
    assert zmq_log == (tmp_path / "inproc_tuning.csv").read_text().splitlines()
    assert [line.split(",")[3] for line in zmq_log[1:]] == ["FCFS", "LCFS", "SPF"]
    assert [float(x) for x in zmq_log[2].split(",")[7:9]] == [270, 180]      # cost_FCFS, cost_LCFS of P0
