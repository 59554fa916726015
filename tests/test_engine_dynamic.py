"""Dynamic jobs: REGISTER_PROFILE / REGISTER_JOB, acknowledgements, registration_finished and
profile garbage collection (reference: batsim-protocol.md §4, §5, §6, §12).

Unless said otherwise the scheduler registers into workload ``dyn`` a profile ``p1`` (delay 30 s)
and jobs using it; platform small_4.xml.
"""

from __future__ import annotations

import pytest
from test_engine_helpers import (
    Scripted,
    call_me_later,
    delay,
    events_of,
    execute,
    job,
    message_at,
    notify,
    raw,
    run,
    types,
    write_workload,
)

from batfeed.engine import EngineConfig
from batfeed.errors import ProtocolError

DYN = EngineConfig(enable_dynamic_jobs=True)
DYN_ACK = EngineConfig(enable_dynamic_jobs=True, acknowledge_dynamic_jobs=True)
DYN_REUSE = EngineConfig(enable_dynamic_jobs=True, enable_profile_reuse=True)
P1 = delay(30)


def reg_profile(name="p1", profile=P1, workload="dyn"):
    return lambda bs: bs.register_profiles(workload, {name: profile})


def reg_job(jid, res=1, profile="p1", walltime=-1, subtime=None):
    return lambda bs: bs.register_job(jid, res, walltime, profile, subtime)


FINISHED = notify("registration_finished")


def test_register_profile_then_job_without_ack(tmp_path):
    # t=7 (REQUESTED_CALL): register p1 and dyn!1 (2 machines), start it on 0-1 -> runs 7-37.
    sched = Scripted({7: [reg_profile(), reg_job("dyn!1", res=2), execute("dyn!1", "0-1"), FINISHED]},
                     at_begin=[call_me_later(7)])
    result, tr = run([], sched, config=DYN, export=tmp_path / "out")
    config = tr.messages[0]["events"][0]["data"]["config"]
    assert (config["dynamic-jobs-enabled"], config["dynamic-jobs-acknowledged"]) == (True, False)
    assert events_of(tr.messages, "JOB_SUBMITTED") == []          # no ACK
    assert sched.submitted == []
    assert sched.completed == [(37, "dyn!1", "COMPLETED_SUCCESSFULLY", 0)]
    # no static workload -> no "no_more_static_job_to_submit" (§3)
    assert not any("NOTIFY:no_more_static_job_to_submit" in types(m) for m in tr.messages)
    assert result.jobs_csv.read_text().split("\n")[1] == (
        '1,dyn,p1,7.000000,2,-1.000000,1,COMPLETED_SUCCESSFULLY,7.000000,30.000000,37.000000,0.000000,'
        '30.000000,1.000000,0-1,-1.000000,""')
    assert result.simulated_time == 37.0
    assert result.counts["submitted"] == 1


def test_register_job_with_ack(tmp_path):
    # t=7: registrations; the ACK (JOB_SUBMITTED stamped 7) comes in the next message, also at now=7.
    sched = Scripted([(7, [reg_profile(), reg_job("dyn!1", res=2)]),
                      (7, [execute("dyn!1", "2-3"), FINISHED])], at_begin=[call_me_later(7)])
    result, tr = run([], sched, config=DYN_ACK, export=tmp_path / "out")
    ack = message_at(tr.messages, 7, 1)
    assert types(ack) == ["JOB_SUBMITTED"]
    assert ack["events"][0]["timestamp"] == 7
    assert ack["events"][0]["data"]["job_id"] == "dyn!1"
    assert ack["events"][0]["data"]["job"] == {"profile": "p1", "id": "dyn!1", "res": 2, "walltime": -1, "subtime": 7}
    assert sched.submitted == [(7, "dyn!1")]
    rows = result.jobs_csv.read_text().split("\n")
    assert rows[1].startswith("1,dyn,p1,7.000000,2,-1.000000,1,COMPLETED_SUCCESSFULLY,7.000000,30.000000,37.000000")


