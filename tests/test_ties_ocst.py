"""EASY with ``ties: "newest"`` takes the decisions of the authors' simulator (freuk/ocst
``src/engine.ml`` and ``src/easy.ml``, models.md §A "What the authors actually ran"), transcribed
literally in :class:`RefOcst`: the waiting list gets each submission at its front, every sort is
stable, Θ puts the starved jobs first by submit time, and the backfill list is the rest of that
order sorted stably by B.  Also: the default (``"oldest"``) differs from it on a hand-made case,
and the option reaches CREASY, the tuned EASY and its what-if replays."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from batfeed.schedulers.base import BatfeedScheduler
from batfeed.schedulers.creasy import Creasy
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.jobqueue import Entry, WaitQueue
from batfeed.schedulers.options import OptionError
from batfeed.schedulers.policies import get_policy
from batfeed.schedulers.tuned_easy import TunedEasy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_helpers import simulate_jobs
from test_backfill_properties import POLICY_NAMES, check_sound, workload_st

INF = float("inf")


class OcstEasy(BatfeedScheduler):
    """What every ocst version's ``MakeEasyScheduler`` shares: start from the head of Q while jobs fit
    (``get_easy``), then the head's shadow and extra from the expected ends (``reserve``)."""

    def __init__(self, theta: float | None):
        super().__init__({})
        self.theta = theta
        self.ends: dict[str, tuple[float, int]] = {}
        self.nsub = 0

    def onJobCompletion(self, job):
        super().onJobCompletion(job)
        self.ends.pop(job.id, None)

    def go(self, e: Entry, now: float) -> None:
        self.start(e.job, self.free.take_lowest(e.q))
        self.ends[e.id] = (now + e.p, e.q)
        self.queue.remove(e)

    def easy_head(self, q_order: list[Entry], now: float) -> tuple[list[Entry], int, float, int] | None:
        """Start Q's jobs from its head while they fit; None when none waits then, else (the jobs after
        the head, free machines, shadow time, extra)."""
        free = self.free.count
        for k, e in enumerate(q_order):                                            # get_easy
            if e.q > free:
                head, rest = e, q_order[k + 1:]
                break
            self.go(e, now)
            free -= e.q
        else:
            return None
        avail, shadow, extra = free, INF, 0                                        # reserve
        for end, q in sorted(self.ends.values(), key=lambda x: x[0]):
            avail += q
            if avail >= head.q:
                shadow, extra = end, avail - head.q
                break
        return rest, free, shadow, extra


class RefOcst(OcstEasy):
    """ocst's ``MakeEasyScheduler`` with ``MakeThreshold(MakeGreedyPrimary)`` and ``MakeGreedySecondary``."""

    def __init__(self, policy: str, backfill: str | None, theta: float | None):
        super().__init__(theta)
        self.P, self.B = get_policy(policy), get_policy(backfill or "FCFS")

    def on_submit(self, job):
        self.queue.insert(0, Entry(job, self.nsub))   # s.waiting: newest first (engine.ml prepends)
        self.nsub += 1

    def schedule(self):
        now = self.bs.time()
        q_order = sorted(self.queue, key=lambda e: self.P.key(e, now))          # stable
        if self.theta is not None:                                                  # MakeThreshold
            starved = [e for e in q_order if now - e.r > self.theta]
            q_order = sorted(starved, key=lambda e: e.r) + [e for e in q_order if not now - e.r > self.theta]
        started = self.easy_head(q_order, now)
        if started is None:
            return
        rest, free, shadow, extra = started
        for e in sorted(rest, key=lambda e: self.B.key(e, now)):                  # MakeGreedySecondary
            shorter = now + e.p <= shadow
            if e.q <= min(free, extra) or (e.q <= free and shorter):
                self.go(e, now)
                free -= e.q
                if not shorter:
                    extra -= e.q


def run_on(jobs, sched, name):
    with tempfile.TemporaryDirectory() as tmp:
        rows, result = simulate_jobs(Path(tmp) / name, jobs, sched)
    check_sound(jobs, rows, result)
    return rows


# equal keys are the point: few distinct sizes, submit times and walltimes
tied_st = st.lists(st.tuples(st.sampled_from([0, 5, 10, 20]), st.integers(1, 3), st.sampled_from([5, 10, 20]),
                             st.sampled_from([0, 10])), min_size=2, max_size=14).map(
    lambda js: [(i, r, q, rt, rt + x) for i, (r, q, rt, x) in enumerate(js, 1)])
PROPS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(st.one_of(tied_st, workload_st), st.sampled_from(POLICY_NAMES), st.sampled_from([None, *POLICY_NAMES]),
       st.sampled_from([None, 0, 15, 40]))
