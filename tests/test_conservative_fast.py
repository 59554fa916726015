"""The fast conservative backfilling (issue 27 item 4) takes the decisions of the old one.

- :class:`Steps` (the profile's tree) answers like a scan of the sorted change points, for tiny
  blocks too (splits, merges, deep trees); :class:`StepProfile` gives :class:`Profile`'s levels and
  earliest fits;
- :class:`Conservative` and :class:`RefConservative` (tests/conservative_ref.py: the implementation
  that tried every reserved job at every compression) write the same ``_jobs.csv`` and the same
  reservation records, on random workloads (hypothesis: all policies, jobs without walltime,
  outages with the three ``on_machine_down`` modes, maintenance windows) and on seeded workloads
  with longer queues; after every decision, every job that could move is unsettled, and
  :meth:`Compression.movable` (whole profile or hull only) agrees with :meth:`Profile.earliest`'s
  walk;
- the first 4,000 KTH-SP2 jobs get the schedule recorded with the old implementation, trying far
  fewer jobs in the compressions.
"""

from __future__ import annotations

import csv
import hashlib
import random
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from batfeed.schedulers.compression import _seg_runs, moves
from batfeed.schedulers.conservative import Conservative
from batfeed.schedulers.profile import Profile
from batfeed.schedulers.reservations import Plan
from batfeed.schedulers.resources import FreeMachines
from batfeed.schedulers.step_profile import StepProfile
from batfeed.schedulers.steps import Steps
from conservative_ref import RefConservative
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_helpers import simulate_jobs
from test_engine_helpers import REPO

from batfeed.engine import EngineConfig

INF = float("inf")
CLUSTER_16 = REPO / "platforms" / "cluster_16.xml"
POLICY_NAMES = ["FCFS", "LCFS", "SPF", "LPF", "SQF", "LQF", "SEXP", "LEXP", "SRF", "LRF", "SAF", "LAF"]
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------ Steps
time_st = st.one_of(st.integers(0, 40).map(float), st.just(INF))
ops_st = st.lists(st.tuples(time_st, st.integers(-4, 4)), min_size=1, max_size=120)


@settings(max_examples=200, deadline=None)
@given(ops_st, st.sampled_from([1, 2, 3, 32]), st.integers(-3, 8), st.data())
def test_steps_answer_like_a_scan(ops, load, base, data):
    steps = Steps()
    steps.LOAD = load                 # tiny blocks: many splits, merges and tree levels
    ref: dict[float, int] = {}
    paired = data.draw(st.booleans())
    for k, (t, d) in enumerate(ops):
        if paired and k % 2:
            steps.add2(*ops[k - 1], t, d)     # the two steps of a reservation, one tree update
        elif not paired or k == len(ops) - 1:
            steps.add(t, d)
    for t, d in ops:
        if d:
            ref[t] = ref.get(t, 0) + d
            if not ref[t]:
                del ref[t]
    entries = sorted(ref.items())
    assert list(steps) == entries and len(steps) == len(entries)
    levels, acc = [], base
    for t, d in entries:
        acc += d
        levels.append((t, acc))
    for _ in range(8):
        x = data.draw(st.one_of(st.integers(-1, 42).map(float), st.just(INF)))
        q = data.draw(st.integers(-3, 10))
        assert steps.prefix(x) == sum(d for t, d in entries if t <= x)
        assert steps.prefix(x, strict=True) == sum(d for t, d in entries if t < x)
        assert steps.around(x) == (sum(d for t, d in entries if t < x), ref.get(x, 0))
        assert steps.after(x) == next((t for t, _ in entries if t > x), INF)
        assert steps.next_ge(x, q, base) == next((t for t, lv in levels if t > x and lv >= q), None)
        assert steps.next_lt(x, q, base) == next((t for t, lv in levels if t > x and lv < q), None)
        lo = data.draw(st.integers(-1, 42).map(float))
        if base + steps.prefix(x) >= q and lo <= x:
            low = [i for i, (t, lv) in enumerate(levels) if t <= x and lv < q]
            start = levels[low[-1] + 1][0] if low else levels[0][0] if entries and base < q else -INF
            assert steps.run_start(x, q, base, lo) == max(start, lo)
        if x < INF:
            y = x + data.draw(st.integers(1, 20))
            seen = [base + steps.prefix(x)] + [lv for t, lv in levels if x < t < y]
            assert steps.minmax(x, y, base) == (min(seen), max(seen))
            inside = [(t, lv) for t, lv in levels if x < t < y]
            walked = steps.walk(x, y, base, 3)
            assert walked == (None if len(inside) > 3 else
                              ([x] + [t for t, _ in inside], seen, base + steps.prefix(y)))


