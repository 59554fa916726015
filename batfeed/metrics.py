"""Job and system metrics from a Batsim 4.2 ``_jobs.csv`` (see shared/reference/metrics.md).

Per-job metrics (wait, response, slowdown, bounded slowdown) are computed over *executed* jobs only:
rejected jobs are counted in the job totals but excluded from them, and every report says so.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from batfeed.errors import BatfeedError, InputError
from batfeed.read_jobs import (
    BATSIM_MIN_RUNTIME,
    FINAL_STATES,
    JOBS_COLUMNS,
    REJECTED,
    coerce_frame,
    interval_stats,
    read_jobs_csv,
)
from batfeed.saturation import saturation_arrays

__all__ = ["FINAL_STATES", "JOBS_COLUMNS", "compute_lateness", "compute_metrics", "format_metrics",
           "parse_replay_metadata", "read_jobs_csv"]

# --------------------------------------------------------------------------- metrics


def _num(x: float | None) -> float | None:
    """Plain float, or None for None/NaN/inf (JSON-safe)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


STATS = ("mean", "median", "p50", "p90", "p99", "max")
PERCENTILES = {"median": 50, "p50": 50, "p90": 90, "p99": 99}


def _stats(values: np.ndarray, keys: tuple[str, ...] = STATS) -> dict[str, float | None]:
    """Mean, percentiles (numpy's linear interpolation) and max of the finite values; None when there are none."""
    values = values[np.isfinite(values)]
    if not len(values):
        return dict.fromkeys(keys)
    ranks = [PERCENTILES[k] for k in keys if k in PERCENTILES]
    q = dict(zip(ranks, np.percentile(values, ranks), strict=True)) if ranks else {}
    out: dict[str, float | None] = {}
    for k in keys:
        out[k] = _num(np.mean(values) if k == "mean" else np.max(values) if k == "max" else q[PERCENTILES[k]])
    return out


class MetricsError(BatfeedError, ValueError):
    """Bad metrics parameter (tau, N, window)."""


def schedule_csv_for(jobs_csv: str | Path) -> Path | None:
    """The ``PREFIX_schedule.csv`` written with ``PREFIX_jobs.csv`` (None if the name does not end in _jobs.csv)."""
    p = Path(jobs_csv)
    return p.with_name(p.name[: -len("_jobs.csv")] + "_schedule.csv") if p.name.endswith("_jobs.csv") else None