def test_newest_ties_take_the_decisions_of_ocst(jobs, policy, backfill, theta):
    easy = run_on(jobs, Easy({"policy": policy, "backfill_policy": backfill or policy, "theta": theta,
                              "ties": "newest"}), "easy")
    ref = run_on(jobs, RefOcst(policy, backfill or policy, theta), "ref")
    assert easy == ref


def test_the_two_tie_orders_differ_where_ocst_says():
    """Machine of 4: job 1 (q 4) runs 0-100; 2 and 3 (q 4, equal SQF keys) arrive together at 10:
    "oldest" starts 2 at 100, "newest" (ocst) starts 3 at 100."""
    jobs = [(1, 0, 4, 100, 100), (2, 10, 4, 30, 30), (3, 10, 4, 30, 30)]
    old = run_on(jobs, Easy({"policy": "SQF"}), "old")
    new = run_on(jobs, Easy({"policy": "SQF", "ties": "newest"}), "new")
    assert (old["2"][0], old["3"][0]) == (100, 130)
    assert (new["3"][0], new["2"][0]) == (100, 130)


def test_newest_backfill_ties_follow_the_primary_order():
    """Machine of 4: 1 (q 3) runs 0-100, 4 (q 4) waits as head (shadow 100, extra 0); 2 and 3 (q 1,
    walltime 50) arrive together at 2 and tie under B = SQF.  One machine is free: "oldest" backfills
    2 (arrival), "newest" backfills 3 (ocst: B's ties follow P = FCFS, equal submit times newest first)."""
    jobs = [(1, 0, 3, 100, 100), (4, 1, 4, 10, 10), (2, 2, 1, 50, 50), (3, 2, 1, 50, 50)]
    for ties, first, second in (("oldest", "2", "3"), ("newest", "3", "2")):
        rows = run_on(jobs, Easy({"policy": "FCFS", "backfill_policy": "SQF", "ties": ties}), ties)
        assert rows[first][0] == 2 and rows[second][0] > 2, (ties, rows)


def test_starved_jobs_are_ranked_by_b_with_newest_ties():
    wq = WaitQueue("FCFS", "SPF", theta=5, ties="newest")

    class J:
        def __init__(self, i, r, p, q):
            self.id, self.submit_time, self.requested_time, self.requested_resources = str(i), r, p, q
    for i, (r, p) in enumerate([(0, 90), (1, 10), (8, 50)]):
        wq.push(J(i, r, p, 1), r)
    wq.refresh(10)      # 0 and 1 waited > 5: starved, first in Q by submit time
    assert [e.id for e in wq.ordered()] == ["0", "1", "2"]
    assert [e.id for e in wq.backfill_order()] == ["1", "2", "0"]     # by p̃, starved or not
    oldest = WaitQueue("FCFS", "SPF", theta=5)
    for i, (r, p) in enumerate([(0, 90), (1, 10), (8, 50)]):
        oldest.push(J(i, r, p, 1), r)
    oldest.refresh(10)
    assert [e.id for e in oldest.backfill_order()] == ["0", "1", "2"]  # starved first


def test_the_option_is_checked_and_reaches_every_easy_variant():
    with pytest.raises(OptionError, match="ties"):
        Easy({"ties": "random"})
    assert Creasy({"ties": "newest"}).wq.newest
    tuned = TunedEasy({"ties": "newest", "strategy": "random"})
    assert tuned.wq.newest and tuned.opts["ties"] == "newest"
    with pytest.raises(ValueError, match="ties"):
        WaitQueue("FCFS", ties="sideways")


@pytest.mark.parametrize("p_old,p_new,b", [("FCFS", "SAF", None), ("SQF", "LEXP", None), ("LCFS", "SPF", "LAF"),
                                           ("SPF", "LAF", "LAF"), ("LEXP", "SQF", "SQF")])
def test_set_policies_with_newest_ties_orders_as_a_fresh_queue(p_old, p_new, b):
    """tuned_easy changes P between periods: starved jobs (Θ = 3) and B's ties then follow the new P."""
    class J:
        def __init__(self, i, r, q, p):
            self.id, self.submit_time, self.requested_resources, self.requested_time = str(i), r, q, p
    jobs = [J(i, r, q, p) for i, (r, q, p) in enumerate([(0, 3, 50), (0, 1, 10), (2, 2, 70), (2, 1, 10), (4, 1, 10),
                                                          (7, 4, 5), (7, 1, 50)])]
    wq, fresh = WaitQueue(p_old, b, 3, "newest"), WaitQueue(p_new, b, 3, "newest")
    for q in (wq, fresh):
        for j in jobs:
            q.push(j, j.submit_time)
    wq.refresh(8)
    wq.set_policies(p_new, b, 9)
    wq.refresh(9)
    fresh.refresh(9)
    assert [e.id for e in wq.ordered()] == [e.id for e in fresh.ordered()]
    assert [e.id for e in wq.backfill_order()] == [e.id for e in fresh.backfill_order()]
