"""Checks of a campaign's traces and platforms (:func:`batfeed.campaign.spec.load_spec`; its schedulers and
user models: :mod:`batfeed.campaign.grids`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from batfeed.campaign.model import (
    MAX_HOSTS,
    MAX_SHAKE,
    MAX_WEEKS,
    CampaignError,
    Checker,
    PlatformSpec,
    TraceSpec,
    at,
    close,
    show,
)

SWF_OPTIONS = ("unit", "procs_per_node", "walltime_fallback", "over_request", "zero_runtime", "statuses", "users",
               "window", "speed", "size_scale", "profiles", "origin", "nb_res", "size_from", "extended", "machines",
               "strict", "filter", "overrun")
TRACE_KEYS = ("name", "path", "format", "shake", "max_jobs", "load", "resample_weeks", "resample",
              "resample_load", "resample_rb_npw")
NAMED_TRACES = ("KTH-SP2",)        # shipped with batfeed (package data)
RESAMPLE_METHODS = ("weekly", "permute", "users")


def filters() -> dict[str, Any]:
    """Named SWF cleaning rules (``filter = "tune"``: :func:`batfeed.adapters.filters.tune_filter`)."""
    from batfeed.adapters.filters import tune_filter

    return {"tune": tune_filter}


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
                raise c.fail(at(where, "generate"), f"must be true, got {show(entry['generate'])}")
            c.keys(entry, ("name", "generate"), where, "key for a generated trace")
            if weekly:
                raise c.fail(at(where, "generate"), "validate runs replay a recorded trace")
            name = entry.get("name", "generated")
            if not isinstance(name, str) or not name or any(t.name == name for t in out):
                raise c.fail(at(where, "name"), f"must be a non-empty string used once, got {show(name)}")
            out.append(TraceSpec(name=name, path=Path(), format="generate", convert={}))
            continue
        if "path" not in entry:
            raise c.fail(where, "no 'path' (an SWF trace or a Batsim workload JSON)")
        path = _trace_path(c, entry["path"], at(where, "path"))
        fmt = entry.get("format") or _format_of(path)
        if fmt not in ("swf", "json"):
            raise c.fail(at(where, "format"), f"must be \"swf\" or \"json\", got {show(fmt)}")
        c.keys(entry, TRACE_KEYS + (SWF_OPTIONS if fmt == "swf" else ()), where,
               "key" if fmt == "swf" else "key for a JSON workload")
        from batfeed.adapters.common import trace_stem

        name = entry.get("name", trace_stem(path) if entry["path"] not in NAMED_TRACES else entry["path"])
        if not isinstance(name, str) or not name:
            raise c.fail(at(where, "name"), f"must be a non-empty string, got {show(name)}")
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
        if method not in RESAMPLE_METHODS:
            raise c.fail(at(where, "resample"), f"must be \"weekly\", \"permute\" or \"users\", got {show(method)}"
                                                f"{close(str(method), RESAMPLE_METHODS)}")
        permute = method == "permute"   # as long as the log (its interior weeks): no resample_weeks
        if permute and "resample_weeks" in entry:
            raise c.fail(at(where, "resample_weeks"), "the \"permute\" resampling keeps the log's length (its "
                                                      "interior weeks): remove resample_weeks")
        f = c.number(entry.get("resample_load", 1.0), at(where, "resample_load"), 0)
        rb = c.number(entry.get("resample_rb_npw", 0.0), at(where, "resample_rb_npw"), 0)
        for key in ("resample", "resample_load", "resample_rb_npw"):
            if key in entry and not weeks and not permute:
                raise c.fail(at(where, key), "needs resample_weeks (the length of each resampled trace)")
        if f != 1.0 and method != "users":
            raise c.fail(at(where, "resample_load"), "only the \"users\" resampling has a load factor")
        if rb and method != "users":
            raise c.fail(at(where, "resample_rb_npw"), "only the \"users\" resampling has rare behaviours")
        if weekly:
            if weeks or permute:
                key = "resample" if permute else "resample_weeks"
                raise c.fail(at(where, key), "no resampling in validate runs (the recorded waits are those of the "
                                             "trace as recorded)")
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
            raise c.fail(w, f"must be true or false, got {show(v)}")
        elif key in ("statuses", "users"):
            v = [str(x) for x in c.entries(v, w)]
        elif key == "machines":
            v = str(c.path(v, w))
        elif key == "filter" and v not in filters():
            raise c.fail(w, f"unknown filter {show(v)}{close(str(v), list(filters()))}; known: "
                            f"{', '.join(filters())}")
        elif key == "size_from" and v not in SIZE_SOURCES:
            raise c.fail(w, f"must be one of {', '.join(SIZE_SOURCES)}, got {show(v)}")
        elif key == "walltime_fallback":
            v = str(v)
        elif key == "window":
            v = _swf_window(c, v, w)
        elif key in ("unit", "over_request", "zero_runtime", "profiles") and not isinstance(v, str):
            raise c.fail(w, f"must be a string, got {show(v)}")
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
    raise c.fail(where, f"must be \"START:END\" or [START, END], got {show(value)}")


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
                raise c.fail(at(where, "from"), f"must be \"trace\", got {show(entry['from'])}")
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
            raise c.fail(at(where, "name"), f"must be a non-empty string, got {show(name)}")
        if any(p.name == name for p in out):
            raise c.fail(at(where, "name"), f"platform name '{name}' is used twice (give each entry its own name)")
        out.append(dataclasses.replace(spec, name=name, events=events))
    return out
