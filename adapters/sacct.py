"""Slurm ``sacct --parsable2`` (``-P``, ``|``-separated) output -> Batsim workload (trace-formats.md §6).

Columns are named by a header line (``JobID|Submit|...``, any case) or, without one, are the 26
fields of the XDMoD reference files (:data:`DEFAULT_FIELDS`).  Job steps (``123.batch``) are
skipped, jobs that never started (start ``Unknown``/``None``) and jobs still running are dropped
(counted).  Times are local ISO times without zone: ``tz`` names the site's zone (default UTC).
"""

from __future__ import annotations

from collections.abc import Iterable
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
from batfeed.adapters.nodes import expand_hostlist, nodes_from_jobs, platform_size
from batfeed.adapters.report import Tally
from batfeed.adapters.window import zone
from batfeed.adapters.workload import ConversionResult, finish_conversion

from batfeed.errors import InputError

__all__ = ["DEFAULT_FIELDS", "convert_sacct", "read_sacct"]

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


def convert_sacct(inputs: Iterable[str | Path], out_dir: str | Path, *, strict: bool = False,
                  nb_res: int | None = None, tz: str = "UTC", fields: Iterable[str] | None = None,
                  name: str | None = None, **options: Any) -> ConversionResult:
    """Convert sacct files into ``<stem>.json``, ``_platform.xml``, ``_report.json``.

    Platform: ``nb_res`` homogeneous resources, else the nodes of the ``nodelist`` column (each
    with the most processors one job used there).  Other keywords are :class:`ConvertOptions` fields.
    """
    opts = ConvertOptions(**options)
    opts.check()
    opts.resolve_window(0.0, zone(tz) if opts.window != (None, None) else None)  # trace time: epochs
    paths = [str(p) for p in inputs]
    if not paths:
        raise ValueError("no input file")
    items = list(read_sacct(paths, tz, fields))
    nodes = nodes_from_jobs(items) if nb_res is None and opts.size_scale == 1 else []
    if nb_res is not None:
        size, src = nb_res, "argument"
    elif nodes:
        size, src = platform_size(nodes, opts.unit), "nodelist"
    else:
        size, src = max((job_res(j, opts) for j in items if isinstance(j, TraceJob)), default=0), "max_job"
        if size <= 0:
            raise InputError("no node list and no job size: pass nb_res", paths[0])
    size = scale_size(size, opts)
    cleaned = clean_jobs(items, size, opts, strict=strict, tally=Tally(multi_file=len(paths) > 1), sort=True)
    return finish_conversion(out_dir, name or trace_stem(paths[0]), cleaned, inputs=paths, read=len(items),
                             size=size, size_src=src, opts=opts, fmt="sacct", nodes=nodes, unit="jobs",
                             time_zone=tz)
