"""SWF (Standard Workload Format 2.2) -> Batsim workload converter.

``read_swf`` parses a trace (plain or gzip); ``convert_swf`` writes a Batsim delay-profile workload,
a homogeneous platform and a cleaning report (every dropped or modified job counted under a reason).
"""

from __future__ import annotations

import gzip
import json
import math
import operator
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from batfeed.errors import InputError

__all__ = [
    "ConversionResult",
    "CorruptLine",
    "SwfRecord",
    "convert_swf",
    "format_report",
    "read_swf",
]

NB_FIELDS = 18
FIRST_DROPPED_MAX = 5
PROFILE_MODES = ("runtime", "job")
SIZE_SOURCES = {"procs": "MaxProcs", "nodes": "MaxNodes"}

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# "; Key: value" -- at most one space after ';' (continuation lines are indented further) and the
# colon must be followed by a blank or the end of line (so "http://..." is not a key).
_HEADER = re.compile(r";[ ]?([A-Za-z][A-Za-z0-9_ ]*?)[ \t]*:(?:[ \t]+(.*))?$")

# (attribute, type) in SWF column order; float columns accept fractional values.
_COLUMNS: tuple[tuple[str, type], ...] = (
    ("job_id", int), ("submit", float), ("wait", float), ("run", float), ("alloc_procs", int),
    ("avg_cpu", float), ("used_mem", float), ("req_procs", int), ("req_time", float),
    ("req_mem", float), ("status", int), ("user", int), ("group", int), ("app", int),
    ("queue", int), ("partition", int), ("preceding_job", int), ("think_time", float),
)
_INT_COLUMNS = tuple(i for i, (_, kind) in enumerate(_COLUMNS) if kind is int)
_int_values = operator.itemgetter(*_INT_COLUMNS)
_LINE = re.compile(rf"{_NUMBER.pattern}(?: {_NUMBER.pattern})*")


@dataclass(slots=True)
class SwfRecord:
    """One SWF data line (fields 1-18) and its 1-based line number in the file."""

    line: int
    job_id: int
    submit: float
    wait: float
    run: float
    alloc_procs: int
    avg_cpu: float
    used_mem: float
    req_procs: int
    req_time: float
    req_mem: float
    status: int
    user: int
    group: int
    app: int
    queue: int
    partition: int
    preceding_job: int
    think_time: float


class CorruptLine(InputError):
    """A data line with the wrong number of fields or an unparsable token."""

    def __init__(self, message: str, path: str, line: int, job: int | None):
        super().__init__(message, path, line)
        self.job = job


@dataclass
class ConversionResult:
    """Paths of the files written by :func:`convert_swf`, its report and the platform size."""

    workload_path: Path
    platform_path: Path
    report_path: Path
    report: dict[str, Any]
    nb_res: int


def _parse_line(tokens: list[str], path: str, line: int) -> SwfRecord:
    job = int(tokens[0]) if tokens and re.fullmatch(r"[+-]?\d+", tokens[0]) else None
    if len(tokens) != NB_FIELDS:
        raise CorruptLine(f"corrupt line: expected {NB_FIELDS} fields, found {len(tokens)}", path, line, job)
    if _LINE.fullmatch(" ".join(tokens)):  # fast path: one regex for the whole line
        nums: list = list(map(float, tokens))
        if all(map(math.isfinite, nums)) and all(map(float.is_integer, _int_values(nums))):
            for i in _INT_COLUMNS:
                nums[i] = int(nums[i])
            return SwfRecord(line, *nums)
    for i, (tok, (name, kind)) in enumerate(zip(tokens, _COLUMNS, strict=True), start=1):
        if not _NUMBER.fullmatch(tok) or not math.isfinite(num := float(tok)) or (
            kind is int and not num.is_integer()
        ):
            what = "an integer" if kind is int else "a number"
            raise CorruptLine(f"corrupt line: field {i} ({name}) is not {what}: {tok!r}", path, line, job)
    raise AssertionError("unreachable")


