"""A checked campaign (:class:`Campaign`) and its entries, and the :class:`Checker` whose errors name the
file and the key (``docs/campaign.md``).  What reads a campaign file into them is :mod:`batfeed.campaign.spec`.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batfeed.errors import BatfeedError

MAX_SHAKE = 1e9                     # s (31 years): beyond, the shaken times swamp the run times (and memory)
MAX_WEEKS = 10_000                  # resample_weeks (192 years)
MAX_HOSTS = 10_000_000              # hosts of a generated platform (nb_machines, scale)


class CampaignError(BatfeedError, ValueError):
    """A campaign file that cannot be run (one line: file, key, reason)."""


@dataclass(frozen=True)
class TraceSpec:
    """One trace entry: ``convert`` holds the conversion options (SWF: :func:`convert_swf`'s; JSON:
    ``max_jobs``), ``shake`` the input-shaking amplitude in seconds (0: off), ``resample_weeks`` the
    length of a weekly user resample of the converted trace, one per seed (0: off; none with "permute",
    whose resamples are as long as the log)."""

    name: str
    path: Path
    format: str
    convert: dict[str, Any]
    shake: float = 0.0
    resample_weeks: int = 0
    resample_method: str = "weekly"     # "weekly" (adapters/resample.py), "permute" (adapters/resample_permute.py)
    #                                     or "users" (users/zf_resample.py)
    resample_load: float = 1.0          # load factor f of the "users" method
    resample_rb_npw: float = 0.0        # rare-behaviour arrivals per week of the "users" method (flurries)

    @property
    def resampled(self) -> bool:
        """Each seed's runs simulate a resample of the trace (``resample_weeks``, or ``resample = "permute"``)."""
        return self.resample_weeks > 0 or self.resample_method == "permute"


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
    lean: bool = False              # EASY runs without the engine where they can (batfeed/lean.py)


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


def show(value: Any) -> str:
    """A value as a message shows it (JSON)."""
    return json.dumps(value, default=str)
