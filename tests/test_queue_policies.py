"""Queue policies of [TUNE] (models.md §A table), Θ promotion, and the queue index (hand-computed)."""

from __future__ import annotations

import pytest
from batfeed.schedulers.jobqueue import Entry, QueueIndex, ScanState, WaitQueue
from batfeed.schedulers.policies import POLICIES, get_policy, register_policy
from batsim.batsim import Job
from hypothesis import given, settings
from hypothesis import strategies as st

INF = float("inf")


def mkjob(name: str, r: float, p: float, q: int, **extra) -> Job:
    return Job(f"w0!{name}", r, p, q, "p", {"id": f"w0!{name}", "subtime": r, "res": q, **extra})


# (name, r, p̃, q); f has no walltime (p̃ = inf)
JOBS = [("a", 0, 100, 4), ("b", 10, 50, 1), ("c", 20, 400, 2), ("d", 30, 10, 8), ("e", 40, 200, 1),
        ("f", 50, -1, 2)]


def order(policy: str, now: float = 1000.0, theta: float | None = None) -> str:
    wq = WaitQueue(policy, theta=theta)
    for name, r, p, q in JOBS:
        wq.push(mkjob(name, r, p, q), now)
    wq.refresh(now)
    return "".join(e.id[-1] for e in wq.ordered())


# Keys at now = 1000 (wait = 1000 - r):
#   p̃/q: a 25, b 50, c 200, d 1.25, e 200, f inf      p̃·q: a 400, b 50, c 800, d 80, e 200, f inf
#   (wait + p̃)/p̃: a 11, b 20.8, c 3.45, d 98, e 5.8, f 1 (no walltime)
# Ties (SQF b/e and c/f, LQF c/f and b/e, SRF/LRF c/e) go by submission order.
EXPECTED = {
    "FCFS": "abcdef", "LCFS": "fedcba",
    "SPF": "dbaecf", "LPF": "fceabd",
    "SQF": "becfad", "LQF": "dacfbe",
    "SEXP": "fceabd", "LEXP": "dbaecf",
    "SRF": "dabcef", "LRF": "fcebad",
    "SAF": "bdeacf", "LAF": "fcaedb",
}


@pytest.mark.parametrize("policy", sorted(EXPECTED))
def test_each_policy_orders_the_queue(policy):
    assert order(policy) == EXPECTED[policy]
    assert order(policy.lower()) == EXPECTED[policy]      # names are case-insensitive


def test_the_twelve_policies_are_registered_with_their_dynamics():
    assert set(EXPECTED) <= set(POLICIES)
    assert {n for n in EXPECTED if POLICIES[n].dynamic} == {"SEXP", "LEXP"}


def test_sexp_is_resorted_as_time_passes():
    # at now = 50: (wait + p̃)/p̃ = a 1.5, b 1.8, c 1.075, d 3, e 1.05, f 1 -> f e c a b d
    # at now = 1000 c (3.45) passes e (5.8) is no longer true: f c e a b d
    wq = WaitQueue("SEXP")
    for name, r, p, q in JOBS:
        wq.push(mkjob(name, r, p, q), 50.0)
    wq.refresh(50.0)
    assert "".join(e.id[-1] for e in wq.ordered()) == "fecabd"
    wq.refresh(1000.0)
    assert "".join(e.id[-1] for e in wq.ordered()) == "fceabd"


def test_theta_promotes_jobs_waiting_longer_than_theta_in_submission_order():
    # now = 530, Θ = 500: waits a 530, b 520, c 510 > 500 -> starved, first, by submission;
    # d waited exactly 500 (not more): stays in LCFS order with e and f -> a b c | f e d
    assert order("LCFS", now=530, theta=500) == "abcfed"
    assert order("LCFS", now=530, theta=None) == "fedcba"
    assert order("SPF", now=1000, theta=960) == "abcdef"[:4] + "ef"      # a..d waited > 960; then SPF e, f


