"""A run does not hold its finished jobs (issue 27 item 5, docs/engine.md): the submitters, the engine's job
table and, for batfeed's schedulers, the direct driver's ``bs.jobs`` let go of a job once it has finished,
so the live ``Job`` objects stay the queued and running ones, whatever the trace's length."""

from __future__ import annotations

import gc
import random

import pytest
from test_engine_helpers import REPO, Scripted, delay, execute, job, run, write_workload

from batfeed.engine import load_simulation
from batfeed.engine.direct import DirectDriver
from batfeed.engine.state import Finished
from batfeed.engine.workload import SUCCESS, Job
from batfeed.errors import ProtocolError
from batfeed.registry import make_scheduler


def _live_jobs() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is Job)


def _workload(tmp_path, n: int):
    rng = random.Random(3)
    jobs = [job(i, i * 7, rng.randint(1, 16), f"d{i % 5}", walltime=rng.choice([-1, 40, 200])) for i in range(n)]
    return write_workload(tmp_path, jobs, {f"d{k}": delay(10 + 13 * k) for k in range(5)}, nb_res=16)


def test_finished_jobs_are_freed_during_the_run(tmp_path):
    n = 3000
    sim = load_simulation(REPO / "platforms" / "cluster_16.xml", [_workload(tmp_path, n)])
    sched = make_scheduler("easy", {})
    peak_late = []
    done = [0]
    inner = sched.onJobCompletion

    def on_completion(j):           # late in the run, the posted and finished jobs are gone
        inner(j)
        done[0] += 1
        if done[0] in (n // 2, n - 10):
            peak_late.append(_live_jobs())
    sched.onJobCompletion = on_completion
    gc.collect()
    before = _live_jobs()
    assert before >= n              # all loaded
    result = sim.run(DirectDriver(sched), tmp_path / "o")
    assert result.counts["submitted"] == n
    # at half-time only the jobs not yet submitted (about half), the queue and the running ones live
    assert peak_late[0] < before - n // 3, (before, peak_late)
    assert peak_late[1] < before - n + 200, (before, peak_late)
    gc.collect()
    assert _live_jobs() - (before - n) < 10     # the queue index drops its removed entries lazily
    states = {type(v) for v in sim.jobs.values()}
    assert states <= {str, Finished}
    assert all(w.jobs == [] for w in sim.workloads.values())
    assert sched.bs.jobs == {}


def test_a_pybatsim_scheduler_keeps_its_jobs(tmp_path):
    # pybatsim's Batsim.jobs keeps every job: a scheduler that does not declare forgets_finished_jobs
    # finds every job there after the run, as under real Batsim
    sched = make_scheduler("easy", {})
    sched.forgets_finished_jobs = False
    sim = load_simulation(REPO / "platforms" / "cluster_16.xml", [_workload(tmp_path, 50)])
    sim.run(DirectDriver(sched))
    assert len(sched.bs.jobs) == 50
    assert all(j.finish_time is not None for j in sched.bs.jobs.values())


def test_a_finished_job_named_again_is_answered_as_batsim_does(tmp_path):
    wl = write_workload(tmp_path, [job(1, 0, 1, "p"), job(2, 20, 1, "p")], {"p": delay(10)})
    with pytest.raises(ProtocolError, match=f"EXECUTE_JOB w0!1: the job is {SUCCESS}"):
        run([wl], Scripted({0: [execute("w0!1", "0")], 20: [execute("w0!1", "0")]}))


# ---------------------------------------------------------------------------------------- machines
def _reference_time_in_states(changes, n, t_end, busy, unavail, areas):
    """The previous accounting: every change (date, intervals) kept, scanned backwards at the end."""
    from batfeed.engine.machines import COMPUTING, IDLE, UNAVAILABLE

    seen, open_len = [False] * n, {IDLE: 0.0, COMPUTING: 0.0, UNAVAILABLE: 0.0}
    for t, ivs in reversed(changes):
        for a, b in ivs:
            for m in range(a, b + 1):
                if not seen[m]:
                    seen[m] = True
                    open_len[UNAVAILABLE if unavail[m] else COMPUTING if busy[m] else IDLE] += t_end - t
    for m in range(n):
        if not seen[m]:
            open_len[UNAVAILABLE if unavail[m] else COMPUTING if busy[m] else IDLE] += t_end
    out = {}
    for state, area in zip((IDLE, COMPUTING, UNAVAILABLE), areas, strict=True):
        value = area - open_len[state]
        out[state] = 0.0 if abs(value) <= 1e-12 * max(area, 1.0) else value
    return out


def _ivs(machines):
    """Sorted machine indices as merged intervals."""
    out = []
    for i in sorted(machines):
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


@pytest.mark.parametrize("seed", range(20))
def test_machine_time_in_states_keeps_one_date_per_machine_and_sums_as_before(seed):
    # the machines keep each one's last change (not every change: memory independent of the trace) and
    # give the same floats as the scan over every change
    from batfeed.engine.machines import Machines

    rng = random.Random(seed)
    n = rng.randint(1, 40)
    m = Machines([f"h{i}" for i in range(n)])
    changes, running, t = [], [], 0.0
    for _ in range(rng.randint(0, 300)):
        t += rng.choice([0.0, 0.1, 1.0, rng.random() * 100])
        free = [i for i in range(n) if not m.busy[i]]
        r = rng.random()
        if r < 0.45 and free:
            ivs = _ivs(rng.sample(free, rng.randint(1, len(free))))
            m.start(ivs, t)
            running.append(ivs)
        elif r < 0.85 and running:
            ivs = running.pop(rng.randrange(len(running)))
            changes.append((t, [(i, i) for a, b in ivs for i in range(a, b + 1) if not m.unavail[i]]))
            m.end(ivs, t)
        else:
            down = [i for i in range(n) if m.unavail[i]]
            up = [i for i in range(n) if not m.unavail[i]]
            if down and (not up or rng.random() < 0.5):
                ivs = _ivs(rng.sample(down, rng.randint(1, len(down))))
                m.set_available(ivs, t)
            else:
                ivs = _ivs(rng.sample(up, rng.randint(1, len(up))))
                m.set_unavailable(ivs, t)
            changes.append((t, ivs))
    expected = _reference_time_in_states(changes, n, m._t, m.busy, m.unavail,
                                         (m.area_idle, m.area_computing, m.area_unavailable))
    assert m.time_in_states() == expected
    assert len(m.last) == n
