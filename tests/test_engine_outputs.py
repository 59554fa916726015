"""_jobs.csv / _schedule.csv exactly as Batsim 4.2 writes them, and the compute-profile timings
(reference: batsim-protocol.md §5, §8, §10).  Every number is computed by hand in the comments.
"""

from __future__ import annotations

import random

import pytest
from batfeed.platforms.generate import write_homogeneous_platform
from batfeed.schedulers.fcfs import Fcfs
from procset import ProcSet
from test_engine_helpers import (
    JOBS_HEADER,
    REPO,
    Scripted,
    call_me_later,
    delay,
    execute,
    job,
    jobs_rows,
    reject,
    run,
    set_metadata,
    timeline,
    write_workload,
)

from batfeed.errors import ProtocolError

SCHEDULE_KEYS = [
    "batsim_version", "consumed_joules", "makespan", "max_slowdown", "max_turnaround_time", "max_waiting_time",
    "mean_slowdown", "mean_turnaround_time", "mean_waiting_time", "nb_computing_machines", "nb_grouped_switches",
    "nb_jobs", "nb_jobs_finished", "nb_jobs_killed", "nb_jobs_rejected", "nb_jobs_success", "nb_machine_switches",
    "scheduling_time", "simulation_time", "success_rate", "time_computing", "time_idle", "time_sleeping",
    "time_switching_off", "time_switching_on", "time_unavailable"]


def lines(path):
    return path.read_text(encoding="utf-8").split("\n")


# ---------------------------------------------------------------------- 10. _jobs.csv
def test_jobs_csv_header_and_one_full_row_byte_for_byte(tmp_path):
    # job 7: submitted 5.5, 2 machines, walltime 100, delay 30.25.  The scheduler waits until
    # 10.125 (CALL_ME_LATER), then starts it on 1-2 and sets its metadata.
    #   start 10.125, execution 30.25, finish 40.375, waiting 10.125-5.5 = 4.625,
    #   turnaround 40.375-5.5 = 34.875, stretch 34.875/30.25 = 1.15289256... -> 1.152893
    wl = write_workload(tmp_path, [job(7, 5.5, 2, "p1", walltime=100)], {"p1": delay(30.25)})
    sched = Scripted({5.5: [call_me_later(10.125)],
                      10.125: [execute("w0!7", "1-2"), set_metadata("w0!7", "tag=a b;x")]})
    result, _ = run([wl], sched, export=tmp_path / "out")
    assert result.jobs_csv == tmp_path / "out_jobs.csv"
    assert lines(result.jobs_csv) == [
        JOBS_HEADER,
        '7,w0,p1,5.500000,2,100.000000,1,COMPLETED_SUCCESSFULLY,10.125000,30.250000,40.375000,4.625000,'
        '34.875000,1.152893,1-2,-1.000000,"tag=a b;x"',
        ""]


def test_header_is_batsims_exact_string():
    assert JOBS_HEADER == ("job_id,workload_name,profile,submission_time,requested_number_of_resources,"
                           "requested_time,success,final_state,starting_time,execution_time,finish_time,"
                           "waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata")


# ---------------------------------------------------------------------- 4. rejected jobs
def test_rejected_rows_and_completion_order(tmp_path):
    # 1 runs 0-100 on machine 0; 2 is rejected at 0; 3 (submitted at 20) is rejected at 20.
    # Rows are written at completion/rejection time: 2 (t=0), 3 (t=20), 1 (t=100).
    wl = write_workload(tmp_path, [job(1, 0, 1, "d100"), job(2, 0, 3, "d10"), job(3, 20, 1, "d10")],
                        {"d100": delay(100), "d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), set_metadata("w0!2", "too big"), reject("w0!2")],
                      20: [reject("w0!3")]})
    result, _ = run([wl], sched, export=tmp_path / "out")
    assert lines(result.jobs_csv)[1:] == [
        '2,w0,d10,0.000000,3,-1.000000,0,REJECTED,,,,,,,,,"too big"',
        '3,w0,d10,20.000000,1,-1.000000,0,REJECTED,,,,,,,,,""',
        '1,w0,d100,0.000000,1,-1.000000,1,COMPLETED_SUCCESSFULLY,0.000000,100.000000,100.000000,0.000000,'
        '100.000000,1.000000,0,-1.000000,""',
        ""]
    assert result.counts["rejected"] == 2
    # no JOB_COMPLETED is sent for a rejection
    assert [c[1] for c in sched.completed] == ["w0!1"]


