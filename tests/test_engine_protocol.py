"""Embedded engine vs Batsim 4.2 protocol (reference: batsim-protocol.md §2-§5).

Every expected number is worked out by hand in the test's comments.  Platform: small_4.xml
(4 hosts of 1Gf, ids 0-3, zero latency: start = decision timestamp, finish = start + delay).
"""

from __future__ import annotations

import pytest
from batfeed.schedulers.fcfs import Fcfs
from test_engine_helpers import (
    SMALL_4,
    Scripted,
    call_me_later,
    consume,
    delay,
    events_of,
    execute,
    job,
    kill,
    message_at,
    reject,
    run,
    timeline,
    types,
    write_workload,
)

from batfeed.engine import EngineConfig, simulate
from batfeed.errors import ProtocolError

SUCCESS, WALLTIME, KILLED = "COMPLETED_SUCCESSFULLY", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED"


# ---------------------------------------------------------------------- 1. FCFS schedules
def test_fcfs_exact_schedule_on_4_machines(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 2, "d100"), job(2, 0, 3, "d50"),
                                   job(3, 10, 1, "d20"), job(4, 10, 4, "d10")],
                        {"d100": delay(100), "d50": delay(50), "d20": delay(20), "d10": delay(10)})
    result, _ = run([wl], Fcfs(), export=tmp_path / "out")
    # t=0:   queue [1, 2]; 1 starts on 0-1; 2 (3 machines) does not fit in {2,3} and blocks.
    # t=10:  3 and 4 arrive behind 2: no backfilling, nothing starts.
    # t=100: 1 ends -> 0-3 free: 2 on 0-2 (100-150), 3 on 3 (100-120), 4 (4 machines) waits.
    # t=120: 3 ends, {3} free, 4 still blocked.  t=150: 2 ends -> 4 on 0-3 (150-160).
    # Rows are written in completion order: 1 (100), 3 (120), 2 (150), 4 (160).
    assert timeline(result.jobs_csv) == [
        ("w0", "1", SUCCESS, "0.000000", "100.000000", "0-1"),
        ("w0", "3", SUCCESS, "100.000000", "120.000000", "3"),
        ("w0", "2", SUCCESS, "100.000000", "150.000000", "0-2"),
        ("w0", "4", SUCCESS, "150.000000", "160.000000", "0-3"),
    ]
    assert result.simulated_time == 160.0


def test_fcfs_rejects_jobs_larger_than_the_platform(tmp_path):
    # job 1 asks 5 of 4 machines: rejected at 0 (row written first); job 2 runs 0-10 on 0-3.
    wl = write_workload(tmp_path, [job(1, 0, 5, "d10"), job(2, 0, 4, "d10")], {"d10": delay(10)})
    result, _ = run([wl], Fcfs(), export=tmp_path / "out")
    assert timeline(result.jobs_csv) == [("w0", "1", "REJECTED", "", "", ""),
                                         ("w0", "2", SUCCESS, "0.000000", "10.000000", "0-3")]
    assert result.counts["rejected"] == 1 and result.counts["submitted"] == 2


def test_same_time_submissions_are_ordered_by_full_id_string(tmp_path):
    # ids 2, 10, 1 all at t=0, each needs the whole machine for 10 s.
    wl = write_workload(tmp_path, [job(2, 0, 4, "d10"), job(10, 0, 4, "d10"), job(1, 0, 4, "d10")],
                        {"d10": delay(10)})
    sched = Fcfs()
    result, tr = run([wl], sched, export=tmp_path / "out")
    # §2.6: lexicographic order of "w0!<id>": "w0!1" < "w0!10" < "w0!2".
    assert [e["data"]["job_id"] for e in events_of(tr.messages, "JOB_SUBMITTED")] == ["w0!1", "w0!10", "w0!2"]
    # FCFS follows that order: 1 in 0-10, 10 in 10-20, 2 in 20-30.
    assert timeline(result.jobs_csv) == [
        ("w0", "1", SUCCESS, "0.000000", "10.000000", "0-3"),
        ("w0", "10", SUCCESS, "10.000000", "20.000000", "0-3"),
        ("w0", "2", SUCCESS, "20.000000", "30.000000", "0-3"),
    ]


