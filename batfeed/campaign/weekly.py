"""Weekly validation runs: a campaign with a ``validate`` table runs :func:`batfeed.validate.validate`
(Maui, weekly windows with the previous week as warm-up, errors = simulated − recorded wait) instead
of one simulation of the whole trace (``docs/campaign.md``, "Weekly validation runs").

The spec side (:func:`check_validate` and the ``validate`` arguments of the trace, platform and
scheduler checks) and the worker side (:func:`run_validate`: ``runs/KEY/errors.csv``, ``weeks/``,
``plots/`` and the summary metrics of :data:`METRICS`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from batfeed.campaign.model import Checker, at, close, show

KEYS = ("weeks", "plots")
MAUI_OPTIONS = ("config", "interval", "poll", "on_machine_down", "mechanics")   # the maui options a validate run takes
METRICS = ("weeks", "weeks_scored", "jobs", "unscored", "error.mean", "error.median", "error.std", "error.mean_abs",
           "room.jobs", "room.wait_share", "contention.jobs", "contention.mean", "contention.median",
           "contention.std", "wall.sum_s", "wall.max_week_s")
WALL_METRICS = ("wall.sum_s", "wall.max_week_s")                    # wall-clock: not in the default list
DEFAULT_METRICS = tuple(m for m in METRICS if m not in WALL_METRICS)


# --------------------------------------------------------------------------- spec

def check_validate(c: Checker, value: Any) -> dict[str, Any]:
    """The ``validate`` table: ``weeks`` ("1-5,29", default every week), ``plots`` (default false);
    empty (YAML's ``validate:``, TOML's ``validate = {}``) for the defaults."""
    from batfeed.errors import BatfeedError
    from batfeed.validate import parse_weeks

    table = c.mapping({} if value is None else value, "validate")
    c.keys(table, KEYS, "validate")
    out: dict[str, Any] = {"weeks": None, "plots": False}
    weeks = table.get("weeks")
    if weeks is not None:
        if not isinstance(weeks, str | int) or isinstance(weeks, bool):
            raise c.fail("validate.weeks", f"must be a string of week ranges (\"1-5,29\"), got {show(weeks)}")
        try:
            parse_weeks(str(weeks), 1 << 30)
        except BatfeedError as err:
            raise c.fail("validate.weeks", str(err).removeprefix("--weeks: ")) from None
        out["weeks"] = str(weeks)
    plots = table.get("plots", False)
    if not isinstance(plots, bool):
        raise c.fail("validate.plots", f"must be true or false, got {show(plots)}")
    out["plots"] = plots
    return out


def check_mode(c: Checker, data: dict[str, Any]) -> None:
    """Top-level keys that mean nothing for validate runs (the metrics are not compute_metrics')."""
    for key in ("tau", "window"):
        if key in data:
            raise c.fail(key, "does not apply to validate runs (their metrics are wait errors)")


def check_metrics(c: Checker, value: Any) -> list[str]:
    if value is None:
        return list(DEFAULT_METRICS)
    names = c.entries(value, "metrics")
    for i, name in enumerate(names):
        if name not in METRICS:
            raise c.fail(at("metrics", i), f"unknown metric for validate runs {show(name)}{close(str(name), METRICS)}"
                                           f"; known: {', '.join(METRICS)}")
    return list(dict.fromkeys(names))


# --------------------------------------------------------------------------- worker

def summary(results: list[Any]) -> dict[str, Any]:
    """The metrics of a validation (:data:`METRICS`) from its :class:`~batfeed.validate.WeekResult` list:
    errors pooled over every scored job of every week (NaN statistics, over no job, become None)."""
    from batfeed.contention import summarise

    scored = [r for r in results if r.jobs]
    rec = np.concatenate([r.recorded for r in scored]) if scored else np.zeros(0)
    sim = np.concatenate([r.simulated for r in scored]) if scored else np.zeros(0)
    room = np.concatenate([r.room for r in scored]) if scored else np.zeros(0, dtype=bool)
    err = sim - rec
    mean, median, std = summarise(err)
    cmean, cmedian, cstd = summarise(err[~room])
    total = float(rec.sum())
    out = {"weeks": len(results), "weeks_scored": len(scored), "jobs": int(len(err)),
           "unscored": int(sum(r.unscored for r in results)), "error.mean": mean, "error.median": median,
           "error.std": std, "error.mean_abs": float(np.abs(err).mean()) if len(err) else math.nan,
           "room.jobs": int(room.sum()), "room.wait_share": float(rec[room].sum()) / total if total > 0 else math.nan,
           "contention.jobs": int((~room).sum()), "contention.mean": cmean, "contention.median": cmedian,
           "contention.std": cstd, "wall.sum_s": float(sum(r.wall for r in results)),
           "wall.max_week_s": float(max((r.wall for r in results), default=0.0))}
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in out.items()}


def run_validate(task: Any, tmp: Path) -> dict[str, Any]:
    """One validate run (a :class:`~batfeed.campaign.execute.RunTask` with ``validate`` set) into ``tmp``.

    The converted workload and the platform come from the campaign's ``inputs/`` (one conversion
    per trace, shared by every step); an explicit null ``interval`` is event-driven, as Maui's option
    spec says (``validate`` would read None as "the config's RMPOLLINTERVAL")."""
    from batfeed.validate import validate

    opts = task.options
    interval = (opts["interval"] or 0) if "interval" in opts else None
    results = validate(task.workload, tmp, config=opts.get("config"), interval=interval,
                       poll=bool(opts.get("poll", False)), weeks=task.validate.get("weeks"),
                       mechanics=opts.get("mechanics", "nodes"),
                       platform=task.platform, events=task.events[0] if task.events else None,
                       on_machine_down=opts.get("on_machine_down", "ignore"), plots=task.validate.get("plots", False),
                       log=print)
    return {"metrics": summary(results), "workload": task.workload, "platform": task.platform}
