"""Job and system metrics from a Batsim 4.2 ``_jobs.csv`` (see shared/reference/metrics.md).

Per-job metrics (wait, response, slowdown, bounded slowdown) are computed over *executed* jobs only:
rejected jobs are counted in the job totals but excluded from them, and every report says so.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from batfeed.errors import InputError

JOBS_COLUMNS = (
    "job_id", "workload_name", "profile", "submission_time", "requested_number_of_resources",
    "requested_time", "success", "final_state", "starting_time", "execution_time", "finish_time",
    "waiting_time", "turnaround_time", "stretch", "allocated_resources", "consumed_energy", "metadata",
)  # fmt: skip
STRING_COLUMNS = ("job_id", "workload_name", "profile", "final_state", "allocated_resources", "metadata")
NUMERIC_COLUMNS = tuple(c for c in JOBS_COLUMNS if c not in STRING_COLUMNS)
FINAL_STATES = (
    "COMPLETED_SUCCESSFULLY", "COMPLETED_FAILED", "COMPLETED_WALLTIME_REACHED", "COMPLETED_KILLED",
    "REJECTED",
)  # fmt: skip
REJECTED = "REJECTED"
# Columns every row needs, and the ones every non-rejected row needs.
_REQUIRED_ALL = ("submission_time", "requested_number_of_resources")
_REQUIRED_EXECUTED = ("starting_time", "execution_time", "finish_time", "waiting_time", "turnaround_time")
_USED_COLUMNS = ("final_state", "allocated_resources", *_REQUIRED_ALL, *_REQUIRED_EXECUTED, "stretch")

_ALLOC = r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*"
_ALLOC_RE = re.compile(_ALLOC)
_ALLOC_TEXT_RE = re.compile(rf"(?:{_ALLOC})?(?:\n(?:{_ALLOC})?)*")
_NAN_TEXT = ["", "nan", "-nan", "NaN", "-NaN"]
_BATSIM_MIN_RUNTIME = 1e-5  # Batsim replaces a zero runtime by this in its stretch


# --------------------------------------------------------------------------- reading


def read_jobs_csv(path: str | Path) -> pd.DataFrame:
    """Read and validate a Batsim ``_jobs.csv``; numeric columns are float, the others str.

    Raises :class:`InputError` for a missing file, a wrong header or an unparsable row (with its line).
    """
    path = Path(path)
    name = str(path)
    if not path.is_file():
        raise InputError("file not found", name)
    try:
        with path.open(encoding="utf-8-sig", newline="") as f:
            first = f.readline()
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", name) from None
    if not first.strip():
        raise InputError("empty file: expected the _jobs.csv header", name, 1)
    _check_header([c.strip() for c in next(csv.reader([first]))], name)
    try:
        df = pd.read_csv(
            path, encoding="utf-8-sig", skip_blank_lines=False, keep_default_na=False,
            dtype={c: ("float64" if c in NUMERIC_COLUMNS else str) for c in JOBS_COLUMNS},
            na_values={c: _NAN_TEXT for c in NUMERIC_COLUMNS},
        )  # fmt: skip
    except UnicodeDecodeError as err:
        raise InputError(f"not a UTF-8 text file ({err.reason})", name) from None
    except pd.errors.ParserError as err:
        match = re.search(r"line (\d+)", str(err))
        raise InputError(f"unparsable row ({err})", name, int(match.group(1)) if match else None) from None
    except ValueError:  # a numeric field that is not a number: find it on the slow path
        line, message = _locate_bad_number(path)
        raise InputError(message, name, line) from None
    df = df.loc[:, list(JOBS_COLUMNS)]
    blank = df.index[df["job_id"].eq("")]
    if len(blank):
        sub = df.loc[blank]
        empty = (sub[list(STRING_COLUMNS)] == "").all(axis=1) & sub[list(NUMERIC_COLUMNS)].isna().all(axis=1)
        df = df.drop(index=blank[empty.to_numpy()])
    _validate_rows(df, name)
    return df.reset_index(drop=True)


def _check_header(header: list[str], name: str) -> None:
    missing = [c for c in JOBS_COLUMNS if c not in header]
    unexpected = [c for c in header if c not in JOBS_COLUMNS]
    problems = []
    if missing:
        problems.append("missing columns: " + ", ".join(missing))
    if unexpected:
        problems.append("unexpected columns: " + ", ".join(repr(c) for c in unexpected))
    if not problems and len(set(header)) != len(header):
        problems.append("duplicate columns")
    if problems:
        raise InputError("not a Batsim _jobs.csv header (" + "; ".join(problems) + ")", name, 1)


def _locate_bad_number(path: Path) -> tuple[int | None, str]:
    """Slow path: (line, message) of the first numeric field that does not parse."""
    raw = pd.read_csv(path, encoding="utf-8-sig", dtype=str, na_filter=False, skip_blank_lines=False)
    best: tuple[int, str] | None = None
    for col in NUMERIC_COLUMNS:
        text = raw[col].str.strip()
        num = pd.to_numeric(text, errors="coerce")
        bad = np.flatnonzero(num.isna().to_numpy() & text.ne("").to_numpy() & ~text.isin(_NAN_TEXT))
        if len(bad) and (best is None or bad[0] < best[0]):
            best = (int(bad[0]), f"column {col}: not a number: {raw[col].iloc[bad[0]]!r}")
    if best is None:
        return None, "unparsable numeric field"
    return best[0] + 2, best[1]


def _validate_rows(df: pd.DataFrame, name: str) -> None:
    """Raise InputError for the first row (lowest line) that breaks a rule."""
    # (mask of bad rows, message template, column whose value fills {})
    state = df["final_state"]
    checks: list[tuple[np.ndarray, str, str]] = [
        (~state.isin(FINAL_STATES).to_numpy(), "unknown final_state {!r}", "final_state"),
        (df["job_id"].eq("").to_numpy(), "empty job_id", "job_id"),
    ]
    checks += [(df[c].isna().to_numpy(), f"empty {c}", c) for c in _REQUIRED_ALL]
    executed = state.ne(REJECTED).to_numpy()
    checks += [
        (executed & df[c].isna().to_numpy(), f"empty {c} for a {{}} job", "final_state")
        for c in _REQUIRED_EXECUTED
    ]
    bad_alloc = _bad_allocations(df["allocated_resources"])
    if bad_alloc is not None:
        checks.append((bad_alloc, "malformed allocated_resources {!r}", "allocated_resources"))
    first: tuple[int, str, str] | None = None
    for mask, template, col in checks:
        idx = np.flatnonzero(mask)
        if len(idx) and (first is None or idx[0] < first[0]):
            first = (int(idx[0]), template, col)
    if first is not None:
        pos, template, col = first
        raise InputError(template.format(df[col].iloc[pos]), name, int(df.index[pos]) + 2)


def _bad_allocations(alloc: pd.Series) -> np.ndarray | None:
    """Mask of malformed interval-set strings, or None when all are well formed (fast path)."""
    try:
        _interval_stats(alloc)
        return None
    except ValueError:
        codes, uniques = pd.factorize(alloc.fillna("").astype(str))
        ok = np.array([_valid_interval_set(s.strip()) for s in uniques], dtype=bool)
        return ~ok[codes]


def _valid_interval_set(text: str) -> bool:
    if text == "":
        return True
    if _ALLOC_RE.fullmatch(text) is None:
        return False
    bounds = [part.partition("-") for part in text.split(" ")]
    return all(not hi or int(lo) <= int(hi) for lo, _, hi in bounds)


def _interval_stats(alloc: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(count, max id) of each interval-set string like ``"0-3 7 9-12"``; NaN where empty.

    Vectorised: unique strings are joined into one text, one token per line, and tokenised by pandas' C
    parser. Raises ValueError on a malformed string.
    """
    codes, uniques = pd.factorize(alloc.fillna("").astype(str), sort=False)
    strings = [s.strip() for s in uniques.tolist()]
    if not strings:
        return np.full(len(alloc), np.nan), np.full(len(alloc), np.nan)
    joined = "\n".join(strings)
    if _ALLOC_TEXT_RE.fullmatch(joined) is None:
        raise ValueError("malformed interval set")
    empty = np.array([s == "" for s in strings])
    strings = [s or "0" for s in strings]  # placeholder token, masked below
    ntok = np.array([s.count(" ") + 1 for s in strings])
    text = "\n".join(strings).replace(" ", "\n").replace("-", ",")
    tokens = pd.read_csv(io.StringIO(text), header=None, names=["lo", "hi"], dtype="float64")
    lo = tokens["lo"].to_numpy()
    hi = tokens["hi"].to_numpy()
    hi = np.where(np.isnan(hi), lo, hi)
    if len(lo) != ntok.sum() or np.isnan(lo).any() or np.any(hi < lo):
        raise ValueError("malformed interval set")
    owner = np.repeat(np.arange(len(strings)), ntok)
    count = np.bincount(owner, weights=hi - lo + 1, minlength=len(strings))
    top = np.full(len(strings), -np.inf)
    np.maximum.at(top, owner, hi)
    count[empty] = np.nan
    top[empty] = np.nan
    return count[codes], top[codes]