def test_fcfs_with_two_workloads(tmp_path):
    w0 = write_workload(tmp_path, [job(1, 0, 4, "d10"), job(2, 5, 2, "d10")], {"d10": delay(10)}, "a.json")
    w1 = write_workload(tmp_path, [job(1, 0, 2, "d30"), job(3, 5, 2, "d10")],
                        {"d30": delay(30), "d10": delay(10)}, "b.json")
    result, tr = run([w0, w1], Fcfs(), export=tmp_path / "out")
    # t=0:  "w0!1" < "w1!1": w0!1 on 0-3 (0-10); w1!1 waits.
    # t=5:  "w0!2" < "w1!3" join the queue: [w1!1, w0!2, w1!3].
    # t=10: w0!1 ends: w1!1 on 0-1 (10-40), w0!2 on 2-3 (10-20); w1!3 waits.
    # t=20: w0!2 ends: w1!3 on 2-3 (20-30).  t=40: w1!1 ends.
    assert timeline(result.jobs_csv) == [
        ("w0", "1", SUCCESS, "0.000000", "10.000000", "0-3"),
        ("w0", "2", SUCCESS, "10.000000", "20.000000", "2-3"),
        ("w1", "3", SUCCESS, "20.000000", "30.000000", "2-3"),
        ("w1", "1", SUCCESS, "10.000000", "40.000000", "0-1"),
    ]
    begins = tr.messages[0]["events"][0]["data"]
    assert begins["workloads"] == {"w0": str(w0.resolve()), "w1": str(w1.resolve())}
    assert begins["profiles"] == {"w0": {"d10": delay(10)}, "w1": {"d30": delay(30), "d10": delay(10)}}
    assert [e["data"]["job_id"] for e in message_at(tr.messages, 5)["events"]
            if e["type"] == "JOB_SUBMITTED"] == ["w0!2", "w1!3"]


# ---------------------------------------------------------------------- 2. message structure
def test_first_message_is_simulation_begins_alone(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "used")], {"used": delay(5), "unused": delay(7)})
    _, tr = run([wl], Fcfs())
    first = tr.messages[0]
    assert first["now"] == 0
    assert len(first["events"]) == 1
    ev = first["events"][0]
    assert (ev["type"], ev["timestamp"]) == ("SIMULATION_BEGINS", 0)
    data = ev["data"]
    assert (data["nb_resources"], data["nb_compute_resources"], data["nb_storage_resources"]) == (4, 4, 0)
    assert data["allow_compute_sharing"] is False
    assert [(r["id"], r["name"], r["state"]) for r in data["compute_resources"]] == [
        (0, "node_0000", "idle"), (1, "node_0001", "idle"), (2, "node_0002", "idle"), (3, "node_0003", "idle")]
    assert data["compute_resources"][0]["properties"]["role"] == "compute_node"
    assert data["storage_resources"] == []
    assert set(data["config"]) == {
        "redis-enabled", "redis-hostname", "redis-port", "redis-prefix", "profiles-forwarded-on-submission",
        "dynamic-jobs-enabled", "dynamic-jobs-acknowledged", "profile-reuse-enabled", "sched-config",
        "forward-unknown-events"}
    assert data["config"]["dynamic-jobs-enabled"] is False
    assert data["config"]["sched-config"] == ""
    assert data["workloads"] == {"w0": str(wl.resolve())}
    # §3/§8: profiles that no job uses are absent
    assert data["profiles"] == {"w0": {"used": delay(5)}}


