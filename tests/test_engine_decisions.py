"""Invalid scheduler decisions: each one Batsim 4.2 aborts on must be a ProtocolError naming the job
(or event) and the broken rule (reference: batsim-protocol.md §2.5, §4, §12).

Workload: jobs 1 (1 machine) and 2 (2 machines), both submitted at t=0 (second message, now=0),
10 s each, on small_4.xml (machines 0-3).
"""

from __future__ import annotations

import pytest
from test_engine_helpers import (
    SMALL_4,
    RecordingTransport,
    Scripted,
    delay,
    execute,
    job,
    kill,
    raw,
    raw_event,
    reject,
    run,
    write_workload,
)

from batfeed.engine import load_simulation
from batfeed.engine.transport import InProcessTransport
from batfeed.errors import ProtocolError


@pytest.fixture
def wl(tmp_path):
    return write_workload(tmp_path, [job(1, 0, 1, "d10"), job(2, 0, 2, "d10")], {"d10": delay(10)})


def fails(wl, actions, match, later=None):
    """Answer the t=0 submissions with ``actions`` (and t=10 with ``later``); expect a ProtocolError."""
    script = {0: actions}
    if later is not None:
        script[10] = later
    with pytest.raises(ProtocolError, match=match):
        run([wl], Scripted(script))


def test_the_valid_baseline_runs(wl):
    result, _ = run([wl], Scripted({0: [execute("w0!1", "0"), execute("w0!2", "1-2")]}))
    assert result.counts["completed_successfully"] == 2


def test_busy_machine(wl):
    fails(wl, [execute("w0!1", "1"), execute("w0!2", "1-2")], r"EXECUTE_JOB w0!2: machine 1 .*already computing")


def test_busy_machine_still_running_from_an_earlier_message(wl, tmp_path):
    w = write_workload(tmp_path, [job(1, 0, 1, "d10"), job(2, 5, 1, "d10")], {"d10": delay(10)}, "w5.json")
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB w0!2: machine 3 .*w0!1"):
        run([w], Scripted({0: [execute("w0!1", "3")], 5: [execute("w0!2", "3")]}))


@pytest.mark.parametrize("alloc", ["0", "0-2"])
def test_wrong_allocation_size(wl, alloc):
    fails(wl, [execute("w0!2", alloc)], r"EXECUTE_JOB w0!2: allocation .* machines but the job requests 2")


def test_empty_allocation(wl):
    fails(wl, [execute("w0!1", "")], r"EXECUTE_JOB w0!1: alloc '' is not a non-empty interval set")


def test_unknown_job(wl):
    fails(wl, [execute("w0!99", "0")], r"w0!99.*does not exist")


def test_unknown_job_in_reject(wl):
    fails(wl, [reject("w1!1")], r"REJECT_JOB.*w1!1.*does not exist")


def test_unknown_job_in_kill(wl):
    fails(wl, [execute("w0!1", "0"), kill("w0!1", "w0!42")], r"KILL_JOB: job 'w0!42' does not exist")


def test_executing_a_job_twice_in_one_reply(wl):
    fails(wl, [execute("w0!1", "0"), execute("w0!1", "1")], r"EXECUTE_JOB w0!1: the job is RUNNING")


def test_executing_a_finished_job(wl):
    fails(wl, [execute("w0!1", "0"), execute("w0!2", "1-2")], r"EXECUTE_JOB w0!1: the job is COMPLETED_SUCCESSFULLY",
          later=[execute("w0!1", "0")])


def test_executing_a_rejected_job(wl):
    fails(wl, [reject("w0!1"), execute("w0!1", "0")], r"EXECUTE_JOB w0!1: the job is REJECTED")


def test_executing_before_submission(wl, tmp_path):
    # jobs with subtime 0 are submitted in the second message: not yet in the reply to SIMULATION_BEGINS
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB w0!1: the job is NOT_SUBMITTED"):
        run([wl], Scripted(at_begin=[execute("w0!1", "0")]))


def test_rejecting_a_running_job(wl):
    fails(wl, [execute("w0!1", "0"), reject("w0!1")], r"REJECT_JOB w0!1: the job is RUNNING")


