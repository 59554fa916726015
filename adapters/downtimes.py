"""Node downtimes -> Batsim external-events file (trace-formats.md §5, batsim-protocol.md §7).

Sources (``source=`` or detected from the header line):
- ``outages``: batfeed's downtime CSV ``node,start,end[,kind,cause,source]`` (e.g. PBS-derived
  outage lists);
- ``states``: a PBS-derived node-state log ``time,node,state`` (``down``/``offline``/``unknown``/
  ``drain*`` start an outage, any other state ends it);
- ``maintenance``: planned windows ``start,duration,nodes`` (nodes: ``ALL``, indices/ranges ``0-15``,
  names or Slurm hostlists, blank-separated);
- ``lanl``: the LANL failure data CSV (LA-UR-05-7318; one system, node = ``nodenumz``).
Times: Unix epochs, ISO times, ``m/d/yyyy h:mm`` (LANL) or Maui's ``HH:MM:SS_MM/DD/YYYY``, local
times in zone ``tz``.  Per node, outages shorter than ``min_duration`` (default 240 s) are dropped,
overlapping/adjacent ones merged (Batsim aborts on a second ``machine_unavailable``), the rest
shifted by ``origin`` and clipped to ``[0, horizon]``; nodes map to resource ids in host-name order.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from batfeed.adapters.common import BadRecord, fmt_number, is_int_text, read_lines, trace_stem
from batfeed.adapters.nodes import expand_hostlist, node_resource_ids
from batfeed.adapters.report import Tally, write_report

from batfeed.errors import InputError

__all__ = ["DowntimeResult", "Outage", "convert_downtimes", "parse_time", "read_downtimes", "workload_span"]

SOURCES = ("outages", "states", "maintenance", "lanl")
DEFAULT_MIN_DURATION = 240.0  # 4 minutes, as in the Maui/PBS simulation study
DOWN_STATES = re.compile(r"down|offline|unknown|drain", re.IGNORECASE)
_US_TIME = re.compile(r"([0-9]{1,2})/([0-9]{1,2})/([0-9]{4}) ([0-9]{1,2}):([0-9]{2})(?::([0-9]{2}))?")
LANL_CAUSES = ("Facilities", "Hardware", "Human Error", "Network", "Undetermined", "Software")


@dataclass(slots=True)
class Outage:
    """One node unavailable over [start, end) (epoch s; ``end`` may be inf); node = name or index."""

    node: str | int
    start: float
    end: float
    kind: str
    cause: str
    path: str
    line: int
    flag: str | None = None  # a warning to count (e.g. LANL down time disagrees with its timestamps)


def parse_time(text: str, tz: Any) -> float:
    """Epoch seconds of a number, an ISO time, ``m/d/yyyy h:mm[:ss]`` or ``HH:MM:SS_MM/DD/YYYY``
    (local times in zone ``tz``; None = UTC)."""
    text = text.strip()
    tz = tz or UTC
    try:
        value = float(text)
        if math.isfinite(value):
            return value
    except ValueError:
        pass
    if m := _US_TIME.fullmatch(text):  # fast path for m/d/yyyy h:mm[:ss] (LANL)
        mo, d, y, h, mi, sec = m.groups()
        stamp = datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec or 0))
        return stamp.replace(tzinfo=tz).timestamp()
    try:
        stamp = datetime.strptime(text, "%H:%M:%S_%m/%d/%Y")
    except ValueError:
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not a time: {text[:40]!r}") from None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=tz)).timestamp()


def _rows(path: str) -> Iterator[tuple[int, list[str]]]:
    for lineno, text in read_lines(path):
        if text.strip() and not text.lstrip().startswith("#"):
            yield lineno, [c.strip() for c in next(csv.reader([text]), [])]


def _detect(header: list[str]) -> str:
    cols = [c.lower() for c in header]
    if "prob started" in cols and "nodenumz" in cols:
        return "lanl"
    if {"time", "node", "state"} <= set(cols):
        return "states"
    if {"start", "duration", "nodes"} <= set(cols):
        return "maintenance"
    if {"node", "start", "end"} <= set(cols):
        return "outages"
    raise ValueError("cannot tell the downtime format from the header line "
                     f"{','.join(header)[:80]!r}: pass source ({', '.join(SOURCES)})")


def _node_keys(text: str) -> list[str | int]:
    keys: list[str | int] = []
    for token in text.replace(":", " ").split():
        if token.upper() == "ALL":
            keys.append("ALL")
        elif re.fullmatch(r"[0-9]+-[0-9]+", token):
            lo, hi = map(int, token.split("-"))
            if hi < lo or hi - lo > 1_000_000:
                raise ValueError(f"bad node range {token!r}")
            keys += range(lo, hi + 1)
        elif is_int_text(token):
            keys.append(int(token))
        else:
            keys += expand_hostlist(token)
    if not keys:
        raise ValueError("no node")
    return keys


def read_downtimes(path: str | Path, source: str = "auto", tz: str = "UTC",
                   system: int | None = None) -> Iterator[Outage | BadRecord]:
    """Outages of one file (node "ALL" for maintenance windows on every node), or BadRecords."""
    from zoneinfo import ZoneInfo

    zone = ZoneInfo(tz)
    name = str(path)
    rows = _rows(name)
    first = next(rows, None)
    if first is None:
        return
    try:
        kind = _detect(first[1]) if source == "auto" else source
    except ValueError as err:
        raise InputError(str(err), name, first[0]) from None
    if kind not in SOURCES:
        raise ValueError(f"source must be auto or one of {SOURCES}, not {source!r}")
    cols = {c.lower(): i for i, c in enumerate(first[1])}
    needed = {"outages": ("node", "start", "end"), "states": ("time", "node", "state"),
              "maintenance": ("start", "duration", "nodes"), "lanl": ("system", "nodenumz", "prob started")}[kind]
    if missing := [c for c in needed if c not in cols]:
        raise InputError(f"{kind} file lacks column(s) {', '.join(missing)}", name, first[0])
    down_since: dict[str, tuple[float, int, str]] = {}
    for lineno, row in rows:
        def get(col: str, row: list[str] = row) -> str:
            return row[cols[col]] if col in cols and cols[col] < len(row) else ""

        try:
            if len(row) != len(cols):
                raise ValueError(f"expected {len(cols)} fields, found {len(row)}")
            if kind == "outages":
                start, end = parse_time(get("start"), zone), parse_time(get("end"), zone)
                for key in _node_keys(get("node")):
                    yield Outage(key, start, end, get("kind") or "unplanned", get("cause"), name, lineno)
            elif kind == "maintenance":
                start, duration = parse_time(get("start"), zone), float(get("duration"))
                if not math.isfinite(duration):
                    raise ValueError("duration is not finite")
                for key in _node_keys(get("nodes")):
                    yield Outage(key, start, start + duration, "planned", get("cause") or "maintenance", name, lineno)
            elif kind == "states":
                t, node, state = parse_time(get("time"), zone), get("node"), get("state")
                if not node:
                    raise ValueError("empty node")
                if DOWN_STATES.search(state):
                    down_since.setdefault(node, (t, lineno, state))
                elif node in down_since:
                    t0, line0, state0 = down_since.pop(node)
                    yield Outage(node, t0, t, "unplanned", state0, name, line0)
            else:
                if system is not None and get("system") != str(system):
                    continue
                yield _lanl(get, zone, name, lineno)
        except (ValueError, OverflowError, OSError) as err:
            yield BadRecord(f"corrupt line: {err}", name, lineno)
    for node, (t0, line0, state0) in down_since.items():  # still down at the end of the log
        yield Outage(node, t0, math.inf, "unplanned", state0, name, line0)


def _lanl(get: Any, zone: Any, name: str, lineno: int) -> Outage:
    node = get("nodenumz")
    if not re.fullmatch(r"[0-9]+(\.0*)?", node):
        raise ValueError(f"no node number (nodenumz {node!r})")
    start = parse_time(get("prob started"), zone)
    fixed, minutes = get("prob fixed"), get("down time")
    end = parse_time(fixed, zone) if fixed else start + 60 * float(minutes)
    if not math.isfinite(end):
        raise ValueError("no end time")
    cause = next((f"{c}: {get(c.lower())}" for c in LANL_CAUSES if get(c.lower())), "")
    flag = None
    if fixed and minutes and abs((end - start) / 60 - float(minutes)) > 1:
        flag = "lanl_down_time_disagrees_with_fixed_minus_started"
    return Outage(int(float(node)), start, end, "unplanned", cause, name, lineno, flag)


def workload_span(path: str | Path) -> tuple[float | None, float]:
    """(``unix_start`` or None, horizon) of a Batsim workload: horizon = max(subtime + max(delay, walltime))."""
    from batfeed.adapters.workload import load_workload_json

    data = load_workload_json(path)
    profiles = data.get("profiles", {})
    horizon = 0.0
    for job in data["jobs"]:
        delay = profiles.get(job.get("profile"), {}).get("delay", 0) if isinstance(profiles, dict) else 0
        horizon = max(horizon, float(job.get("subtime", 0)) + max(float(delay or 0), float(job.get("walltime", 0))))
    unix = data.get("unix_start")
    return (float(unix) if isinstance(unix, (int, float)) else None), horizon


@dataclass
class DowntimeResult:
    """Files written by :func:`convert_downtimes` and its report."""

    events_path: Path
    report_path: Path
    report: dict[str, Any]


def convert_downtimes(inputs: Iterable[str | Path], out_dir: str | Path, *, platform: str | Path | None = None,
                      nb_nodes: int | None = None, workload: str | Path | None = None,
                      origin: float | str | None = None, horizon: float | None = None,
                      min_duration: float = DEFAULT_MIN_DURATION, source: str = "auto", tz: str = "UTC",
                      system: int | None = None, strict: bool = False, name: str | None = None,
                      require_kept: bool = False) -> DowntimeResult:
    """Write ``<stem>_events.txt`` (one event per line, sorted) and ``<stem>_events_report.json``.

    Nodes: the platform's (names, or 0-based indices in node order; hosts carrying a ``node``
    property are one node), else ``nb_nodes`` nodes named ``node_0000``....  Time 0 = ``origin``
    (epoch or time text), else the workload's ``unix_start``, else the earliest outage.  Horizon:
    ``horizon`` s, else the workload's (:func:`workload_span`), else none.  Counts are per node outage.
    ``require_kept``: keeping no outage is an :class:`~batfeed.adapters.empty.EmptyConversion` (nothing written).
    """
    from zoneinfo import ZoneInfo

    paths = [str(p) for p in inputs]
    if not paths:
        raise ValueError("no input file")
    if platform is not None:
        node_ids = node_resource_ids(platform)
    elif nb_nodes is not None and nb_nodes > 0:
        from batfeed.platforms.generate import host_names

        node_ids = {h: [i] for i, h in enumerate(host_names(nb_nodes))}
    else:
        raise ValueError("pass a platform or nb_nodes to map nodes to Batsim resource ids")
    order = list(node_ids)
    unix = span = None
    if workload is not None:
        unix, span = workload_span(workload)
    horizon = horizon if horizon is not None else span
    if source in ("auto", "lanl") and system is None and len(systems := _lanl_systems(paths)) > 1:
        raise InputError(f"the LANL file holds {len(systems)} systems ({min(systems)}-{max(systems)}): "
                         "choose one (system)", paths[0])
    tally = Tally(multi_file=len(paths) > 1, item="node")
    per_node: dict[str, list[Outage]] = {}
    items = [it for p in paths for it in read_downtimes(p, source, tz, system)]
    records, read = len({(it.path, it.line) for it in items}), 0
    for it in items:
        if isinstance(it, BadRecord):
            read += 1
            if strict:
                raise it
            tally.drop("corrupt_line", it.line, None, it.path, str(it))
            continue
        if it.flag:
            tally.warn(it.flag)
        keys = order if it.node == "ALL" else [it.node]
        for key in keys:
            read += 1
            node = order[key] if isinstance(key, int) and 0 <= key < len(order) else key
            reason = ("unknown_node" if node not in node_ids else "end_before_start" if it.end < it.start
                      else "zero_length" if it.end == it.start
                      else "shorter_than_threshold" if it.end - it.start < min_duration else None)
            if reason:
                if strict and reason in ("unknown_node", "end_before_start"):
                    shown = key if str(key).isprintable() else repr(key)
                    raise InputError(f"node {shown}: {reason.replace('_', ' ')}", it.path, it.line)
                tally.drop(reason, it.line, node, it.path)
                continue
            per_node.setdefault(node, []).append(Outage(node, it.start, it.end, it.kind, it.cause, it.path, it.line))
    base = _origin(origin, unix, per_node, ZoneInfo(tz))
    events: dict[tuple[float, int], list[int]] = {}
    kept = 0
    for node, outs in per_node.items():
        outs.sort(key=lambda o: (o.start, o.end))
        merged: list[Outage] = []
        for o in outs:
            if merged and o.start <= merged[-1].end:
                merged[-1].end = max(merged[-1].end, o.end)
                tally.drop("merged_overlap", o.line, node, o.path)
            else:
                merged.append(o)
        for o in merged:
            start, end = o.start - base, o.end - base
            if end <= 0 or (horizon is not None and start >= horizon):
                tally.drop("outside_horizon", o.line, node, o.path)
                continue
            if start < 0:
                start = 0.0
                tally.modify("clipped_start")
            if horizon is not None and end > horizon:
                end = horizon
                tally.modify("clipped_end")
            kept += 1
            events.setdefault((start, 1), []).extend(node_ids[node])
            if math.isfinite(end):
                events.setdefault((end, 0), []).extend(node_ids[node])
    if require_kept and not kept:
        from batfeed.adapters.empty import empty_error

        raise empty_error(paths[0] if len(paths) == 1 else paths, read, tally, fmt="downtimes", what="outage")
    return _write(out_dir, name or trace_stem(paths[0]), events, tally, paths, read, kept, records, base,
                  horizon, min_duration)


def _lanl_systems(paths: list[str]) -> set[int]:
    systems: set[int] = set()
    for p in paths:
        rows = _rows(p)
        head = next(rows, (0, []))[1]
        if "System" not in head or "nodenumz" not in head:
            continue
        idx = head.index("System")
        systems |= {int(r[idx]) for _, r in rows if len(r) > idx and is_int_text(r[idx])}
    return systems


def _origin(origin: float | str | None, unix: float | None, per_node: dict[str, list[Outage]], zone: Any) -> float:
    if origin is not None:
        return float(origin) if isinstance(origin, (int, float)) else parse_time(origin, zone)
    if unix is not None:
        return unix
    return min((o.start for outs in per_node.values() for o in outs), default=0.0)


def _write(out_dir: str | Path, stem: str, events: dict[tuple[float, int], list[int]], tally: Tally,
           paths: list[str], read: int, kept: int, records: int, base: float, horizon: float | None,
           min_duration: float) -> DowntimeResult:
    from batfeed.engine.intervals import format_hyphen, parse

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for (t, rank), ids in sorted(events.items()):  # machine_available (0) before machine_unavailable (1)
        etype = "machine_unavailable" if rank else "machine_available"
        ts: float | int = int(t) if float(t).is_integer() else t
        lines.append(json.dumps({"timestamp": ts, "type": etype,
                                 "resources": format_hyphen(parse(" ".join(map(str, ids))))}))
    events_path = out / f"{stem}_events.txt"
    events_path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    report = tally.report(paths[0] if len(paths) == 1 else paths, read, kept, unit="node outages",
                          records=records, events=len(lines), origin=base,
                          horizon=horizon, min_duration=fmt_number(min_duration))
    report_path = write_report(out / f"{stem}_events_report.json", report)
    return DowntimeResult(events_path, report_path, report)
