"""Property tests of the backfilling schedulers on random small workloads run through the engine.

- EASY (count mode) takes exactly the decisions of a naive transcription of the pseudo-code of
  models.md §A (:class:`RefEasy`: sorts the whole queue and walks every job at every decision), for
  all 12 policies, with Θ and with a backfill order B ≠ P — so the indexed queue, the pruned scan,
  the skipped decisions and the blocked profile change nothing;
- on every run: no machine used twice at once, no start before submission, every job accounted
  for (the engine checks submitted = completed + rejected + killed; we also check the job ids);
- EASY (FCFS, count and machines modes) never starts a job later than the first reservation it got
  as head of the queue; conservative never starts a job later than its first reservation;
- the work of a decision does not grow linearly with the queue (counted, not timed).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from batfeed.schedulers.base import BatfeedScheduler
from batfeed.schedulers.conservative import Conservative
from batfeed.schedulers.easy import Easy
from batfeed.schedulers.jobqueue import Entry
from batfeed.schedulers.policies import POLICIES, get_policy
from batfeed.schedulers.resources import parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_helpers import simulate_jobs
from test_engine_helpers import jobs_rows

from batfeed.engine import EngineConfig

INF = float("inf")
POLICY_NAMES = ["FCFS", "LCFS", "SPF", "LPF", "SQF", "LQF", "SEXP", "LEXP", "SRF", "LRF", "SAF", "LAF"]


class RefEasy(BatfeedScheduler):
    """models.md §A, literally: from scratch at every message with a submission or a completion."""

    def __init__(self, policy: str = "FCFS", backfill: str | None = None, theta: float | None = None):
        super().__init__({})
        self.P, self.B, self.theta = get_policy(policy), get_policy(backfill or policy), theta
        self.ends: dict[str, tuple[float, int, int]] = {}    # running: (s + p̃, start order, q)
        self.nstarts = self.nsub = 0
        self.changed = False

    def on_submit(self, job):
        self.queue.append(Entry(job, self.nsub))
        self.nsub += 1
        self.changed = True

    def onJobCompletion(self, job):
        super().onJobCompletion(job)
        self.ends.pop(job.id, None)
        self.changed = True

    def order(self, jobs, pol, now):
        jobs = sorted(jobs, key=lambda e: (pol.key(e, now), e.seq))
        if self.theta is None:
            return jobs
        starved = sorted([e for e in jobs if now - e.r > self.theta], key=lambda e: (e.r, e.seq))
        return starved + [e for e in jobs if not now - e.r > self.theta]

    def go(self, e, now):
        self.start(e.job, self.free.take_lowest(e.q))
        self.ends[e.id] = (now + e.p, self.nstarts, e.q)
        self.nstarts += 1
        self.queue.remove(e)

    def schedule(self):
        if not self.changed:
            return
        self.changed = False
        now = self.bs.time()
        Q = self.order(self.queue, self.P, now)
        head = None
        for e in Q:                                      # 1) start from the head while it fits
            if e.q <= self.free.count:
                self.go(e, now)
            else:
                head = e
                break
        if head is None:
            return
        avail, shadow = self.free.count, INF             # 2) shadow and extra
        for end, _, q in sorted(self.ends.values()):
            avail += q
            if avail >= head.q:
                shadow = end
                break
        extra = avail - head.q if shadow < INF else 0
        free = self.free.count
        rest = [e for e in Q if e is not head and e.where == 0 and e in self.queue]
        for e in self.order(rest, self.B, now):          # 3) one greedy pass in order B
            if e.q <= free and (now + e.p <= shadow or e.q <= extra):
                self.go(e, now)
                free -= e.q
                if now + e.p > shadow:
                    extra -= e.q


# ------------------------------------------------------------------------------------------ workloads
job_st = st.tuples(st.integers(0, 60), st.integers(1, 4), st.integers(1, 40),
                   st.one_of(st.none(), st.integers(0, 30)))
workload_st = st.lists(job_st, min_size=1, max_size=14).map(
    lambda js: [(i, r, q, rt, None if extra is None else rt + extra) for i, (r, q, rt, extra) in enumerate(js, 1)])
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_on(jobs, sched, name="run"):
    with tempfile.TemporaryDirectory() as tmp:
        rows, result = simulate_jobs(Path(tmp) / name, jobs, sched)
    check_sound(jobs, rows, result)
    return rows


def check_sound(jobs, rows, result):
    """Every job accounted for, no start before submission, no machine used twice at once."""
    assert set(rows) == {str(j[0]) for j in jobs}
    assert result.counts["submitted"] == len(jobs)
    submit = {str(j[0]): j[1] for j in jobs}
    use: dict[int, list[tuple[float, float]]] = {}
    for jid, (start, finish, alloc, state) in rows.items():
        if state == "REJECTED":
            continue
        assert start >= submit[jid]
        for a, b in parse(alloc):
            for m in range(a, b + 1):
                use.setdefault(m, []).append((start, finish))
    for spans in use.values():
        spans.sort()
        for (_, f1), (s2, _) in zip(spans, spans[1:], strict=False):
            assert f1 <= s2, spans


def first_reservations(records):
    first: dict[str, float] = {}
    for _, jid, t in records:
        first.setdefault(jid[3:], t)
    return first


# ------------------------------------------------------------------------------------------ properties
@PROPS
@given(workload_st, st.sampled_from(POLICY_NAMES), st.sampled_from([None, *POLICY_NAMES]),
       st.sampled_from([None, 0, 15, 40]))
def test_easy_takes_the_decisions_of_the_pseudo_code(jobs, policy, backfill, theta):
    easy = run_on(jobs, Easy({"policy": policy, "backfill_policy": backfill, "theta": theta}), "easy")
    ref = run_on(jobs, RefEasy(policy, backfill, theta), "ref")
    assert easy == ref


@PROPS
@given(workload_st, st.sampled_from(["count", "machines"]), st.sampled_from([None, "SPF", "LQF"]))
def test_easy_never_starts_a_job_after_its_first_head_reservation(jobs, reservation, backfill):
    sched = Easy({"reservation": reservation, "backfill_policy": backfill})
    sched.trace_reservations = True
    rows = run_on(jobs, sched)
    for jid, t in first_reservations(sched.reservations).items():
        assert rows[jid][0] <= t, (jid, rows[jid], t, sched.reservations)


@PROPS
@given(workload_st, st.sampled_from(POLICY_NAMES))
def test_conservative_never_starts_a_job_after_its_first_reservation(jobs, policy):
    sched = Conservative({"policy": policy})
    sched.trace_reservations = True
    rows = run_on(jobs, sched)
    first = first_reservations(sched.reservations)
    assert set(first) == {jid for jid, row in rows.items() if row[3] != "REJECTED"}
    for jid, t in first.items():
        assert rows[jid][0] <= t, (jid, rows[jid], t)


def test_the_properties_can_fail():
    """The reservation check catches a scheduler that starts a job after its reservation."""
    jobs = [(1, 0, 3, 100, 100), (2, 1, 2, 100, 100), (3, 2, 2, 100, 100), (4, 3, 1, 500, 500)]
    sched = Easy()
    sched.trace_reservations = True
    rows = run_on(jobs, sched)
    late = {jid: rows[jid][0] for jid in rows}
    # EASY started 4 at 3 and 3 at 200: 3 was never the head before 100, when it got shadow 200
    assert first_reservations(sched.reservations) == {"2": 100, "3": 200}
    assert late["3"] == 200
    cons = Conservative()
    cons.trace_reservations = True
    run_on(jobs, cons)
    assert first_reservations(cons.reservations)["3"] == 100 < late["3"]   # what EASY breaks


# ------------------------------------------------------------------------------------------ work
def blocked_queue_work(n: int) -> tuple[int, int]:
    """1 runs on 0-2 until 10^6 (p̃ 2·10^6), machine 3 is free.  n jobs wait behind: the head needs
    4 machines (shadow 2·10^6, extra 0), the others 2-4 machines, except 5 one-machine jobs too
    long to backfill (they fit now but would end after the shadow).  Then 40 short one-machine jobs
    arrive one by one and backfill.  Returns (entries and tree nodes examined by the 80 decisions
    of that phase, queue length then)."""
    jobs = [(1, 0, 3, 10**6, 2 * 10**6)]
    for i in range(n):
        long_small = i % (n // 5) == n // 10
        q = 1 if long_small else 4 if i == 0 else 2 + i % 3
        jobs.append((i + 2, 1 + i * 0.001, q, 10, 10**7 if long_small else 20))
    base = len(jobs) + 1
    jobs += [(base + k, 100 + 50 * k, 1, 5, 10) for k in range(40)]
    sched = Easy()
    counter = {"examined": 0, "decisions": 0}
    original = sched.schedule
    queue_len = 0

    def counted():
        if not 100 <= sched.bs.time() < 100 + 50 * 40:
            return original()
        before = sched.wq.examined
        original()
        counter["examined"] += sched.wq.examined - before
        counter["decisions"] += 1
        nonlocal queue_len
        queue_len = len(sched.wq)
    sched.schedule = counted
    with tempfile.TemporaryDirectory() as tmp:
        rows, _ = simulate_jobs(Path(tmp), jobs, sched)
    assert all(rows[str(base + k)][0] == 100 + 50 * k for k in range(40))   # every short job backfilled
    assert counter["decisions"] == 80
    return counter["examined"], queue_len


def test_decision_work_is_sublinear_in_the_queue_length():
    small, q_small = blocked_queue_work(500)
    large, q_large = blocked_queue_work(8000)
    assert (q_small, q_large) == (500, 8000)
    # 16 times more waiting jobs: a walk over the queue would examine 16x more entries; the index
    # looks at the blocks holding the 5 long one-machine jobs and the new short job (at most 128
    # entries each) and a few more tree nodes (log) per decision.
    assert large < 2 * small, (small, large)
    assert large / 80 < q_large / 10, (large / 80, q_large)
    assert set(POLICIES) >= set(POLICY_NAMES)


# ------------------------------------------------------------------------------------------ downtime
outage_st = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 80), st.integers(1, 80))
window_st = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 80), st.integers(1, 60))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload_st, st.lists(outage_st, max_size=2), st.lists(window_st, max_size=2),
       st.sampled_from(["easy-count", "easy-machines", "conservative"]),
       st.sampled_from(["ignore", "kill-drop", "kill-resubmit"]))
def test_downtime_and_maintenance_are_respected(jobs, outages, windows, which, on_down):
    """Random outages (Batsim events) and planned windows: the run ends, every job (resubmitted ones
    included) is accounted for, no machine is used twice, none while unavailable (the engine would
    stop with a protocol error) and no job overlapping a window runs on its machines."""
    events, busy = [], set()
    for a, b, s, d in outages:                    # at most one outage per machine
        ms = set(range(min(a, b), max(a, b) + 1)) - busy
        if ms:
            busy |= ms
            text = " ".join(str(m) for m in sorted(ms))
            events += [{"timestamp": s, "type": "machine_unavailable", "resources": text},
                       {"timestamp": s + d, "type": "machine_available", "resources": text}]
    maint = [{"start": s, "end": s + d, "machines": f"{min(a, b)}-{max(a, b)}"} for a, b, s, d in windows]
    opts = {"on_machine_down": on_down, "maintenance": maint}
    sched = Conservative(opts) if which == "conservative" else \
        Easy({**opts, "reservation": which.split("-")[1]})
    with tempfile.TemporaryDirectory() as tmp:
        # the scheduler ends the registration it needs for resubmissions (and only then)
        config = EngineConfig(enable_dynamic_jobs=on_down == "kill-resubmit")
        rows, result = simulate_jobs(Path(tmp), jobs, sched, events=events, config=config)
        full = jobs_rows(Path(tmp) / "out_jobs.csv")
    assert result.counts["submitted"] == len(jobs) + len(sched.resubmitted)
    assert set(sched.downtime_killed) == set(sched.resubmitted) | set(sched.dropped)
    use: dict[int, list[tuple[float, float]]] = {}
    for r in full:
        if r["final_state"] == "REJECTED":
            continue
        start, finish = float(r["starting_time"]), float(r["finish_time"])
        assert start >= float(r["submission_time"])
        machines = {m for a, b in parse(r["allocated_resources"]) for m in range(a, b + 1)}
        for m in machines:
            use.setdefault(m, []).append((start, finish))
        for w in maint:
            wm = {m for a, b in parse(w["machines"]) for m in range(a, b + 1)}
            if start < w["end"] and finish > w["start"]:
                assert not machines & wm, (r, w)
    for spans in use.values():
        spans.sort()
        assert all(f1 <= s2 for (_, f1), (s2, _) in zip(spans, spans[1:], strict=False)), spans