@pytest.mark.parametrize("alloc", ["4", "2-4", "0 7"])
def test_machine_id_out_of_range(wl, alloc):
    fails(wl, [execute("w0!1", alloc)], r"EXECUTE_JOB w0!1: machine \d+ does not exist")


def test_a_decision_stamped_in_the_past_is_applied_now(tmp_path):
    # §2.5: a timestamp in the past is applied immediately, without error: stamped 3, applied at 10
    w = write_workload(tmp_path, [job(1, 10, 1, "d10")], {"d10": delay(10)}, "w10.json")
    stale = {"timestamp": 3.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}}
    result, _ = run([w], Scripted({10: [raw_event(stale)]}), export=tmp_path / "out")
    assert result.jobs_csv.read_text().split("\n")[1].split(",")[8:11] == ["10.000000", "10.000000", "20.000000"]


def test_decision_timestamp_after_the_replys_now(wl):
    # pybatsim replies now=0; an EXECUTE_JOB stamped 5 is later than now (§2.5: Batsim aborts)
    fails(wl, [raw_event({"timestamp": 5.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}})],
          r"EXECUTE_JOB has timestamp 5.0 later than the reply's now")


def test_unknown_event_type(wl):
    fails(wl, [raw("START_JOB", job_id="w0!1", alloc="0")], r"unknown event type 'START_JOB'")


def test_unknown_notify_type(wl):
    # the pre-3.0 name is refused (§4)
    fails(wl, [raw("NOTIFY", type="submission_finished")], r"submission_finished")


def test_reject_with_extra_members(wl):
    fails(wl, [raw("REJECT_JOB", job_id="w0!1", reason="too big")], r"REJECT_JOB w0!1")


def test_metadata_with_double_quotes(wl):
    fails(wl, [raw("SET_JOB_METADATA", job_id="w0!1", metadata='say "hi"')], r"SET_JOB_METADATA w0!1")


def test_energy_request_without_energy_mode(wl):
    fails(wl, [raw("SET_RESOURCE_STATE", resources="0", state="1")], r"energy")


class ReplyWith(InProcessTransport):
    """Answers the n-th message with a fixed reply instead of asking the scheduler."""

    def __init__(self, scheduler, n, reply):
        super().__init__(scheduler)
        self.n, self.reply, self.count = n, reply, 0

    def exchange(self, message):
        self.count += 1
        if self.count == self.n:
            return self.reply
        return super().exchange(message)


@pytest.mark.parametrize("reply", [
    {"events": []},                          # no now
    {"now": 0.0},                            # no events
    {"now": "0", "events": []},              # now is not a number
    {"now": 0.0, "events": {}},              # events is not an array
    ["now", 0.0],                            # not an object
])
def test_malformed_reply(wl, reply):
    sim = load_simulation(SMALL_4, [wl])
    with pytest.raises(ProtocolError, match=r"malformed reply"):
        sim.run(ReplyWith(Scripted(), 2, reply))


@pytest.mark.parametrize("event", [
    {"timestamp": 0.0, "type": "EXECUTE_JOB"},                                            # no data
    {"timestamp": "0", "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}},  # string timestamp
    {"type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}},                    # no timestamp
    {"timestamp": 0.0, "data": {"job_id": "w0!1", "alloc": "0"}},                         # no type
])
def test_malformed_event(wl, event):
    sim = load_simulation(SMALL_4, [wl])
    with pytest.raises(ProtocolError, match=r"malformed event"):
        sim.run(ReplyWith(Scripted(), 2, {"now": 0.0, "events": [event]}))


def test_recording_transport_sees_the_reply(wl):
    tr = RecordingTransport(Scripted({0: [execute("w0!1", "0"), reject("w0!2")]}))
    run([wl], None, transport=tr)
    assert tr.replies[1] == {"now": 0.0, "events": [
        {"timestamp": 0.0, "type": "EXECUTE_JOB", "data": {"job_id": "w0!1", "alloc": "0"}},
        {"timestamp": 0.0, "type": "REJECT_JOB", "data": {"job_id": "w0!2"}}]}
