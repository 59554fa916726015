"""External events files: machine (un)availability and generic events
(reference: batsim-protocol.md §3 NOTIFY, §5, §7, §10 time_unavailable, §12).

tests/data/engine/outage_2-3_from_10_to_30.txt lists, in reverse order (Batsim sorts events),
machine_available 2-3 at 30 and machine_unavailable 2-3 at 10.
"""

from __future__ import annotations

import pytest
from batfeed.schedulers.fcfs import Fcfs
from test_engine_helpers import (
    ENGINE_DATA,
    Scripted,
    call_me_later,
    delay,
    events_of,
    execute,
    job,
    message_at,
    run,
    timeline,
    types,
    write_events,
    write_workload,
)

from batfeed.engine import EngineConfig
from batfeed.errors import BatfeedError, InputError, ProtocolError

OUTAGE = ENGINE_DATA / "outage_2-3_from_10_to_30.txt"
NO_MORE = "NOTIFY:no_more_external_event_to_occur"


def down(t, res):
    return {"timestamp": t, "type": "machine_unavailable", "resources": res}


def up(t, res):
    return {"timestamp": t, "type": "machine_available", "resources": res}


def test_unavailable_and_available_notifications(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d50")], {"d50": delay(50)})
    sched = Scripted({0: [execute("w0!1", "0")]})
    result, tr = run([wl], sched, events=[OUTAGE], export=tmp_path / "out")
    at10 = message_at(tr.messages, 10)
    assert at10["events"] == [{"timestamp": 10, "type": "NOTIFY",
                               "data": {"type": "event_machine_unavailable", "resources": "2-3"}}]
    # the last event, then no_more_external_event_to_occur alone (the submitter's BYE comes after)
    at30 = message_at(tr.messages, 30)
    assert types(at30) == ["NOTIFY:event_machine_available"]
    assert types(message_at(tr.messages, 30, 1)) == [NO_MORE]
    assert at30["events"][0]["data"]["resources"] == "2-3"
    assert sum(NO_MORE in types(m) for m in tr.messages) == 1
    assert sched.unavailable == [(10, "2-3")] and sched.available == [(30, "2-3")]
    # machines 2 and 3 unavailable 10-30: 2 x 20 = 40 machine-seconds; machine 0 computes 0-50
    assert result.schedule["time_unavailable"] == "40.000000"
    assert result.schedule["time_computing"] == "50.000000"
    assert result.simulated_time == 50.0


def test_same_instant_events_come_in_the_order_their_sleeps_began(tmp_path):
    # Batsim's actors sleep until their dates; those ending together end in creation order (simulator.py).
    # The event submitter slept at startup (before the job submitter, which first posted job 1), job 1's
    # executor and the CALL_ME_LATER waiter slept after the reply at 0; the submitters' BYEs follow.
    ev = write_events(tmp_path, [down(10, "3")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10"), job(2, 10, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), call_me_later(10)], 10: [execute("w0!2", "0")]})
    _, tr = run([wl], sched, events=[ev])
    assert types(message_at(tr.messages, 10)) == [
        "NOTIFY:event_machine_unavailable", "JOB_SUBMITTED", "JOB_COMPLETED", "REQUESTED_CALL",
        NO_MORE, "NOTIFY:no_more_static_job_to_submit"]


def test_a_running_job_continues_on_an_unavailable_machine(tmp_path):
    ev = write_events(tmp_path, [down(10, "3"), up(30, "3")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d50")], {"d50": delay(50)})
    result, _ = run([wl], Scripted({0: [execute("w0!1", "3")]}), events=[ev], export=tmp_path / "out")
    assert timeline(result.jobs_csv) == [("w0", "1", "COMPLETED_SUCCESSFULLY", "0.000000", "50.000000", "3")]


def test_execute_on_an_unavailable_machine_is_a_protocol_error(tmp_path):
    wl = write_workload(tmp_path, [job(1, 15, 2, "d10")], {"d10": delay(10)})
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB w0!1: machine 3 .*unavailable"):
        run([wl], Scripted({15: [execute("w0!1", "1 3")]}), events=[OUTAGE])


def test_fcfs_skips_unavailable_machines(tmp_path):
    # 1: 0-1 during 0-100.  2 (2 machines) arrives at 15 while 2-3 are down -> waits until 30 -> 30-40.
    wl = write_workload(tmp_path, [job(1, 0, 2, "d100"), job(2, 15, 2, "d10")], {"d100": delay(100), "d10": delay(10)})
    result, _ = run([wl], Fcfs(), events=[OUTAGE], export=tmp_path / "out")
    assert timeline(result.jobs_csv) == [
        ("w0", "2", "COMPLETED_SUCCESSFULLY", "30.000000", "40.000000", "2-3"),
        ("w0", "1", "COMPLETED_SUCCESSFULLY", "0.000000", "100.000000", "0-1")]


def test_unavailable_twice_is_an_error(tmp_path):
    ev = write_events(tmp_path, [down(10, "1"), down(20, "0-1")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    with pytest.raises(BatfeedError, match=r"machine 1 .*already unavailable"):
        run([wl], Scripted({0: [execute("w0!1", "3")]}), events=[ev])


def test_available_on_an_available_machine_is_an_error(tmp_path):
    ev = write_events(tmp_path, [up(5, "2")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    with pytest.raises(BatfeedError, match=r"machine_available on machine 2"):
        run([wl], Scripted({0: [execute("w0!1", "3")]}), events=[ev])


def test_zero_length_outage_is_an_error(tmp_path):
    # at equal timestamps "available" sorts first (§7): available on an available machine -> abort
    ev = write_events(tmp_path, [down(5, "2"), up(5, "2")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    with pytest.raises(BatfeedError, match=r"machine_available on machine 2"):
        run([wl], Scripted({0: [execute("w0!1", "3")]}), events=[ev])


def test_an_outage_ending_when_the_next_starts_is_fine(tmp_path):
    # 1 down 10-20 and 20-30 (file order does not matter) -> 20 machine-seconds unavailable
    ev = write_events(tmp_path, [down(20, "1"), up(30, "1"), down(10, "1"), up(20, "1")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    result, tr = run([wl], Scripted({0: [execute("w0!1", "3")]}), events=[ev])
    assert types(message_at(tr.messages, 20)) == ["NOTIFY:event_machine_available", "NOTIFY:event_machine_unavailable"]
    assert result.schedule["time_unavailable"] == "20.000000"


def test_the_simulation_waits_for_the_last_event(tmp_path):
    ev = write_events(tmp_path, [down(100, "2")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d5")], {"d5": delay(5)})
    result, tr = run([wl], Scripted({0: [execute("w0!1", "0")]}), events=[ev])
    assert types(message_at(tr.messages, 100)) == ["NOTIFY:event_machine_unavailable"]
    assert types(message_at(tr.messages, 100, 1)) == [NO_MORE]
    assert tr.messages[-1]["now"] == 100 and types(tr.messages[-1]) == ["SIMULATION_ENDS"]
    assert result.simulated_time == 100.0


def test_an_event_with_an_empty_set_is_ignored(tmp_path):
    ev = write_events(tmp_path, [down(5, "")])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    _, tr = run([wl], Scripted({0: [execute("w0!1", "0")]}), events=[ev])
    assert types(message_at(tr.messages, 5)) == [NO_MORE]


def test_empty_events_file_notifies_at_time_0(tmp_path):
    ev = write_events(tmp_path, [])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    _, tr = run([wl], Scripted({0: [execute("w0!1", "0")]}), events=[ev])
    assert types(tr.messages[0]) == ["SIMULATION_BEGINS"]
    assert NO_MORE in types(tr.messages[1]) and tr.messages[1]["now"] == 0


def test_generic_events_are_forwarded_verbatim_with_the_option(tmp_path):
    generic = {"timestamp": 7, "type": "my_event", "anything": [1, "a"]}
    ev = write_events(tmp_path, [generic])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0")]})
    _, tr = run([wl], sched, events=[ev], config=EngineConfig(forward_unknown_events=True))
    assert events_of([message_at(tr.messages, 7)], "NOTIFY")[0]["data"] == generic
    assert sched.generic == [generic]


def test_generic_events_without_the_option_are_refused_at_load(tmp_path):
    ev = write_events(tmp_path, [down(1, "0"), {"timestamp": 7, "type": "my_event"}])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    with pytest.raises(InputError, match=r"events\.txt:2: .*my_event"):
        run([wl], Scripted(), events=[ev])


@pytest.mark.parametrize("event, match", [
    (down(-1, "0"), r"timestamp"),
    ({"timestamp": 3, "type": "machine_unavailable"}, r"resources"),
    (down(3, "4"), r"machine 4 does not exist"),
    ({"type": "machine_unavailable", "resources": "1"}, r"timestamp"),
])
def test_invalid_events(tmp_path, event, match):
    ev = write_events(tmp_path, [event])
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    with pytest.raises(InputError, match=rf"events\.txt:1: .*{match}"):
        run([wl], Scripted(), events=[ev])
