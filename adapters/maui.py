"""Maui 3.2 traces (trace-formats.md §3 workload, §4 resources) <-> Batsim.

``convert_maui`` reads a workload trace (44 whitespace-separated fields per job; 42/43-field lines
accepted like Maui's own parser; ``VERSION`` and ``#`` lines skipped) and optionally a resource
trace (21 fields per node) into a Batsim workload, platform (one host per node, or per processor)
and, for DEFINED/DRAINED nodes, an events file making them unavailable from time 0.
``export_maui`` writes a Batsim workload (or an SWF trace, converted first) as an exact 44-field
Maui workload trace plus a resource trace, so Maui's simulator and Batsim replay the same jobs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batfeed.adapters.cleaning import clean_jobs, job_res
from batfeed.adapters.common import BadRecord, ConvertOptions, TraceJob, read_lines, trace_stem
from batfeed.adapters.nodes import MAX_NODE_PROCS, node_resource_ids, platform_size, xml_safe
from batfeed.adapters.report import Tally, write_report
from batfeed.adapters.workload import ConversionResult, finish_conversion, load_workload_json

from batfeed.errors import InputError

__all__ = ["ExportResult", "MauiNode", "convert_maui", "export_maui", "read_maui_resources", "read_maui_workload"]

NB_FIELDS = 44
NB_RESOURCE_FIELDS = 21
NONE = "[NONE]"
DEFAULT_EPOCH = 1_000_000_000.0  # export time base when the workload has no unix_start (Maui: start 0 = not run)
_NUMERIC = {1: ("nodes requested", int), 2: ("tasks requested", int), 5: ("wallclock limit", float),
            8: ("submission time", float), 10: ("start time", float), 11: ("completion time", float),
            31: ("processors per task", int)}


def _value(tok: str) -> str | None:
    return None if tok == NONE or not tok else tok


def _number(tok: str, kind: type, what: str, path: str, line: int, job: str) -> Any:
    try:
        num = float(tok)
        if not math.isfinite(num) or (kind is int and not num.is_integer()):
            raise ValueError
        return int(num) if kind is int else num
    except ValueError:
        raise BadRecord(f"field {what} is not {'an integer' if kind is int else 'a number'}: {tok[:30]!r}",
                        path, line, job) from None


def _data_lines(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    for lineno, text in read_lines(path):
        stripped = text.strip()
        if stripped and not stripped.startswith(("#", "VERSION")):
            yield lineno, stripped.split()


def read_maui_workload(path: str | Path) -> Iterator[TraceJob | BadRecord]:
    """One :class:`TraceJob` (or :class:`BadRecord`) per job line of a Maui workload trace."""
    name = str(path)
    for lineno, f in _data_lines(path):
        if len(f) not in (42, 43, NB_FIELDS):
            yield BadRecord(f"corrupt line: expected {NB_FIELDS} fields, found {len(f)}", name, lineno,
                            f[0][:40] if f else None)
            continue
        try:
            v = {i: _number(f[i], kind, what, name, lineno, f[0]) for i, (what, kind) in _NUMERIC.items()}
        except BadRecord as err:
            yield err
            continue
        state, start, end = f[6], v[10], v[11]
        ran = state != "NotRun" and start > 0 and end >= start
        procs = v[2] * max(1, v[31])
        queue = f[7].strip("[]").split(":")[0] if _value(f[7]) else None
        meta: dict[str, Any] = {"original_id": f[0], "trace_submit": v[8], "trace_wait": start - v[8] if ran else -1,
                                "user": f[3], "group": f[4]}
        for key, idx in (("account", 25), ("partition", 30), ("qos", 23)):
            if val := _value(f[idx]):
                meta[key] = val
        meta.update(queue=queue, status=state, procs=procs, nodes=v[1])
        if (hosts := _value(f[37])) is not None:
            meta["hosts"] = sorted(set(hosts.split(":")))
        yield TraceJob(name, lineno, f[0], v[8], end - start if ran else -1.0, procs=procs, nodes=v[1],
                       walltime=v[5], status=state, user=f[3], queue=queue, ran=ran, meta=meta)


@dataclass(slots=True)
class MauiNode:
    """One COMPUTENODE line of a resource trace."""

    name: str
    procs: int
    speed: float
    state: str  # AVAILABLE, DEFINED or DRAINED
    line: int


def read_maui_resources(path: str | Path, tally: Tally | None = None) -> list[MauiNode]:
    """Nodes of a Maui resource trace; corrupt lines raise :class:`BadRecord` unless ``tally`` counts them."""
    name = str(path)
    nodes: list[MauiNode] = []
    seen: set[str] = set()
    for lineno, f in _data_lines(path):
        try:
            if len(f) != NB_RESOURCE_FIELDS:
                raise BadRecord(f"corrupt line: expected {NB_RESOURCE_FIELDS} fields, found {len(f)}", name, lineno)
            if f[0] != "COMPUTENODE" or f[1] not in ("AVAILABLE", "DEFINED", "DRAINED"):
                raise BadRecord(f"unknown resource or event type {f[0][:20]} {f[1][:20]}", name, lineno)
            procs = _number(f[8], int, "configured processors", name, lineno, f[3])
            speed = 1.0 if _value(f[17]) is None else _number(f[17], float, "resource speed", name, lineno, f[3])
            if procs < 1 or speed <= 0:
                raise BadRecord("configured processors and speed must be > 0", name, lineno, f[3])
            if procs > MAX_NODE_PROCS:
                raise BadRecord(f"{procs} configured processors: more than {MAX_NODE_PROCS} on one node", name,
                                lineno, f[3])
            if f[3] in seen or not xml_safe(f[3]) or f[3] == "master_host":
                raise BadRecord(f"node {f[3]!r} defined twice or not usable as a host name", name, lineno)
        except BadRecord as err:
            if tally is None:
                raise
            tally.drop("corrupt_line", err.line, err.job, name)
            continue
        seen.add(f[3])
        nodes.append(MauiNode(f[3], procs, speed, f[1], lineno))
    return nodes


def convert_maui(trace: str | Path, out_dir: str | Path, *, resources: str | Path | None = None,
                 strict: bool = False, nb_res: int | None = None, name: str | None = None,
                 **options: Any) -> ConversionResult:
    """Convert a Maui workload trace (and resource trace) into Batsim inputs.

    Platform: ``nb_res`` homogeneous resources, else the resource trace's nodes (speeds relative
    to 1 Gflop/s), else the largest job.  DEFINED/DRAINED nodes are written to
    ``<stem>_events.txt`` as unavailable from time 0.  Other keywords: :class:`ConvertOptions`.
    """
    opts = ConvertOptions(**options)
    opts.check()
    opts.resolve_window(0.0)  # trace time: Unix epochs; dates without offset in UTC
    path = str(trace)
    items = list(read_maui_workload(trace))
    tally = Tally()
    res_tally = Tally()
    maui_nodes = read_maui_resources(resources, None if strict else res_tally) if resources else []
    nodes = [(n.name, n.procs) for n in maui_nodes] if nb_res is None and opts.size_scale == 1 else []
    if nb_res is not None:
        size, src = nb_res, "argument"
    elif nodes:
        size, src = platform_size(nodes, opts.unit), Path(resources).name  # type: ignore[arg-type]
    else:
        size, src = max((job_res(j, opts) for j in items if isinstance(j, TraceJob)), default=0), "max_job"
        if size <= 0:
            raise InputError("no resource trace and no job size: pass nb_res", path)
    cleaned = clean_jobs(items, size, opts, strict=strict, tally=tally, sort=True)
    extra: dict[str, Any] = {}
    if maui_nodes:
        extra["resources"] = {"input": str(resources), "nodes": len(maui_nodes),
                              "corrupt_lines": res_tally.nb_dropped}
    stem = name or trace_stem(trace)
    result = finish_conversion(out_dir, stem, cleaned, inputs=[path], read=len(items), size=size, size_src=src,
                               opts=opts, fmt="maui", nodes=nodes, speeds=[n.speed for n in maui_nodes],
                               unit="jobs", **extra)
    down = [n.name for n in maui_nodes if n.state != "AVAILABLE"] if nodes else []
    if down:
        from batfeed.engine.intervals import format_hyphen, parse

        ids = node_resource_ids(result.platform_path)
        resources_text = format_hyphen(parse(" ".join(str(i) for n in down for i in ids[n])))
        events = result.platform_path.with_name(f"{stem}_events.txt")
        events.write_text(json.dumps({"timestamp": 0, "type": "machine_unavailable",
                                      "resources": resources_text}) + "\n", encoding="utf-8")
        result.report["resources"]["unavailable_from_start"] = down
        write_report(result.report_path, result.report)
    return result


@dataclass
class ExportResult:
    """Files written by :func:`export_maui` and its report."""

    workload_path: Path
    resources_path: Path
    report: dict[str, Any]


def _field(value: Any) -> str:
    text = str(value) if value is not None and value != "" else NONE
    return "_".join(text.split()) or NONE


def export_maui(source: str | Path, out_dir: str | Path, *, epoch: float | None = None, unit: str = "procs",
                procs_per_node: int = 1, name: str | None = None, require_kept: bool = False,
                **swf_options: Any) -> ExportResult:
    """Write ``<stem>_maui_workload.txt`` (44 fields per job) and ``<stem>_maui_resources.txt``.

    ``source``: a Batsim workload JSON or an SWF trace (converted first with ``swf_options``).
    Times: ``epoch`` + subtime (default: the workload's ``unix_start``, else 10⁹), rounded to
    whole seconds; start = submit + recorded wait (``swf_wait``/``trace_wait``, else 0).  ``unit``:
    a Batsim resource is a processor (tasks = res) or a node (nodes = res, tasks = res × ppn).
    Jobs without a delay profile are dropped; a missing walltime becomes the run time (rounded up).
    ``require_kept``: no job exported is an :class:`~batfeed.adapters.empty.EmptyConversion`.
    """
    out = Path(out_dir)
    source = Path(source)
    stem = name or trace_stem(source)
    if source.name.endswith((".json", ".json.gz")):
        data = load_workload_json(source)
    else:
        from batfeed.adapters.swf import convert_swf

        data = load_workload_json(convert_swf(source, out, name=stem, require_kept=require_kept,
                                              **swf_options).workload_path)
    unix = data.get("unix_start")
    base = epoch if epoch is not None else float(unix) if isinstance(unix, (int, float)) else DEFAULT_EPOCH
    profiles = data.get("profiles", {})
    tally = Tally()
    lines = []
    for n, job in enumerate(data["jobs"], start=1):
        jid = str(job.get("id", n)).split("!")[-1]
        prof = profiles.get(job.get("profile"), {}) if isinstance(profiles, dict) else {}
        try:
            delay, sub, res = float(prof["delay"]), float(job["subtime"]), int(job["res"])
            if prof.get("type") != "delay" or not (delay > 0 and math.isfinite(sub) and res > 0):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            tally.drop("not_a_delay_job", None, jid)
            continue
        wait = next((float(job[k]) for k in ("swf_wait", "trace_wait") if isinstance(job.get(k), (int, float))
                     and job[k] >= 0), 0.0)
        submit, start = round(base + sub), round(base + sub + wait)
        end = max(round(base + sub + wait + delay), start + 1)
        if submit != base + sub or end - start != delay:
            tally.modify("time_rounded_to_seconds")
        wall = job.get("requested_walltime", job.get("walltime", -1))  # the request, before any --overrun
        if not isinstance(wall, (int, float)) or wall <= 0:
            wall = math.ceil(delay)
            tally.modify("missing_walltime_set_to_runtime")
        nodes, tasks = (res, res * procs_per_node) if unit == "nodes" else (0, res)
        queue = job.get("queue_name", job.get("queue"))
        klass = f"[{_field(queue)}:1]" if queue not in (None, -1, "-1", "") else "[DEFAULT:1]"
        row = [_field(jid), nodes, tasks, _field(job.get("user")), _field(job.get("group")), math.ceil(wall),
               "Completed", klass, submit, start, start, end,
               NONE, NONE, NONE, ">=", 0, ">=", 0, NONE, submit, tasks, -1, "0", NONE,
               _field(job.get("account")), NONE, NONE, 0, tasks * (end - start), "[DEFAULT]", 1, 0, 0, 0, 0, 0,
               NONE, NONE, NONE, NONE, NONE, NONE, NONE]
        assert len(row) == NB_FIELDS
        lines.append(" ".join(map(str, row)))
    if require_kept and not lines:
        from batfeed.adapters.empty import empty_error

        raise empty_error(str(source), len(data["jobs"]), tally, fmt="to-maui")
    out.mkdir(parents=True, exist_ok=True)
    workload_path = out / f"{stem}_maui_workload.txt"
    workload_path.write_text("VERSION 230\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    nb_res = int(data.get("nb_res", 0) or 0)
    per = procs_per_node if unit == "nodes" else 1
    width = max(4, len(str(max(nb_res - 1, 0))))
    res_lines = [f"COMPUTENODE AVAILABLE 0 node_{i:0{width}d} [NONE] 0 0 0 {per} -1 -1 1 [NONE] [NONE] [NONE] "
                 f"[DEFAULT:{per}] [NONE] 1.0 [NONE] [NONE] [NONE]" for i in range(nb_res)]
    resources_path = out / f"{stem}_maui_resources.txt"
    resources_path.write_text("VERSION 230\n" + "".join(f"{line}\n" for line in res_lines), encoding="utf-8")
    report = tally.report(str(source), len(data["jobs"]), len(lines), unit="jobs", epoch=base, nodes=nb_res,
                          maui_cfg=["SIMJOBSUBMISSIONPOLICY NORMAL",
                                    f"SIMWORKLOADTRACEFILE {workload_path.name}",
                                    f"SIMRESOURCETRACEFILE {resources_path.name}"])
    write_report(out / f"{stem}_maui_report.json", report)
    return ExportResult(workload_path, resources_path, report)
