"""The thesis's workload for site-level users (Shmueli's thesis, models.md §C "What the thesis's E7 workload
looks like"): ``batfeed fit-users --thesis`` on the thesis's logs writes two behaviour models,

- ``thesis-phase1``: the Phase-1 workpool (§3.3.2, experiments E1-E5): sizes and run times as the pooled logs
  have them;
- ``thesis-phase2``: the Phase-2 workpool (§5.3.2.2, E7): the same but for run times, whose classes ≤ 1 min,
  1-10 min and > 10 min are equally likely (§5.5.2 "approximately the same size").

What is taken from where, and why (each choice is checked by a number the thesis publishes):

- **Logs**: CTC-SP2, KTH-SP2, SDSC-SP2 and SDSC-BLUE, pooled by jobs (``combined from all five traces``; the
  fifth, SDSC-Par95, is not in the Parallel Workloads Archive copies we have).
- **Sizes in nodes** (:func:`batfeed.users.site_fit.read_trace` ``nodes``): the SP2s have one processor per node,
  SDSC-BLUE eight, and its log counts processors (every BLUE size is a multiple of 8, no serial job).  In nodes
  the pool's mean size is 7.3 instead of 25; the thesis's 50-user row implies 0.35 × 128 / 28 jobs/h ≈ 1.6
  processor-hours per job, i.e. a mean size ≈ 8 at its ≈ 12-minute jobs.
- **Short intra-batch gaps**: a job joins a batch only if it is submitted before the previous job ended *and*
  at most 20 minutes after it (:data:`MAX_GAP_S`).  The thesis's batches are submitted "without waiting … with short
  inter-submission times"; a pause of more than 20 minutes is, by the thesis's own session rule, a break, not
  a gap.  Without it 13-17 % of the logs' gaps exceed 1 h (a user could then not exceed ≈ 0.3 jobs/hour).
- **p_cont = Eq. 5.1** (a = 0.8, b = 0.05 per minute); the fit on these logs is kept under ``p_cont.fitted``.
- **Phase-1 run times** are the pooled logs' (mean 106 min); the thesis's E1 site-level EASY has a mean
  response of 142 min with a 38-minute wait, i.e. 104-minute jobs.
- **Phase-2 run times**: a class is drawn with probability 1/3, then a run time from the pooled logs' jobs of
  that class.  The logs' > 10-minute jobs run 4.5 h on average, which no reading of the thesis allows (its
  50-user mean response is 12.16 min near zero wait), so that class is bounded: its upper bound T is the one
  quantity derived from the thesis's numbers, solved in closed form so that the mean run time is
  :data:`PHASE2_MEAN_RUN_S` (12.16 min, the 50-user response).  Jobs per hour and utilisation are then
  predictions, not fits (docs/reproductions.md compares them with the thesis).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
from batfeed.users.site_fit import THESIS_P_CONT, TraceStats, fit_site, read_trace

from batfeed.errors import BatfeedError

THESIS_LOGS = ("CTC-SP2-1996-3.1-cln", "KTH-SP2-1996-2.1-cln", "SDSC-SP2-1998-4.2-cln", "SDSC-BLUE-2000-4.2-cln")
MAX_GAP_S = 1200.0
CLASS_EDGES_S = (60.0, 600.0)
PHASE2_MEAN_RUN_S = 12.16 * 60
GRID = np.linspace(0.0, 1.0, 101)


def read_thesis_traces(paths: list[str | Path]) -> list[TraceStats]:
    """The logs as the thesis's workload reads them: sizes in nodes, gaps of at most :data:`MAX_GAP_S`."""
    return [read_trace(p, max_gap_s=MAX_GAP_S, nodes=True) for p in paths]


def _q(x: np.ndarray) -> list[float]:
    return [float(v) for v in np.quantile(x, GRID)]


def _q_mean(q: list[float]) -> float:
    """Mean of the linear inverse CDF through 101 quantiles (what :func:`sample` draws)."""
    return float(np.trapezoid(q, GRID))