def test_submission_time_is_the_given_subtime(tmp_path):
    # Batsim does not check subtime against the clock (§6): registered at 7 with subtime 3
    # -> submission 3, start 7, waiting 4, turnaround 34, stretch 34/30 = 1.133333.
    sched = Scripted({7: [reg_profile(), reg_job("dyn!a", subtime=3), execute("dyn!a", "0"), FINISHED]},
                     at_begin=[call_me_later(7)])
    result, _ = run([], sched, config=DYN, export=tmp_path / "out")
    assert result.jobs_csv.read_text().split("\n")[1] == (
        'a,dyn,p1,3.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,7.000000,30.000000,37.000000,4.000000,'
        '34.000000,1.133333,0,-1.000000,""')


def test_dynamic_jobs_next_to_a_static_workload(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 4, "d10")], {"d10": delay(10)})
    # w0!1 on 0-3 during 0-10; dyn!1 registered at 0 and started at 10 -> 10-40.
    sched = Scripted({0: [execute("w0!1", "0-3"), reg_profile(), reg_job("dyn!1")],
                      10: [execute("dyn!1", "3"), FINISHED]})
    result, _ = run([wl], sched, config=DYN, export=tmp_path / "out")
    assert [row.split(",")[:2] for row in result.jobs_csv.read_text().split("\n")[1:-1]] == [["1", "w0"], ["1", "dyn"]]
    assert result.simulated_time == 40.0


def test_registration_finished_is_needed_to_end(tmp_path):
    sched = Scripted(at_begin=[reg_profile(), reg_job("dyn!1"), execute("dyn!1", "0")])
    with pytest.raises(ProtocolError, match=r"never end.*registration_finished"):
        run([], sched, config=DYN)


def test_registration_after_registration_finished(tmp_path):
    with pytest.raises(ProtocolError, match=r"REGISTER_PROFILE.*after NOTIFY registration_finished"):
        run([], Scripted(at_begin=[FINISHED, reg_profile()]), config=DYN)


def test_registration_after_registration_finished_in_a_later_message(tmp_path):
    sched = Scripted({5: [reg_job("dyn!2")]},
                     at_begin=[reg_profile(), reg_job("dyn!1"), execute("dyn!1", "0"), FINISHED, call_me_later(5)])
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB dyn!2.*after NOTIFY registration_finished"):
        run([], sched, config=DYN)


def test_continue_registration_undoes_registration_finished(tmp_path):
    sched = Scripted(at_begin=[FINISHED, notify("continue_registration"), reg_profile(), reg_job("dyn!1"),
                               execute("dyn!1", "0"), FINISHED])
    result, _ = run([], sched, config=DYN)
    assert result.simulated_time == 30.0


def test_duplicate_job_id(tmp_path):
    sched = Scripted(at_begin=[reg_profile(), reg_job("dyn!1"), reg_job("dyn!1")])
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB dyn!1.*already exists"):
        run([], sched, config=DYN)


def test_duplicate_id_of_a_finished_job(tmp_path):
    # dyn!1 runs 0-30; at 30 the scheduler registers dyn!1 again (with another profile)
    sched = Scripted({30: [reg_job("dyn!1", profile="p2")]},
                     at_begin=[reg_profile(), reg_profile("p2"), reg_job("dyn!1"), execute("dyn!1", "0")])
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB dyn!1.*already exists or existed"):
        run([], sched, config=DYN)