def test_subtime_0_jobs_arrive_in_the_second_message_then_the_notify_alone(tmp_path):
    # Batsim's submitter posts its BYE after the server received its last batch, i.e. after the server
    # found its mailbox empty and sent that batch: the NOTIFY comes in the next message (golden streams)
    wl = write_workload(tmp_path, [job(1, 0, 1, "d5", user="u12", queue=3), job(2, 0, 2, "d5", walltime=60)],
                        {"d5": delay(5)})
    _, tr = run([wl], Fcfs())
    second = tr.messages[1]
    assert second["now"] == 0
    assert types(second) == ["JOB_SUBMITTED", "JOB_SUBMITTED"]
    assert tr.messages[2]["now"] == 0 and types(tr.messages[2]) == ["NOTIFY:no_more_static_job_to_submit"]
    sub = second["events"][0]
    assert sub["timestamp"] == 0
    # the full job JSON, custom fields kept, id rewritten; no profile without the option
    assert sub["data"] == {"job_id": "w0!1",
                           "job": {"id": "w0!1", "subtime": 0, "res": 1, "profile": "d5", "user": "u12",
                                   "queue": 3}}
    assert second["events"][1]["data"]["job"]["walltime"] == 60


def test_forward_profiles_on_submission(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d5")], {"d5": delay(5)})
    _, tr = run([wl], Fcfs(), config=EngineConfig(forward_profiles_on_submission=True))
    assert tr.messages[0]["events"][0]["data"]["config"]["profiles-forwarded-on-submission"] is True
    assert events_of(tr.messages, "JOB_SUBMITTED")[0]["data"]["profile"] == delay(5)


def test_notify_no_more_static_jobs_comes_after_the_last_submission(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d5"), job(2, 50, 1, "d5")], {"d5": delay(5)})
    _, tr = run([wl], Fcfs())
    # job 1: 0-5 ; job 2 submitted at 50 (last static submission) -> NOTIFY alone in the next message
    assert types(message_at(tr.messages, 0, 1)) == ["JOB_SUBMITTED"]
    assert types(message_at(tr.messages, 50)) == ["JOB_SUBMITTED"]
    assert types(message_at(tr.messages, 50, 1)) == ["NOTIFY:no_more_static_job_to_submit"]
    assert len(events_of(tr.messages, "NOTIFY")) == 1


def test_all_events_of_one_instant_are_batched_in_one_message(tmp_path):
    # job 1: 0-10 on machine 0; job 2 arrives at 10; a CALL_ME_LATER(10) is pending.
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10"), job(2, 10, 1, "d5")], {"d10": delay(10), "d5": delay(5)})
    sched = Scripted({0: [execute("w0!1", "0"), call_me_later(10)], 10: [execute("w0!2", "1")]})
    result, tr = run([wl], sched)
    at10 = [m for m in tr.messages if m["now"] == 10]
    assert len(at10) == 1
    assert sorted(types(at10[0])) == sorted(["JOB_COMPLETED", "JOB_SUBMITTED", "NOTIFY:no_more_static_job_to_submit",
                                             "REQUESTED_CALL"])
    assert all(e["timestamp"] == 10 for e in at10[0]["events"])
    assert result.simulated_time == 15.0


def test_simulation_ends_alone_in_the_last_message_and_no_external_notify(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 2, "d30"), job(2, 3, 4, "d10")], {"d30": delay(30), "d10": delay(10)})
    result, tr = run([wl], Fcfs())
    # 1: 0-30, 2: 30-40 -> SIMULATION_ENDS alone at now=40
    last = tr.messages[-1]
    assert last == {"now": 40.0, "events": [{"timestamp": 40.0, "type": "SIMULATION_ENDS", "data": {}}]}
    assert tr.replies[-1]["events"] == []
    assert result.simulated_time == 40.0 and result.messages == len(tr.messages)
    # no events file -> never "no_more_external_event_to_occur"
    assert "NOTIFY:no_more_external_event_to_occur" not in [t for m in tr.messages for t in types(m)]