def equal_classes(runtimes: np.ndarray, mean_s: float = PHASE2_MEAN_RUN_S) -> tuple[dict[str, Any], float]:
    """Run times in three equally likely classes (≤ 1 min, 1-10 min, > 10 min), each from ``runtimes``; the
    last class bounded at the smallest observed T for which the mixture's mean reaches ``mean_s``.  Returns
    the ``classes`` distribution and T."""
    r = np.sort(np.asarray(runtimes, dtype=float))
    lo, mid = CLASS_EDGES_S
    short, medium, long = r[r <= lo], r[(r > lo) & (r <= mid)], r[r > mid]
    base = _q_mean(_q(short)) + _q_mean(_q(medium))
    need = 3 * mean_s - base
    if need <= mid or _q_mean(_q(long)) < need:
        raise BatfeedError(f"fit-users --thesis: no bound of the > 10 min run-time class of these logs gives a mean "
                           f"run time of {mean_s:g} s")
    a, b = 1, len(long)                     # smallest k with mean(long[:k]) >= need (monotone in k)
    while a < b:
        k = (a + b) // 2
        if _q_mean(_q(long[:k])) >= need:
            b = k
        else:
            a = k + 1
    cls = [{"p": 1 / 3, "le_s": lo, "quantiles": _q(short)}, {"p": 1 / 3, "le_s": mid, "quantiles": _q(medium)},
           {"p": 1 / 3, "le_s": float(long[a - 1]), "quantiles": _q(long[:a])}]
    return {"classes": cls}, float(long[a - 1])


def fit_thesis(traces: list[TraceStats]) -> tuple[dict[str, Any], dict[str, Any], list[tuple[float, float, int]]]:
    """The ``thesis-phase1`` and ``thesis-phase2`` models (module docstring) and the p_cont bins."""
    p1, bins = fit_site(traces)
    runtimes = np.asarray([r for t in traces for r in t.runtimes], dtype=float)
    p1["p_cont"] = {"a": THESIS_P_CONT["a"], "b": THESIS_P_CONT["b"], "unit": "minutes",
                    "thesis": dict(THESIS_P_CONT), "fitted": {"a": p1["p_cont"]["a"], "b": p1["p_cont"]["b"]}}
    p1["workload"] = {"name": "thesis-phase1", "max_gap_s": MAX_GAP_S, "sizes": "nodes",
                      "split_batches": sum(t.split for t in traces),
                      "mean_runtime_s": float(runtimes.mean()),
                      "mean_size": float(np.mean([s for t in traces for s in t.sizes]))}
    p2 = copy.deepcopy(p1)
    p2["runtime_s"], bound = equal_classes(runtimes)
    p2["runtime_classes"] = {"le_1min": 1 / 3, "1_10min": 1 / 3, "gt_10min": 1 / 3}
    p2["workload"] = {**p1["workload"], "name": "thesis-phase2", "long_class_bound_s": bound,
                      "mean_runtime_s": sum(c["p"] * _q_mean(c["quantiles"]) for c in p2["runtime_s"]["classes"])}
    return p1, p2, bins


def format_thesis(p1: dict[str, Any], p2: dict[str, Any]) -> str:
    w1, w2 = p1["workload"], p2["workload"]
    fit = p1["p_cont"]["fitted"]
    return (f"thesis workload: sizes in nodes (mean {w1['mean_size']:.2f}), gaps <= {w1['max_gap_s']:g} s "
            f"({w1['split_batches']} batches split by it), p_cont = Eq. 5.1 (fitted here: a = {fit['a']:.3f}, "
            f"b = {fit['b']:.4f})\n  phase 1: run times as logged, mean {w1['mean_runtime_s'] / 60:.1f} min\n"
            f"  phase 2: run-time classes 1/3 each, > 10 min class bounded at {w2['long_class_bound_s'] / 60:.1f} "
            f"min, mean {w2['mean_runtime_s'] / 60:.2f} min")