def test_backfill_order_is_separate_from_the_primary_order():
    wq = WaitQueue("FCFS", backfill_policy="SPF")
    for name, r, p, q in JOBS:
        wq.push(mkjob(name, r, p, q), 100.0)
    assert "".join(e.id[-1] for e in wq.ordered()) == "abcdef"
    assert "".join(e.id[-1] for e in wq.backfill_order()) == "dbaecf"
    wq.remove(wq.head())
    assert wq.head().id == "w0!b" and "".join(e.id[-1] for e in wq.backfill_order()) == "dbecf"


def test_custom_policy_key_with_a_custom_job_field():
    register_policy("USERFIRST", lambda e, now: (e.job.json_dict.get("user") != "vip", e.r))
    wq = WaitQueue("userfirst")
    for i, user in enumerate(["x", "vip", "y", "vip"]):
        wq.push(mkjob(str(i), i, 10, 1, user=user), 10.0)
    assert [e.id for e in wq.ordered()] == ["w0!1", "w0!3", "w0!0", "w0!2"]
    with pytest.raises(ValueError, match="unknown queue policy 'nope'"):
        get_policy("nope")


# ------------------------------------------------------------------------------------- the index
def entry(seq: int, q: int, p: float) -> Entry:
    return Entry(mkjob(str(seq), seq, p, q), seq)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 30), st.integers(1, 8), st.integers(1, 100)),
                max_size=300),
       st.integers(0, 9), st.integers(0, 120), st.integers(0, 9))
def test_index_matches_a_sorted_list_and_scan_matches_a_filter(ops, free, horizon, extra):
    QueueIndex.LOAD, saved = 4, QueueIndex.LOAD          # tiny blocks: many splits, merges, rebuilds
    try:
        idx, ref, seq = QueueIndex(), {}, 0
        for add, k, q, p in ops:
            if add or not ref:
                e = entry(seq, q, p)
                idx.add((k, seq), e)
                ref[(k, seq)] = e
                seq += 1
            else:
                key = sorted(ref)[k % len(ref)]
                idx.remove(key)
                del ref[key]
            assert len(idx) == len(ref)
        assert [e.seq for e in idx] == [ref[k].seq for k in sorted(ref)]
        st_ = ScanState(free, horizon, extra)
        got = [e.seq for e in idx.scan(st_)]
        want = [ref[k].seq for k in sorted(ref)
                if ref[k].q <= free and (ref[k].q <= extra or ref[k].p <= horizon)] if free > 0 else []
        assert got == want
    finally:
        QueueIndex.LOAD = saved


def test_scan_examines_few_entries_in_a_large_blocked_queue():
    """20,000 jobs needing 50 machines (free: 10) and 5 small ones: the scan finds the 5 by
    looking at a few hundred entries and tree nodes, not 20,000."""
    idx = QueueIndex()
    small = {3_000, 7_000, 11_000, 15_000, 19_999}
    for i in range(20_000):
        e = entry(i, 2 if i in small else 50, 100)
        idx.add((i, i), e)
    idx.examined = 0
    found = [e.seq for e in idx.scan(ScanState(free=10, horizon=1000, extra=0))]
    assert found == sorted(small)
    assert idx.examined < 1000
    # a scan that must look at every job (all fit) examines them all: the counter is real
    idx.examined = 0
    assert len(list(idx.scan(ScanState(free=10**6, horizon=INF, extra=10**6)))) == 20_000
    assert idx.examined >= 20_000


def test_a_policy_object_orders_the_queue_without_registering():
    # a scheduler's own order (Maui passes its priority this way): here the largest q first, dynamic
    from batfeed.schedulers.policies import Policy

    mine = Policy("MINE", lambda e, now: -e.q, True)
    wq = WaitQueue(mine, backfill_policy=get_policy("SQF"))
    assert wq.P is mine and wq.dynamic and wq.B is get_policy("SQF") and "MINE" not in POLICIES
    for name, r, p, q in JOBS:
        wq.push(mkjob(name, r, p, q), 50.0)
    wq.refresh(50.0)
    assert [e.q for e in wq.ordered()] == sorted((q for *_, q in JOBS), reverse=True)