def test_timestamps_are_non_decreasing_and_never_after_now(tmp_path):
    wl = write_workload(tmp_path, [job(i, 3 * i, 1 + i % 4, "d") for i in range(1, 13)], {"d": delay(17)})
    _, tr = run([wl], Fcfs())
    previous_now = 0.0
    for m in tr.messages:
        stamps = [e["timestamp"] for e in m["events"]]
        assert stamps == sorted(stamps) and all(s <= m["now"] for s in stamps)
        assert m["now"] >= previous_now
        previous_now = m["now"]


def test_events_while_the_scheduler_is_busy_arrive_later_with_their_own_timestamps(tmp_path):
    # §2.3: at t=0 the scheduler starts job 1 (10 s) then consumes 25 s: its reply has now=25.
    # Job 1 ends at 10 while it is busy -> delivered in the message at now=25, timestamp 10, after the
    # NOTIFY the submitter's BYE produced at 0 (received while the reply was being forwarded).
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), consume(25)]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    msg = message_at(tr.messages, 25)
    assert [(e["type"], e["timestamp"]) for e in msg["events"]] == [("NOTIFY", 0), ("JOB_COMPLETED", 10)]
    assert sched.completed == [(25, "w0!1", SUCCESS, 0)]
    assert timeline(result.jobs_csv) == [("w0", "1", SUCCESS, "0.000000", "10.000000", "0")]


def test_a_decision_stamped_later_takes_effect_at_its_timestamp(tmp_path):
    # reply to t=0: consume 7 s, then EXECUTE (stamped 7) -> job starts at 7, ends at 7+10=17.
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [consume(7), execute("w0!1", "2")]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    assert tr.replies[1]["now"] == 7 and tr.replies[1]["events"][0]["timestamp"] == 7
    assert timeline(result.jobs_csv) == [("w0", "1", SUCCESS, "7.000000", "17.000000", "2")]


# ---------------------------------------------------------------------- 3. walltime
def test_walltime_reached_including_equality(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d100", walltime=100),   # delay == walltime -> reached at 100
                                   job(2, 0, 1, "d100", walltime=50),    # stopped at 50
                                   job(3, 0, 1, "d100", walltime=150)],  # finishes normally at 100
                        {"d100": delay(100)})
    sched = Scripted({0: [execute("w0!1", "0"), execute("w0!2", "1"), execute("w0!3", "2")]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    completed = {e["data"]["job_id"]: e for e in events_of(tr.messages, "JOB_COMPLETED")}
    assert completed["w0!1"]["data"] == {"job_id": "w0!1", "job_state": WALLTIME, "return_code": -1, "alloc": "0"}
    assert completed["w0!1"]["timestamp"] == 100
    assert completed["w0!2"]["data"]["job_state"] == WALLTIME and completed["w0!2"]["timestamp"] == 50
    assert completed["w0!2"]["data"]["return_code"] == -1
    assert completed["w0!3"]["data"]["job_state"] == SUCCESS and completed["w0!3"]["data"]["return_code"] == 0
    rows = {r[1]: r for r in timeline(result.jobs_csv)}
    assert rows["1"] == ("w0", "1", WALLTIME, "0.000000", "100.000000", "0")
    assert rows["2"] == ("w0", "2", WALLTIME, "0.000000", "50.000000", "1")
    assert rows["3"] == ("w0", "3", SUCCESS, "0.000000", "100.000000", "2")
    # nb_jobs_killed counts every finished-but-not-successful job (§10)
    assert (result.schedule["nb_jobs_killed"], result.schedule["nb_jobs_success"]) == ("2", "1")
    assert result.counts["completed_walltime_reached"] == 2


def test_nonzero_ret_gives_completed_failed(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "bad")], {"bad": delay(5, ret=3)})
    _, tr = run([wl], Scripted({0: [execute("w0!1", "0")]}))
    data = events_of(tr.messages, "JOB_COMPLETED")[0]["data"]
    assert (data["job_state"], data["return_code"]) == ("COMPLETED_FAILED", 3)