@settings(max_examples=200, deadline=None)
@given(ops_st, st.integers(-3, 8), st.data())
def test_runs_of_a_short_span_as_the_tree_searches(ops, base, data):
    """Compression's stretches meeting [s, e), from the walked levels (``_seg_runs``) or the tree."""
    prof = StepProfile()
    prof.steps.LOAD = data.draw(st.sampled_from([1, 2, 32]))
    for t, d in ops:
        prof.steps.add(t, d)
    cz = Plan(SimpleNamespace(free=FreeMachines(0)), prof).cz
    for _ in range(8):
        s = data.draw(st.integers(-1, 42).map(float))
        e = s + data.draw(st.one_of(st.integers(1, 30).map(float), st.just(INF)))
        q = data.draw(st.integers(-3, 10))
        now = s - data.draw(st.integers(0, 10))
        seg = prof.steps.walk(s, e, base, 32)
        if seg is None:
            continue
        times, levels, f_e = seg
        lo, hi = cz._stretch(s, e, q, base, now, levels[0], f_e)
        assert _seg_runs(times, levels, q, lo, hi) == cz._runs(s, e, q, base, lo)


reservation_st = st.tuples(st.integers(0, 50).map(float), st.one_of(st.integers(1, 30).map(float), st.just(INF)),
                           st.integers(1, 4), st.booleans())


@settings(max_examples=200, deadline=None)
@given(st.lists(reservation_st, min_size=1, max_size=40), st.integers(0, 50).map(float), st.integers(0, 8),
       st.lists(st.tuples(st.integers(-2, 8), st.one_of(st.integers(1, 30).map(float), st.just(INF)),
                          st.one_of(st.just(INF), st.integers(0, 60).map(float))), min_size=1, max_size=6))
def test_step_profile_is_a_profile(reservations, now, free, queries):
    flat, tree = Profile(ends_in_steps=True), StepProfile()
    for t, d, q, undo in reservations:
        for prof in (flat, tree):
            prof.reserve(t, d, q)
            if undo:
                prof.unreserve(t, d, q)
    assert list(flat.levels(now, free)) == list(tree.levels(now, free))
    t, d, q, _ = reservations[-1]
    for qq, dd, before in queries:
        assert flat.earliest(qq, dd, now, free, before) == tree.earliest(qq, dd, now, free, before)
        skip = (t, d, q)
        assert flat.earliest(qq, dd, now, free, before, skip) == tree.earliest(qq, dd, now, free, before, skip)


# ------------------------------------------------------------------------------------------ schedules
class Checked(Conservative):
    """After every decision: a job that could move (by the reference walk) is unsettled, and
    ``movable`` answers like the walk."""

    def schedule(self) -> None:
        super().schedule()
        now, free = self.bs.time(), self.free.count
        base = self.profile.base(now, free)
        for jid, (old, e, _) in self.res.items():
            if old <= now:
                continue
            walk = self.profile.earliest(e.q, e.p, now, free, before=old, skip=(old, e.p, e.q)) < old
            assert moves(self.cz.movable(e, old, now, base, None)) == walk, (now, jid, old)
            if jid in self.cz.unsettled:    # a stretch long enough for it meets its hull
                hull = self.cz.unsettled[jid]
                assert moves(self.cz.movable(e, old, now, base, hull)) == walk, (now, jid, old, hull)
            else:
                assert not walk, (now, jid, old)


