"""The authors' what-if (tuned_easy ``whatif_jobs: "started"``; ocst, branch obps-article, bandit.ml
``MakeSimulationSelector``): the jobs started since the last choice, resubmitted at their submission times,
plus the jobs waiting at the choice, queued from the replay's first instant.

Both paths of the kernel run this file (CI reruns it with BATFEED_PURE=1).

Hand-computed run (2 machines, Δ = 1000, candidates FCFS and SQF; a job is (id, r, q, p), p̃ = p):
1: r=0 q=2 p=1100; 2: r=10 q=1 p=50; 3: r=20 q=1 p=50; 5: r=2050 q=1 p=1.
- Period 0 (FCFS): 1 runs 0-1100 on both machines; 2 and 3 wait.
- Choice at 1100 (1 ends): started since the last choice: 1; waiting: 2 and 3.  The replay begins at 0
  (1's submission) with 2 and 3 already queued.  FCFS (keys r): 1 starts at 0, 2 and 3 at 1100: waits
  0 + 1090 + 1080 = 2170.  SQF: 2 and 3 (q = 1) start at 0, before their own submissions (waits -10 and
  -20), 1 has the reservation at 50: 2170 against 20 -> SQF.  (The paper's set, the jobs submitted in
  period 0 alone: 1 is alone at 0 under both, 2170 each -> FCFS, the lowest index.)
- Under SQF 2 and 3 start at 1100; 5 comes at 2050 (period 2): started since 1100: 2 and 3; waiting: 5
  (submitted by the very message that chooses).  The replay begins at 10 with 5 queued: FCFS and SQF
  both start 2 and 5 at 10 (5: 10 - 2050 = -2040) and 3 at 20: -2040 each.
"""

from __future__ import annotations

import csv

import pytest
from batfeed.schedulers.backfill import OptionError
from batfeed.schedulers.tuned_easy import TUNE_POLICIES, TunedEasy
from batfeed.schedulers.whatif import PastJob, WhatIf
from hypothesis import given
from hypothesis import strategies as st
from test_backfill_properties import PROPS
from test_whatif_replay import job_st, options_st, past, same

from batfeed.api import simulate_jobs
from batfeed.errors import InputError

JOBS = [(1, 0, 2, 1100), (2, 10, 1, 50), (3, 20, 1, 50), (5, 2050, 1, 1)]


def run(tmp_path, whatif_jobs):
    frame = {"id": [j[0] for j in JOBS], "subtime": [j[1] for j in JOBS], "res": [j[2] for j in JOBS],
             "runtime": [j[3] for j in JOBS], "walltime": [j[3] for j in JOBS]}
    sched = TunedEasy({"log": str(tmp_path / "log.csv"), "period": 1000, "policies": ["FCFS", "SQF"],
                       "whatif_jobs": whatif_jobs})
    out = simulate_jobs(frame, 2, sched)
    with open(tmp_path / "log.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return sched, dict(zip(out["job_id"], out["waiting_time"], strict=True)), rows


def test_the_authors_what_if_replays_the_started_and_the_waiting_jobs(tmp_path):
    sched, waits, rows = run(tmp_path, "started")
    assert [c[1:] for c in sched.choices] == [(0.0, "FCFS"), (1100.0, "SQF"), (2050.0, "SQF")]
    assert [(r["time"], r["jobs"], r["cost_FCFS"], r["cost_SQF"]) for r in rows] == [
        ("0", "", "", ""), ("1100", "3", "2170", "20"), ("2050", "3", "-2040", "-2040")]
    assert waits == {"1": 0, "2": 1090, "3": 1080, "5": 0}


def test_the_papers_what_if_replays_the_submitted_jobs_alone(tmp_path):
    sched, _, rows = run(tmp_path, "submitted")
    assert [c[2] for c in sched.choices] == ["FCFS", "FCFS", "FCFS"]
    assert [(r["jobs"], r["cost_FCFS"], r["cost_SQF"]) for r in rows[1:]] == [("3", "2170", "2170"), ("0", "0", "0")]


@PROPS
@given(st.lists(job_st, min_size=2, max_size=14), options_st, st.sampled_from(TUNE_POLICIES))
def test_a_queue_at_the_first_instant_is_the_same_as_submitting_it_then(jobs, options, policy):
    """Jobs submitted at the first instant, before the others submitted then (Batsim's order: by id string),
    replay the same when given as the queue the replay begins with."""
    pj = sorted(past(jobs), key=lambda j: (j.subtime, j.id))
    first = [j for j in pj if j.subtime == pj[0].subtime]
    queued, rest = first[:-1], [j for j in pj if j not in first[:-1]]
    wi = WhatIf(5, options)
    whole, split = wi.waits(pj, policy), wi.waits(rest, policy, queued)
    by_id = dict(zip([j.id for j in pj], whole, strict=True))
    assert same(split, [by_id[j.id] for j in [*rest, *queued]]), (whole, split)
    assert wi.on_engine == 0


def test_nothing_is_replayed_without_a_started_job():
    wi = WhatIf(2, {"theta": None})
    assert wi.costs([], ["FCFS", "SQF"], [PastJob("9", 5, 2, 10, 10, {})]) == [0.0, 0.0]
    assert wi.replays == 0


def test_queued_jobs_that_do_not_fit_the_machine_are_left_out():
    wi = WhatIf(2, {"theta": None})
    jobs, queued = [PastJob("1", 0, 1, 10, 10, {})], [PastJob("2", 3, 3, 10, 10, {}), PastJob("3", 4, 1, 5, 5, {})]
    assert same(wi.waits(jobs, "FCFS", queued), [0, float("nan"), -4])


def test_a_queue_needs_a_lean_replay():
    with pytest.raises(InputError, match="whatif_jobs 'started' needs whole-second"):
        WhatIf(2, {"theta": None}).costs([PastJob("1", 0.5, 1, 10, 10, {})], ["FCFS"], [PastJob("2", 1, 2, 1, 1, {})])
    sched = TunedEasy({"whatif_jobs": "started", "reservation": "machines"})
    with pytest.raises(OptionError, match="option 'whatif_jobs' for TunedEasy: 'started' replays a queue"):
        simulate_jobs({"id": [1], "subtime": [0], "res": [1], "runtime": [1], "walltime": [1]}, 2, sched)