# ---------------------------------------------------------------------- 5. KILL_JOB
def test_kill_running_job(tmp_path):
    # job 1 (2 machines, 100 s) starts at 0; killed at 40 -> progress 40/100 = 0.4.
    wl = write_workload(tmp_path, [job(1, 0, 2, "d100")], {"d100": delay(100)})
    sched = Scripted({0: [execute("w0!1", "0-1"), call_me_later(40)], 40: [kill("w0!1")]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    msg = message_at(tr.messages, 40, 1)   # #0 carries the REQUESTED_CALL, #1 the kill's outcome
    by_type = {e["type"]: e for e in msg["events"]}
    assert sorted(by_type) == ["JOB_COMPLETED", "JOB_KILLED"]
    # a killed delay job keeps Batsim's initial return code -1 (its executor is killed before setting it)
    assert by_type["JOB_COMPLETED"]["data"] == {"job_id": "w0!1", "job_state": KILLED, "return_code": -1,
                                                "alloc": "0-1"}
    killed = by_type["JOB_KILLED"]["data"]
    assert killed["job_ids"] == ["w0!1"]
    assert killed["job_progress"]["w0!1"]["profile_name"] == "d100"
    assert killed["job_progress"]["w0!1"]["progress"] == pytest.approx(0.4)
    assert [(t, jid) for t, jid, _ in sched.killed] == [(40, "w0!1")]
    assert timeline(result.jobs_csv) == [("w0", "1", KILLED, "0.000000", "40.000000", "0-1")]
    assert result.simulated_time == 40.0
    assert result.counts["completed_killed"] == 1


def test_killing_a_queued_job_is_a_protocol_error(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10"), job(2, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), kill("w0!2")]})
    with pytest.raises(ProtocolError, match=r"KILL_JOB w0!2"):
        run([wl], sched)


def test_killing_twice_the_second_request_is_ignored(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d100")], {"d100": delay(100)})
    sched = Scripted({0: [execute("w0!1", "0"), call_me_later(30)], 30: [kill("w0!1"), kill("w0!1")]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    assert len(events_of(tr.messages, "JOB_COMPLETED")) == 1
    assert len(events_of(tr.messages, "JOB_KILLED")) == 1
    assert timeline(result.jobs_csv) == [("w0", "1", KILLED, "0.000000", "30.000000", "0")]


def test_a_repeated_kill_in_a_later_message_is_ignored(tmp_path):
    # §4: repeated kill requests are ignored (the first kill at 30 was already reported)
    wl = write_workload(tmp_path, [job(1, 0, 1, "d100")], {"d100": delay(100)})
    sched = Scripted([(0, [execute("w0!1", "0"), call_me_later(30)]), (30, [kill("w0!1")]), (30, [kill("w0!1")])])
    result, tr = run([wl], sched, export=tmp_path / "out")
    assert sched.script == []          # the second kill was really sent
    assert len(events_of(tr.messages, "JOB_COMPLETED")) == 1
    assert timeline(result.jobs_csv) == [("w0", "1", KILLED, "0.000000", "30.000000", "0")]


def test_killing_a_job_that_already_completed_is_ignored(tmp_path):
    # The scheduler starts job 1 (10 s) at 0, consumes 20 s, then asks to kill it (stamped 20):
    # job 1 completed at 10 meanwhile, so the kill is ignored (§4): no JOB_KILLED progress entry.
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), consume(20), kill("w0!1")]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    assert [e["data"]["job_state"] for e in events_of(tr.messages, "JOB_COMPLETED")] == [SUCCESS]
    for ev in events_of(tr.messages, "JOB_KILLED"):
        assert ev["data"]["job_progress"] == {}
    assert timeline(result.jobs_csv) == [("w0", "1", SUCCESS, "0.000000", "10.000000", "0")]


# ---------------------------------------------------------------------- 6. CALL_ME_LATER
def test_requested_call_at_the_requested_time(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d100")], {"d100": delay(100)})
    sched = Scripted({0: [execute("w0!1", "0"), call_me_later(25), call_me_later(60), call_me_later(60)]})
    _, tr = run([wl], sched)
    assert types(message_at(tr.messages, 25)) == ["REQUESTED_CALL"]
    # one REQUESTED_CALL per CALL_ME_LATER (§3), stamped with the requested time
    assert [(e["timestamp"], e["data"]) for e in message_at(tr.messages, 60)["events"]] == [(60, {}), (60, {})]
    assert sched.calls == [25, 60, 60]


@pytest.mark.parametrize("when", [0, -5])
def test_call_me_later_now_or_in_the_past_is_a_protocol_error(tmp_path, when):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), call_me_later(when)]})
    with pytest.raises(ProtocolError, match="CALL_ME_LATER.*past"):
        run([wl], sched)


def test_call_me_later_in_the_past_at_a_later_clock(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0")], 10: [call_me_later(5)]})
    with pytest.raises(ProtocolError, match="CALL_ME_LATER at 5"):
        run([wl], sched)


def test_end_of_simulation_waits_for_a_pending_call(tmp_path):
    # job 1 ends at 10, but CALL_ME_LATER(500) is pending: REQUESTED_CALL at 500, then the end at 500.
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), call_me_later(500)]})
    result, tr = run([wl], sched, export=tmp_path / "out")
    assert types(tr.messages[-2]) == ["REQUESTED_CALL"] and tr.messages[-2]["now"] == 500
    assert tr.messages[-1]["now"] == 500 and types(tr.messages[-1]) == ["SIMULATION_ENDS"]
    assert result.simulated_time == 500.0
    assert result.schedule["makespan"] == "10.000000"