def workload(submit: int, sizes: list[int], runtime: int, slack: int, n: int) -> st.SearchStrategy:
    """Jobs (id, r, q, runtime, walltime): walltime = runtime + slack, or none."""
    job = st.tuples(st.integers(0, submit), st.sampled_from(sizes), st.integers(1, runtime),
                    st.one_of(st.none(), st.integers(0, slack), st.integers(0, 2)))
    return st.lists(job, min_size=1, max_size=n).map(
        lambda js: [(i, r, q, rt, None if x is None else rt + x) for i, (r, q, rt, x) in enumerate(js, 1)])


# small numbers (ties everywhere: equal ends, reservations back to back, steps that cancel out),
# and runtimes over two orders of magnitude with walltimes up to 8 times longer (early ends
# everywhere, reservations far and near, stretches of every length)
workload_st = st.one_of(workload(10, [1, 4, 8, 12, 16], 6, 6, 12),
                        workload(100, [1, 1, 2, 3, 4, 4, 4, 8, 8, 12, 16], 120, 400, 70))


def rows_of(jobs, sched, events=None, name="run", config=None):
    sched.trace_reservations = True
    with tempfile.TemporaryDirectory() as tmp:
        simulate_jobs(Path(tmp) / name, jobs, sched, events=events, platform=CLUSTER_16, nb_res=16, config=config)
        text = (Path(tmp) / name / "out_jobs.csv").read_text()
    return text, sched.reservations


@PROPS
@given(workload_st, st.sampled_from(POLICY_NAMES))
def test_same_schedule_as_the_reference(jobs, policy):
    fast = Checked({"policy": policy})
    assert rows_of(jobs, fast) == rows_of(jobs, RefConservative({"policy": policy}))


outage_st = st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 120), st.integers(1, 80))
window_st = st.tuples(st.integers(0, 15), st.integers(0, 15), st.integers(0, 120), st.integers(1, 60))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload_st, st.lists(outage_st, max_size=2), st.lists(window_st, max_size=2),
       st.sampled_from(["ignore", "kill-drop", "kill-resubmit"]), st.sampled_from(["FCFS", "SPF", "LCFS"]))
def test_same_schedule_with_downtime_and_maintenance(jobs, outages, windows, on_down, policy):
    events, busy = [], set()
    for a, b, s, d in outages:                    # at most one outage per machine
        ms = set(range(min(a, b), max(a, b) + 1)) - busy
        if ms:
            busy |= ms
            text = " ".join(str(m) for m in sorted(ms))
            events += [{"timestamp": s, "type": "machine_unavailable", "resources": text},
                       {"timestamp": s + d, "type": "machine_available", "resources": text}]
    maint = [{"start": s, "end": s + d, "machines": f"{min(a, b)}-{max(a, b)}"} for a, b, s, d in windows]
    opts = {"on_machine_down": on_down, "maintenance": maint, "policy": policy}
    config = EngineConfig(enable_dynamic_jobs=on_down == "kill-resubmit")
    assert rows_of(jobs, Checked(opts), events, config=config) == \
        rows_of(jobs, RefConservative(opts), events, config=config)


def test_a_chain_of_early_ends():
    """Same-size jobs whose reservations follow one another, ending early one after the other:
    the steps at a reservation's start cancel out, the case where the walk's skip does not free
    the job's own machines (module doc of compression.py)."""
    jobs = [(i, 0, 4 if i % 3 else 8, 5 + i % 7, 30) for i in range(1, 30)]
    jobs += [(100 + i, 3 * i, 1 + i % 16, 10, 10 + i) for i in range(20)]
    for policy in ("FCFS", "SPF", "LQF"):
        assert rows_of(jobs, Checked({"policy": policy})) == rows_of(jobs, RefConservative({"policy": policy}))


