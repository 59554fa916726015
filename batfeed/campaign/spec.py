"""Campaign files: reading (TOML or YAML) and checking, before anything runs.

A campaign names traces, platforms, schedulers with option grids, user models with option grids,
seeds and metrics (``docs/campaign.md``).  :func:`load_spec` returns a :class:`Campaign` or raises
:class:`CampaignError`, one line naming the file and the key::

    campaign.toml: schedulers[1].options.policy: must be a queue policy (FCFS, ...), got "SQX" (did you mean "SQF"?)

The entries and the :class:`Campaign` they make are :mod:`batfeed.campaign.model`'s; the checks of each
part are :mod:`~batfeed.campaign.checks` (traces, platforms), :mod:`~batfeed.campaign.grids` (schedulers
and user models), :mod:`~batfeed.campaign.weekly` (validate runs) and :func:`~batfeed.campaign.expand.check_exclude`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from batfeed.campaign.checks import check_platforms, check_traces
from batfeed.campaign.columns import metric_names
from batfeed.campaign.expand import check_exclude
from batfeed.campaign.grids import check_schedulers, check_users
from batfeed.campaign.model import Campaign, CampaignError, Checker, at, close

TOP_KEYS = ("name", "description", "output", "traces", "platforms", "schedulers", "users", "seeds", "metrics",
            "tau", "window", "exclude", "validate", "lean")
DEFAULT_METRICS = ("nb_jobs", "nb_rejected", "nb_killed", "nb_walltime", "wait.mean", "wait.p90", "wait.max",
                   "bounded_slowdown.mean", "bounded_slowdown.max", "utilisation", "makespan", "throughput_per_hour")
USER_METRICS = ("lateness.mean_s", "lateness.relative", "lateness.delta_s")   # added when a run has a user model
MAX_SEED = 2**63 - 1                # the table's seed column is int64


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
    lean = data.get("lean", False)
    if not isinstance(lean, bool):
        raise c.fail("lean", f"must be true or false, got {json.dumps(lean, default=str)}")
    output = data.get("output")
    if output is not None and (not isinstance(output, str) or not output):
        raise c.fail("output", f"must be a directory path, got {json.dumps(output, default=str)}")
    camp = Campaign(name=name, source=source, base=c.base, traces=traces, platforms=platforms,
                    schedulers=schedulers, users=users, seeds=seeds, metrics=metrics, tau=tau, window=window,
                    output=None if output is None else c.base / os.path.expanduser(output), text=text, suffix=suffix,
                    sha256=hashlib.sha256(text.encode()).hexdigest(), validate=weekly, lean=lean)
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