def _open_text(path: Path) -> TextIO:
    try:
        with path.open("rb") as raw:
            magic = raw.read(2)
        if magic == b"\x1f\x8b":
            return gzip.open(path, "rt", encoding="utf-8", errors="replace")
        if path.name.endswith(".gz"):
            raise InputError("not a gzip file", str(path))
        return path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise InputError("no such file", str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", str(path)) from None


def read_swf(
    path: str | Path, *, on_corrupt: Callable[[CorruptLine], None] | None = None
) -> tuple[dict[str, str], Iterator[SwfRecord]]:
    """Read an SWF trace: its leading ``; Key: value`` header and an iterator over its data lines.

    Keys are kept as written; a repeated key's values are joined with newlines; indented
    continuation lines and later comments are ignored.  A corrupt line raises :class:`CorruptLine`
    unless ``on_corrupt`` is given, in which case it is passed the error and the line is skipped.
    """
    path = Path(path)
    name = str(path)
    stream = _open_text(path)
    header: dict[str, str] = {}
    lineno = 0
    first: str | None = None
    try:
        for text in stream:
            lineno += 1
            stripped = text.strip()
            if not stripped:
                continue
            if not stripped.startswith(";"):
                first = stripped
                break
            if m := _HEADER.match(stripped):
                key, value = m.group(1), (m.group(2) or "").strip()
                header[key] = f"{header[key]}\n{value}" if key in header else value
    except (OSError, EOFError, zlib.error) as err:
        stream.close()
        raise InputError(f"cannot read: {err}", name) from None

    def parse(text: str, number: int) -> SwfRecord | None:
        try:
            return _parse_line(text.split(), name, number)
        except CorruptLine as err:
            if on_corrupt is None:
                raise
            on_corrupt(err)
            return None

    def records() -> Iterator[SwfRecord]:
        nonlocal lineno
        with stream:
            if first is not None and (rec := parse(first, lineno)) is not None:
                yield rec
            try:
                for text in stream:
                    lineno += 1
                    stripped = text.strip()
                    if stripped and not stripped.startswith(";") and (rec := parse(stripped, lineno)):
                        yield rec
            except (OSError, EOFError, zlib.error) as err:
                raise InputError(f"cannot read: {err}", name, lineno + 1) from None

    return header, records()


def _header_int(header: dict[str, str], key: str) -> int | None:
    """Leading positive integer of a header value, matching the key ignoring case and blanks."""
    wanted = key.lower()
    for k, v in header.items():
        if k.replace(" ", "").lower() == wanted and (m := re.match(r"\s*(\d+)", v)) and int(m.group(1)) > 0:
            return int(m.group(1))
    return None


def _res(rec: SwfRecord) -> int:
    return rec.req_procs if rec.req_procs > 0 else rec.alloc_procs


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass
class _Tally:
    """Counters of the cleaning report."""

    dropped: Counter[str] = field(default_factory=Counter)
    modified: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    first_dropped: dict[str, list[str]] = field(default_factory=dict)

    def drop(self, reason: str, line: int, job: int | None) -> None:
        self.dropped[reason] += 1
        examples = self.first_dropped.setdefault(reason, [])
        if len(examples) < FIRST_DROPPED_MAX:
            examples.append(f"line {line}: job {job}" if job is not None else f"line {line}")


def _drop_reason(rec: SwfRecord, size: int, kept_lines: dict[int, int]) -> tuple[str, str] | None:
    """(reason, message) if the record must be dropped, else None."""
    res = _res(rec)
    if res <= 0:
        a, r = _fmt(rec.alloc_procs), _fmt(rec.req_procs)
        values = a if a == r else f"{a} and {r}"
        return "no_processors", f"no processors (fields 5 and 8 are {values})"
    if res > size:
        return "larger_than_machine", f"needs {res} processors, more than the platform's {size}"
    if rec.run < 0:
        return "negative_runtime", f"negative run time {_fmt(rec.run)} (field 4)"
    if rec.job_id in kept_lines:
        return "duplicate_id", f"duplicate job id (first kept on line {kept_lines[rec.job_id]})"
    return None


def _trace_stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    return name or path.name


def _write_workload(path: Path, top: dict[str, Any], jobs: list[dict], profiles: dict[str, dict]) -> None:
    """Write the workload JSON with one job / profile per line (diff- and grep-friendly)."""
    with path.open("w", encoding="utf-8") as out:
        out.write("{\n")
        for key, value in top.items():
            out.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        out.write('  "jobs": [')
        out.write(",".join(f"\n    {json.dumps(job)}" for job in jobs))
        out.write('\n  ],\n  "profiles": {')
        out.write(",".join(f"\n    {json.dumps(n)}: {json.dumps(p)}" for n, p in profiles.items()))
        out.write("\n  }\n}\n")


def convert_swf(
    trace: str | Path,
    out_dir: str | Path,
    *,
    strict: bool = False,
    profiles: str = "runtime",
    nb_res: int | None = None,
    size_from: str = "procs",
    extra_drop: Callable[[SwfRecord, int], tuple[str, str] | None] | None = None,
) -> ConversionResult:
    """Convert an SWF trace into ``<stem>.json``, ``<stem>_platform.xml`` and ``<stem>_report.json``.

    ``profiles``: "runtime" (one delay profile per distinct run time) or "job" (one per job).
    Platform size: ``nb_res``, else header MaxProcs/MaxNodes (``size_from`` "procs"/"nodes"), else
    the largest job.  ``strict`` raises :class:`InputError` on the first corrupt or dropped record.
    ``extra_drop(record, platform_size)`` adds a study's own cleaning rules: it returns ``(reason,
    message)`` to drop a record (counted in the report under ``reason``) or None to keep it.
    """
    if profiles not in PROFILE_MODES:
        raise ValueError(f"profiles must be one of {PROFILE_MODES}, not {profiles!r}")
    if size_from not in SIZE_SOURCES:
        raise ValueError(f"size_from must be one of {tuple(SIZE_SOURCES)}, not {size_from!r}")
    if nb_res is not None and nb_res <= 0:
        raise ValueError(f"nb_res must be > 0, not {nb_res}")
    trace = Path(trace)
    name = str(trace)

    items: list[SwfRecord | CorruptLine] = []
    header, records = read_swf(trace, on_corrupt=items.append)
    for rec in records:
        items.append(rec)
    read = len(items)

    size, size_src = nb_res, "argument"
    if size is None:
        size_src = SIZE_SOURCES[size_from]
        size = _header_int(header, size_src)
    if size is None:
        size_src = "max_job"
        size = max((_res(r) for r in items if isinstance(r, SwfRecord)), default=0)
        if size <= 0:
            msg = f"no {SIZE_SOURCES[size_from]} header and no job with processors: pass nb_res"
            raise InputError(msg, name)

    tally = _Tally()
    kept: list[tuple[SwfRecord, float, float]] = []  # record, delay, walltime
    kept_lines: dict[int, int] = {}
    for item in items:
        if isinstance(item, CorruptLine):
            if strict:
                raise item
            tally.drop("corrupt_line", item.line or 0, item.job)
            continue
        if found := _drop_reason(item, size, kept_lines) or (extra_drop and extra_drop(item, size)):
            reason, message = found
            if strict:
                raise InputError(f"job {item.job_id}: {message}", name, item.line)
            tally.drop(reason, item.line, item.job_id)
            continue
        delay = item.run
        if delay == 0:
            delay = 1.0
            tally.modified["zero_runtime_set_to_1s"] += 1
        walltime = item.req_time if item.req_time > 0 else -1.0
        if walltime < 0:
            tally.modified["missing_request"] += 1
        elif delay >= walltime:
            tally.warnings["runtime_reaches_request"] += 1
        if kept and item.submit < kept[-1][0].submit:
            tally.warnings["submit_not_sorted"] += 1
        kept_lines[item.job_id] = item.line
        kept.append((item, delay, walltime))
    assert len(kept) + sum(tally.dropped.values()) == read, "SWF report does not add up"

    # Earliest kept submit: equals the first kept job's submit on (normally) sorted traces, and
    # never yields a negative subtime on unsorted ones.
    origin = min((rec.submit for rec, _, _ in kept), default=0.0)
    jobs: list[dict[str, Any]] = []
    profile_defs: dict[str, dict[str, Any]] = {}
    for rec, delay, walltime in kept:
        pname = f"p{rec.job_id}" if profiles == "job" else f"d{_fmt(delay)}"
        profile_defs.setdefault(pname, {"type": "delay", "delay": float(delay)})
        jobs.append({
            "id": rec.job_id, "subtime": rec.submit - origin, "res": _res(rec),
            "walltime": walltime if walltime > 0 else -1, "profile": pname,
            "swf_submit": rec.submit, "swf_wait": rec.wait, "user": rec.user, "group": rec.group,
            "queue": rec.queue, "partition": rec.partition, "status": rec.status,
            "preceding_job": rec.preceding_job, "think_time": rec.think_time,
        })

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = _trace_stem(trace)
    workload_path = out / f"{stem}.json"
    top = {"nb_res": size, "swf_origin": origin, "swf_header": header}
    _write_workload(workload_path, top, jobs, profile_defs)
    # Imported lazily: reading SWF does not need the platform generator.
    from batfeed.platforms.generate import write_homogeneous_platform

    platform_path = Path(write_homogeneous_platform(out / f"{stem}_platform.xml", size))

    report: dict[str, Any] = {
        "input": name,
        "read": read,
        "kept": len(kept),
        "dropped": dict(tally.dropped),
        "modified": dict(tally.modified),
        "warnings": dict(tally.warnings),
        "nb_res": size,
        "platform_size_from": size_src,
        "first_dropped": tally.first_dropped,
    }
    report_path = out / f"{stem}_report.json"
    report_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return ConversionResult(workload_path, platform_path, report_path, report, size)


def format_report(report: dict[str, Any]) -> str:
    """Readable text table of a conversion report (for the CLI)."""
    lines = [
        f"input: {report['input']}",
        f"read {report['read']} records, kept {report['kept']}; "
        f"platform {report['nb_res']} resources (from {report['platform_size_from']})",
    ]
    rows = [(cat, reason, count) for cat, key in (("dropped", "dropped"), ("modified", "modified"),
                                                    ("warning", "warnings"))
            for reason, count in sorted(report.get(key, {}).items())]
    if rows:
        width = max(len("reason"), *(len(r) for _, r, _ in rows))
        lines.append(f"{'category':<9} {'reason':<{width}} {'count':>7}")
        lines += [f"{cat:<9} {reason:<{width}} {count:>7}" for cat, reason, count in rows]
    for reason, examples in sorted(report.get("first_dropped", {}).items()):
        lines.append(f"first {reason}: {', '.join(examples)}")
    return "\n".join(lines)