def test_metadata_is_the_last_value_set_before_completion(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "d10")], {"d10": delay(10)})
    sched = Scripted({0: [set_metadata("w0!1", "a"), execute("w0!1", "0"), set_metadata("w0!1", "b")]})
    result, _ = run([wl], sched, export=tmp_path / "out")
    assert lines(result.jobs_csv)[1].endswith(',0,-1.000000,"b"')


# ---------------------------------------------------------------------- 10. _schedule.csv
def test_schedule_csv_keys_sorted_and_means_over_all_jobs(tmp_path):
    # 1: 0-100 on 0 (wait 0, turnaround 100, slowdown 1);
    # 2: submitted 0, started 20 on 1, 50 s (wait 20, turnaround 70, slowdown 70/50 = 1.4);
    # 3: rejected.  nb_jobs = 3 (rejected included) and the means divide by 3:
    #   mean_waiting 20/3 = 6.666667, mean_turnaround 170/3 = 56.666667, mean_slowdown 2.4/3 = 0.8,
    #   success_rate 2/3 = 0.666667; time_computing = 100 (machine 0) + 50 (machine 1) = 150.
    wl = write_workload(tmp_path, [job(1, 0, 1, "d100"), job(2, 0, 1, "d50"), job(3, 0, 1, "d10")],
                        {"d100": delay(100), "d50": delay(50), "d10": delay(10)})
    sched = Scripted({0: [execute("w0!1", "0"), reject("w0!3"), call_me_later(20)], 20: [execute("w0!2", "1")]})
    result, _ = run([wl], sched, export=tmp_path / "out")
    header, row, end = lines(result.schedule_csv)
    assert header.split(",") == SCHEDULE_KEYS == sorted(SCHEDULE_KEYS)
    assert end == ""
    values = dict(zip(SCHEDULE_KEYS, row.split(","), strict=True))
    assert values == result.schedule
    expected = {
        "consumed_joules": "0.000000", "makespan": "100.000000", "max_slowdown": "1.400000",
        "max_turnaround_time": "100.000000", "max_waiting_time": "20.000000", "mean_slowdown": "0.800000",
        "mean_turnaround_time": "56.666667", "mean_waiting_time": "6.666667", "nb_computing_machines": "4",
        "nb_grouped_switches": "0", "nb_jobs": "3", "nb_jobs_finished": "2", "nb_jobs_killed": "0",
        "nb_jobs_rejected": "1", "nb_jobs_success": "2", "nb_machine_switches": "0", "success_rate": "0.666667",
        "time_computing": "150.000000", "time_sleeping": "0.000000", "time_switching_off": "0.000000",
        "time_switching_on": "0.000000", "time_unavailable": "0.000000"}
    assert {k: values[k] for k in expected} == expected
    float(values["scheduling_time"]), float(values["simulation_time"])


def test_makespan_is_measured_from_time_zero(tmp_path):
    # single job submitted at 1000, 10 s -> makespan 1010 (not 10)
    wl = write_workload(tmp_path, [job(1, 1000, 1, "d10")], {"d10": delay(10)})
    result, _ = run([wl], Scripted({1000: [execute("w0!1", "0")]}), export=tmp_path / "out")
    assert result.schedule["makespan"] == "1010.000000"
    assert result.schedule["max_waiting_time"] == "0.000000"