def seeded_workload(seed: int, n: int, short: bool) -> list[tuple]:
    """Bursts of submissions, sizes 1-16, walltimes a little or much longer than the runtimes (or
    none): longer queues than the property tests reach, chains of reservations, early ends;
    ``short``: runtimes up to 30 s, else up to 200 s (a tenth of them up to 10 s)."""
    rnd = random.Random(seed)
    jobs, t = [], 0
    for i in range(1, n + 1):
        if short:
            t += rnd.choice([0, 0, 1, 2, 5])
            run, slack, size = rnd.randint(1, 30), 60, rnd.choice([1, 2, 4, 8, 12, 16])
        else:
            t += rnd.choice([0, 0, 1, 2, 5, 20])
            run, slack = rnd.choice([rnd.randint(1, 10), rnd.randint(1, 200)]), 400
            size = rnd.choice([1, 1, 2, 4, 4, 8, 8, 12, 16])
        wall = None if rnd.random() < 0.04 else run + rnd.choice([0, rnd.randint(0, 3), rnd.randint(0, slack)])
        jobs.append((i, t, size, run, wall))
    return jobs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n,short", [(60, True), (200, False)], ids=["short", "long"])
def test_same_schedule_on_longer_queues(seed, n, short):
    jobs = seeded_workload(seed, n, short)
    for policy in ("FCFS", "SPF", "LQF"):
        assert rows_of(jobs, Checked({"policy": policy})) == rows_of(jobs, RefConservative({"policy": policy}))


# ------------------------------------------------------------------------------------------ a real trace
KTH_JOBS = 4000
# sha256 of the "job_id,repr(float(starting_time)),allocated_resources" lines, by job id, of the
# _jobs.csv of the first 4,000 jobs of KTH-SP2 (batfeed convert swf, max_jobs=4000), recorded with the
# old implementation (RefConservative)
KTH_SCHEDULE = "a67a019b6b6968f3d9255aa9b1e4e955212ff6229c794e61caaa22d106c5636d"


def kth_schedule(sched, tmp: Path) -> tuple[str, int]:
    from batfeed.adapters.swf import convert_swf

    from batfeed.engine import load_simulation
    from batfeed.engine.direct import DirectDriver

    conv = convert_swf(REPO / "data" / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz", tmp, max_jobs=KTH_JOBS)
    load_simulation(conv.platform_path, [conv.workload_path]).run(DirectDriver(sched), tmp / "out")
    with open(tmp / "out_jobs.csv", newline="") as f:
        rows = sorted((int(r["job_id"]), float(r["starting_time"]), r["allocated_resources"])
                      for r in csv.DictReader(f))
    text = "".join(f"{jid},{start!r},{alloc}\n" for jid, start, alloc in rows)
    return hashlib.sha256(text.encode()).hexdigest(), len(rows)


class CountingRef(RefConservative):
    """The reference, counting the jobs its compressions try (earliest() calls with ``skip``)."""

    def __init__(self, options=None):
        super().__init__(options)
        self.tried = 0

    def _compress(self, order, now):
        profile = self.profile          # a compiled Profile's methods cannot be replaced: wrap it instead
        self.profile = _Counting(profile, self)
        try:
            super()._compress(order, now)
        finally:
            self.profile = profile


class _Counting:
    """The profile, its ``earliest()`` calls with ``skip`` counted into ``owner.tried``."""

    def __init__(self, profile, owner):
        self._profile, self._owner = profile, owner

    def __getattr__(self, name):
        return getattr(self._profile, name)

    def earliest(self, q, d, t, free, before=INF, skip=None):
        self._owner.tried += skip is not None
        return self._profile.earliest(q, d, t, free, before, skip)


def test_kth_schedule_is_the_recorded_one(tmp_path):
    fast, ref = Conservative(), CountingRef()
    assert kth_schedule(fast, tmp_path / "fast") == (KTH_SCHEDULE, KTH_JOBS)
    assert kth_schedule(ref, tmp_path / "ref") == (KTH_SCHEDULE, KTH_JOBS)
    # the compressions tried far fewer jobs (8,480 against 49,638 when recorded)
    assert 4 * fast.cz.tried < ref.tried, (fast.cz.tried, ref.tried)