def machines_from_schedule(path: str | Path) -> int:
    """``nb_computing_machines`` of a Batsim ``_schedule.csv``."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read: {getattr(err, 'strerror', None) or err}", str(path)) from None
    if len(rows) < 2 or "nb_computing_machines" not in rows[0] or len(rows[1]) != len(rows[0]):
        raise InputError("not a Batsim _schedule.csv (no nb_computing_machines value)", str(path))
    value = rows[1][rows[0].index("nb_computing_machines")]
    if not value.isdigit() or int(value) <= 0:
        raise InputError(f"nb_computing_machines must be an integer > 0, got {value!r}", str(path), 2)
    return int(value)


def resolve_machines(jobs: object, nb_resources: int | None, platform: str | Path | None
                     ) -> tuple[int | None, str, str | None]:
    """(N, source, where it came from): the argument, the platform, the run's _schedule.csv, else None
    (then inferred from the highest allocated id)."""
    if nb_resources is not None:
        if isinstance(nb_resources, bool) or int(nb_resources) != nb_resources or nb_resources <= 0:
            raise MetricsError(f"nb_resources must be a positive integer, got {nb_resources}")
        return int(nb_resources), "argument", None
    if platform is not None:
        from batfeed.engine.platform import load_platform

        return len(load_platform(platform).compute), "platform", str(platform)
    sched = schedule_csv_for(jobs) if isinstance(jobs, str | Path) else None
    if sched is not None and sched.is_file():
        return machines_from_schedule(sched), "schedule", f"{sched} nb_computing_machines"
    return None, "inferred", None


def compute_metrics(
    jobs: pd.DataFrame | str | Path,
    *,
    tau: float = 10.0,
    nb_resources: int | None = None,
    window: tuple[float, float] | None = None,
    platform: str | Path | None = None,
) -> dict:
    """Job counts, per-job metrics over executed jobs, system metrics and Batsim-style means.

    ``tau`` is the bounded-slowdown threshold (s); the platform size N is ``nb_resources``, else the
    compute hosts of ``platform`` (XML), else ``nb_computing_machines`` of the run's ``_schedule.csv``
    next to a ``_jobs.csv`` path, else (``nb_resources_source`` "inferred") the highest allocated
    resource id + 1, a lower bound; ``window`` the utilisation window [T0, T1) (default: first submit
    to last finish); with it, ``window_submitted_per_hour`` = jobs submitted in [T0, T1) per hour.
    ``saturation`` holds the slope (jobs/week) and verdict of Zakay & Feitelson's
    saturation check with its defaults (:func:`batfeed.saturation.saturation` for the series). The
    result is JSON-serialisable (NaN/inf are None).
    """
    if not tau > 0:
        raise MetricsError(f"tau must be > 0, got {tau}")
    if window is not None and not float(window[1]) > float(window[0]):
        raise MetricsError(f"window must satisfy T0 < T1, got {window}")
    n_given, n_source, n_from = resolve_machines(jobs, nb_resources, platform)
    source = None
    if isinstance(jobs, (str, Path)):
        source = str(jobs)
        jobs = read_jobs_csv(jobs)
    df = coerce_frame(jobs)

    state = df["final_state"].to_numpy(dtype=object)
    counts = df["final_state"].value_counts()
    by_state = {s: int(counts.get(s, 0)) for s in FINAL_STATES}
    by_state.update({str(s): int(n) for s, n in counts.items() if s not in by_state})
    nb_jobs = len(df)
    executed = state != REJECTED
    ex = df.loc[executed]
    nb_executed = len(ex)

    submit_all = df["submission_time"].to_numpy()
    start = ex["starting_time"].to_numpy()
    runtime = ex["execution_time"].to_numpy()
    finish = ex["finish_time"].to_numpy()
    wait = ex["waiting_time"].to_numpy()
    response = ex["turnaround_time"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(runtime > 0, response / runtime, np.nan)
        bsld = np.maximum(1.0, response / np.maximum(runtime, tau))
    nb_sd_undefined = int(np.count_nonzero(~(runtime > 0)))

    first_submit = _num(np.nanmin(submit_all)) if nb_jobs and not np.isnan(submit_all).all() else None
    last_finish = _num(np.nanmax(finish)) if nb_executed and not np.isnan(finish).all() else None
    makespan = last_finish - first_submit if None not in (first_submit, last_finish) else None
    throughput = nb_executed / (makespan / 3600.0) if makespan else None

    count, top = interval_stats(ex["allocated_resources"])
    size = np.where(np.isnan(count), ex["requested_number_of_resources"].to_numpy(), count)
    n_res = n_given
    if n_res is None:
        n_res = int(np.nanmax(top)) + 1 if np.isfinite(top).any() else None
    if window is not None:
        t0, t1, w_source = float(window[0]), float(window[1]), "argument"
    else:
        t0, t1, w_source = first_submit, last_finish, "jobs"
    utilisation = busy = window_rate = None
    if window is not None:             # jobs submitted in the window per hour (a closed system's throughput)
        window_rate = float(np.count_nonzero((submit_all >= t0) & (submit_all < t1))) / ((t1 - t0) / 3600.0)
    if n_res and t0 is not None and t1 is not None and t1 > t0:
        overlap = np.clip(np.minimum(finish, t1) - np.maximum(start, t0), 0.0, None)
        busy = float(np.nansum(size * overlap)) / (t1 - t0)
        utilisation = busy / n_res

    with np.errstate(divide="ignore", invalid="ignore"):
        batsim_sd = np.where(
            np.isnan(ex["stretch"].to_numpy()), response / np.maximum(runtime, BATSIM_MIN_RUNTIME),
            ex["stretch"].to_numpy(),
        )  # fmt: skip
    nb_rejected = by_state[REJECTED]
    lateness = compute_lateness(jobs) if "metadata" in jobs.columns else None
    sat = saturation_arrays(submit_all, df["finish_time"].to_numpy(), ~executed)
    note = (
        f"wait/response/slowdown/bounded_slowdown are over the {nb_executed} executed jobs; "
        f"{nb_rejected} rejected job(s) are excluded from them but counted in nb_jobs. "
        f"slowdown = response/runtime, undefined (excluded) for {nb_sd_undefined} zero-runtime job(s); "
        f"bounded_slowdown = max(1, response/max(runtime, tau)). makespan = max finish - min submit; "
        "makespan_from_zero = Batsim's (max finish from 0). batsim_means divide by nb_jobs incl. rejected."
    )
    return {
        "source": source,
        "nb_jobs": nb_jobs,
        "nb_executed": nb_executed,
        "nb_success": by_state["COMPLETED_SUCCESSFULLY"],
        "nb_rejected": nb_rejected,
        "nb_killed": by_state["COMPLETED_KILLED"],
        "nb_walltime": by_state["COMPLETED_WALLTIME_REACHED"],
        "nb_failed": by_state["COMPLETED_FAILED"],
        "by_state": by_state,
        "note": note,
        "tau": float(tau),
        "wait": _stats(wait),
        "response": _stats(response),
        "slowdown": {**_stats(slowdown), "nb_undefined": nb_sd_undefined},
        "bounded_slowdown": _stats(bsld),
        "makespan": _num(makespan),
        "makespan_from_zero": last_finish,
        "first_submit": first_submit,
        "last_finish": last_finish,
        "throughput_per_hour": _num(throughput),
        "utilisation": _num(utilisation),
        "window_submitted_per_hour": _num(window_rate),
        "mean_busy_resources": _num(busy),
        "utilisation_window": [t0, t1] if t0 is not None and t1 is not None else None,
        "utilisation_window_source": w_source,
        "nb_resources": n_res,
        "nb_resources_source": n_source,
        "nb_resources_from": n_from,
        "batsim_means": {
            "mean_waiting_time": _num(np.nansum(wait) / nb_jobs) if nb_jobs else None,
            "mean_turnaround_time": _num(np.nansum(response) / nb_jobs) if nb_jobs else None,
            "mean_slowdown": _num(np.nansum(batsim_sd) / nb_jobs) if nb_jobs else None,
        },
        "lateness": lateness,
        "saturation": {"slope_jobs_per_week": sat["slope_jobs_per_week"], "saturated": sat["saturated"]},
    }


# --------------------------------------------------------------------------- lateness (replay)

_META_ITEM = re.compile(r"([A-Za-z_]+)=([^;,]*)")
DAY = 86400.0


def parse_replay_metadata(metadata: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(original submit a_i, user) from ``metadata`` strings like ``orig_subtime=12.0;user=7``.

    batfeed's user-model layer writes them (SET_JOB_METADATA); ``,`` is accepted as separator too.
    Rows without ``orig_subtime`` give NaN and user None.
    """
    codes, uniques = pd.factorize(metadata.fillna("").astype(str), sort=False)
    orig = np.full(len(uniques), np.nan)
    users = np.empty(len(uniques), dtype=object)
    for i, text in enumerate(uniques.tolist()):
        items = dict(_META_ITEM.findall(text))
        try:
            orig[i] = float(items["orig_subtime"])
        except (KeyError, ValueError):
            pass
        users[i] = items.get("user")
    return orig[codes], users[codes]


