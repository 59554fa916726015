"""A campaign -> its runs, in a fixed order, each with a key that hashes what it depends on.

The runs are the cartesian product traces × platforms × (scheduler, option combination) × (user
model, option combination) × seeds, in the order written (the seed varies fastest), minus the
``exclude`` matches.  A run's key is the SHA-256 (16 hex digits) of its *recipe*: the trace's
content hash and conversion options, the shaking amplitude, the platform, the scheduler with its
options (defaults filled in, so ``{}`` and ``{policy = "FCFS"}`` are the same run), the user model
with its options, and the seed **only when something consumes it** (``shake`` > 0, ``resample_weeks``
> 0, ``resample = "permute"``, or a scheduler
or user model declaring a ``seed`` option).  Rows that differ only by an unconsumed seed share
one simulation; the table repeats its results with ``seeded`` false.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batfeed.campaign.grids import combinations
from batfeed.campaign.model import (
    Campaign,
    CampaignError,
    Checker,
    PlatformSpec,
    SchedulerSpec,
    TraceSpec,
    UsersSpec,
    at,
    close,
)

_SHA: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file (memoised per path, size and modification time)."""
    p = Path(path)
    st = p.stat()
    memo = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if memo not in _SHA:
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            while block := fh.read(1 << 20):
                h.update(block)
        _SHA[memo] = h.hexdigest()
    return _SHA[memo]


def digest(obj: Any, n: int = 16) -> str:
    """First ``n`` hex digits of the SHA-256 of ``obj`` as canonical JSON."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def conversion_key(trace: TraceSpec) -> str:
    """The cache key of a trace's conversion: its content and its conversion options ("generate": none)."""
    if trace.format == "generate":
        return "generate"
    convert = dict(trace.convert)
    if "machines" in convert:           # a file: its content, not where it lies
        convert["machines"] = {"sha256": file_sha256(convert["machines"])}
    return digest({"format": trace.format, "sha256": file_sha256(trace.path), "convert": convert})


@dataclass
class Run:
    """One row of the campaign: ``row`` the spec columns, ``recipe`` what the key hashes."""

    index: int
    row: dict[str, Any]
    key: str
    seeded: bool
    trace: TraceSpec
    platform: PlatformSpec
    scheduler: SchedulerSpec
    options: dict[str, Any]
    users: str | None
    user_options: dict[str, Any]
    seed: int
    recipe: dict[str, Any]


def _platform_recipe(p: PlatformSpec) -> dict[str, Any]:
    value = {"sha256": file_sha256(p.value)} if p.kind == "xml" else p.value
    return {"kind": p.kind, "value": value, "events": [file_sha256(e) for e in p.events]}


def _filled(specs: Any, options: dict[str, Any], owner: str) -> dict[str, Any]:
    """All options, defaults filled in, files by content (for the key)."""
    if specs is None:
        return options
    from batfeed.schedulers.options import validate

    out = validate(specs, options, owner)
    for name, value in out.items():
        if isinstance(value, str) and specs[name].kind in ("path", "maintenance") and Path(value).is_file():
            out[name] = {"file": Path(value).name, "sha256": file_sha256(value)}
    return out


def resolved(specs: Any, options: dict[str, Any], base: Path) -> dict[str, Any]:
    """``options`` with relative file paths (options of kind path, maintenance files) made absolute
    from the campaign file's directory: workers may run elsewhere.  A relative path that names no file there
    is kept as written (a built-in name such as a site-user model's ``thesis-phase2``; a missing file is
    reported by whoever opens it)."""
    out = dict(options)
    for name, value in out.items():
        kind = specs[name].kind if specs is not None and name in specs else None
        if kind in ("path", "maintenance") and isinstance(value, str) and not Path(value).is_absolute() \
                and (base / value).exists():
            out[name] = str(base / value)
    return out


