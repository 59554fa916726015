"""The campaign's tidy table: one row per run, in expansion order, written as CSV and Parquet.

Columns: ``run`` (its index), ``key``, the spec columns (trace, platform, scheduler, ``options.*``,
users, ``user_options.*``, seed), ``seed_used``, ``status`` ("ok", "failed", "pending" when not run
yet), ``error``, ``wall_s``, the chosen metrics (dotted :func:`~batfeed.metrics.compute_metrics`
names, ``wait.mean``), ``jobs_csv`` and ``manifest`` (paths relative to the campaign directory).
``wall_s`` is the only wall-clock column (:data:`WALL_CLOCK_COLUMNS`): two runs of a campaign give
equal tables once it is dropped.  Validate runs (:mod:`batfeed.campaign.weekly`): their metrics
instead (``wall.*`` ones, wall-clock too, only when asked), ``jobs_csv``/``manifest`` empty and an
``errors_csv`` column (the run's ``errors.csv``).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from batfeed.campaign.columns import flatten
from batfeed.campaign.execute import PREFIX
from batfeed.campaign.expand import Run, spec_columns
from batfeed.campaign.model import Campaign
from batfeed.errors import BatfeedError

WALL_CLOCK_COLUMNS = ("wall_s",)

__all__ = ["WALL_CLOCK_COLUMNS", "build_table", "write_table"]


def _metrics_of(record: dict[str, Any], camp: Campaign, run_dir: Path) -> dict[str, Any]:
    """The record's metrics, recomputed from its _jobs.csv when the campaign's tau or window changed."""
    used = record.get("metrics_options") or {}
    window = list(camp.window) if camp.window else None
    same = used.get("tau") == camp.tau and (list(used["window"]) if used.get("window") else None) == window
    if same or record.get("status") != "ok" or camp.validate is not None:
        return record.get("metrics") or {}
    from batfeed.metrics import compute_metrics

    if record.get("simulation") == "lean":
        raise BatfeedError(f"{run_dir}: a lean run (no _jobs.csv) cannot give its metrics for another tau or "
                           "window: remove the directory and run the campaign again without lean: true")
    kept = {k: v for k, v in (record.get("metrics") or {}).items() if k.startswith("users.")}   # not from jobs
    return {**flatten(compute_metrics(run_dir / f"{PREFIX}_jobs.csv", tau=camp.tau, window=camp.window)), **kept}


def build_table(camp: Campaign, runs: list[Run], root: Path, records: Mapping[str, dict[str, Any] | None],
                lost: Mapping[str, str]) -> pd.DataFrame:
    """The table of ``runs``: ``records`` key -> result record (None: not run), ``lost`` key -> the
    error of a run whose worker was lost (status "failed", not stored, retried next time)."""
    cols = spec_columns(camp)
    rows = []
    cache: dict[str, dict[str, Any]] = {}
    for run in runs:
        rec = records.get(run.key)
        row: dict[str, Any] = {"run": run.index, "key": run.key, **{c: run.row.get(c) for c in cols},
                               "seed_used": run.seeded}
        run_dir = root / "runs" / run.key
        if rec is None:
            row.update(status="failed" if run.key in lost else "pending", error=lost.get(run.key), wall_s=None)
        else:
            row.update(status=rec["status"], error=rec.get("error"), wall_s=rec.get("wall_s"))
        if rec is not None and run.key not in cache:
            cache[run.key] = _metrics_of(rec, camp, run_dir)
        metrics = cache.get(run.key, {})
        row.update({m: metrics.get(m) for m in camp.metrics})
        rel = Path("runs") / run.key
        row["jobs_csv"] = str(rel / f"{PREFIX}_jobs.csv") if rec and (run_dir / f"{PREFIX}_jobs.csv").is_file() \
            else None
        row["manifest"] = str(rel / f"{PREFIX}_manifest.json") \
            if rec and (run_dir / f"{PREFIX}_manifest.json").is_file() else None
        if camp.validate is not None:
            row["errors_csv"] = str(rel / "errors.csv") if rec and (run_dir / "errors.csv").is_file() else None
        rows.append(row)
    columns = ["run", "key", *cols, "seed_used", "status", "error", "wall_s", *camp.metrics, "jobs_csv", "manifest"]
    columns += ["errors_csv"] if camp.validate is not None else []
    return _typed(pd.DataFrame(rows, columns=columns))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Columns Parquet can store: numbers (with None) become floats, one-type text or booleans stay,
    mixed columns (and lists, tables) become JSON text."""
    for col in df.columns:
        if df[col].dtype != object:
            continue
        values = [v for v in df[col] if v is not None and v == v]
        kinds = {bool if isinstance(v, bool) else float if isinstance(v, int | float) else type(v) for v in values}
        if kinds == {float}:
            df[col] = pd.to_numeric(df[col]).astype("float64")
        elif len(kinds) > 1 or kinds - {str, bool}:
            df[col] = [v if v is None or v != v or isinstance(v, str) else json.dumps(v, default=str)
                       for v in df[col]]
    return df


def _replace(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(3)}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(df: pd.DataFrame, root: Path) -> tuple[Path, Path]:
    """``results.csv`` and ``results.parquet`` in ``root`` (each written whole, then renamed into place)."""
    csv, parquet = root / "results.csv", root / "results.parquet"
    _replace(csv, lambda p: df.to_csv(p, index=False))
    _replace(parquet, lambda p: df.to_parquet(p, index=False, engine="pyarrow"))
    return csv, parquet