def _coerce_frame(jobs: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in _USED_COLUMNS if c not in jobs.columns]
    if missing:
        raise InputError("jobs table lacks columns: " + ", ".join(missing))
    out = pd.DataFrame(index=jobs.index)
    out["final_state"] = jobs["final_state"].astype(str)
    out["allocated_resources"] = jobs["allocated_resources"].fillna("").astype(str)
    for col in (*_REQUIRED_ALL, *_REQUIRED_EXECUTED, "stretch"):
        out[col] = pd.to_numeric(jobs[col], errors="coerce").astype("float64")
    return out


# --------------------------------------------------------------------------- metrics


def _num(x: float | None) -> float | None:
    """Plain float, or None for None/NaN/inf (JSON-safe)."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _stats(values: np.ndarray, keys: tuple[str, ...]) -> dict[str, float | None]:
    values = values[np.isfinite(values)]
    funcs = {"mean": np.mean, "median": np.median, "max": np.max}
    return {k: (_num(funcs[k](values)) if len(values) else None) for k in keys}


def compute_metrics(
    jobs: pd.DataFrame | str | Path,
    *,
    tau: float = 10.0,
    nb_resources: int | None = None,
    window: tuple[float, float] | None = None,
) -> dict:
    """Job counts, per-job metrics over executed jobs, system metrics and Batsim-style means.

    ``tau`` is the bounded-slowdown threshold (s); ``nb_resources`` the platform size N (default: max
    allocated resource id + 1); ``window`` the utilisation window [T0, T1) (default: first submit to
    last finish). The result is JSON-serialisable (NaN/inf are None).
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    if nb_resources is not None and (int(nb_resources) != nb_resources or nb_resources <= 0):
        raise ValueError(f"nb_resources must be a positive integer, got {nb_resources}")
    if window is not None and not float(window[1]) > float(window[0]):
        raise ValueError(f"window must satisfy T0 < T1, got {window}")
    source = None
    if isinstance(jobs, (str, Path)):
        source = str(jobs)
        jobs = read_jobs_csv(jobs)
    df = _coerce_frame(jobs)

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

    count, top = _interval_stats(ex["allocated_resources"])
    size = np.where(np.isnan(count), ex["requested_number_of_resources"].to_numpy(), count)
    if nb_resources is not None:
        n_res, n_source = int(nb_resources), "argument"
    else:
        n_res = int(np.nanmax(top)) + 1 if np.isfinite(top).any() else None
        n_source = "inferred"
    if window is not None:
        t0, t1, w_source = float(window[0]), float(window[1]), "argument"
    else:
        t0, t1, w_source = first_submit, last_finish, "jobs"
    utilisation = busy = None
    if n_res and t0 is not None and t1 is not None and t1 > t0:
        overlap = np.clip(np.minimum(finish, t1) - np.maximum(start, t0), 0.0, None)
        busy = float(np.nansum(size * overlap)) / (t1 - t0)
        utilisation = busy / n_res

    with np.errstate(divide="ignore", invalid="ignore"):
        batsim_sd = np.where(
            np.isnan(ex["stretch"].to_numpy()), response / np.maximum(runtime, _BATSIM_MIN_RUNTIME),
            ex["stretch"].to_numpy(),
        )  # fmt: skip
    nb_rejected = by_state[REJECTED]
    lateness = compute_lateness(jobs) if "metadata" in jobs.columns else None
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
        "wait": _stats(wait, ("mean", "median", "max")),
        "response": _stats(response, ("mean", "median", "max")),
        "slowdown": {**_stats(slowdown, ("mean", "max")), "nb_undefined": nb_sd_undefined},
        "bounded_slowdown": _stats(bsld, ("mean", "max")),
        "makespan": _num(makespan),
        "makespan_from_zero": last_finish,
        "first_submit": first_submit,
        "last_finish": last_finish,
        "throughput_per_hour": _num(throughput),
        "utilisation": _num(utilisation),
        "mean_busy_resources": _num(busy),
        "utilisation_window": [t0, t1] if t0 is not None and t1 is not None else None,
        "utilisation_window_source": w_source,
        "nb_resources": n_res,
        "nb_resources_source": n_source,
        "batsim_means": {
            "mean_waiting_time": _num(np.nansum(wait) / nb_jobs) if nb_jobs else None,
            "mean_turnaround_time": _num(np.nansum(response) / nb_jobs) if nb_jobs else None,
            "mean_slowdown": _num(np.nansum(batsim_sd) / nb_jobs) if nb_jobs else None,
        },
        "lateness": lateness,
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
        return "-"
    if isinstance(x, int):
        return str(x)
    return f"{float(x):.{digits}f}"


