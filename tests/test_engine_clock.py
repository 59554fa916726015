"""SimGrid's time steps as the engine reproduces them (batfeed/engine/clock.py), hand-computed cases.

tests/test_conformance.py checks the same rules against real Batsim 4.2.1 on 80 recorded scenarios;
these cases pin each rule down on its own.
"""

from __future__ import annotations

from batfeed.schedulers.fcfs import Fcfs
from test_engine_helpers import Scripted, call_me_later, delay, execute, job, message_at, run, types, write_workload

from batfeed.engine.clock import PRECISION, ExactTimers, SimGridTimers


def test_same_instant_at_a_large_date_is_one_step(tmp_path):
    # at 2e7 s, 1e-9 is below the clock's ulp: the step must still take every sleep ending then
    t0 = 20_000_000
    wl = write_workload(tmp_path, [job(1, t0, 1, "d5"), job(2, t0, 1, "d5"), job(3, t0 + 5, 1, "d5")],
                        {"d5": delay(5)})
    _, tr = run([wl], Fcfs())
    # (job 3 is the last one: the submitter's BYE, posted after that batch, is still queued behind
    # the completions, so its NOTIFY ends this message)
    assert types(message_at(tr.messages, t0 + 5)) == ["JOB_SUBMITTED", "JOB_COMPLETED", "JOB_COMPLETED",
                                                      "NOTIFY:no_more_static_job_to_submit"]


def test_sleeps_closer_than_the_precision_end_in_one_step_in_creation_order(tmp_path):
    # jobs 1 and 2 end at 0.1 + 0.2 = 0.30000000000000004 and job 3 is submitted at 0.3: one step,
    # and the submitter slept first (after posting jobs 1 and 2), so the submission comes first
    wl = write_workload(tmp_path, [job(1, 0.1, 1, "d2"), job(2, 0.1, 1, "d2"), job(3, 0.3, 1, "d2")],
                        {"d2": delay(0.2)})
    _, tr = run([wl], Fcfs())
    assert types(message_at(tr.messages, 0.3)) == ["JOB_SUBMITTED", "JOB_COMPLETED", "JOB_COMPLETED",
                                                   "NOTIFY:no_more_static_job_to_submit"]


def test_a_call_me_later_waits_at_least_1e_5_s(tmp_path):
    # Batsim's waiter sleeps max(target - now, 1e-5): asked for now + 1e-6, called at now + 1e-5
    wl = write_workload(tmp_path, [job(1, 5, 1, "d5")], {"d5": delay(5)})
    sched = Scripted({5: [execute("w0!1", "0"), call_me_later(5.000001)]})
    _, tr = run([wl], sched)
    calls = [m["now"] for m in tr.messages if "REQUESTED_CALL" in types(m)]
    assert calls == [5.00001]


def test_exact_timers_switch_to_simgrid_steps_on_a_fractional_duration():
    t = ExactTimers()
    t.add(0.0, 10.0, 1, 0, "a")
    t.add(0.0, 4.0, 2, 0, "b")
    sg = t.to_simgrid(0.0)
    assert [e[:3] for e in sg.live] == [[10.0, 1, 0], [4.0, 2, 0]]      # creation order kept
    clock, due = sg.next_step(0.0)
    assert (clock, [e[3] for e in due]) == (4.0, ["b"])
    sg.add(clock, 1 / 3, 3, 0, "c")
    clock, due = sg.next_step(clock)
    assert clock == 4.0 + 1 / 3 and [e[3] for e in due] == ["c"]
    assert sg.live[0][0] == (10.0 - 4.0) - 1 / 3                         # the remainder is what rounds


def _no_early(date: float, due: list) -> None:
    raise AssertionError(f"nothing ends before the message arrives (at {date}: {due})")


def test_simgrid_steps_reproduce_the_drift_of_a_remainder():
    # a 5.75 s sleep during which 10 messages of 1e-15 s happen: the clock (at 100) absorbs them,
    # the remainder (below 8 s) does not, so the sleeper wakes up before 105.75 - exactly as Batsim
    sg = SimGridTimers()
    sg.add(100.0, 5.75, 1, 0, "submitter")
    clock = 100.0
    for _ in range(10):
        clock, due = sg.message_step(clock, 0.0, 1e15, _no_early)
        assert not due
    assert clock == 100.0
    clock, due = sg.next_step(clock)
    assert [e[3] for e in due] == ["submitter"] and clock < 105.75
    assert 105.75 - clock < 1e-12


def test_a_parallel_task_ends_when_its_work_runs_out():
    # 49e9 flops at 1e9 flop/s: work 1 at rate 1/49 -> 1 / (1e9 / 49e9) = 49.00000000000001
    sg = SimGridTimers()
    rate = 1e9 / 49e9
    sg.add(0.0, 0.0, 1, 1, ("job", "ok", False), rate)
    clock, due = sg.next_step(0.0)
    assert clock == 1.0 / rate != 49.0 and len(due) == 1


def test_a_tiny_sleep_ends_at_the_next_message_step():
    sg = SimGridTimers()
    sg.add(21.0, 3.55e-15, 1, 3, None)
    assert sg.tiny
    clock, due = sg.message_step(21.0, 0.0, 0.0, _no_early)   # a message without links: a step of 0 s
    assert clock == 21.0 and len(due) == 1 and not sg.tiny
    assert PRECISION == 1e-9
