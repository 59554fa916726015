"""The thesis's workload for site-level users (users/site_thesis.py, issue 28 item 3): the short-gap batch rule,
sizes in nodes, class mixtures, the long-class bound, the built-in models (regenerated from the logs when
../shared is there), and the closed-system metrics (jobs submitted in the window, the users' stats)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from batfeed.users.site_fit import BUILTIN, TraceStats, analyse_user, load_model, read_trace, sample
from batfeed.users.site_thesis import (
    MAX_GAP_S,
    PHASE2_MEAN_RUN_S,
    THESIS_LOGS,
    _q,
    _q_mean,
    equal_classes,
    fit_thesis,
    read_thesis_traces,
)

from batfeed.errors import BatfeedError, InputError
from batfeed.metrics import compute_metrics

# (submit, wait, run, procs): J2 joins J1's batch (gap 100 s); J3 comes 1,400 s after J2 while J2 runs: with
# the 20-min rule it starts a batch of its own (no think time), without it it joins; J4 follows J3's end by 90 s.
USER = [(0, 0, 5000, 4), (100, 0, 5000, 4), (1500, 0, 10, 8), (1600, 0, 10, 8)]


def _stats(max_gap: float | None) -> TraceStats:
    st = TraceStats("t")
    s, w, r, p = (list(c) for c in zip(*USER, strict=True))
    analyse_user(s, w, r, p, st, max_gap)
    return st


def test_short_gap_rule_splits_long_pauses() -> None:
    cut, joined = _stats(MAX_GAP_S), _stats(None)
    assert (cut.widths, cut.gaps, cut.thinks, cut.split, cut.negative) == ([2, 1, 1], [100], [90], 1, 2)
    assert (joined.widths, joined.gaps, joined.thinks, joined.split, joined.negative) == ([3, 1], [100, 1400],
                                                                                         [90], 0, 2)


def test_sizes_in_nodes(tmp_path: Path) -> None:
    rows = [(1, 0, 8), (2, 10, 16), (3, 20, 12), (4, 30, 64)]
    lines = ["; MaxProcs: 64", "; MaxNodes: 8"] + [f"{i} {s} 0 100 {p} -1 -1 {p} 200 -1 1 1 1 -1 -1 -1 -1 -1"
                                                   for i, s, p in rows]
    (tmp_path / "smp.swf").write_text("\n".join(lines) + "\n")
    st = read_trace(tmp_path / "smp.swf", nodes=True)
    assert (sorted(st.sizes), st.machine_procs) == ([1, 2, 2, 8], 8)     # ceil(12 / 8) = 2
    assert st.notes[0] == "sizes in nodes of 8 processors (MaxProcs 64 / MaxNodes 8)"
    assert sorted(read_trace(tmp_path / "smp.swf").sizes) == [8, 12, 16, 64]
    (tmp_path / "sp2.swf").write_text("\n".join(["; MaxProcs: 64", "; MaxNodes: 64"] + lines[2:]) + "\n")
    assert sorted(read_trace(tmp_path / "sp2.swf", nodes=True).sizes) == [8, 12, 16, 64]


def test_class_mixture_sampling() -> None:
    dist = {"classes": [{"p": 0.5, "quantiles": [1.0] * 101}, {"p": 0.25, "quantiles": [2.0] * 101},
                        {"p": 0.25, "quantiles": list(np.linspace(10, 20, 101))}]}
    x = sample(dist, np.random.default_rng(1), size=20000)
    assert abs((x == 1).mean() - 0.5) < 0.02 and abs((x == 2).mean() - 0.25) < 0.02
    assert ((x >= 10) & (x <= 20)).mean() == pytest.approx(0.25, abs=0.02)
    one = sample(dist, np.random.default_rng(1))
    assert isinstance(one, float) and one in (1.0, 2.0) or 10 <= one <= 20


def test_equal_classes_bound_is_the_smallest_that_reaches_the_mean() -> None:
    rng = np.random.default_rng(3)
    runs = np.concatenate([rng.uniform(1, 60, 500), rng.uniform(61, 600, 500), rng.uniform(601, 40000, 500)])
    dist, bound = equal_classes(runs, mean_s=900.0)
    cls = dist["classes"]
    assert [c["p"] for c in cls] == [1 / 3] * 3 and cls[2]["le_s"] == bound
    mean = sum(c["p"] * _q_mean(c["quantiles"]) for c in cls)
    assert mean >= 900.0
    long = np.sort(runs[runs > 600])
    k = int(np.searchsorted(long, bound, side="right"))
    lower = (_q_mean(cls[0]["quantiles"]) + _q_mean(cls[1]["quantiles"]) + _q_mean(_q(long[:k - 1]))) / 3
    assert lower < 900.0                                   # one observation less does not reach the mean
    with pytest.raises(BatfeedError, match="no bound"):
        equal_classes(runs, mean_s=1e9)


def test_builtin_models() -> None:
    p1, p2 = load_model("thesis-phase1"), load_model("thesis-phase2")
    assert set(BUILTIN) == {"default", "thesis-phase1", "thesis-phase2"}
    for m in (p1, p2):
        assert (m["p_cont"]["a"], m["p_cont"]["b"]) == (0.8, 0.05)
        assert m["intra_batch_gap_s"]["quantiles"][-1] <= MAX_GAP_S
        assert m["workload"]["sizes"] == "nodes" and 7 < m["workload"]["mean_size"] < 8
    assert p2["workload"]["mean_runtime_s"] == pytest.approx(PHASE2_MEAN_RUN_S, rel=1e-3)
    assert p1["workload"]["mean_runtime_s"] / 60 == pytest.approx(106.6, abs=0.5)   # the thesis's E1: 104 min
    rng = np.random.default_rng(0)
    x = sample(p2["runtime_s"], rng, size=30000)
    shares = [(x <= 60).mean(), ((x > 60) & (x <= 600)).mean(), (x > 600).mean()]
    assert shares == pytest.approx([1 / 3] * 3, abs=0.015)
    assert x.mean() == pytest.approx(PHASE2_MEAN_RUN_S, rel=0.03)


def test_bad_class_mixture_is_an_input_error(tmp_path: Path) -> None:
    m = load_model("thesis-phase2")
    m["runtime_s"]["classes"][0]["p"] = 0.5
    with pytest.raises(InputError, match="'runtime_s' needs"):
        load_model(m)


def test_builtin_models_regenerate_from_the_logs(shared_data: Path) -> None:
    logs = [shared_data / "swf" / f"{name}.swf.gz" for name in THESIS_LOGS]
    if not all(p.is_file() for p in logs):
        pytest.skip("the thesis's logs are not all in ../shared/data/swf")
    p1, p2, _ = fit_thesis(read_thesis_traces(logs))
    for ours, name in ((p1, "thesis-phase1"), (p2, "thesis-phase2")):
        assert json.loads(json.dumps(ours)) == json.loads(BUILTIN[name].read_text())
    share = dict(zip(p1["batch_width"]["values"], p1["batch_width"]["probs"], strict=True))
    assert 0.78 < share[1] < 0.83 and 0.09 < share[2] < 0.12        # the thesis: 1 dominant, 2 about 10 %
    assert p2["workload"]["long_class_bound_s"] / 60 == pytest.approx(83.5, abs=0.1)


def test_window_submitted_per_hour() -> None:
    jobs = pd.DataFrame({"job_id": ["1", "2", "3"], "workload_name": ["w"] * 3, "profile": ["p"] * 3,
                         "submission_time": [0.0, 3599.0, 3600.0], "requested_number_of_resources": [1, 1, 1],
                         "requested_time": [10.0] * 3, "success": [1] * 3,
                         "final_state": ["COMPLETED_SUCCESSFULLY"] * 3,
                         "starting_time": [0.0, 3599.0, 3600.0], "execution_time": [10.0] * 3,
                         "finish_time": [10.0, 3609.0, 3610.0], "waiting_time": [0.0] * 3,
                         "turnaround_time": [10.0] * 3, "stretch": [1.0] * 3, "allocated_resources": ["0"] * 3,
                         "consumed_energy": [-1.0] * 3})
    assert compute_metrics(jobs, nb_resources=1, window=(0, 3600))["window_submitted_per_hour"] == 2.0
    assert compute_metrics(jobs, nb_resources=1)["window_submitted_per_hour"] is None
