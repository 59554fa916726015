"""Campaign files: reading (TOML or YAML) and checking, before anything runs.

A campaign names traces, platforms, schedulers with option grids, user models with option grids,
seeds and metrics (``docs/campaign.md``).  :func:`load_spec` returns a :class:`Campaign` or raises
:class:`CampaignError`, one line naming the file and the key::

    campaign.toml: schedulers[1].options.policy: must be a queue policy (FCFS, ...), got "SQX" (did you mean "SQF"?)
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batfeed.errors import BatfeedError

TOP_KEYS = ("name", "description", "output", "traces", "platforms", "schedulers", "users", "seeds", "metrics",
            "tau", "window", "exclude", "validate")
DEFAULT_METRICS = ("nb_jobs", "nb_rejected", "nb_killed", "nb_walltime", "wait.mean", "wait.p90", "wait.max",
                   "bounded_slowdown.mean", "bounded_slowdown.max", "utilisation", "makespan", "throughput_per_hour")
USER_METRICS = ("lateness.mean_s", "lateness.relative", "lateness.delta_s")   # added when a run has a user model
MAX_SEED = 2**63 - 1                # the table's seed column is int64
MAX_SHAKE = 1e9                     # s (31 years): beyond, the shaken times swamp the run times (and memory)
MAX_WEEKS = 10_000                  # resample_weeks (192 years)
MAX_HOSTS = 10_000_000              # hosts of a generated platform (nb_machines, scale)


class CampaignError(BatfeedError, ValueError):
    """A campaign file that cannot be run (one line: file, key, reason)."""


@dataclass(frozen=True)
class TraceSpec:
    """One trace entry: ``convert`` holds the conversion options (SWF: :func:`convert_swf`'s; JSON:
    ``max_jobs``), ``shake`` the input-shaking amplitude in seconds (0: off), ``resample_weeks`` the
    length of a weekly user resample of the converted trace, one per seed (0: off)."""

    name: str
    path: Path
    format: str
    convert: dict[str, Any]
    shake: float = 0.0
    resample_weeks: int = 0
    resample_method: str = "weekly"     # "weekly" (adapters/resample.py) or "users" (users/zf_resample.py)
    resample_load: float = 1.0          # load factor f of the "users" method
    resample_rb_npw: float = 0.0        # rare-behaviour arrivals per week of the "users" method (flurries)


@dataclass(frozen=True)
class PlatformSpec:
    """``kind``: "trace" (the conversion's), "scale" (its size × value), "nb_machines" or "xml"."""

    name: str
    kind: str
    value: Any = None
    events: tuple[Path, ...] = ()


@dataclass(frozen=True)
class SchedulerSpec:
    """``name`` as written (the table's ``scheduler``), ``target`` what runs it (a resolved .py path
    for a file), ``grid`` option name -> alternatives, ``specs`` the option specs when batfeed knows them."""

    name: str
    target: str
    grid: dict[str, list[Any]]
    specs: Mapping[str, Any] | None


@dataclass(frozen=True)
class UsersSpec:
    """``model`` None: no user model (the trace is a static workload)."""

    model: str | None
    grid: dict[str, list[Any]]
    specs: Mapping[str, Any] | None


@dataclass
class Campaign:
    """A checked campaign; ``source`` names it in messages, ``base`` resolves its relative paths."""

    name: str
    source: str
    base: Path
    traces: list[TraceSpec]
    platforms: list[PlatformSpec]
    schedulers: list[SchedulerSpec]
    users: list[UsersSpec]
    seeds: list[int]
    metrics: list[str]
    tau: float = 10.0
    window: tuple[float, float] | None = None
    exclude: list[dict[str, list[Any]]] = field(default_factory=list)
    output: Path | None = None
    text: str = ""                  # the file as written (copied into the campaign directory)
    suffix: str = ".json"
    sha256: str = ""
    validate: dict[str, Any] | None = None    # weekly validation runs (weekly.py): weeks, plots


def at(*parts: str | int) -> str:
    """``schedulers[1].options.policy`` from ("schedulers", 1, "options", "policy")."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def close(name: str, known: list[str] | tuple[str, ...]) -> str:
    """`` (did you mean 'x'?)`` or ""."""
    hit = difflib.get_close_matches(str(name), list(known), 1)
    return f" (did you mean '{hit[0]}'?)" if hit else ""


class Checker:
    """Raises :class:`CampaignError` prefixed with the spec's source and a key path."""

    def __init__(self, source: str, base: Path):
        self.source, self.base = source, base

    def fail(self, where: str, message: str) -> CampaignError:
        return CampaignError(f"{self.source}: {where}: {message}" if where else f"{self.source}: {message}")

    def keys(self, data: Mapping[str, Any], known: tuple[str, ...] | list[str], where: str,
             what: str = "key") -> None:
        for key in data:
            if key not in known:
                raise self.fail(at(where, str(key)) if where else str(key),
                                f"unknown {what}{close(str(key), known)}; known: {', '.join(known)}")

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"must be a table (mapping), got {json.dumps(value, default=str)}")
        return dict(value)

    def entries(self, value: Any, where: str, allow_scalar: bool = True) -> list[Any]:
        """A list of entries; a lone entry (string or table) counts as a list of one."""
        if isinstance(value, list):
            if not value:
                raise self.fail(where, "must not be empty")
            return value
        if allow_scalar and isinstance(value, str | Mapping | int | float) and not isinstance(value, bool):
            return [value]
        raise self.fail(where, f"must be a list, got {json.dumps(value, default=str)}")

    def number(self, value: Any, where: str, minimum: float = 0.0, above: bool = False,
               integer: bool = False, maximum: float | None = None) -> float:
        """A finite number (an integer when ``integer``) >= ``minimum`` (> with ``above``), <= ``maximum``."""
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        ok = ok and (value > minimum if above else value >= minimum) and (not integer or float(value).is_integer())
        if not ok or maximum is not None and value > maximum:
            infinite = isinstance(value, float) and not math.isfinite(value)
            kind = "an integer" if integer else "a finite number" if infinite else "a number"
            bounds = [f"{'>' if above else '>='} {minimum:g}"] if math.isfinite(minimum) else []
            bounds += [f"<= {int(maximum) if float(maximum).is_integer() else maximum}"] if maximum is not None else []
            raise self.fail(where, f"must be {' '.join([kind, ' and '.join(bounds)]).strip()}, "
                                   f"got {json.dumps(value, default=str)}")
        return int(value) if integer else float(value)

    def path(self, value: Any, where: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"must be a file path, got {json.dumps(value, default=str)}")
        path = Path(os.path.expandvars(os.path.expanduser(value)))
        path = path if path.is_absolute() else self.base / path
        if not path.is_file():
            unset = sorted(set(re.findall(r"\$\{?(\w+)", str(path))))
            why = f" (environment variable {', '.join(unset)} not set)" if unset else ""
            raise self.fail(where, f"no such file: {path}{why}")
        return path.resolve()


