"""The lean what-if replay (schedulers/replay.py) gives the engine's start times (schedulers/whatif.py).

Both paths of the kernel run these (CI reruns the file with BATFEED_PURE=1): random workloads with ties,
kills at the walltime, jobs without walltime and jobs wider than the machine, under the 12
policies with both tie orders, Θ and a separate backfill order; and the busiest periods of a real
tuned_easy run on KTH-SP2.
"""

from __future__ import annotations

import pytest
from batfeed.schedulers.tuned_easy import TUNE_POLICIES
from batfeed.schedulers.whatif import PastJob, WhatIf
from hypothesis import given, settings
from hypothesis import strategies as st
from test_backfill_properties import PROPS

from batfeed.runner import run_simulation

POLICIES = ("FCFS", *TUNE_POLICIES)

# run times > 0: Batsim refuses a delay profile of 0 s, so a tuned_easy run never replays one
job_st = st.tuples(st.integers(0, 40), st.integers(0, 6), st.integers(1, 25), st.integers(-1, 30))
options_st = st.fixed_dictionaries({
    "theta": st.sampled_from([None, 0.0, 15.0, 144000.0]),
    "ties": st.sampled_from(["oldest", "newest", "obps"]),
    "backfill_policy": st.sampled_from([None, "SQF", "LAF", "SPF"]),
}).flatmap(lambda o: st.just(o) if o["ties"] != "obps" else st.booleans().map(lambda b: {**o, "backfill_theta": b}))


def past(jobs: list[tuple[int, int, int, int]]) -> list[PastJob]:
    # (subtime, res, runtime, walltime <= 0: none); ids whose string order differs from their number's
    return [PastJob(str(7 + 3 * i), r, q, p, w, {}) for i, (r, q, p, w) in enumerate(jobs)]


def both(jobs: list[PastJob], nb: int, options: dict, policy: str) -> tuple[list[float], list[float]]:
    """The waits of the lean replay (which must be the one that ran) and of the engine."""
    wi, ref = WhatIf(nb, options), WhatIf(nb, options, lean=False)
    lean, engine = wi.waits(jobs, policy), ref.waits(jobs, policy)
    assert (wi.on_engine, ref.on_engine) == (0, 1)
    return lean, engine


def same(a: list[float], b: list[float]) -> bool:
    return all(x == y or (x != x and y != y) for x, y in zip(a, b, strict=True))


@PROPS
@given(st.lists(job_st, min_size=1, max_size=14), options_st, st.sampled_from(POLICIES))
def test_the_lean_replay_starts_every_job_when_the_engine_does(jobs, options, policy):
    lean, engine = both(past(jobs), 5, options, policy)
    assert same(lean, engine), (lean, engine)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 40), st.integers(1, 4), st.floats(0.5, 20), st.integers(1, 30)),
                min_size=1, max_size=8))
def test_fractional_times_go_to_the_engine(jobs):
    pj = [PastJob(str(i), r, q, p, w, {}) for i, (r, q, p, w) in enumerate(jobs)]
    wi = WhatIf(4, {"theta": 144000.0})
    lean = wi._lean(pj)
    exact = all(float(x).is_integer() for j in pj for x in (j.subtime, j.runtime))
    assert (lean is not None) == exact
    assert same(wi.waits(pj, "SAF"), WhatIf(4, {"theta": 144000.0}, lean=False).waits(pj, "SAF"))


def test_machines_mode_goes_to_the_engine():
    jobs = past([(0, 3, 10, 10), (1, 3, 5, 5), (2, 1, 3, 3)])
    assert WhatIf(4, {"reservation": "machines", "theta": None})._lean(jobs) is None
    assert WhatIf(4, {"theta": None})._lean(jobs) is not None


@pytest.mark.parametrize("options", [{"theta": 144000.0},
                                     {"theta": 200000.0, "backfill_policy": "SQF", "ties": "newest"},
                                     {"theta": 200000.0, "backfill_policy": "LQF", "ties": "obps",
                                      "backfill_theta": False}])
def test_the_busiest_kth_days_replay_the_same(kth_small, monkeypatch, options):
    """Every period of a tuned_easy run on KTH-SP2's first 1,500 jobs that needs a replay: the lean
    replay's waits equal the engine's, job by job, for the 12 policies."""
    seen: list[tuple[list[PastJob], int]] = []
    original = WhatIf.costs

    def recording(self, jobs, policies, queued=()):
        seen.append((list(jobs), self.nb_machines))
        return original(self, jobs, policies, queued)
    monkeypatch.setattr(WhatIf, "costs", recording)
    run_simulation(kth_small[0], [kth_small[1]], scheduler="tuned_easy", options={"period": "day", **options})
    busy = sorted(seen, key=lambda s: -len(s[0]))[:6]
    assert busy and len(busy[0][0]) > 20
    for jobs, nb in busy:
        for policy in TUNE_POLICIES:
            lean, engine = both(jobs, nb, options, policy)
            assert same(lean, engine), policy


@pytest.fixture(scope="module")
def kth_small(tmp_path_factory):
    from batfeed.adapters.swf import convert_swf
    from test_tuned_easy import KTH

    conv = convert_swf(KTH, tmp_path_factory.mktemp("kth1500"), max_jobs=1500, name="kth1500")
    return conv.platform_path, conv.workload_path


@pytest.mark.parametrize("strategy", ["full", "noisy"])
def test_a_tuned_run_is_the_same_with_either_replay(kth_small, tmp_path, monkeypatch, strategy):
    """End to end: tuned_easy on KTH-SP2's first 1,500 jobs writes the same _jobs.csv and tuning log whether
    its what-if replays run lean or on the engine (and the lean run really replayed without the engine)."""
    made: list[WhatIf] = []
    original = WhatIf.__init__

    def init(self, nb, options, lean=True):
        original(self, nb, options, lean=forced)
        made.append(self)
    monkeypatch.setattr(WhatIf, "__init__", init)
    out = {}
    for forced in (True, False):
        prefix = tmp_path / ("lean" if forced else "engine")
        run_simulation(kth_small[0], [kth_small[1]], scheduler="tuned_easy", export=prefix,
                       options={"period": "day", "strategy": strategy, "seed": 3})
        out[forced] = [(tmp_path / f"{prefix.name}{suffix}").read_bytes() for suffix in ("_jobs.csv", "_tuning.csv")]
    lean, engine = made
    assert lean.replays > 0 and lean.on_engine == 0 and engine.on_engine == engine.replays == lean.replays
    assert out[True] == out[False]
