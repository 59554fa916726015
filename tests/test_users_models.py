"""Hand-computed replays: rigid, feedback a60, think-time-only a0, full relation vs reduced graph.

Fixture six_jobs.json (see test_sessions.py for its sessions), FCFS on small_4.xml (4 machines):

| job | user | a     | res | d    | recorded f |
|-----|------|-------|-----|------|------------|
| 1   | 9    | 0     | 4   | 2000 | 2000       |
| 2   | 7    | 50    | 1   | 100  | 150        |
| 3   | 9    | 100   | 1   | 100  | 200        |
| 4   | 7    | 1000  | 1   | 200  | 1200       |
| 5   | 7    | 10000 | 1   | 100  | 10100      |
| 6   | 7    | 20000 | 1   | 50   | 20050      |

Job 1 holds all 4 machines during [0, 2000), so jobs 2, 3 and 4 wait for it in the replay although
they did not wait in the recording.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from test_users_helpers import SHORTENED, SIX, SMALL_4, read_rows, replay, starts, submits

from batfeed.engine import simulate
from batfeed.metrics import compute_lateness, read_jobs_csv
from batfeed.registry import make_scheduler

pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")  # pybatsim ACK


def test_feedback_a60_delayed_job_shifts_its_dependent_session_by_the_delay(tmp_path: Path) -> None:
    # t=0: job 1 (4 machines) runs 0-2000.  User 7's session S1 = {2, 4} is a root: job 2 at its
    # recorded 50, job 4 at 50 + offset 950 = 1000; user 9's {1, 3}: job 3 at 100.  All three wait.
    # t=2000: FCFS starts 2 (2000-2100), 3 (2000-2100), 4 (2000-2200).
    # S1 ends at 2200 instead of its recorded 1200: job 4 is 1000 s late.  S2 = {5} starts at
    # 2200 + TT 8800 = 11000 = 10000 + 1000 (shifted by exactly the delay); job 5 runs 11000-11100;
    # S3 = {6} at 11100 + TT 9900 = 21000 (still + 1000).
    result, rows, layer = replay(tmp_path, SIX, "a60")
    assert submits(rows) == {"1": 0, "2": 50, "3": 100, "4": 1000, "5": 11000, "6": 21000}
    assert starts(rows) == {"1": 0, "2": 2000, "3": 2000, "4": 2000, "5": 11000, "6": 21000}
    model = layer.model
    delay_of_job_4 = float(rows["4"]["finish_time"]) - 1200          # replayed - recorded finish
    assert delay_of_job_4 == 1000
    assert model.session_start[("7", 2)] - 10000 == delay_of_job_4
    assert model.session_start[("7", 3)] - 20000 == delay_of_job_4
    assert model.session_end[("7", 1)] == 2200
    assert result.counts["submitted"] == 6 and result.counts["completed_successfully"] == 6
    # lateness: 0, 0, 0, 0, 1000, 1000 -> mean 2000/6 s; RL = 1 + mean/(20000 - 0);
    # delta = 2 mean / (6 - 1); user 7: mean 2000/4 = 500, delta 2*500/3, RL 1 + 500/(20000 - 50)
    late = compute_lateness(read_jobs_csv(result.jobs_csv))
    assert late["n"] == 6
    assert late["mean_s"] == pytest.approx(2000 / 6)
    assert late["relative"] == pytest.approx(1 + (2000 / 6) / 20000)
    assert late["delta_s"] == pytest.approx(2 * (2000 / 6) / 5)
    assert late["per_user"]["7"]["mean_s"] == pytest.approx(500)
    assert late["per_user"]["7"]["delta_s"] == pytest.approx(1000 / 3)
    assert late["per_user"]["7"]["relative"] == pytest.approx(1 + 500 / 19950)
    assert late["per_user"]["9"]["mean_s"] == 0


def test_feedback_without_delay_replays_the_recorded_times(tmp_path: Path) -> None:
    # Control: on 5 machines job 1 leaves one free, jobs 2, 3, 4 start at submission and every
    # session ends at its recorded time, so feedback replay = the recording (lateness 0).
    p5 = write_homogeneous_platform(tmp_path / "p5.xml", 5)
    _, rows, _ = replay(tmp_path, SIX, "a60", platform=p5)
    assert submits(rows) == {"1": 0, "2": 50, "3": 100, "4": 1000, "5": 10000, "6": 20000}
    _, rows0, _ = replay(tmp_path, SIX, "a0", platform=p5, name="a0")
    assert submits(rows0) == submits(rows)


def test_think_time_only_a0_on_the_same_user(tmp_path: Path) -> None:
    # a0: user 7's jobs are 4 sessions chained by TTs 850, 8800, 9900 (test_sessions.py).
    # Job 2 (root) at 50 waits for job 1 and runs 2000-2100; job 3 (user 9, a root at a0: job 1's
    # recorded finish 2000 > 100) at 100 runs 2000-2100.  Job 4 is submitted only 850 s after job 2
    # ended: 2950 (a60 kept its offset: 1000); runs 2950-3150.  Job 5 at 3150 + 8800 = 11950,
    # runs to 12050; job 6 at 12050 + 9900 = 21950.  Lateness 1950 s for jobs 4, 5, 6.
    result, rows, _ = replay(tmp_path, SIX, "a0")
    assert submits(rows) == {"1": 0, "2": 50, "3": 100, "4": 2950, "5": 11950, "6": 21950}
    assert starts(rows)["4"] == 2950
    late = compute_lateness(read_jobs_csv(result.jobs_csv))
    assert late["mean_s"] == pytest.approx(3 * 1950 / 6)             # 975 s
    assert late["delta_s"] == pytest.approx(2 * 975 / 5)             # 390 s per submission
    # a0 submits later than a60 here (a60: 2000/6 s mean lateness), as in the paper
    _, rows60, _ = replay(tmp_path, SIX, "a60", name="a60")
    assert all(submits(rows)[j] >= submits(rows60)[j] for j in rows)
    # "think-time" is the same model; "feedback" with threshold_min 0 too
    _, rows_tt, _ = replay(tmp_path, SIX, "think-time", name="tt")
    _, rows_fb, _ = replay(tmp_path, SIX, "feedback", name="fb", threshold_min=0)
    assert submits(rows_tt) == submits(rows_fb) == submits(rows)


def test_rigid_replay_reproduces_original_submit_times(tmp_path: Path) -> None:
    result, rows, _ = replay(tmp_path, SIX, "rigid")
    assert submits(rows) == {"1": 0, "2": 50, "3": 100, "4": 1000, "5": 10000, "6": 20000}
    assert starts(rows) == {"1": 0, "2": 2000, "3": 2000, "4": 2000, "5": 10000, "6": 20000}
    late = compute_lateness(read_jobs_csv(result.jobs_csv))
    assert late["mean_s"] == 0 and late["delta_s"] == 0 and late["relative"] == 1
    # ... and schedules exactly like a static run of the same workload (Batsim's submission order)
    static = simulate(SMALL_4, [SIX], make_scheduler("fcfs"), export=tmp_path / "static")
    srows = read_rows(static.jobs_csv)
    keep = ("submission_time", "starting_time", "finish_time", "allocated_resources", "final_state")
    assert {j: [r[k] for k in keep] for j, r in rows.items()} == {j: [r[k] for k in keep] for j, r in srows.items()}
    assert {r["workload_name"] for r in rows.values()} == {"replay"}
    assert rows["4"]["metadata"] == "orig_subtime=1000.0;user=7"


def test_full_relation_vs_transitive_reduction(tmp_path: Path) -> None:
    # shortened.json, one user, a0: job 1 (a 0, F 100), job 2 (a 1000, recorded wait 5000 ->
    # F 6100), job 3 (a 7000).  Edges: 1 -> 2 (TT 900), 2 -> 3 (TT 900), 1 -> 3 (TT 6900, dropped by
    # the reduction since 1 -> 2 -> 3).  Empty machine: job 1 runs 0-100, job 2 submitted at
    # 100 + 900 = 1000 runs 1000-1100, i.e. 5000 s earlier than recorded.
    #   reduced: job 3 at 1100 + 900 = 2000;
    #   full:    job 3 at max(100 + 6900, 1100 + 900) = 7000 (the dropped edge wins).
    _, red, _ = replay(tmp_path, SHORTENED, "a0", name="red")
    _, full, _ = replay(tmp_path, SHORTENED, "a0", name="full", graph="full")
    assert submits(red) == {"1": 0, "2": 1000, "3": 2000}
    assert submits(full) == {"1": 0, "2": 1000, "3": 7000}
    # a60: jobs 1, 2 form one session (F 6100) and 3 depends only on it (TT 900) -> both give 2000
    _, s60, _ = replay(tmp_path, SHORTENED, "a60", name="a60", graph="full")
    assert submits(s60)["3"] == 2000


@pytest.mark.parametrize("graph", ["reduced", "full"])
def test_rejected_job_releases_its_successors_at_rejection(tmp_path: Path, graph: str) -> None:
    # job 1 asks 8 machines (platform 4): FCFS rejects it at its submission, t=0.  Job 2 (same
    # user, a 100 = job 1's recorded finish 0 + 100, so TT = 0) is due at 0 + 0: it is submitted in
    # the same message, right after the rejection, and starts at 0.  Job 3 (a 500, TT 500 - 150 =
    # 350 after job 2's recorded finish 150) comes at 50 + 350 = 400.
    trace = tmp_path / "rej.json"
    trace.write_text(
        '{"nb_res": 8, "jobs": ['
        '{"id": 1, "subtime": 0, "res": 8, "profile": "d100", "user": 1, "swf_wait": 0},'
        '{"id": 2, "subtime": 100, "res": 1, "profile": "d50", "user": 1, "swf_wait": 0},'
        '{"id": 3, "subtime": 500, "res": 1, "profile": "d50", "user": 1, "swf_wait": 0}],'
        '"profiles": {"d100": {"type": "delay", "delay": 100}, "d50": {"type": "delay", "delay": 50}}}')
    for ack in (False, True):
        result, rows, _ = replay(tmp_path, trace, "a0", graph=graph, ack=ack, name=f"r{ack}")
        assert rows["1"]["final_state"] == "REJECTED"
        assert submits(rows) == {"1": 0, "2": 0, "3": 400}
        assert starts(rows) == {"2": 0, "3": 400}
        assert result.counts["rejected"] == 1
        # lateness over all 3 jobs, the rejected one included: (0 - 100 - 100) / 3
        assert compute_lateness(read_jobs_csv(result.jobs_csv))["mean_s"] == pytest.approx(-200 / 3)