def _lateness_values(sub: np.ndarray, orig: np.ndarray) -> dict[str, float | int | None]:
    n = len(sub)
    late = sub - orig
    mean = float(late.mean()) if n else None
    span = float(orig.max() - orig.min()) if n else 0.0
    return {
        "n": n,
        "mean_s": mean,
        "mean_days": mean / DAY if mean is not None else None,
        "relative": 1.0 + mean / span if mean is not None and span > 0 else None,
        "delta_s": 2.0 * mean / (n - 1) if mean is not None and n > 1 else None,
        "max_s": float(late.max()) if n else None,
        "min_s": float(late.min()) if n else None,
    }


def compute_lateness(jobs: pd.DataFrame) -> dict | None:
    """Lateness family of *Replay with Feedback* (metrics.md §3), or None if the run used no user model.

    ℓ_j = â_j − a_j (replayed − recorded submit); mean lateness ℓ̄; relative lateness
    RL = 1 + ℓ̄ / (a_last − a_first); additional lateness δ = 2ℓ̄ / (n − 1).  Over **all** jobs,
    rejected ones included (as in the paper's tables); per user over that user's jobs.
    """
    if "metadata" not in jobs.columns or not len(jobs):
        return None
    orig, users = parse_replay_metadata(jobs["metadata"])
    tagged = ~np.isnan(orig)
    if not tagged.any():
        return None
    sub = pd.to_numeric(jobs["submission_time"], errors="coerce").to_numpy(dtype="float64")
    whole = _lateness_values(sub[tagged], orig[tagged])
    per_user: dict[str, dict] = {}
    user_arr = users[tagged]
    if all(u is not None for u in user_arr):
        s, o = sub[tagged], orig[tagged]
        order = np.argsort(user_arr.astype(str), kind="stable")
        keys = user_arr.astype(str)[order]
        bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])
        for a, b in zip(bounds[:-1], bounds[1:], strict=False):
            idx = order[a:b]
            per_user[str(keys[a])] = _lateness_values(s[idx], o[idx])
    deltas = [v["delta_s"] for v in per_user.values() if v["delta_s"] is not None]
    q = np.percentile(deltas, [10, 50, 90]) if deltas else [None] * 3
    return {
        **whole,
        "nb_untagged": int((~tagged).sum()),
        "per_user_delta_s": {"users": len(deltas), "p10": _num(q[0]), "p50": _num(q[1]), "p90": _num(q[2])},
        "per_user": per_user,
        "note": ("lateness = replayed submit - original submit (metadata orig_subtime), over all tagged jobs "
                 "incl. rejected ones; relative = 1 + mean / (last - first original submit); "
                 "delta = 2 mean / (n - 1); per-user delta percentiles over users with >= 2 jobs"),
    }