def test_outputs_are_consistent_on_a_larger_fcfs_run(tmp_path):
    # 60 pseudo-random jobs on 16 machines, some stopped by their walltime; every row and the
    # schedule summary are recomputed from the rows themselves.
    rng = random.Random(7)
    jobs, profiles = [], {}
    for i in range(60):
        length = rng.choice([5, 10, 17.5, 40])
        profiles[f"d{length}"] = delay(length)
        walltime = rng.choice([-1, 12, 50])
        jobs.append(job(i, rng.randrange(0, 200), rng.randint(1, 16), f"d{length}", walltime=walltime))
    wl = write_workload(tmp_path, jobs, profiles, nb_res=16)
    result, _ = run([wl], Fcfs(), platform=REPO / "platforms" / "cluster_16.xml", export=tmp_path / "o")
    rows = jobs_rows(result.jobs_csv)
    assert len(rows) == 60 and lines(result.jobs_csv)[0] == JOBS_HEADER
    busy = []
    for r in rows:
        sub, start, run_, finish = (float(r[k]) for k in ("submission_time", "starting_time", "execution_time",
                                                          "finish_time"))
        wall = float(r["requested_time"])
        assert finish == pytest.approx(start + run_)
        assert float(r["waiting_time"]) == pytest.approx(start - sub)
        assert float(r["turnaround_time"]) == pytest.approx(finish - sub)
        assert r["stretch"] == f"{(finish - sub) / run_:f}"
        length = float(r["profile"][1:])
        reached = 0 < wall <= length
        assert r["final_state"] == ("COMPLETED_WALLTIME_REACHED" if reached else "COMPLETED_SUCCESSFULLY")
        assert run_ == (wall if reached else length)
        assert r["success"] == ("0" if reached else "1")
        machines = ProcSet.from_str(r["allocated_resources"])
        assert len(machines) == int(r["requested_number_of_resources"])
        busy.append((start, finish, machines))
        assert (r["consumed_energy"], r["metadata"]) == ("-1.000000", "")
    for i, (s1, f1, m1) in enumerate(busy):   # no machine runs two jobs at once
        for s2, f2, m2 in busy[i + 1:]:
            assert not (s1 < f2 and s2 < f1 and (m1 & m2)), (s1, f1, str(m1), s2, f2, str(m2))
    # the rows are in completion order
    finishes = [float(r["finish_time"]) for r in rows]
    assert finishes == sorted(finishes)
    sched = result.schedule
    n = len(rows)
    waits = [float(r["waiting_time"]) for r in rows]
    turns = [float(r["turnaround_time"]) for r in rows]
    assert float(sched["mean_waiting_time"]) == pytest.approx(sum(waits) / n, abs=1e-6)
    assert float(sched["mean_turnaround_time"]) == pytest.approx(sum(turns) / n, abs=1e-6)
    assert sched["max_waiting_time"] == f"{max(waits):f}"
    assert sched["makespan"] == f"{max(finishes):f}"
    assert sched["nb_jobs_success"] == str(sum(r["success"] == "1" for r in rows))
    assert float(sched["time_computing"]) == pytest.approx(
        sum(float(r["execution_time"]) * int(r["requested_number_of_resources"]) for r in rows))


def test_machine_states_csv_is_written(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 2, "d10")], {"d10": delay(10)})
    run([wl], Scripted({0: [execute("w0!1", "0-1")]}), export=tmp_path / "out")
    path = tmp_path / "out_machine_states.csv"
    assert path.exists()
    assert lines(path)[0] == "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing"


# ---------------------------------------------------------------------- 13. compute profiles
def ph(cpu, com=0, type_="parallel_homogeneous"):
    return {"type": type_, "cpu": cpu, "com": com}


def test_parallel_homogeneous_runtime_is_cpu_over_speed(tmp_path):
    # 1Gf hosts: cpu 3e9 per host -> 3 s whatever the number of hosts (2 here); walltime 2 stops job 2 at 2 s.
    wl = write_workload(tmp_path, [job(1, 0, 2, "ph"), job(2, 0, 1, "ph", walltime=2)], {"ph": ph(3e9)})
    result, _ = run([wl], Scripted({0: [execute("w0!1", "0-1"), execute("w0!2", "3")]}), export=tmp_path / "o")
    assert sorted(timeline(result.jobs_csv)) == [
        ("w0", "1", "COMPLETED_SUCCESSFULLY", "0.000000", "3.000000", "0-1"),
        ("w0", "2", "COMPLETED_WALLTIME_REACHED", "0.000000", "2.000000", "3")]