class DuplicateKey(Exception):
    """A YAML mapping with a key written twice (``line``: the second, ``first``: the first; from 1)."""

    def __init__(self, key: Any, line: int, first: int):
        super().__init__(f"key '{key}' on lines {first} and {line}")
        self.key, self.line, self.first = key, line, first


@functools.cache
def _unique_key_loader() -> Any:
    """``yaml.SafeLoader`` refusing a key written twice in one mapping (:class:`DuplicateKey`); keys a
    merge (``<<: *anchor``) brings may still be overridden, as YAML means them to."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
                    try:
                        if key in seen:
                            raise DuplicateKey(key, line, seen[key])
                        seen[key] = line
                    except TypeError:       # an unhashable key: SafeLoader's own error follows
                        continue
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def read_text(path: Path) -> tuple[dict[str, Any], str]:
    """The file's mapping and text; one-line errors for unreadable, malformed or non-mapping files."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CampaignError(f"{source}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise CampaignError(f"{source}: cannot read: {getattr(err, 'strerror', None) or err}") from None
    suffix = path.suffix.lower()
    if suffix == ".toml":
        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise CampaignError(f"{source}: not valid TOML: {err}") from None
    elif suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.load(text, Loader=_unique_key_loader())   # a SafeLoader
        except DuplicateKey as err:
            raise CampaignError(f"{source}:{err.line}: key '{err.key}' given twice (first on line {err.first}); "
                                "YAML would keep the last one silently: remove one") from None
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f"{source}:{mark.line + 1}" if mark is not None else source
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise CampaignError(f"{where}: not valid YAML: {problem}") from None
    else:
        raise CampaignError(f"{source}: unknown campaign file type '{path.suffix}' (.toml, .yaml or .yml)")
    if not isinstance(data, dict):
        raise CampaignError(f"{source}: a campaign file must be a table of keys (traces, schedulers, ...)")
    return data, text


