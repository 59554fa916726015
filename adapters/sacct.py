"""Slurm ``sacct --parsable2`` (``-P``, ``|``-separated) output -> Batsim workload (trace-formats.md §6).

Columns are named by a header line (``JobID|Submit|...``, any case) or, without one, are the 26
fields of the XDMoD reference files (:data:`DEFAULT_FIELDS`).  Job steps (``123.batch``) are
skipped, jobs that never started (start ``Unknown``/``None``) and jobs still running are dropped
(counted).  Times are local ISO times without zone: ``tz`` names the site's zone (default UTC).

Platform (:func:`sacct_nodes`): the nodes of the ``nodelist`` column, each sized, by precedence, by a
node file (``--nodes``: :func:`read_slurm_nodes`), else by the most processors in use at once on it
over the trace (a sweep over the ``[start, start + elapsed)`` intervals of the jobs that ran there,
steps excluded, still-running jobs included; a job's processors split evenly over its nodes, the
first ones of its node list taking the remainder: :func:`~batfeed.adapters.nodes.split_procs`).
sacct has no field giving a node's CPU count (``NCPUS``, ``AllocTRES`` ``cpu=`` are the job's, for all
its nodes), so the log itself never sizes a node beyond what its jobs used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from batfeed.adapters.cleaning import clean_jobs, job_res, scale_size
from batfeed.adapters.common import (
    BadRecord,
    ConvertOptions,
    TraceJob,
    is_int_text,
    parse_duration,
    read_lines,
    trace_stem,
)
from batfeed.adapters.nodes import expand_hostlist, peak_nodes, placed_jobs, platform_size, safe_name
from batfeed.adapters.report import FIRST_DROPPED_MAX, Tally
from batfeed.adapters.window import zone
from batfeed.adapters.workload import ConversionResult, finish_conversion

from batfeed.errors import InputError

__all__ = ["DEFAULT_FIELDS", "NodeSizing", "convert_sacct", "read_sacct", "read_slurm_nodes", "sacct_nodes"]

DEFAULT_FIELDS = ("jobid", "jobidraw", "cluster", "partition", "qos", "account", "group", "gid", "user", "uid",
                  "submit", "eligible", "start", "end", "elapsed", "exitcode", "state", "nnodes", "ncpus",
                  "reqcpus", "reqmem", "reqtres", "alloctres", "timelimit", "nodelist", "jobname")
REQUIRED = ("jobid", "submit", "start", "state")
UNKNOWN_TIMES = frozenset({"", "unknown", "none", "n/a"})
NOT_ENDED = frozenset({"PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED", "COMPLETING", "CONFIGURING"})


def _time(text: str, tz: Any, name: str, path: str, line: int, job: str) -> float | None:
    if text.strip().lower() in UNKNOWN_TIMES:
        return None
    try:
        stamp = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadRecord(f"{name} {text[:30]!r} is not an ISO time", path, line, job) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=tz)
    return stamp.timestamp()


def _int(text: str | None) -> int:
    return int(text) if text is not None and is_int_text(text.strip()) else -1


def _job(row: dict[str, str], tz: Any, path: str, line: int) -> TraceJob:
    jid = row["jobid"].strip()
    if not jid:
        raise BadRecord("empty job id", path, line)
    state = row["state"].split()[0].upper() if row["state"].strip() else "UNKNOWN"
    submit = _time(row["submit"], tz, "submit", path, line, jid)
    if submit is None:
        raise BadRecord("no submit time", path, line, jid)
    start = _time(row["start"], tz, "start", path, line, jid)
    end = _time(row.get("end", ""), tz, "end", path, line, jid)
    eligible = _time(row.get("eligible", ""), tz, "eligible", path, line, jid)
    run = -1.0
    if (elapsed := row.get("elapsed", "").strip()) and start is not None:
        try:
            run = parse_duration(elapsed)
        except ValueError:
            raise BadRecord(f"elapsed {elapsed[:30]!r} is not [D-]HH:MM:SS", path, line, jid) from None
    elif start is not None and end is not None:
        run = end - start
    walltime = -1.0
    limit = row.get("timelimit", "").strip()
    if limit and limit.upper() not in ("UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE"):
        try:
            walltime = parse_duration(limit)
        except ValueError:
            raise BadRecord(f"timelimit {limit[:30]!r} is not [D-]HH:MM:SS", path, line, jid) from None
    procs = _int(row.get("ncpus"))
    if procs <= 0:
        procs = _int(row.get("reqcpus"))
    nodes = _int(row.get("nnodes"))
    meta: dict[str, Any] = {"original_id": jid, "trace_submit": submit,
                            "trace_wait": start - submit if start is not None else -1}
    if eligible is not None:
        meta["trace_eligible"] = eligible
    for key in ("user", "group", "account", "partition", "qos", "cluster", "exitcode"):
        if row.get(key, "").strip():
            meta[key] = row[key].strip()
    meta.update(status=state, procs=procs, nodes=nodes)
    hostlist = row.get("nodelist", "").strip()
    if hostlist and hostlist.lower() not in ("none assigned", "(null)", "none"):
        try:
            meta["hosts"] = expand_hostlist(hostlist)
        except ValueError as err:
            raise BadRecord(str(err), path, line, jid) from None
    skip = "job_step" if "." in jid else None
    if skip is None and start is not None and (end is None or state in NOT_ENDED):
        skip = "no_end_record"
    return TraceJob(path, line, jid, submit, run, procs=procs, nodes=nodes, walltime=walltime, status=state,
                    user=row.get("user", "").strip() or None, queue=row.get("partition", "").strip() or None,
                    ran=start is not None, skip=skip, meta=meta)


def read_sacct(paths: Iterable[str | Path], tz: str = "UTC",
               fields: Iterable[str] | None = None) -> Iterable[TraceJob | BadRecord]:
    """One :class:`TraceJob` (or :class:`BadRecord`) per data line of each file."""
    from zoneinfo import ZoneInfo

    try:
        zone = ZoneInfo(tz)
    except (ValueError, KeyError, OSError):
        raise ValueError(f"unknown time zone {tz!r}") from None
    for path in paths:
        name = str(path)
        names = tuple(f.lower() for f in fields) if fields else None
        first = True
        for lineno, text in read_lines(path):
            if not text.strip():
                continue
            parts = text.split("|")
            lowered = [p.strip().lower() for p in parts]
            if first and names is None and "jobid" in lowered and "submit" in lowered:  # header line
                names = tuple(p for p in lowered if p)
                first = False
                continue
            first = False
            cols = names or DEFAULT_FIELDS
            if len(parts) == len(cols) + 1 and parts[-1] == "":  # --parsable: trailing '|'
                parts.pop()
            if len(parts) != len(cols):
                yield BadRecord(f"corrupt line: expected {len(cols)} '|'-separated fields, found {len(parts)}",
                                name, lineno, parts[0][:40] if parts[0] else None)
                continue
            if missing := [f for f in REQUIRED if f not in cols]:
                raise InputError(f"the sacct columns lack {', '.join(missing)}", name, lineno)
            try:
                yield _job(dict(zip(cols, parts, strict=True)), zone, name, lineno)
            except BadRecord as err:
                yield err
            except (OverflowError, ValueError, OSError) as err:  # e.g. year 0 or out-of-range epoch
                yield BadRecord(f"bad value: {err}", name, lineno)


_COMMENT = re.compile(r"(?:^|\s)#.*")
_NODE_LINE = "expected 'NODE CPUS', a slurm.conf 'NodeName=NODES CPUs=N' line or 'scontrol show node' output"
_KEYS = {k.lower(): k for k in ("CPUTot", "CPUs", "Procs", "Boards", "SocketsPerBoard", "Sockets", "CoresPerSocket",
                                "ThreadsPerCore")}
Attrs = dict[str, tuple[str, int]]  # lower-cased key -> (value, line)


def _pairs(text: str, line: int) -> Attrs:
    """``key=value`` tokens of a line, keys lower-cased (Slurm's are case-insensitive); other tokens ignored."""
    return {k.lower(): (v, line) for k, sep, v in (t.partition("=") for t in text.split()) if sep and k}


def _count(attrs: Attrs, key: str, path: str) -> int:
    value, line = attrs.get(key, ("1", None))
    if not is_int_text(value) or int(value) < 1:
        raise InputError(f"{_KEYS[key]}={value[:20]}: not a positive integer", path, line)
    return int(value)


def _node_cpus(hostlist: str, attrs: Attrs, path: str, line: int) -> int:
    """CPUs of a ``NodeName=`` record: ``CPUTot`` (scontrol), ``CPUs``/``Procs`` (slurm.conf), else the
    product of its Boards/Sockets/CoresPerSocket/ThreadsPerCore (Slurm's own default)."""
    for key in ("cputot", "cpus", "procs"):
        if key in attrs:
            return _count(attrs, key, path)
    if not any(k in attrs for k in ("boards", "socketsperboard", "sockets", "corespersocket", "threadspercore")):
        raise InputError(f"node {hostlist} has no CPU count (CPUs=, CPUTot= or Sockets=/CoresPerSocket=)", path, line)
    sockets = (_count(attrs, "sockets", path) if "sockets" in attrs
               else _count(attrs, "boards", path) * _count(attrs, "socketsperboard", path))
    return sockets * _count(attrs, "corespersocket", path) * _count(attrs, "threadspercore", path)


def read_slurm_nodes(path: str | Path) -> dict[str, int]:
    """Node -> CPUs from a node file: ``NODE CPUS`` lines (``sinfo -N -h -o '%N %c'``; NODE may be a
    hostlist), slurm.conf ``NodeName=NODES CPUs=N`` lines (``NodeName=DEFAULT`` and topology products
    honoured, other settings ignored) or ``scontrol show node`` output (``CPUTot=``).

    ``#`` starts a comment.  A bad line, a node given two CPU counts or no node: :class:`InputError`.
    """
    name = str(path)
    nodes: dict[str, tuple[int, int]] = {}  # node -> (CPUs, line)
    defaults: Attrs = {}
    block: tuple[int, str, Attrs] | None = None  # a NodeName= record: line, hostlist, attributes

    def add(hostlist: str, cpus: int, lineno: int) -> None:
        try:
            hosts = expand_hostlist(hostlist)
        except ValueError as err:
            raise InputError(str(err), name, lineno) from None
        for host in map(safe_name, hosts):
            if (seen := nodes.setdefault(host, (cpus, lineno)))[0] != cpus:
                raise InputError(f"node {host} has {cpus} CPUs here but {seen[0]} on line {seen[1]}", name, lineno)

    for lineno, text in [*read_lines(path), (0, "")]:  # a last empty line closes the last record
        if block is not None and text[:1].isspace() and text.strip():  # scontrol: the record goes on
            block[2].update(_pairs(text, lineno))
            continue
        if block is not None:
            add(block[1], _node_cpus(block[1], block[2], name, block[0]), block[0])
            block = None
        body = _COMMENT.sub("", text).strip()
        if not body:
            continue
        key, sep, value = body.split(None, 1)[0].partition("=")
        if sep:
            if key.lower() != "nodename":  # another slurm.conf setting
                continue
            attrs = _pairs(body, lineno)
            del attrs["nodename"]
            if value.lower() == "default":
                defaults.update(attrs)
            elif not value:
                raise InputError("NodeName= names no node", name, lineno)
            else:
                block = (lineno, value, {**defaults, **attrs})
            continue
        tokens = body.split()
        if len(tokens) != 2 or not is_int_text(tokens[1]):
            raise InputError(_NODE_LINE, name, lineno)
        if int(tokens[1]) < 1:
            raise InputError(f"node {tokens[0]}: {tokens[1]} CPUs (at least 1)", name, lineno)
        add(tokens[0], int(tokens[1]), lineno)
    if not nodes:
        raise InputError("no node in the node file", name)
    return {host: cpus for host, (cpus, _) in nodes.items()}


FROM_FILE, FROM_USE = "nodes_file", "max_concurrent_use"


def _nodes(n: int) -> str:
    return f"{n} node{'s' if n != 1 else ''}"


@dataclass
class NodeSizing:
    """The platform's nodes (sorted by name) and where each one's size comes from."""

    nodes: list[tuple[str, int]]
    source: dict[str, str]                 # node -> FROM_FILE | FROM_USE
    nodes_file: str | None = None
    not_listed: list[str] = field(default_factory=list)  # nodes of the log missing from the node file
    unused: int = 0                        # nodes of the node file no job ran on

    def report(self, unit: str) -> dict[str, Any]:
        """Report entries: ``node_sizes`` {source: {nodes, resources}} (and the node file's details)."""
        sizes: dict[str, dict[str, int]] = {}
        for node, cpus in self.nodes:
            entry = sizes.setdefault(self.source[node], {"nodes": 0, "resources": 0})
            entry["nodes"] += 1
            entry["resources"] += 1 if unit == "nodes" else cpus
        out: dict[str, Any] = {"node_sizes": {k: sizes[k] for k in (FROM_FILE, FROM_USE) if k in sizes}}
        if self.nodes_file is not None:
            out["nodes_file"] = self.nodes_file
            out["nodes_file_unused"] = self.unused
            if self.not_listed:
                out["not_in_nodes_file"] = {"count": len(self.not_listed), "first": self.not_listed[:FIRST_DROPPED_MAX]}
        return out

    def describe(self, unit: str) -> str:
        """``platform_size_from``: ``max concurrent use: 46 nodes, 412 resources`` (one part per source)."""
        file = Path(self.nodes_file).name if self.nodes_file else ""
        labels = {FROM_FILE: f"--nodes {file}",
                  FROM_USE: f"max concurrent use (not in {file})" if file else "max concurrent use"}
        return "; ".join(f"{labels[k]}: {_nodes(v['nodes'])}, {v['resources']} resources"
                         for k, v in self.report(unit)["node_sizes"].items())


def sacct_nodes(items: Iterable[TraceJob | BadRecord], nodes_file: str | Path | None = None, *,
                strict: bool = False) -> NodeSizing | None:
    """Size the nodes of the log (module docstring); None if no job names a node and there is no node file.

    With ``nodes_file``: its nodes and CPUs; a node of the log missing from it is sized by its use and
    counted (an error if ``strict``, or if no node of the log is listed); a job given more CPUs than
    the file gives its nodes: :class:`InputError`.
    """
    placed = placed_jobs(items)
    peaks = dict(peak_nodes(placed))
    if nodes_file is None:
        return NodeSizing(sorted(peaks.items()), dict.fromkeys(peaks, FROM_USE)) if peaks else None
    listed = read_slurm_nodes(nodes_file)
    name = str(nodes_file)
    if missing := [h for h in sorted(peaks) if h not in listed]:
        job = next(j for j, hosts, *_ in placed if missing[0] in hosts)
        where = f"job {job.id}, {job.path}:{job.line}"
        if len(missing) == len(peaks):
            raise InputError(f"no node of the log is listed ({_nodes(len(peaks))}; first: {missing[0]}, {where}): "
                             "not this cluster's node list?", name)
        if strict:
            raise InputError(f"node {missing[0]} ({where}) is not listed (missing: {len(missing)} of the log's "
                             f"{_nodes(len(peaks))}; without --strict, sized by max concurrent use)", name)
    sizes = {**listed, **{h: peaks[h] for h in missing}}
    for job, hosts, *_ in placed:
        if job.procs > (cap := sum(sizes[h] for h in hosts)):
            on = (f"node {hosts[0]}, but {name} gives {hosts[0]} {cap} CPUs" if len(hosts) == 1 else
                  f"its {len(hosts)} nodes {', '.join(hosts[:3])}{', ...' if len(hosts) > 3 else ''}, but {name} "
                  f"gives them {cap} CPUs in all")
            raise InputError(f"job {job.id} uses {job.procs} CPUs on {on}", job.path, job.line)
    source = {**dict.fromkeys(listed, FROM_FILE), **dict.fromkeys(missing, FROM_USE)}
    return NodeSizing(sorted(sizes.items()), source, name, missing, sum(h not in peaks for h in listed))


def convert_sacct(inputs: Iterable[str | Path], out_dir: str | Path, *, strict: bool = False,
                  nb_res: int | None = None, tz: str = "UTC", fields: Iterable[str] | None = None,
                  nodes_file: str | Path | None = None, name: str | None = None,
                  **options: Any) -> ConversionResult:
    """Convert sacct files into ``<stem>.json``, ``_platform.xml``, ``_report.json``.

    Platform: ``nb_res`` homogeneous resources, else the nodes of :func:`sacct_nodes` (``nodes_file``,
    else the most processors in use at once on each; the report's ``node_sizes`` counts both), else
    the largest job.  Other keywords are :class:`ConvertOptions` fields.
    """
    opts = ConvertOptions(**options)
    opts.check()
    opts.resolve_window(0.0, zone(tz) if opts.window != (None, None) else None)  # trace time: epochs
    paths = [str(p) for p in inputs]
    if not paths:
        raise ValueError("no input file")
    items = list(read_sacct(paths, tz, fields))
    sizing = sacct_nodes(items, nodes_file, strict=strict) if nb_res is None and opts.size_scale == 1 else None
    if sizing is None and nodes_file is not None:
        read_slurm_nodes(nodes_file)  # checked even when --nb-res or --size-scale leaves it unused
    nodes: list[tuple[str, int]] = []
    extra: dict[str, Any] = {}
    if nb_res is not None:
        size, src = nb_res, "argument"
    elif sizing is not None:
        nodes, extra = sizing.nodes, sizing.report(opts.unit)
        size, src = platform_size(nodes, opts.unit), sizing.describe(opts.unit)
    else:
        size, src = max((job_res(j, opts) for j in items if isinstance(j, TraceJob)), default=0), "max_job"
        if size <= 0:
            raise InputError("no node list and no job size: pass nb_res", paths[0])
    size = scale_size(size, opts)
    cleaned = clean_jobs(items, size, opts, strict=strict, tally=Tally(multi_file=len(paths) > 1), sort=True)
    return finish_conversion(out_dir, name or trace_stem(paths[0]), cleaned, inputs=paths, read=len(items),
                             size=size, size_src=src, opts=opts, fmt="sacct", nodes=nodes, unit="jobs",
                             time_zone=tz, **extra)
