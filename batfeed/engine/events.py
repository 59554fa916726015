"""External events files (``--events``): machine (un)availability and generic events.

Reference: batsim-protocol.md §7.  One JSON object per line.  Batsim keeps one list per file, each
with its own submitter actor (``event_submitter.cpp``), sorted by (timestamp, type) with
``machine_available`` < ``machine_unavailable`` < generic (``events.cpp``); events of equal rank
keep file order here (Batsim's ``std::sort`` is not stable, so inputs should not rely on it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batfeed.engine import intervals
from batfeed.engine.workload import round_json
from batfeed.errors import InputError

AVAILABLE = "machine_available"
UNAVAILABLE = "machine_unavailable"
_RANK = {AVAILABLE: 0, UNAVAILABLE: 1}


@dataclass(slots=True)
class ExternalEvent:
    timestamp: float
    type: str
    resources: list[tuple[int, int]]   # empty for generic events
    data: dict[str, Any]               # the JSON object as read
    where: str                         # "file:line", for error messages


def load_events(paths: list[str | Path], nb_machines: int, forward_unknown: bool = False) -> list[ExternalEvent]:
    """Read and sort every event of ``paths`` into one list (by time, type, then file order)."""
    keyed = [(ev.timestamp, _RANK.get(ev.type, 2), n, ev)
             for n, ev in enumerate(e for lst in load_event_lists(paths, nb_machines, forward_unknown) for e in lst)]
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def load_event_lists(paths: list[str | Path], nb_machines: int,
                     forward_unknown: bool = False) -> list[list[ExternalEvent]]:
    """One sorted event list per file of ``paths`` (Batsim's event lists); machine ids must be < ``nb_machines``."""
    return [_load_file(path, nb_machines, forward_unknown) for path in paths]


def _load_file(path: str | Path, nb_machines: int, forward_unknown: bool) -> list[ExternalEvent]:
    keyed: list[tuple[float, int, int, ExternalEvent]] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError("events file not found", str(path)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read events file: {err}", str(path)) from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        ev = parse_event(line, str(path), lineno, nb_machines, forward_unknown)
        keyed.append((ev.timestamp, _RANK.get(ev.type, 2), len(keyed), ev))
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def parse_event(line: str, path: str, lineno: int, nb_machines: int, forward_unknown: bool) -> ExternalEvent:
    """One event (a JSON text) of ``path``, checked like Batsim checks it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise InputError(f"invalid JSON: {err.msg}", path, lineno) from None
    if not isinstance(data, dict):
        raise InputError("an event must be a JSON object", path, lineno)
    ts, etype = data.get("timestamp"), data.get("type")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or ts < 0:
        raise InputError(f"'timestamp' must be a number >= 0 (got {ts!r})", path, lineno)
    if not isinstance(etype, str):
        raise InputError("event has no string 'type'", path, lineno)
    where = f"{path}:{lineno}"
    if etype in _RANK:
        res = data.get("resources")
        if not isinstance(res, str):
            raise InputError(f"{etype} event needs a 'resources' interval-set string", path, lineno)
        try:
            ivs = intervals.parse(res)
        except ValueError as err:
            raise InputError(f"bad 'resources' {res!r}: {err}", path, lineno) from None
        if ivs and ivs[-1][1] >= nb_machines:
            raise InputError(f"machine {ivs[-1][1]} does not exist (the platform has {nb_machines} "
                             f"compute machines, ids 0-{nb_machines - 1})", path, lineno)
        return ExternalEvent(float(ts), etype, ivs, data, where)
    if not forward_unknown:
        raise InputError(f"unknown event type '{etype}' (Batsim needs --forward-unknown-events to "
                         f"forward generic events)", path, lineno)
    return ExternalEvent(float(ts), etype, [], round_json(data), where)