def test_a_job_never_executed_nor_rejected_never_ends(tmp_path):
    # §5: the simulation can never end -> a ProtocolError naming the job instead of a deadlock
    wl = write_workload(tmp_path, [job(1, 0, 5, "d10")], {"d10": delay(10)})
    with pytest.raises(ProtocolError, match=r"never end.*w0!1 asks 5 machines"):
        run([wl], Scripted())


def test_simulate_api_and_sched_config(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 2, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0-1")]})
    result = simulate(SMALL_4, [wl], sched, export=tmp_path / "sub" / "run",
                      config=EngineConfig(sched_config='{"k": 1}'))
    assert result.jobs_csv == tmp_path / "sub" / "run_jobs.csv" and result.jobs_csv.exists()
    assert result.schedule_csv == tmp_path / "sub" / "run_schedule.csv" and result.schedule_csv.exists()
    assert sched.bs.batconf["sched-config"] == '{"k": 1}'
    # messages: SIMULATION_BEGINS, submissions at 0, NOTIFY at 0, completion at 10, SIMULATION_ENDS
    assert (result.messages, result.simulated_time) == (5, 10.0)
    assert sched.nows == [0, 0, 0, 10, 10]
    assert result.tracer.nb_jobs == 1 and result.wall_time >= 0


# ---------------------------------------------------------------------- 12. accounting
def test_accounting_with_every_final_state(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "ok"), job(2, 0, 1, "bad"), job(3, 0, 1, "ok", walltime=2),
                                   job(4, 0, 1, "long"), job(5, 0, 1, "ok")],
                        {"ok": delay(5), "bad": delay(5, ret=1), "long": delay(50)})
    sched = Scripted({0: [execute("w0!1", "0"), execute("w0!2", "1"), execute("w0!3", "2"), execute("w0!4", "3"),
                          reject("w0!5"), call_me_later(20)],
                      20: [kill("w0!4")]})
    result, _ = run([wl], sched)
    assert result.counts == {"submitted": 5, "completed_successfully": 1, "completed_failed": 1,
                             "completed_walltime_reached": 1, "completed_killed": 1, "rejected": 1}
