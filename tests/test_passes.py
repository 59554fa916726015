"""The decision passes of schedulers/passes.py (compiled by the kernel) take the decisions of the
schedulers' general path (interpreted methods ``allocate``, ``launch``, ``shadow``, ``_backfill_count``).

EASY's ``schedule`` uses :func:`passes.easy_count` unless a subclass overrides a step of it or a mode
the pass does not model is on; here the same random workloads run both ways, for the 12 policies, Θ,
a backfill order B and both tie orders, and must give the same rows.  Runs on both paths (CI).
"""

from __future__ import annotations

from batfeed.schedulers.base import make_procset
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.fcfs import Fcfs
from batfeed.schedulers.jobqueue import Entry
from batfeed.schedulers.tuned_easy import TunedEasy
from hypothesis import given
from hypothesis import strategies as st
from test_backfill_properties import POLICY_NAMES, PROPS, run_on, workload_st


class GeneralEasy(Easy):
    """EASY through its interpreted methods (a subclass's own ``launch`` turns the pass off)."""

    def launch(self, e, ivs, now):
        super().launch(e, ivs, now)


class GeneralFcfs(Fcfs):
    """FCFS as the loop its maintenance windows use, through ``allocate`` (no window here)."""

    def schedule(self):
        now = self.bs.time()
        q = self.wq.q
        while q and q[0].requested_resources <= self.free.count:
            job = q.popleft()
            self.wq.n -= 1
            ivs = self.allocate(Entry(job, 0), now)
            job.allocation = make_procset(ivs)
            self.running[job.id] = ivs
            self._to_start.append(job)


def test_the_pass_is_used_only_where_it_models_everything():
    assert Easy()._pass
    assert Easy({"policy": "SEXP", "ties": "newest", "theta": 100})._pass
    assert not Easy({"reservation": "machines"})._pass
    assert not GeneralEasy()._pass
    assert TunedEasy({"strategy": "bandit"})._pass      # it observes the started jobs after the pass


@PROPS
@given(workload_st, st.sampled_from(POLICY_NAMES), st.sampled_from([None, *POLICY_NAMES]),
       st.sampled_from([None, 0, 15, 40]), st.sampled_from(["oldest", "newest"]))
def test_easy_pass_takes_the_decisions_of_the_general_path(jobs, policy, backfill, theta, ties):
    opts = {"policy": policy, "backfill_policy": backfill, "theta": theta, "ties": ties}
    assert run_on(jobs, Easy(opts), "pass") == run_on(jobs, GeneralEasy(opts), "general")


@PROPS
@given(workload_st)
def test_fcfs_pass_takes_the_decisions_of_the_general_path(jobs):
    assert run_on(jobs, Fcfs(), "pass") == run_on(jobs, GeneralFcfs(), "general")