def expand(camp: Campaign) -> list[Run]:
    """Every run of the campaign, in expansion order (``exclude`` applied)."""
    runs: list[Run] = []
    plat_recipes = {p.name: _platform_recipe(p) for p in camp.platforms}
    for trace in camp.traces:
        conv = conversion_key(trace)
        for plat in camp.platforms:
            for sched in camp.schedulers:
                sched_file = file_sha256(sched.target) if sched.target.endswith(".py") else None
                for written in combinations(sched.grid):
                    options = resolved(sched.specs, written, camp.base)
                    filled = _filled(sched.specs, options, sched.name)
                    for users in camp.users:
                        for uwritten in combinations(users.grid):
                            uopts = resolved(users.specs, uwritten, camp.base)
                            ufilled = _filled(users.specs, uopts, f"user model '{users.model}'")
                            for seed in camp.seeds:
                                row = _row(trace, plat, sched, written, users, uwritten, seed)
                                if any(matches(row, ex) for ex in camp.exclude):
                                    continue
                                if trace.format == "generate":
                                    _check_generating(camp, trace, users.model)
                                seeded = trace.shake > 0 or trace.resampled or "seed" in (sched.specs or {}) \
                                    or "seed" in (users.specs or {})
                                recipe = {
                                    "trace": {"conversion": conv, "shake": trace.shake},
                                    "platform": plat_recipes[plat.name],
                                    "scheduler": {"name": _sched_name(sched),
                                                  "file_sha256": sched_file, "options": filled},
                                    "users": None if users.model is None else {"model": users.model,
                                                                               "options": ufilled},
                                    "seed": seed if seeded else None,
                                }
                                if trace.resample_weeks:            # absent otherwise: keys unchanged
                                    recipe["trace"]["resample_weeks"] = trace.resample_weeks
                                    if trace.resample_method != "weekly":
                                        recipe["trace"]["resample"] = [trace.resample_method, trace.resample_load]
                                    if trace.resample_rb_npw:
                                        recipe["trace"]["resample"].append(trace.resample_rb_npw)
                                elif trace.resampled:               # "permute": as long as the log
                                    recipe["trace"]["resample"] = [trace.resample_method]
                                if camp.validate is not None:       # weekly validation runs (weekly.py)
                                    recipe["validate"] = camp.validate
                                runs.append(Run(len(runs), row, digest(recipe), seeded, trace, plat, sched, options,
                                                users.model, uopts, seed, recipe))
    return runs


def _check_generating(camp: Campaign, trace: TraceSpec, model: str | None) -> None:
    """A generated trace (no workload) needs a user model that generates the jobs."""
    from batfeed.users.base import model_class

    if model is None or not model_class(model).GENERATES:
        raise CampaignError(f"{camp.source}: trace '{trace.name}' is generated (no workload): it needs a user "
                           f"model that generates its jobs (site-phase1, site-phase2), not {model or 'none'} "
                           "(exclude the other combinations)")


def _sched_name(sched: SchedulerSpec) -> str:
    """Built-in names in lower case (as the registry reads them), a file by its name (its content is hashed)."""
    return sched.target.lower() if sched.specs is not None else Path(sched.target).name \
        if sched.target.endswith(".py") else sched.target


def _row(trace: TraceSpec, plat: PlatformSpec, sched: SchedulerSpec, options: dict[str, Any], users: UsersSpec,
         uopts: dict[str, Any], seed: int) -> dict[str, Any]:
    row: dict[str, Any] = {"trace": trace.name, "platform": plat.name, "scheduler": sched.name}
    row.update({f"options.{k}": v for k, v in options.items()})
    row["users"] = users.model or "none"
    row.update({f"user_options.{k}": v for k, v in uopts.items()})
    row["seed"] = seed
    return row


def spec_columns(camp: Campaign) -> list[str]:
    """The table's spec columns, in order: trace, platform, scheduler, options.*, users, user_options.*, seed."""
    opts = dict.fromkeys(f"options.{k}" for s in camp.schedulers for k in s.grid)
    uopts = dict.fromkeys(f"user_options.{k}" for u in camp.users for k in u.grid)
    return ["trace", "platform", "scheduler", *opts, "users", *uopts, "seed"]


def matches(row: dict[str, Any], exclude: dict[str, list[Any]]) -> bool:
    """A row matches an ``exclude`` entry when each of its columns has one of the listed values."""
    return all(col in row and any(_same(row[col], v) for v in values) for col, values in exclude.items())


def _same(a: Any, b: Any) -> bool:
    return a is b if isinstance(a, bool) or isinstance(b, bool) else a == b


def _flat(entry: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"options": {"policy": "SQF"}}`` (TOML's dotted keys) -> ``{"options.policy": "SQF"}``."""
    out: dict[str, Any] = {}
    for k, v in entry.items():
        if isinstance(v, dict) and k in ("options", "user_options") and not prefix:
            out.update(_flat(v, f"{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def check_exclude(c: Checker, value: Any, camp: Campaign) -> list[dict[str, list[Any]]]:
    """``exclude``: a list of tables, column -> value or list of values (the table's spec columns)."""
    if value in (None, []):
        return []
    columns = spec_columns(camp)
    out = []
    for i, entry in enumerate(value if isinstance(value, list) else [value]):
        where = at("exclude", i)
        entry = _flat(c.mapping(entry, where))
        if not entry:
            raise c.fail(where, "empty (it would exclude every run)")
        for col in entry:
            if col not in columns:
                raise c.fail(at(where, str(col)), f"unknown column{close(str(col), columns)}; the spec's columns: "
                                                  f"{', '.join(columns)}")
        out.append({str(k): (v if isinstance(v, list) else [v]) for k, v in entry.items()})
    return out
