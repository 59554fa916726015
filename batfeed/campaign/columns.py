"""The table's metric columns: a :func:`~batfeed.metrics.compute_metrics` result as dotted names
(:func:`flatten`: ``wait.mean``), and every name a campaign's ``metrics`` may list (:func:`metric_names`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# a generating user model's stats (users/site.py SitePhase1.stats), for runs with such users (NaN elsewhere)
USER_STATS = ("users.users", "users.jobs", "users.sessions", "users.jobs_per_session")
SKIP = ("source", "note", "per_user", "lateness.note", "nb_resources_from", "utilisation_window")


def flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar values of a :func:`~batfeed.metrics.compute_metrics` result with dotted names
    (``wait.mean``, ``lateness.delta_s``, ``by_state.REJECTED``); lists, notes and per-user details left out."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if key in SKIP or name in SKIP:
            continue
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        elif value is None or isinstance(value, str | int | float | bool):
            out[name] = value
    return out


def metric_names() -> list[str]:
    """Every scalar :func:`~batfeed.metrics.compute_metrics` value as a dotted name (``wait.mean``), and
    each again as ``non_rb.NAME`` with ``non_rb.nb_rb_jobs`` (runs with ``resample_rb_npw``; NaN elsewhere)."""
    import pandas as pd

    from batfeed.metrics import compute_metrics

    one = pd.DataFrame({"job_id": ["1"], "workload_name": ["w0"], "profile": ["p"], "submission_time": [0.0],
                        "requested_number_of_resources": [1], "requested_time": [10.0], "success": [1],
                        "final_state": ["COMPLETED_SUCCESSFULLY"], "starting_time": [0.0], "execution_time": [5.0],
                        "finish_time": [5.0], "waiting_time": [0.0], "turnaround_time": [5.0], "stretch": [1.0],
                        "allocated_resources": ["0"], "consumed_energy": [-1.0],
                        "metadata": ["orig_subtime=0;user=1"]})
    names = list(flatten(compute_metrics(one, nb_resources=1)))
    return sorted(names + ["non_rb.nb_rb_jobs"] + [f"non_rb.{n}" for n in names] + list(USER_STATS))