def format_metrics(metrics: dict) -> str:
    """Render :func:`compute_metrics` output as an aligned plain-text table."""
    m = metrics
    rows: list[tuple[str, ...]] = [("jobs", _fmt(m["nb_jobs"])), ("  executed", _fmt(m["nb_executed"]))]
    rows += [(f"  {state}", _fmt(n)) for state, n in m["by_state"].items()]
    head = ("", "mean", "median", "max")
    stat_rows = [
        ("  wait (s)", *(_fmt(m["wait"][k]) for k in ("mean", "median", "max"))),
        ("  response (s)", *(_fmt(m["response"][k]) for k in ("mean", "median", "max"))),
        ("  slowdown", _fmt(m["slowdown"]["mean"]), "", _fmt(m["slowdown"]["max"])),
        (f"  bounded slowdown (tau={m['tau']:g}s)", _fmt(m["bounded_slowdown"]["mean"]), "",
         _fmt(m["bounded_slowdown"]["max"])),
    ]  # fmt: skip
    window = m["utilisation_window"]
    util = m["utilisation"]
    system = [
        ("  makespan (max finish - min submit, s)", _fmt(m["makespan"])),
        ("  makespan from 0 (Batsim, s)", _fmt(m["makespan_from_zero"])),
        ("  first submit / last finish (s)", f"{_fmt(m['first_submit'])} / {_fmt(m['last_finish'])}"),
        ("  throughput (jobs/hour)", _fmt(m["throughput_per_hour"])),
        ("  utilisation", "-" if util is None else f"{util:.4f} ({100 * util:.2f} %)"),
        ("  mean busy resources", _fmt(m["mean_busy_resources"])),
        ("  resources N", f"{_fmt(m['nb_resources'])} ({m['nb_resources_source']})"),
        ("  window [T0, T1) (s)", "-" if window is None else
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
