"""Checks of a campaign's schedulers and user models with their option grids (:func:`batfeed.campaign.spec.load_spec`).

Scheduler and user-model options are checked with the option specs the schedulers themselves
validate with (:mod:`batfeed.schedulers.options`, :mod:`batfeed.users.options`), so the messages
and the "did you mean" hints are the same as ``batfeed simulate --options``'s.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batfeed.campaign.model import Checker, SchedulerSpec, UsersSpec, at, close, show
from batfeed.errors import BatfeedError

# layer options a campaign sets itself from the run (scheduler, its options, the model, the trace)
LAYER_SET = ("scheduler", "scheduler_options", "users", "trace")


def _pybatsim_names() -> list[str]:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        root = Path(str(distribution("pybatsim").locate_file("schedulers")))
    except PackageNotFoundError:
        return []
    return sorted(p.stem for p in root.glob("*.py") if not p.stem.startswith("_"))


def _scheduler_target(c: Checker, name: Any, where: str) -> tuple[str, Mapping[str, Any] | None]:
    from batfeed.registry import BUILTIN

    if not isinstance(name, str) or not name:
        raise c.fail(where, f"must be a scheduler name, got {show(name)}")
    if name.lower() in BUILTIN:
        module, _, cls = BUILTIN[name.lower()].partition(":")
        return name, getattr(importlib.import_module(module), cls).OPTIONS
    if name.endswith(".py"):
        return str(c.path(name, where)), None
    if ":" in name:
        module = name.partition(":")[0]
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise c.fail(where, f"no module '{module}' for scheduler '{name}'")
        return name, None
    known = _pybatsim_names()
    if name in known:
        return name, None
    raise c.fail(where, f"unknown scheduler '{name}'{close(name, [*BUILTIN, *known])}; batfeed's: "
                        f"{', '.join(BUILTIN)}; or a .py file, module:Class or a pybatsim scheduler name")


def _grid(c: Checker, value: Any, where: str, specs: Mapping[str, Any] | None, owner: str,
          allowed: tuple[str, ...] | None = None) -> dict[str, list[Any]]:
    """Option name -> list of alternatives (a scalar is a list of one; a list value is written [[...]]).
    Values are checked against ``specs`` when given; TOML, which has no null, may write "null"."""
    from batfeed.schedulers.options import unknown_message

    grid = c.mapping(value if value is not None else {}, where)
    out: dict[str, list[Any]] = {}
    for key, alts in grid.items():
        w = at(where, str(key))
        if specs is not None and key not in specs or allowed is not None and key not in allowed:
            known = [k for k in (specs or {}) if allowed is None or k in allowed]
            raise c.fail(w, unknown_message(str(key), owner, known).replace(f"unknown option '{key}' for ",
                                                                             "unknown option for "))
        alts = alts if isinstance(alts, list) else [alts]
        if not alts:
            raise c.fail(w, "no value (an empty list of alternatives)")
        checked = []
        for j, v in enumerate(alts):
            if specs is not None:
                spec = specs[key]
                if v == "null" and spec.nullable and spec.kind not in ("string", "path", "choice"):
                    v = None
                try:
                    spec.check(v, owner)
                except BatfeedError as err:
                    prefix = f"option '{key}' for {owner} "
                    raise c.fail(at(w, j) if len(alts) > 1 else w, str(err).removeprefix(prefix)) from None
            checked.append(v)
        out[str(key)] = checked
    return out


def combinations(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """The cartesian product of a grid, in the order written (the last option varies fastest)."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def check_schedulers(c: Checker, value: Any, weekly: bool = False) -> list[SchedulerSpec]:
    """The scheduler entries; ``weekly``: validate runs, Maui only, with the options validate passes on."""
    from batfeed.schedulers.options import validate

    allowed = None
    if weekly:
        from batfeed.campaign.weekly import MAUI_OPTIONS as allowed

    out = []
    for i, entry in enumerate(c.entries(value, "schedulers")):
        where = at("schedulers", i)
        entry = {"name": entry} if isinstance(entry, str) else c.mapping(entry, where)
        c.keys(entry, ("name", "options"), where)
        if "name" not in entry:
            raise c.fail(where, "no 'name' (fcfs, easy, conservative, maui, a .py file, module:Class, ...)")
        if weekly and str(entry["name"]).lower() != "maui":
            raise c.fail(at(where, "name"), f"validate runs are Maui's: the scheduler must be maui, got "
                                            f"{show(entry['name'])}")
        target, specs = _scheduler_target(c, entry["name"], at(where, "name"))
        for key in c.mapping(entry.get("options") or {}, at(where, "options")) if allowed else ():
            if specs and key in specs and key not in allowed:
                raise c.fail(at(where, "options", key), f"not an option of validate runs (they take "
                                                        f"{', '.join(allowed)})")
        grid = _grid(c, entry.get("options"), at(where, "options"), specs, entry["name"], allowed)
        if specs is not None:
            for combo in combinations(grid):
                try:
                    validate(specs, combo, entry["name"])
                except BatfeedError as err:
                    raise c.fail(at(where, "options"), str(err)) from None
        out.append(SchedulerSpec(name=entry["name"], target=target, grid=grid, specs=specs))
    return out


def user_specs(model: str) -> dict[str, Any]:
    """The options a campaign may give user model ``model``: its own and the user-model layer's."""
    from batfeed.users import MODELS
    from batfeed.users.options import LAYER_SPECS

    return {**{k: v for k, v in LAYER_SPECS.items() if k not in LAYER_SET}, **MODELS[model].OPTIONS}


def check_users(c: Checker, value: Any, weekly: bool = False) -> list[UsersSpec]:
    from batfeed.users import MODELS

    out = []
    for i, entry in enumerate(c.entries(value, "users")):
        where = at("users", i)
        entry = {"model": entry} if isinstance(entry, str) else c.mapping(entry, where)
        c.keys(entry, ("model", "options"), where)
        model = entry.get("model", "none")
        if model in ("none", None):
            if entry.get("options"):
                raise c.fail(at(where, "options"), "no user model ('none'): no options")
            out.append(UsersSpec(None, {}, None))
            continue
        if weekly:
            raise c.fail(at(where, "model"), f"validate runs replay the trace: no user model, got {show(model)}")
        if model not in MODELS:
            raise c.fail(at(where, "model"), f"unknown user model {show(model)}{close(str(model), list(MODELS))}; "
                                             f"known: none, {', '.join(MODELS)}")
        specs = user_specs(model)
        grid = _grid(c, entry.get("options"), at(where, "options"), specs, f"user model '{model}'")
        out.append(UsersSpec(model, grid, specs))
    return out