def load_spec(spec: str | Path | Mapping[str, Any], base: str | Path | None = None) -> Campaign:
    """Read and check a campaign: a TOML/YAML file, or a mapping (then relative paths are relative to
    ``base``, default the current directory).  Nothing is run or written."""
    from batfeed.campaign.checks import check_platforms, check_schedulers, check_traces, check_users

    if isinstance(spec, Mapping):
        data, text, source, suffix = dict(spec), json.dumps(spec, indent=2, default=str), "campaign spec", ".json"
        root = Path(base) if base is not None else Path.cwd()
        name = str(data.get("name") or "campaign")
    else:
        path = Path(spec)
        data, text = read_text(path)
        source, suffix, root = str(spec), path.suffix.lower(), path.resolve().parent
        name = str(data.get("name") or path.stem)
    c = Checker(source, root.resolve())
    c.keys(data, TOP_KEYS, "")
    for key in ("traces", "schedulers"):
        if key not in data:
            raise c.fail("", f"no '{key}' given (a campaign needs traces and schedulers)")
    weekly = None
    if "validate" in data:
        from batfeed.campaign.weekly import check_mode, check_validate

        weekly = check_validate(c, data["validate"])
        check_mode(c, data)
    traces = check_traces(c, data["traces"], weekly is not None)
    platforms = check_platforms(c, data.get("platforms", ["trace"]), traces, weekly is not None)
    schedulers = check_schedulers(c, data["schedulers"], weekly is not None)
    users = check_users(c, data.get("users", ["none"]), weekly is not None)
    seeds = [int(c.number(s, at("seeds", i), minimum=0, integer=True, maximum=MAX_SEED))
             for i, s in enumerate(c.entries(data.get("seeds", [0]), "seeds"))]
    if len(set(seeds)) != len(seeds):
        raise c.fail("seeds", f"a seed is listed twice: {seeds}")
    tau = c.number(data.get("tau", 10.0), "tau", 0.0, above=True)
    window = _window(c, data.get("window"))
    if weekly is not None:
        from batfeed.campaign.weekly import check_metrics

        metrics = check_metrics(c, data.get("metrics"))
    else:
        metrics = _metrics(c, data.get("metrics"), any(u.model for u in users))
    output = data.get("output")
    if output is not None and (not isinstance(output, str) or not output):
        raise c.fail("output", f"must be a directory path, got {json.dumps(output, default=str)}")
    camp = Campaign(name=name, source=source, base=c.base, traces=traces, platforms=platforms,
                    schedulers=schedulers, users=users, seeds=seeds, metrics=metrics, tau=tau, window=window,
                    output=None if output is None else c.base / os.path.expanduser(output), text=text, suffix=suffix,
                    sha256=hashlib.sha256(text.encode()).hexdigest(), validate=weekly)
    from batfeed.campaign.expand import check_exclude

    camp.exclude = check_exclude(c, data.get("exclude", []), camp)
    return camp


def _window(c: Checker, value: Any) -> tuple[float, float] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2):
        raise c.fail("window", f"must be [T0, T1] in seconds, got {json.dumps(value, default=str)}")
    t0, t1 = (c.number(v, at("window", i), minimum=float("-inf")) for i, v in enumerate(value))
    if not t1 > t0:
        raise c.fail("window", f"must satisfy T0 < T1, got {value}")
    return t0, t1


def metric_names() -> list[str]:
    """Every scalar :func:`~batfeed.metrics.compute_metrics` value as a dotted name (``wait.mean``), and
    each again as ``non_rb.NAME`` with ``non_rb.nb_rb_jobs`` (runs with ``resample_rb_npw``; NaN elsewhere)."""
    import pandas as pd

    from batfeed.campaign.table import flatten
    from batfeed.metrics import compute_metrics

    one = pd.DataFrame({"job_id": ["1"], "workload_name": ["w0"], "profile": ["p"], "submission_time": [0.0],
                        "requested_number_of_resources": [1], "requested_time": [10.0], "success": [1],
                        "final_state": ["COMPLETED_SUCCESSFULLY"], "starting_time": [0.0], "execution_time": [5.0],
                        "finish_time": [5.0], "waiting_time": [0.0], "turnaround_time": [5.0], "stretch": [1.0],
                        "allocated_resources": ["0"], "consumed_energy": [-1.0],
                        "metadata": ["orig_subtime=0;user=1"]})
    names = list(flatten(compute_metrics(one, nb_resources=1)))
    return sorted(names + ["non_rb.nb_rb_jobs"] + [f"non_rb.{n}" for n in names])


def _metrics(c: Checker, value: Any, with_users: bool) -> list[str]:
    if value is None:
        return list(DEFAULT_METRICS) + (list(USER_METRICS) if with_users else [])
    names = c.entries(value, "metrics")
    known = metric_names()
    for i, name in enumerate(names):
        if name not in known:
            raise c.fail(at("metrics", i), f"unknown metric {json.dumps(name, default=str)}"
                         f"{close(str(name), known)} (batfeed metrics --json shows them; nested ones as wait.mean)")
    return list(dict.fromkeys(names))