# --------------------------------------------------------------------------- formatting


def _fmt(x: object, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    return f"{float(x):.{digits}f}"


def machines_source(m: dict) -> str:
    """Where N came from, in words."""
    src = m["nb_resources_source"]
    if src == "inferred":
        return "inferred from the highest allocated machine id, a lower bound: give --platform or --nb-resources"
    return {"argument": "given", "platform": f"platform {m.get('nb_resources_from')}",
            "schedule": f"from {m.get('nb_resources_from')}"}.get(src, src)


def format_metrics(metrics: dict) -> str:
    """Render :func:`compute_metrics` output as an aligned plain-text table."""
    m = metrics
    rows: list[tuple[str, ...]] = [("jobs", _fmt(m["nb_jobs"])), ("  executed", _fmt(m["nb_executed"]))]
    rows += [(f"  {state}", _fmt(n)) for state, n in m["by_state"].items()]
    cols = ("mean", "p50", "p90", "p99", "max")
    head = ("", *cols)
    stat_rows = [
        (label, *(_fmt(m[key].get(k)) for k in cols))
        for label, key in (("  wait (s)", "wait"), ("  response (s)", "response"), ("  slowdown", "slowdown"),
                           (f"  bounded slowdown (tau={m['tau']:g}s)", "bounded_slowdown"))
    ]
    window = m["utilisation_window"]
    util = m["utilisation"]
    system = [
        ("  makespan (max finish - min submit, s)", _fmt(m["makespan"])),
        ("  makespan from 0 (Batsim, s)", _fmt(m["makespan_from_zero"])),
        ("  first submit / last finish (s)", f"{_fmt(m['first_submit'])} / {_fmt(m['last_finish'])}"),
        ("  throughput (jobs/hour)", _fmt(m["throughput_per_hour"])),
        ("  utilisation", "n/a" if util is None else f"{util:.4f} ({100 * util:.2f} %)"),
        ("  mean busy resources", _fmt(m["mean_busy_resources"])),
        ("  resources N", f"{_fmt(m['nb_resources'])} ({machines_source(m)})"),
        ("  window [T0, T1) (s)", "n/a" if window is None else
         f"[{_fmt(window[0])}, {_fmt(window[1])}) ({m['utilisation_window_source']})"),
    ]  # fmt: skip
    batsim = [(f"  {k}", _fmt(v)) for k, v in m["batsim_means"].items()]
    width = max(len(r[0]) for r in rows + stat_rows + system + batsim)
    col = max(10, *(len(c) for r in stat_rows for c in r[1:]))

    def kv(pairs: list[tuple[str, ...]]) -> list[str]:
        return [f"{k:<{width}}  {v}" for k, v in pairs]

    lines = [f"batfeed metrics{'' if m.get('source') is None else ': ' + m['source']}"]
    lines += kv(rows)
    lines.append(f"per-job metrics over {m['nb_executed']} executed jobs (rejected jobs excluded)")
    lines += [f"{r[0]:<{width}}" + "".join(f"  {c:>{col}}" for c in r[1:]) for r in [head, *stat_rows]]
    lines.append("system")
    lines += kv(system)
    lines.append("Batsim _schedule.csv means (divided by nb_jobs, rejected jobs included)")
    lines += kv(batsim)
    late = m.get("lateness")
    if late:
        lines.append(f"lateness (user-model replay, {late['n']} jobs incl. rejected)")
        pu = late["per_user_delta_s"]
        lines += kv([
            ("  mean lateness (s / days)", f"{_fmt(late['mean_s'])} / {_fmt(late['mean_days'], 2)}"),
            ("  relative lateness RL", _fmt(late["relative"], 4)),
            ("  additional lateness delta (s/job)", _fmt(late["delta_s"], 2)),
            ("  min / max lateness (s)", f"{_fmt(late['min_s'])} / {_fmt(late['max_s'])}"),
            (f"  per-user delta p10/p50/p90 ({pu['users']} users, s)",
             f"{_fmt(pu['p10'], 1)} / {_fmt(pu['p50'], 1)} / {_fmt(pu['p90'], 1)}"),
        ])  # fmt: skip
    lines.append("note: " + m["note"])
    return "\n".join(lines)
