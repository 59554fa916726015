"""What a run's scheduler and user model are, from their names and options: the class behind a
scheduler name, its option specs, the options with their defaults filled in (for manifests and
reports), and the options a run adds (its seed, its log file).  :mod:`batfeed.manifest` records them."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _scheduler_class(scheduler: str | None) -> tuple[str | None, Any]:
    """(class path, class) of batfeed's own schedulers and ``module:Class`` names; (None, None) for
    anything else (a .py file, a pybatsim scheduler), (path, None) if the import fails."""
    if not scheduler:
        return None, None
    from batfeed.registry import BUILTIN

    target = BUILTIN.get(scheduler.lower(), scheduler)
    if ":" not in target or "/" in target or target.endswith(".py"):
        return None, None
    module, _, name = target.partition(":")
    try:
        return target, getattr(importlib.import_module(module), name)
    except Exception:           # make_scheduler reports it; the manifest only records
        return target, None


def spec_of(scheduler: str | None) -> tuple[str | None, dict[str, Any] | None]:
    """(class path, option specs) of a scheduler name: batfeed's own and ``module:Class`` classes with
    an ``OPTIONS`` spec dict; (None, None) for anything else (a .py file, a pybatsim scheduler)."""
    from batfeed.schedulers.options import Option

    target, cls = _scheduler_class(scheduler)
    if cls is None:
        return None, None
    specs = getattr(cls, "OPTIONS", None)
    if not isinstance(specs, Mapping) or not all(isinstance(o, Option) for o in specs.values()):
        return target, None
    return target, dict(specs)


def needs_profiles(scheduler: str | None) -> bool:
    """True for schedulers reading the jobs' profiles at submission (``NEEDS_PROFILES``, e.g.
    ``tuned_easy``'s actual run times): the runner then enables --forward-profiles-on-submission."""
    return bool(getattr(_scheduler_class(scheduler)[1], "NEEDS_PROFILES", False))


def resolve_scheduler_options(scheduler: str | None, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``{"name", "class", "options" (defaults filled), "options_given", "checked"}``; options of a
    scheduler without specs are recorded as given (``checked`` false)."""
    from batfeed.schedulers.options import validate

    given = dict(options or {})
    target, specs = spec_of(scheduler)
    filled, checked = given, False
    if specs is not None:
        try:
            filled, checked = validate(specs, given, str(scheduler)), True
        except Exception:
            pass
    return {"name": scheduler, "class": target, "options": filled, "options_given": given, "checked": checked}


def resolve_user_options(users: str | None, user_options: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The user model and its options with defaults: the model's own and the user-model layer's
    (minus what ``simulate`` sets: scheduler, scheduler_options, users, trace)."""
    if users is None:
        return None
    given = dict(user_options or {})
    out: dict[str, Any] = {"name": users, "class": None, "options": given, "layer_options": {},
                           "options_given": given, "checked": False}
    try:
        from batfeed.schedulers.options import validate
        from batfeed.users.base import LAYER_SPECS, model_class

        cls = model_class(users)
        layer = {k: v for k, v in given.items() if k in LAYER_SPECS}
        own = {k: v for k, v in given.items() if k not in LAYER_SPECS}
        opts = {**validate(cls.OPTIONS, own, users), **cls.FIXED}
        lay = validate(LAYER_SPECS, layer, "the user-model layer")
        set_by_simulate = ("scheduler", "scheduler_options", "users", "trace")
        out.update({"class": f"{cls.__module__}:{cls.__name__}", "options": opts, "checked": True,
                    "layer_options": {k: v for k, v in lay.items() if k not in set_by_simulate}})
    except Exception:
        pass
    return out


def user_model_specs(users: str | None) -> dict[str, Any] | None:
    try:
        from batfeed.users.base import model_class

        return dict(model_class(users).OPTIONS) if users else None
    except Exception:
        return None


def apply_seed(seed: int | None, scheduler: str | None, options: dict[str, Any] | None, users: str | None,
               user_options: dict[str, Any] | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``seed`` added to the scheduler's and the user model's options when their spec declares a
    ``seed`` option and it is not given explicitly (an explicit option wins)."""
    if seed is None:
        return options, user_options
    specs = spec_of(scheduler)[1] or {}
    if "seed" in specs and "seed" not in (options or {}):
        options = {**(options or {}), "seed": seed}
    if "seed" in (user_model_specs(users) or {}) and "seed" not in (user_options or {}):
        user_options = {**(user_options or {}), "seed": seed}
    return options, user_options


def apply_log(export: str | Path | None, scheduler: str | None,
              options: dict[str, Any] | None) -> dict[str, Any] | None:
    """For an exported run, option ``log`` set to ``PREFIX`` + the class's ``LOG_SUFFIX`` when the
    scheduler declares both and the option is not given (``tuned_easy``: ``PREFIX_tuning.csv``)."""
    if export is None or "log" in (options or {}):
        return options
    _, cls = _scheduler_class(scheduler)
    suffix = getattr(cls, "LOG_SUFFIX", None)
    if suffix and "log" in (spec_of(scheduler)[1] or {}):
        options = {**(options or {}), "log": f"{export}{suffix}"}
    return options
