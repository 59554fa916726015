"""Checks of a campaign's traces, platforms, schedulers and user models (:mod:`batfeed.campaign.spec`).

Scheduler and user-model options are checked with the option specs the schedulers themselves
validate with (:mod:`batfeed.schedulers.options`, :mod:`batfeed.users.options`), so the messages
and the "did you mean" hints are the same as ``batfeed simulate --options``'s.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batfeed.campaign.spec import (
    MAX_HOSTS,
    MAX_SHAKE,
    MAX_WEEKS,
    CampaignError,
    Checker,
    PlatformSpec,
    SchedulerSpec,
    TraceSpec,
    UsersSpec,
    at,
    close,
)
from batfeed.errors import BatfeedError

SWF_OPTIONS = ("unit", "procs_per_node", "walltime_fallback", "over_request", "zero_runtime", "statuses", "users",
               "window", "speed", "size_scale", "profiles", "origin", "nb_res", "size_from", "extended", "machines",
               "strict", "filter", "overrun")
TRACE_KEYS = ("name", "path", "format", "shake", "max_jobs", "load", "resample_weeks", "resample",
              "resample_load", "resample_rb_npw")
NAMED_TRACES = ("KTH-SP2",)        # shipped with batfeed (package data)
# layer options a campaign sets itself from the run (scheduler, its options, the model, the trace)
LAYER_SET = ("scheduler", "scheduler_options", "users", "trace")


def filters() -> dict[str, Any]:
    """Named SWF cleaning rules (``filter = "tune"``: :func:`batfeed.adapters.filters.tune_filter`)."""
    from batfeed.adapters.filters import tune_filter

    return {"tune": tune_filter}


def _show(value: Any) -> str:
    return json.dumps(value, default=str)


# --------------------------------------------------------------------------- traces

def check_traces(c: Checker, value: Any, weekly: bool = False) -> list[TraceSpec]:
    """The trace entries; ``weekly``: validate runs (no shaking; SWF converted as
    ``batfeed validate`` does, unless the entry says otherwise)."""
    out: list[TraceSpec] = []
    for i, entry in enumerate(c.entries(value, "traces")):
        where = at("traces", i)
        entry = {"path": entry} if isinstance(entry, str) else c.mapping(entry, where)
        if "generate" in entry:     # no workload: the user model generates the jobs (site-level users)
            if entry["generate"] is not True:
                raise c.fail(at(where, "generate"), f"must be true, got {_show(entry['generate'])}")
            c.keys(entry, ("name", "generate"), where, "key for a generated trace")
            if weekly:
                raise c.fail(at(where, "generate"), "validate runs replay a recorded trace")
            name = entry.get("name", "generated")
            if not isinstance(name, str) or not name or any(t.name == name for t in out):
                raise c.fail(at(where, "name"), f"must be a non-empty string used once, got {_show(name)}")
            out.append(TraceSpec(name=name, path=Path(), format="generate", convert={}))
            continue
        if "path" not in entry:
            raise c.fail(where, "no 'path' (an SWF trace or a Batsim workload JSON)")
        path = _trace_path(c, entry["path"], at(where, "path"))
        fmt = entry.get("format") or _format_of(path)
        if fmt not in ("swf", "json"):
            raise c.fail(at(where, "format"), f"must be \"swf\" or \"json\", got {_show(fmt)}")
        c.keys(entry, TRACE_KEYS + (SWF_OPTIONS if fmt == "swf" else ()), where,
               "key" if fmt == "swf" else "key for a JSON workload")
        from batfeed.adapters.common import trace_stem

        name = entry.get("name", trace_stem(path) if entry["path"] not in NAMED_TRACES else entry["path"])
        if not isinstance(name, str) or not name:
            raise c.fail(at(where, "name"), f"must be a non-empty string, got {_show(name)}")
        if any(t.name == name for t in out):
            raise c.fail(at(where, "name"), f"trace name '{name}' is used twice (give each entry its own name)")
        shake = c.number(entry.get("shake", 0), at(where, "shake"), maximum=MAX_SHAKE)
        convert: dict[str, Any] = {}
        if "max_jobs" in entry:
            convert["max_jobs"] = int(c.number(entry["max_jobs"], at(where, "max_jobs"), 1, integer=True))
        if fmt == "swf":
            convert.update(_swf_options(c, entry, where))
        if "load" in entry:         # submit times divided by the factor, after the conversion
            load = c.number(entry["load"], at(where, "load"), 0, above=True)
            if load != 1:
                convert["load"] = load
        weeks = int(c.number(entry.get("resample_weeks", 0), at(where, "resample_weeks"), 0, integer=True,
                             maximum=MAX_WEEKS))
        method = entry.get("resample", "weekly")
        if method not in ("weekly", "users"):
            raise c.fail(at(where, "resample"), f"must be \"weekly\" or \"users\", got {_show(method)}"
                                                f"{close(str(method), ('weekly', 'users'))}")
        f = c.number(entry.get("resample_load", 1.0), at(where, "resample_load"), 0)
        rb = c.number(entry.get("resample_rb_npw", 0.0), at(where, "resample_rb_npw"), 0)
        for key in ("resample", "resample_load", "resample_rb_npw"):
            if key in entry and not weeks:
                raise c.fail(at(where, key), "needs resample_weeks (the length of each resampled trace)")
        if f != 1.0 and method != "users":
            raise c.fail(at(where, "resample_load"), "only the \"users\" resampling has a load factor")
        if rb and method != "users":
            raise c.fail(at(where, "resample_rb_npw"), "only the \"users\" resampling has rare behaviours")
        if weekly:
            if weeks:
                raise c.fail(at(where, "resample_weeks"), "no resampling in validate runs (the recorded waits are "
                                                          "those of the trace as recorded)")
            if shake:
                raise c.fail(at(where, "shake"), "no input shaking in validate runs (the recorded waits are those "
                                                 "of the trace as recorded)")
            if fmt == "swf":
                _validate_defaults(convert, path)
        out.append(TraceSpec(name=name, path=path, format=fmt, convert=convert, shake=shake, resample_weeks=weeks,
                             resample_method=method, resample_load=f, resample_rb_npw=rb))
    return out


def _validate_defaults(convert: dict[str, Any], path: Path) -> None:
    """``batfeed validate``'s conversion: Alea's extended columns, over-requests an error (a job running
    longer than requested gets run + 1 s), and the Alea ``<trace>.machines`` file next to the trace."""
    convert.setdefault("extended", True)
    convert.setdefault("over_request", "raise")
    if "machines" not in convert:
        guess = path.with_name(path.name.removesuffix(".gz").removesuffix(".xz") + ".machines")
        if guess.is_file():
            convert["machines"] = str(guess.resolve())


def _trace_path(c: Checker, value: Any, where: str) -> Path:
    if value in NAMED_TRACES:
        from batfeed.demo import kth_trace

        return kth_trace().resolve()
    return c.path(value, where)


def _format_of(path: Path) -> str | None:
    name = path.name.lower().removesuffix(".gz")
    return "swf" if name.endswith(".swf") else "json" if name.endswith(".json") else None


def _swf_options(c: Checker, entry: dict[str, Any], where: str) -> dict[str, Any]:
    from batfeed.adapters.common import ConvertOptions
    from batfeed.adapters.swf import SIZE_SOURCES

    out: dict[str, Any] = {}
    for key in SWF_OPTIONS:
        if key not in entry:
            continue
        v, w = entry[key], at(where, key)
        if key in ("procs_per_node", "nb_res"):
            v = int(c.number(v, w, 1, integer=True))
        elif key in ("speed", "size_scale"):
            v = c.number(v, w, 0, above=True)
        elif key == "overrun":
            v = c.number(v, w, 0)
        elif key == "origin":
            v = c.number(v, w, float("-inf"))
        elif key in ("extended", "strict") and not isinstance(v, bool):
            raise c.fail(w, f"must be true or false, got {_show(v)}")
        elif key in ("statuses", "users"):
            v = [str(x) for x in c.entries(v, w)]
        elif key == "machines":
            v = str(c.path(v, w))
        elif key == "filter" and v not in filters():
            raise c.fail(w, f"unknown filter {_show(v)}{close(str(v), list(filters()))}; known: "
                            f"{', '.join(filters())}")
        elif key == "size_from" and v not in SIZE_SOURCES:
            raise c.fail(w, f"must be one of {', '.join(SIZE_SOURCES)}, got {_show(v)}")
        elif key == "walltime_fallback":
            v = str(v)
        elif key == "window":
            v = _swf_window(c, v, w)
        elif key in ("unit", "over_request", "zero_runtime", "profiles") and not isinstance(v, str):
            raise c.fail(w, f"must be a string, got {_show(v)}")
        out[key] = v
    fields = {f.name for f in dataclasses.fields(ConvertOptions)}
    try:
        ConvertOptions(**{k: v for k, v in out.items() if k in fields}).check()
    except ValueError as err:
        key = str(err).split(" ", 1)[0]
        raise c.fail(at(where, key) if key in out else where, str(err).removeprefix(f"{key} ")) from None
    return out


def _swf_window(c: Checker, value: Any, where: str) -> list[Any]:
    """``"START:END"`` (as ``convert --window``) or ``[START, END]`` (seconds, dates; null or "" = open)."""
    from batfeed.adapters.window import parse_window

    try:
        if isinstance(value, str):
            return list(parse_window(value))
        if isinstance(value, list) and len(value) == 2:
            return [None if v is None or v == "" else parse_window(f"{v}..")[0] if isinstance(v, str)
                    else c.number(v, at(where, i), float("-inf")) for i, v in enumerate(value)]
    except CampaignError:
        raise
    except ValueError as err:
        raise c.fail(where, str(err)) from None
    raise c.fail(where, f"must be \"START:END\" or [START, END], got {_show(value)}")


# --------------------------------------------------------------------------- platforms

def check_platforms(c: Checker, value: Any, traces: list[TraceSpec], weekly: bool = False) -> list[PlatformSpec]:
    out: list[PlatformSpec] = []
    for i, entry in enumerate(c.entries(value, "platforms")):
        where = at("platforms", i)
        if entry == "trace":
            entry = {"from": "trace"}
        elif isinstance(entry, int) and not isinstance(entry, bool):
            entry = {"nb_machines": entry}
        elif isinstance(entry, str):
            entry = {"xml": entry}
        entry = c.mapping(entry, where)
        c.keys(entry, ("name", "from", "scale", "nb_machines", "xml", "events"), where)
        kinds = [k for k in ("from", "scale", "nb_machines", "xml") if k in entry]
        if len(kinds) > 1:
            raise c.fail(where, f"give one of from, scale, nb_machines, xml (got {', '.join(kinds)})")
        kind = kinds[0] if kinds else "from"
        if kind == "from":
            if entry.get("from", "trace") != "trace":
                raise c.fail(at(where, "from"), f"must be \"trace\", got {_show(entry['from'])}")
            spec = PlatformSpec("trace", "trace")
        elif kind == "scale":
            scale = c.number(entry["scale"], at(where, "scale"), 0, above=True, maximum=MAX_HOSTS)
            spec = PlatformSpec(f"x{scale:g}", "scale", scale)
        elif kind == "nb_machines":
            n = int(c.number(entry["nb_machines"], at(where, "nb_machines"), 1, integer=True, maximum=MAX_HOSTS))
            spec = PlatformSpec(f"n{n}", "nb_machines", n)
        else:
            xml = c.path(entry["xml"], at(where, "xml"))
            spec = PlatformSpec(xml.stem, "xml", xml)
        ev = entry.get("events")
        events = () if ev is None else tuple(c.path(e, at(where, "events", j))
                                             for j, e in enumerate(c.entries(ev, at(where, "events"))))
        if weekly and spec.kind != "trace":
            raise c.fail(where, "validate runs use the trace's own platform (\"trace\")")
        if weekly and len(events) > 1:
            raise c.fail(at(where, "events"), "validate runs take one events file")
        name = entry.get("name", spec.name)
        if not isinstance(name, str) or not name:
            raise c.fail(at(where, "name"), f"must be a non-empty string, got {_show(name)}")
        if any(p.name == name for p in out):
            raise c.fail(at(where, "name"), f"platform name '{name}' is used twice (give each entry its own name)")
        out.append(dataclasses.replace(spec, name=name, events=events))
    return out


# --------------------------------------------------------------------------- schedulers and user models

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
        raise c.fail(where, f"must be a scheduler name, got {_show(name)}")
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
                                            f"{_show(entry['name'])}")
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
            raise c.fail(at(where, "model"), f"validate runs replay the trace: no user model, got {_show(model)}")
        if model not in MODELS:
            raise c.fail(at(where, "model"), f"unknown user model {_show(model)}{close(str(model), list(MODELS))}; "
                                             f"known: none, {', '.join(MODELS)}")
        specs = user_specs(model)
        grid = _grid(c, entry.get("options"), at(where, "options"), specs, f"user model '{model}'")
        out.append(UsersSpec(model, grid, specs))
    return out