def test_parallel_homogeneous_scales_with_host_speed(tmp_path):
    plat = write_homogeneous_platform(tmp_path / "fast.xml", 4, speed="2Gf")
    wl = write_workload(tmp_path, [job(1, 0, 2, "ph")], {"ph": ph(3e9)})
    # 2Gf hosts: 3e9 / 2e9 = 1.5 s
    result, _ = run([wl], Scripted({0: [execute("w0!1", "2-3")]}), platform=plat, export=tmp_path / "o")
    assert timeline(result.jobs_csv) == [("w0", "1", "COMPLETED_SUCCESSFULLY", "0.000000", "1.500000", "2-3")]


def test_parallel_homogeneous_total_is_split_over_the_allocation(tmp_path):
    # total 8e9 flops on 1Gf hosts: job 1 (res 4) on 4 hosts -> 2e9 each -> 2 s;
    # job 2 (res 4, moldable) on 2 hosts -> 4e9 each -> 4 s, starting at 2 when job 1 ends.
    wl = write_workload(tmp_path, [job(1, 0, 4, "tot"), job(2, 0, 4, "tot")],
                        {"tot": ph(8e9, type_="parallel_homogeneous_total")})
    sched = Scripted({0: [execute("w0!1", "0-3")], 2: [execute("w0!2", "1-2")]})
    result, _ = run([wl], sched, export=tmp_path / "o")
    assert timeline(result.jobs_csv) == [
        ("w0", "1", "COMPLETED_SUCCESSFULLY", "0.000000", "2.000000", "0-3"),
        ("w0", "2", "COMPLETED_SUCCESSFULLY", "2.000000", "6.000000", "1-2")]


def test_only_parallel_homogeneous_total_may_use_another_allocation_size(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 4, "ph")], {"ph": ph(1e9)})
    with pytest.raises(ProtocolError, match=r"EXECUTE_JOB w0!1: allocation 0-1 has 2 machines but the job requests 4"):
        run([wl], Scripted({0: [execute("w0!1", "0-1")]}))



def test_jobs_csv_is_streamed_and_an_aborted_run_leaves_no_partial_file(tmp_path):
    # job 1 finishes (its row is written at 10) before job 2's EXECUTE_JOB aborts the run at 20
    wl = write_workload(tmp_path, [job(1, 0, 1, "p"), job(2, 20, 4, "ph")], {"p": delay(10), "ph": ph(1e9)})
    old = tmp_path / "out_jobs.csv"
    old.write_text("an older run\n")
    with pytest.raises(ProtocolError, match="allocation 0-1 has 2 machines"):
        run([wl], Scripted({0: [execute("w0!1", "0")], 20: [execute("w0!2", "0-1")]}), export=tmp_path / "out")
    assert old.read_text() == "an older run\n" and not (tmp_path / "out_jobs.csv.part").exists()
    result, _ = run([wl], Scripted({0: [execute("w0!1", "0")], 20: [execute("w0!2", "0-3")]}),
                    export=tmp_path / "out")
    assert [r["job_id"] for r in jobs_rows(result.jobs_csv)] == ["1", "2"] and result.tracer.jobs is None
    assert not (tmp_path / "out_jobs.csv.part").exists()

HETEROGENEOUS = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="AS0" routing="Vivaldi">
    <host id="master_host" speed="1Gf" coordinates="0 0 0"/>
    <host id="node_0000" speed="2Gf" coordinates="0 0 0"/>
    <host id="node_0001" speed="1Gf" coordinates="0 0 0"/>
  </zone>
</platform>
"""


@pytest.mark.parametrize("profile, expected_finish", [
    (ph(2e9), "2.000000"),                                         # max(2e9/2e9, 2e9/1e9) = 2 s
    (ph(4e9, type_="parallel_homogeneous_total"), "2.000000"),     # 2e9 per host: max(1, 2) = 2 s
])
def test_parallel_task_on_heterogeneous_hosts_waits_for_the_slowest(tmp_path, profile, expected_finish):
    plat = tmp_path / "hetero.xml"
    plat.write_text(HETEROGENEOUS, encoding="utf-8")
    wl = write_workload(tmp_path, [job(1, 0, 2, "p")], {"p": profile}, nb_res=2)
    result, _ = run([wl], Scripted({0: [execute("w0!1", "0-1")]}), platform=plat, export=tmp_path / "o")
    assert timeline(result.jobs_csv) == [("w0", "1", "COMPLETED_SUCCESSFULLY", "0.000000", expected_finish, "0-1")]