def test_duplicate_id_of_a_static_job(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB w0!1.*already exists"):
        run([wl], Scripted({0: [reg_job("w0!1", profile="d10")]}), config=DYN)


def test_duplicate_profile_name(tmp_path):
    with pytest.raises(ProtocolError, match=r"REGISTER_PROFILE dyn/p1.*already exist"):
        run([], Scripted(at_begin=[reg_profile(), reg_profile(profile=delay(5))]), config=DYN)


def test_reregistering_a_garbage_collected_profile(tmp_path):
    # dyn!1 (p1) completes at 30; once that completion is sent, p1 is garbage-collected (§6)
    sched = Scripted({30: [reg_profile()]}, at_begin=[reg_profile(), reg_job("dyn!1"), execute("dyn!1", "0")])
    with pytest.raises(ProtocolError, match=r"REGISTER_PROFILE dyn/p1.*existed"):
        run([], sched, config=DYN)


def test_registering_a_job_with_a_garbage_collected_profile(tmp_path):
    sched = Scripted({30: [reg_job("dyn!2")]}, at_begin=[reg_profile(), reg_job("dyn!1"), execute("dyn!1", "0")])
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB dyn!2: profile 'p1' .*no longer accessible"):
        run([], sched, config=DYN)


def test_static_profiles_are_garbage_collected_too(tmp_path):
    # w0!1 (d10) ends at 10: d10 is gone for new registrations into w0
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0")], 10: [reg_job("w0!x", profile="d10")]})
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB w0!x: profile 'd10' .*no longer accessible"):
        run([wl], sched, config=DYN)


def test_jobs_registered_before_the_collection_keep_their_profile(tmp_path):
    # dyn!1 and dyn!2 both hold p1; dyn!1 runs 0-30 (p1 collected after its completion is sent),
    # dyn!2 can still be executed at 30 -> 30-60.
    sched = Scripted({30: [execute("dyn!2", "0"), FINISHED]},
                     at_begin=[reg_profile(), reg_job("dyn!1"), reg_job("dyn!2"), execute("dyn!1", "0")])
    result, _ = run([], sched, config=DYN, export=tmp_path / "out")
    assert result.simulated_time == 60.0
    assert result.counts["completed_successfully"] == 2


def test_profile_reuse_keeps_profiles_accessible(tmp_path):
    # with --enable-profile-reuse, p1 can be used again after dyn!1 completed: dyn!2 runs 30-60
    sched = Scripted({30: [reg_job("dyn!2"), execute("dyn!2", "1"), FINISHED]},
                     at_begin=[reg_profile(), reg_job("dyn!1"), execute("dyn!1", "0")])
    result, tr = run([], sched, config=DYN_REUSE, export=tmp_path / "out")
    assert tr.messages[0]["events"][0]["data"]["config"]["profile-reuse-enabled"] is True
    assert result.simulated_time == 60.0
    assert result.jobs_csv.read_text().split("\n")[2].startswith("2,dyn,p1,30.000000,1,-1.000000,1,")


def test_profile_reuse_still_refuses_a_duplicate_profile_name(tmp_path):
    # §4: an existing name aborts (reuse only disables the garbage collection)
    sched = Scripted({30: [reg_profile()]}, at_begin=[reg_profile(), reg_job("dyn!1"), execute("dyn!1", "0")])
    with pytest.raises(ProtocolError, match=r"REGISTER_PROFILE dyn/p1"):
        run([], sched, config=DYN_REUSE)


def test_profile_of_a_rejected_job_is_collected_after_the_next_message(tmp_path):
    # dyn!1 (p1) is rejected at 0.  Within the same reply p1 is still usable (dyn!2); the job is
    # deleted when the next message (REQUESTED_CALL at 5) is sent, so dyn!3 with p1 at 5 aborts.
    sched = Scripted({5: [reg_job("dyn!3")]},
                     at_begin=[reg_profile(), reg_job("dyn!1"), raw("REJECT_JOB", job_id="dyn!1"), reg_job("dyn!2"),
                               execute("dyn!2", "0"), call_me_later(5)])
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB dyn!3: profile 'p1' .*no longer accessible"):
        run([], sched, config=DYN)


@pytest.mark.parametrize("event", [
    ("REGISTER_PROFILE", {"workload_name": "dyn", "profile_name": "p1", "profile": P1}),
    ("REGISTER_JOB", {"job_id": "w0!9", "job": {"id": "w0!9", "subtime": 0, "res": 1, "profile": "d10"}}),
])
def test_registration_with_dynamic_jobs_disabled(tmp_path, event):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    etype, data = event
    with pytest.raises(ProtocolError, match=rf"{etype}.*dynamic jobs are disabled"):
        run([wl], Scripted({0: [raw(etype, **data)]}))


def test_register_job_into_an_unknown_workload(tmp_path):
    job_json = {"id": "nope!1", "subtime": 0, "res": 1, "profile": "p1"}
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB nope!1: workload 'nope' does not exist"):
        run([], Scripted(at_begin=[reg_profile(), raw("REGISTER_JOB", job_id="nope!1", job=job_json)]), config=DYN)


def test_register_job_before_its_profile(tmp_path):
    job_json = {"id": "dyn!1", "subtime": 0, "res": 1, "profile": "p9"}
    sched = Scripted(at_begin=[reg_profile(), raw("REGISTER_JOB", job_id="dyn!1", job=job_json)])
    with pytest.raises(ProtocolError, match=r"REGISTER_JOB dyn!1.*p9"):
        run([], sched, config=DYN)
