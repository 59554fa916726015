"""PBS/TORQUE and PBS Professional accounting logs -> Batsim workload (trace-formats.md §2).

One record per line ``MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value ...``.  Records of one job (ids
merged on the text before the first ``.``, so ``6.server`` and ``6`` are one job; arrays keep
``123[4]``), possibly spread over several daily files, are joined: the last ``E`` record wins,
completed by the last ``S`` and the ``Q`` record (qtime, queue).  Requeued jobs (several ``S``,
``R`` records) keep their last run.  Jobs with ``Q``/``D``/``A`` but no start never ran.
PBS Pro differences handled: ``project``, ``select``/``exec_vnode``, ``exec_host`` with
``*ncpus``, ``run_count``, record types ``s a z r u c e M L`` and reservations (ignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from batfeed.adapters.cleaning import clean_jobs, job_res, scale_size
from batfeed.adapters.common import BadRecord, ConvertOptions, TraceJob, parse_duration, read_lines, trace_stem
from batfeed.adapters.nodes import MAX_NODE_PROCS, peak_nodes, placed_jobs, platform_size, safe_name, xml_safe
from batfeed.adapters.report import Tally
from batfeed.adapters.window import zone
from batfeed.adapters.workload import ConversionResult, finish_conversion

from batfeed.errors import InputError

__all__ = ["PbsRecord", "convert_pbs", "parse_exec_host", "pbs_jobs", "read_nodes_file", "read_pbs"]

JOB_TYPES = frozenset("QSEDARCTsMuceazr")
OTHER_TYPES = frozenset("LUYBFKkPp")  # licences, reservations, provisioning: not jobs
_STAMP = re.compile(r"[0-9]{2}/[0-9]{2}/[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}")
_INT = re.compile(r"-?[0-9]+")


@dataclass(slots=True)
class PbsRecord:
    """One accounting record: place, stamp (local time text), type, job id and its key=value pairs."""

    path: str
    line: int
    stamp: str
    type: str
    id: str
    attrs: dict[str, str]


def _attrs(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    last = None
    for token in message.split():
        key, sep, value = token.partition("=")
        if sep and key:
            out[key] = value
            last = key
        elif last is not None:  # a value with blanks (quoted job name): glue it back
            out[last] += " " + token
        else:
            out["_text"] = f"{out.get('_text', '')} {token}".strip()
    return out


def read_pbs(paths: Iterable[str | Path], on_corrupt: Any = None) -> Iterable[PbsRecord]:
    """Records of one or many accounting files, in file order; a malformed line raises
    :class:`BadRecord` (file:line) unless ``on_corrupt`` is given (then it is passed the error)."""
    for path in paths:
        name = str(path)
        for lineno, text in read_lines(path):
            if not text.strip():
                continue
            parts = text.split(";", 3)
            try:
                if len(parts) < 3:
                    raise BadRecord("corrupt record: expected 'date time;type;job id;message'", name, lineno)
                stamp, rtype, jid = parts[0].strip(), parts[1].strip(), parts[2].strip()
                if not _STAMP.fullmatch(stamp):
                    raise BadRecord(f"corrupt record: bad time stamp {stamp[:40]!r}", name, lineno)
                if rtype not in JOB_TYPES and rtype not in OTHER_TYPES:
                    raise BadRecord(f"corrupt record: unknown record type {rtype[:20]!r}", name, lineno)
                if not jid:
                    raise BadRecord("corrupt record: empty job id", name, lineno)
            except BadRecord as err:
                if on_corrupt is None:
                    raise
                on_corrupt(err)
                continue
            yield PbsRecord(name, lineno, stamp, rtype, jid, _attrs(parts[3] if len(parts) > 3 else ""))


def parse_exec_host(text: str) -> dict[str, int]:
    """Host -> slots of an ``exec_host`` (TORQUE ``n1/0+n1/1``, ranges ``c1/0-3``, PBS Pro ``c1/0*13``).

    A job's processors on a host are the number of its slot entries there; a platform built from the
    log sizes each host by the most processors in use on it at once (:func:`~batfeed.adapters.nodes.peak_nodes`)."""
    hosts: dict[str, int] = {}
    for part in text.split("+"):
        host, sep, spec = part.rpartition("/")
        if not sep:
            host, spec = part, "0"
        if not host:
            raise ValueError(f"bad exec_host part {part!r}")
        if m := re.fullmatch(r"([0-9]+)\*([0-9]+)", spec):
            slots = int(m.group(2))
        else:
            slots = 0
            for rng in spec.split(","):
                lo, dash, hi = rng.partition("-")
                if not _INT.fullmatch(lo) or (dash and not _INT.fullmatch(hi)) or int(lo) < 0:
                    raise ValueError(f"bad exec_host slots {spec!r}")
                slots += int(hi) - int(lo) + 1 if dash else 1
                if dash and int(hi) < int(lo):
                    raise ValueError(f"bad exec_host slots {spec!r}")
        hosts[host] = hosts.get(host, 0) + slots
    return hosts


def _chunks(spec: str) -> tuple[int, int]:
    """(nodes, procs) of a TORQUE ``nodes=`` or PBS Pro ``select=`` spec (``2:ppn=8+n01``, ``5:ncpus=13``)."""
    nodes = procs = 0
    for chunk in spec.split("+"):
        fields = chunk.split(":")
        count = int(fields[0]) if fields[0].isascii() and fields[0].isdigit() else 1
        per = 1
        for f in fields:
            key, _, value = f.partition("=")
            if key in ("ppn", "ncpus") and value.isascii() and value.isdigit():
                per = int(value)
        nodes += count
        procs += count * per
    return nodes, procs


def torque_slot_floor(text: str) -> dict[str, int]:
    """Host -> highest TORQUE slot index + 1 of an ``exec_host`` (``n1/0+n1/5``, ``c1/0-3``): the node has at
    least that many processors (slots are numbered from 0 on each node).  PBS Pro's ``c1/0*13`` names a
    chunk, not a slot: not counted."""
    floor: dict[str, int] = {}
    for part in text.split("+"):
        host, sep, spec = part.rpartition("/")
        if sep and "*" not in spec:
            top = max(int(x) for rng in spec.split(",") for x in rng.split("-") if x.isdigit())
            floor[host] = max(floor.get(host, 0), top + 1)
    return floor


def _vnode_hosts(spec: str) -> dict[str, int]:
    """Host -> ncpus of a PBS Pro ``exec_vnode`` (``(c1:ncpus=13)+(c2:ncpus=13)``; vnode ``h[1]`` -> ``h``)."""
    hosts: dict[str, int] = {}
    for chunk in re.split(r"\+(?![^()]*\))|[()]", spec):
        for vnode in chunk.split("+"):
            name, *res = vnode.split(":")
            if not name:
                continue
            host = re.sub(r"\[[0-9]+\]$", "", name)
            ncpus = sum(int(v) for k, _, v in (r.partition("=") for r in res) if k == "ncpus" and v.isdigit())
            hosts[host] = hosts.get(host, 0) + ncpus
    return hosts


def _lead_int(text: str | None) -> int:
    m = re.match(r"[0-9]+", text or "")
    return int(m.group(0)) if m else -1


@dataclass
class _Job:
    key: str
    q: dict[str, str] = field(default_factory=dict)
    s: dict[str, str] = field(default_factory=dict)
    e: dict[str, str] | None = None
    last: PbsRecord | None = None
    q_stamp: str | None = None
    starts: int = 0
    ends: int = 0
    reruns: int = 0
    deleted: str | None = None


def _epoch(stamp: str, tz: str) -> float:
    from zoneinfo import ZoneInfo

    return datetime.strptime(stamp, "%m/%d/%Y %H:%M:%S").replace(tzinfo=ZoneInfo(tz)).timestamp()


def _build(job: _Job, tz: str, tally: Tally) -> TraceJob:
    rec = job.last
    assert rec is not None
    a = {**job.q, **job.s, **(job.e or {})}
    path, line, key = rec.path, rec.line, job.key

    def num(name: str) -> float | None:
        value = a.get(name)
        if value is None or value == "":
            return None
        if not _INT.fullmatch(value):
            raise BadRecord(f"{name}={value[:30]!r} is not an integer epoch", path, line, key)
        return float(value)

    submit = num("qtime") or num("ctime")
    if submit is None and job.q_stamp:
        submit = _epoch(job.q_stamp, tz)
        tally.warn("submit_from_record_stamp")
    start, end = num("start"), num("end")
    if submit is None:
        submit = start
    if submit is None:
        raise BadRecord("no submit time (qtime, ctime, Q record or start)", path, line, key)
    ran = job.e is not None and bool(start) and end is not None
    run = end - start if ran and start and end is not None else -1.0
    walltime = -1.0
    if (wt := a.get("Resource_List.walltime")) is not None:
        try:
            walltime = parse_duration(wt)
        except ValueError:
            tally.warn("unparsable_walltime")
    try:
        hosts = parse_exec_host(a["exec_host"]) if a.get("exec_host") else {}
    except ValueError as err:
        raise BadRecord(str(err), path, line, key) from None
    vnodes = _vnode_hosts(a["exec_vnode"]) if a.get("exec_vnode") else {}
    sel_nodes, sel_procs = _chunks(a["Resource_List.select"]) if a.get("Resource_List.select") else (-1, -1)
    spec_nodes, spec_procs = _chunks(a["Resource_List.nodes"]) if a.get("Resource_List.nodes") else (-1, -1)
    ncpus = _lead_int(a.get("Resource_List.ncpus"))
    pro = bool(vnodes) or sel_procs > 0 or "run_count" in a or "project" in a
    slots = sum(hosts.values())
    if pro:
        candidates = (ncpus, sel_procs, sum(vnodes.values()), slots, _lead_int(a.get("resources_used.ncpus")))
    else:
        candidates = (slots, spec_procs, ncpus, _lead_int(a.get("resources_used.ncpus")))
    procs = next((c for c in candidates if c > 0), -1)
    nodes = next((c for c in (len(hosts or vnodes), _lead_int(a.get("Resource_List.nodect")),
                              _lead_int(a.get("unique_node_count")), spec_nodes, sel_nodes) if c > 0), -1)
    es = a.get("Exit_status", "")
    exit_status = int(es) if _INT.fullmatch(es) else None
    status = ("COMPLETED" if exit_status == 0 else "KILLED" if (exit_status or 0) >= 256 else "FAILED") if ran \
        else (job.deleted or "NOT_RUN")
    if ran and (used := a.get("resources_used.walltime")):
        try:
            if abs(parse_duration(used) - run) > 60:
                tally.warn("used_walltime_differs_from_end_minus_start")
        except ValueError:
            pass
    if job.starts > 1 or job.reruns:
        tally.warn("requeued_last_run_kept")
    meta: dict[str, Any] = {"original_id": rec.id, "trace_submit": submit,
                            "trace_wait": (start - submit) if ran and start else -1}
    if (eligible := num("etime")) is not None:
        meta["trace_eligible"] = eligible
    for k in ("user", "group", "account", "project", "queue"):
        if a.get(k):
            meta[k] = a[k]
    meta.update(status=status, exit_status=exit_status, procs=procs, nodes=nodes)
    if hosts or vnodes:
        meta["hosts"] = sorted(hosts or vnodes)
    on = hosts or vnodes                # the log's own processors per host (exec_host slots, vnode ncpus)
    return TraceJob(path, line, key, submit, run, procs=procs,
                    nodes=nodes, walltime=walltime, status=status, user=a.get("user"), queue=a.get("queue"),
                    ran=ran, meta=meta, host_procs=on if on and all(on.values()) else None,
                    slot_floor=torque_slot_floor(a["exec_host"]) if hosts else None)


def pbs_jobs(records: Iterable[PbsRecord], tz: str = "UTC", tally: Tally | None = None,
             ) -> tuple[list[TraceJob | BadRecord], list[tuple[str, str, int, str]], dict[str, int]]:
    """Join records into one :class:`TraceJob` per job id (or a :class:`BadRecord`).

    Also returns the jobs without an ``E`` record as ``(reason, path, line, id)`` -- reason
    ``never_started`` (deleted/aborted in the queue), ``no_end_record`` (still running, or ended in
    a file not given) or ``array_parent`` -- and the record counts by type."""
    tally = tally if tally is not None else Tally()
    jobs: dict[str, _Job] = {}
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec.type] = counts.get(rec.type, 0) + 1
        if rec.type in OTHER_TYPES:
            continue
        key = rec.id.split(".")[0] if not rec.id.startswith("[") else rec.id
        job = jobs.setdefault(key, _Job(key))
        job.last = rec if job.e is None or rec.type == "E" else job.last
        if rec.type == "Q":
            job.q, job.q_stamp = rec.attrs, rec.stamp
        elif rec.type in ("S", "s"):
            job.s = rec.attrs
            job.starts += rec.type == "S"
        elif rec.type == "E":
            job.ends += 1
            job.e = rec.attrs
        elif rec.type == "R":
            job.reruns += 1
        elif rec.type in ("D", "A") and job.e is None:
            job.deleted = "CANCELLED" if rec.type == "D" else "ABORTED"
    out: list[TraceJob | BadRecord] = []
    unended: list[tuple[str, str, int, str]] = []
    for job in jobs.values():
        if job.ends > 1:
            tally.warn("merged_end_records", job.ends - 1)
        assert job.last is not None
        if job.e is None:
            reason = ("array_parent" if job.key.endswith("[]") else
                      "never_started" if job.deleted and not job.starts else "no_end_record")
            unended.append((reason, job.last.path, job.last.line, job.key))
            continue
        try:
            out.append(_build(job, tz, tally))
        except BadRecord as err:
            out.append(err)
        except (ValueError, OverflowError, OSError) as err:  # e.g. a Q record stamp that is no date
            out.append(BadRecord(f"bad value: {err}", job.last.path, job.last.line, job.key))
    return out, unended, counts


def read_nodes_file(path: str | Path) -> list[tuple[str, int]]:
    """Node list: ``name [procs]`` lines, or ``pbsnodes -a`` output (``np =`` / ``resources_available.ncpus =``)."""
    nodes: dict[str, int] = {}
    current = None
    for lineno, text in read_lines(path):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if text[0].isspace() and current is not None:
            key, _, value = text.strip().partition("=")
            if key.strip() in ("np", "resources_available.ncpus", "pcpus") and value.strip().isdigit():
                nodes[current] = int(value.strip())
            continue
        tokens = text.split()
        if len(tokens) > 2 or (len(tokens) == 2 and not (tokens[1].isascii() and tokens[1].isdigit())):
            raise InputError("expected 'node [procs]'", str(path), lineno)
        if not xml_safe(tokens[0]) or tokens[0] == "master_host":
            raise InputError(f"node name {tokens[0]!r} cannot be a host name", str(path), lineno)
        current = tokens[0]
        nodes[current] = int(tokens[1]) if len(tokens) == 2 else nodes.get(current, 1)
    if not nodes:
        raise InputError("no node in node list", str(path))
    big = next((n for n, c in nodes.items() if c > MAX_NODE_PROCS), None)
    if big is not None:
        raise InputError(f"node {big!r}: {nodes[big]} processors, more than {MAX_NODE_PROCS} on one node", str(path))
    return [(n, max(1, c)) for n, c in nodes.items()]


def _log_nodes(items: list[TraceJob | BadRecord]) -> list[tuple[str, int]]:
    """The hosts of the log, each sized by the most processors in use on it at once, and at least by its
    highest TORQUE slot index + 1 (:func:`torque_slot_floor`)."""
    placed = placed_jobs(items)
    floor: dict[str, int] = {}
    for job, *_ in placed:
        for host, n in (job.slot_floor or {}).items():
            floor[safe_name(host)] = max(floor.get(safe_name(host), 0), n)
    return [(host, max(n, floor.get(host, 0))) for host, n in peak_nodes(placed)]


def convert_pbs(inputs: Iterable[str | Path], out_dir: str | Path, *, strict: bool = False,
                nb_res: int | None = None, nodes_file: str | Path | None = None, tz: str = "UTC",
                name: str | None = None, **options: Any) -> ConversionResult:
    """Convert accounting files (one or many days) into ``<stem>.json``, ``_platform.xml``, ``_report.json``.

    Platform: ``nb_res`` homogeneous resources, else the nodes of ``nodes_file``, else the hosts
    seen in ``exec_host``/``exec_vnode``, each sized by the most processors in use on it at once over the
    log (the jobs' slots there, ``[start, start + run)``) and at least by its highest TORQUE slot index + 1;
    report ``platform_size_from`` "exec_host (max concurrent use)".  ``tz``: zone of the record stamps (only
    used when a job has no qtime/ctime).  Other keywords are :class:`ConvertOptions` fields.
    """
    opts = ConvertOptions(**options)
    opts.check()
    opts.resolve_window(0.0, zone(tz) if opts.window != (None, None) else None)  # trace time: epochs
    paths = [str(p) for p in inputs]
    if not paths:
        raise ValueError("no input file")
    tally = Tally(multi_file=len(paths) > 1)
    corrupt: list[BadRecord] = []
    jobs, unended, counts = pbs_jobs(read_pbs(paths, on_corrupt=None if strict else corrupt.append), tz, tally)
    items: list[TraceJob | BadRecord] = [*corrupt, *jobs]
    for reason, path, line, key in unended:
        tally.drop(reason, line, key, path)
    read = len(items) + len(unended)
    nodes = read_nodes_file(nodes_file) if nodes_file else _log_nodes(items)
    if nb_res is not None or opts.size_scale != 1:
        nodes = []
    if nb_res is not None:
        size, src, nodes = nb_res, "argument", []
    elif nodes:
        size, src = platform_size(nodes, opts.unit), (Path(nodes_file).name if nodes_file else
                                                      "exec_host (max concurrent use)")
    else:
        size = max((job_res(j, opts) for j in items if isinstance(j, TraceJob)), default=0)
        src = "max_job"
        if size <= 0:
            raise InputError("no node list, no exec_host and no job size: pass nb_res", paths[0])
    size = scale_size(size, opts)
    cleaned = clean_jobs(items, size, opts, strict=strict, tally=tally, sort=True)
    return finish_conversion(out_dir, name or trace_stem(paths[0]), cleaned, inputs=paths, read=read,
                             size=size, size_src=src, opts=opts, fmt="pbs", nodes=nodes,
                             unit="jobs", records=counts)
