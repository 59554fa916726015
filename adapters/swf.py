"""SWF (Standard Workload Format 2.2) -> Batsim workload converter (trace-formats.md §1).

``read_swf`` parses a trace (plain, gzip or xz): its ``; Key: value`` header and the 18 fields of
each job (optionally extra columns: Alea's extended SWF, 19-column ALCF exports).
``convert_swf`` writes a Batsim delay-profile workload, a platform and a cleaning report (every
dropped or modified job counted under a reason); its options are :class:`ConvertOptions`'.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batfeed.adapters.cleaning import Cleaner, job_res, needs_request_maxima, request_maxima, scale_size
from batfeed.adapters.common import BadRecord, ConvertOptions, TraceJob, open_text, read_lines, trace_stem
from batfeed.adapters.empty import empty_error
from batfeed.adapters.report import FIRST_DROPPED_MAX, format_report, write_report
from batfeed.adapters.workload import ConversionResult, write_workload_lines

from batfeed.errors import InputError

__all__ = ["ConversionResult", "CorruptLine", "SwfRecord", "convert_swf", "format_report", "read_machines",
           "read_swf", "FIRST_DROPPED_MAX"]

NB_FIELDS = 18
PROFILE_MODES = ("runtime", "job")
SIZE_SOURCES = {"procs": "MaxProcs", "nodes": "MaxNodes"}
EPOCH_THRESHOLD = 315_532_800  # 1980-01-01: submit times above it (without UnixStartTime) are epochs

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
_isfinite = math.isfinite
_encode = json.JSONEncoder().encode  # json.dumps with its default arguments
_JOB_NUMBER = re.compile(r"[+-]?[0-9]+")


@dataclass(slots=True)
class SwfRecord:
    """One SWF data line (fields 1-18), its 1-based line number and any extra columns."""

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
    extra: tuple[str, ...] = ()


class CorruptLine(BadRecord):
    """A data line with the wrong number of fields or an unparsable token."""

    def __init__(self, message: str, path: str, line: int, job: int | None):
        InputError.__init__(self, message, path, line)
        self.job = job


def _job_number(tokens: list[str]) -> int | None:
    return int(tokens[0]) if tokens and _JOB_NUMBER.fullmatch(tokens[0]) else None


def _parse_line(tokens: list[str], path: str, line: int, extended: bool) -> SwfRecord:
    extra: tuple[str, ...] = ()
    if len(tokens) != NB_FIELDS:
        if not (extended and len(tokens) > NB_FIELDS):
            more = " or more" if extended else ""
            raise CorruptLine(f"corrupt line: expected {NB_FIELDS}{more} fields, found {len(tokens)}", path, line,
                              _job_number(tokens))
        extra = tuple(tokens[NB_FIELDS:])
        tokens = tokens[:NB_FIELDS]
    # Fast path.  float() accepts every token _NUMBER matches, and besides only tokens with "_"
    # (excluded here) or spelling inf/nan (a non-finite sum sends them, like values that overflow
    # to inf, to the checks below, which give the error).  Finite values whose sum overflows also
    # go below, where they are accepted.
    if "_" not in " ".join(tokens):
        try:
            nums = list(map(float, tokens))
        except ValueError:
            nums = None
        if nums is not None and _isfinite(sum(nums)):
            (jid, submit, wait, run, alloc, cpu, mem, req, req_time, req_mem, status, user, group, app, queue,
             partition, preceding, think) = nums
            if (jid.is_integer() and alloc.is_integer() and req.is_integer() and status.is_integer()
                    and user.is_integer() and group.is_integer() and app.is_integer() and queue.is_integer()
                    and partition.is_integer() and preceding.is_integer()):
                return SwfRecord(line, int(jid), submit, wait, run, int(alloc), cpu, mem, int(req), req_time, req_mem,
                                 int(status), int(user), int(group), int(app), int(queue), int(partition),
                                 int(preceding), think, extra)
    values: list = []
    for i, (tok, (name, kind)) in enumerate(zip(tokens, _COLUMNS, strict=True), start=1):
        if not _NUMBER.fullmatch(tok) or not math.isfinite(num := float(tok)) or (
            kind is int and not num.is_integer()
        ):
            what = "an integer" if kind is int else "a number"
            raise CorruptLine(f"corrupt line: field {i} ({name}) is not {what}: {tok!r}", path, line,
                              _job_number(tokens))
        values.append(int(num) if kind is int else num)
    return SwfRecord(line, *values, extra)  # the finite values overflowed the sum


def read_swf(
    path: str | Path, *, on_corrupt: Callable[[CorruptLine], None] | None = None, extended: bool = False
) -> tuple[dict[str, str], Iterator[SwfRecord]]:
    """Read an SWF trace: its leading ``; Key: value`` header and an iterator over its data lines.

    Keys are kept as written; a repeated key's values are joined with newlines; indented
    continuation lines and later comments are ignored.  A corrupt line raises :class:`CorruptLine`
    unless ``on_corrupt`` is given, in which case it is passed the error and the line is skipped.
    ``extended`` accepts lines with more than 18 fields (kept as text in ``SwfRecord.extra``).
    """
    name = str(path)
    lines = read_lines(path)
    header: dict[str, str] = {}
    first: tuple[int, str] | None = None
    for lineno, text in lines:
        stripped = text.strip()
        if not stripped:
            continue
        if not stripped.startswith(";"):
            first = (lineno, stripped)
            break
        if m := _HEADER.match(stripped):
            key, value = m.group(1), (m.group(2) or "").strip()
            header[key] = f"{header[key]}\n{value}" if key in header else value

    def parse(text: str, number: int) -> SwfRecord | None:
        try:
            return _parse_line(text.split(), name, number, extended)
        except CorruptLine as err:
            if on_corrupt is None:
                raise
            on_corrupt(err)
            return None

    def records() -> Iterator[SwfRecord]:
        if first is not None and (rec := parse(first[1], first[0])) is not None:
            yield rec
        for number, text in lines:
            stripped = text.strip()
            if stripped and not stripped.startswith(";") and (rec := parse(stripped, number)):
                yield rec

    return header, records()


def _header_int(header: dict[str, str], key: str) -> int | None:
    """Leading positive integer of a header value, matching the key ignoring case and blanks."""
    wanted = key.lower()
    for k, v in header.items():
        if k.replace(" ", "").lower() == wanted and (m := re.match(r"\s*([0-9]+)", v)) and int(m.group(1)) > 0:
            return int(m.group(1))
    return None


def read_machines(path: str | Path) -> list[tuple[str, int, int]]:
    """Alea ``.machines`` file (``id name nodes cpus_per_node speed ram_kb``) -> [(name, nodes, cpus)]."""
    clusters = []
    for lineno, text in read_lines(path):
        tokens = text.split()
        if not tokens or tokens[0].startswith(("#", ";")):
            continue
        if len(tokens) < 4 or not (tokens[2].isascii() and tokens[2].isdigit() and tokens[3].isascii()
                                   and tokens[3].isdigit()):
            raise InputError("expected 'id name nodes cpus_per_node ...'", str(path), lineno)
        clusters.append((tokens[1], int(tokens[2]), int(tokens[3])))
    if not clusters:
        raise InputError("no cluster in machines file", str(path))
    return clusters


def _node_spec_count(spec: str) -> int:
    """Nodes of a PBS node spec (``2:ppn=8+1:ppn=4`` -> 3, ``n01+n02`` -> 2)."""
    total = 0
    for chunk in spec.split("+"):
        head = chunk.split(":")[0]
        total += int(head) if head.isascii() and head.isdigit() else 1
    return total


def _no_procs(rec: SwfRecord) -> str:
    a, r = str(rec.alloc_procs), str(rec.req_procs)
    return f"no processors (fields 5 and 8 are {a if a == r else f'{a} and {r}'})"


def _swf_meta(rec: SwfRecord) -> dict[str, Any]:
    """Provenance copied into the Batsim job: SWF fields, Alea queue name and node spec, extra columns."""
    meta: dict[str, Any] = {"swf_submit": rec.submit, "swf_wait": rec.wait, "user": rec.user, "group": rec.group,
                            "queue": rec.queue, "partition": rec.partition, "status": rec.status,
                            "preceding_job": rec.preceding_job, "think_time": rec.think_time}
    if rec.extra and rec.extra[0].startswith("{"):
        if len(rec.extra) >= 2:
            meta["queue_name"] = rec.extra[1]
        if len(rec.extra) >= 3:
            meta["node_spec"] = rec.extra[2]
    elif rec.extra:
        meta["swf_extra"] = list(rec.extra)
    return meta


def _to_job(rec: SwfRecord, path: str, with_meta: bool = True) -> TraceJob:
    """The TraceJob of a record (``raw`` is the record); ``with_meta=False``: no provenance dict yet."""
    nodes = -1
    queue: Any = rec.queue
    if rec.extra and rec.extra[0].startswith("{"):  # Alea extended SWF: {cpu node ids} queue node-spec
        ids = rec.extra[0].strip("{}").split(",")
        nodes = len({i for i in ids if i})
        if len(rec.extra) >= 2:
            queue = rec.extra[1]
        if len(rec.extra) >= 3:
            nodes = _node_spec_count(rec.extra[2]) or nodes
    procs = rec.req_procs if rec.req_procs > 0 else rec.alloc_procs
    return TraceJob(path, rec.line, rec.job_id, rec.submit, rec.run, procs=procs, nodes=nodes,
                    walltime=rec.req_time, status=rec.status, user=rec.user, queue=queue,
                    meta=_swf_meta(rec) if with_meta else {}, raw=rec)


def _ignore(err: CorruptLine) -> None:
    pass


def _resolve_window(opts: ConvertOptions, header: dict[str, str], trace: Path, extended: bool) -> None:
    """``--window`` dates -> seconds since the log start (``UnixStartTime``; without it, submit times
    that are epochs count from 0), local times in the header's ``TimeZoneString`` (else UTC)."""
    from batfeed.adapters.window import zone

    zero: float | None = _header_int(header, "UnixStartTime")
    if zero is None:
        first = next(read_swf(trace, on_corrupt=_ignore, extended=extended)[1], None)
        zero = 0.0 if first is not None and first.submit > EPOCH_THRESHOLD else None
    try:
        tz = zone(header.get("TimeZoneString", "").strip() or None)
    except ValueError:
        tz = None
    try:
        opts.resolve_window(zero, tz)
    except ValueError as err:
        raise InputError(str(err), str(trace)) from None


class _Spool:
    """A temporary text file next to the outputs (their directory or its nearest existing parent,
    not a possibly memory-backed /tmp), unnamed where the system allows; one record per line."""

    def __init__(self, near: Path):
        where = next((d for d in (near, *near.absolute().parents) if d.is_dir()), None)
        if where is not None and not os.access(where, os.W_OK | os.X_OK):
            where = None
        self._file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n", dir=where)
        self.write = self._file.write

    def lines(self) -> Iterator[str]:
        """The lines written, without their end."""
        self._file.seek(0)
        return (line[:-1] for line in self._file)

    def close(self) -> None:
        self._file.close()


def _platform_size(header: dict[str, str], nb_res: int | None, machines: str | Path | None, size_from: str,
                   opts: ConvertOptions, largest: int, path: str) -> tuple[int, str]:
    """Platform size (scaled) and its source: ``nb_res``, the machines file, the header, else ``largest``."""
    size, size_src = nb_res, "argument"
    if size is None and machines is not None:
        clusters = read_machines(machines)
        size_src = Path(machines).name
        size = sum(n if opts.unit == "nodes" else n * c for _, n, c in clusters)
    if size is None:
        size_src = SIZE_SOURCES[size_from]
        size = _header_int(header, size_src)
    if size is None:
        size_src = "max_job"
        size = largest
        if size <= 0:
            msg = f"no {SIZE_SOURCES[size_from]} header and no job with processors: pass nb_res"
            raise InputError(msg, path)
    return scale_size(size, opts), size_src


def convert_swf(
    trace: str | Path,
    out_dir: str | Path,
    *,
    strict: bool = False,
    profiles: str = "runtime",
    nb_res: int | None = None,
    size_from: str = "procs",
    extra_drop: Callable[[SwfRecord, int], tuple[str, str] | None] | None = None,
    extended: bool = False,
    machines: str | Path | None = None,
    name: str | None = None,
    **options: Any,
) -> ConversionResult:
    """Convert an SWF trace into ``<stem>.json``, ``<stem>_platform.xml`` and ``<stem>_report.json``.

    ``profiles``: "runtime" (one delay profile per distinct run time) or "job" (one per job).
    Platform size: ``nb_res``, else Alea ``machines`` file, else header MaxProcs/MaxNodes
    (``size_from`` "procs"/"nodes"; ``unit="nodes"`` implies MaxNodes), else the largest job.
    ``strict`` raises :class:`InputError` on the first corrupt or dropped record.
    ``extra_drop(record, platform_size)`` adds a study's own cleaning rules: it returns ``(reason,
    message)`` to drop a record (counted in the report under ``reason``) or None to keep it.
    ``extended`` reads extra columns (Alea: queue name and node spec).  Other keywords are
    :class:`ConvertOptions` fields (unit, procs_per_node, walltime_fallback, over_request, statuses,
    users, window, max_jobs, speed, size_scale, zero_runtime, origin).

    Streamed: no record outlives its line, no job list is built.

    1. Only with ``walltime_fallback`` "max"/"queue" (or ``extra_drop`` and a platform sized by its
       largest job) the trace is read a first time for the largest request of each queue (and the
       largest job): the trace is then read twice.
    2. The cleaning rules (:class:`~batfeed.adapters.cleaning.Cleaner`) decide every record in file
       order and count it in the report; each kept job's JSON line is written at once to a
       temporary file next to the outputs, all but its ``subtime``, which needs the time origin
       (the earliest kept submit, known at the end).
    3. The workload is then copied from that file, each line completed with its ``subtime``.

    Kept per record: one bit (kept or not); per kept job: its id, one bit for dense integer ids
    (else a set entry, ~70 bytes); per distinct run time: one profile (~100 bytes).  With
    ``profiles="job"`` the per-job profiles go through a temporary file too.  Disk: the temporary
    file is about the size of the workload.  As before, a ``strict`` error is raised only after the
    trace's read errors and the platform-size errors, and no output is written then.
    """
    opts = ConvertOptions(profiles=profiles, **options)
    opts.check()
    if size_from not in SIZE_SOURCES:
        raise ValueError(f"size_from must be one of {tuple(SIZE_SOURCES)}, not {size_from!r}")
    if nb_res is not None and nb_res <= 0:
        raise ValueError(f"nb_res must be > 0, not {nb_res}")
    trace = Path(trace)
    path = str(trace)
    open_text(trace).close()  # missing or unreadable file: error before anything else

    cleaner: Cleaner | None = None
    failure: InputError | None = None  # a strict error, raised only once the whole trace has been read
    defer = True
    from_jobs = False                  # platform sized by the largest job
    largest = 0

    def feed(item: TraceJob | BadRecord) -> bool:  # corrupt lines come here too (read_swf's on_corrupt)
        nonlocal failure
        if cleaner is None or failure is not None:
            return False
        try:
            return cleaner.feed(item)
        except InputError as err:
            if not defer:
                raise
            failure = err
            return False

    def trace_jobs(records: Iterator[SwfRecord]) -> Iterator[TraceJob]:
        nonlocal largest
        for rec in records:
            job = _to_job(rec, path, with_meta=False)
            if from_jobs:
                largest = max(largest, job_res(job, opts))
            yield job

    def replay() -> Iterator[TraceJob]:
        return (_to_job(rec, path, with_meta=False)
                for rec in read_swf(trace, on_corrupt=_ignore, extended=extended)[1])

    header, records = read_swf(trace, on_corrupt=feed, extended=extended)
    if opts.window != (None, None):
        _resolve_window(opts, header, trace, extended)
    if opts.unit == "nodes":
        size_from = "nodes"
        if opts.procs_per_node is None and (mp := _header_int(header, "MaxProcs")) and (
                mn := _header_int(header, "MaxNodes")):
            opts.procs_per_node = max(1, mp // mn)
    from_jobs = nb_res is None and machines is None and _header_int(header, SIZE_SOURCES[size_from]) is None
    longest: dict[Any, float] | None = None
    size: int | None = None
    size_src = "max_job"
    if needs_request_maxima(opts) or (from_jobs and extra_drop is not None):
        # pass 1: largest requests (and job); the trace's read errors come out here, first
        longest = request_maxima(trace_jobs(records))
        size, size_src = _platform_size(header, nb_res, machines, size_from, opts, largest, path)
        from_jobs, defer = False, False
        records = read_swf(trace, on_corrupt=feed, extended=extended)[1]
    elif not from_jobs:
        try:
            size, size_src = _platform_size(header, nb_res, machines, size_from, opts, 0, path)
        except InputError:
            for _ in records:  # a read error of the trace comes before a bad machines file
                pass
            raise
    cleaner = Cleaner(size, opts, strict=strict, extra_drop=extra_drop, no_res_message=_no_procs, longest=longest,
                      replay=replay)
    out = Path(out_dir)
    jobs_spool = _Spool(out)
    profile_spool = _Spool(out) if opts.profiles == "job" else None
    try:
        # pass 2: the cleaning rules decide every record; each kept job's JSON goes to the spool
        # at once, but for its subtime (the time origin is known at the end): "head \0 submit \0 tail"
        for job in trace_jobs(records):
            if feed(job):
                job.meta = _swf_meta(job.raw)
                head, tail, pname, delay = cleaner.entry_text(job, cleaner.nb_kept)
                jobs_spool.write(f"{head}\0{job.submit!r}\0{tail}\n")
                if profile_spool is not None:
                    profile_spool.write(f"{pname}\t{delay!r}\n")
        if not cleaner.nb_kept and opts.require_kept and failure is None:
            cleaner.finish()
            raise empty_error(path, cleaner.read, cleaner.tally, fmt="swf", opts=opts)
        if size is None:
            size, size_src = _platform_size(header, None, None, size_from, opts, largest, path)
        if failure is not None:
            raise failure
        cleaner.finish()
        assert not cleaner.renumber, "SWF ids are integers and kept ones unique: never renumbered"
        origin = cleaner.origin

        unix = _header_int(header, "UnixStartTime")
        if unix is None and origin > EPOCH_THRESHOLD:
            unix = 0  # absolute epoch submit times (wagap, ALCF exports)
        top: dict[str, Any] = {"nb_res": size, "swf_origin": origin}
        if unix is not None:
            top["unix_start"] = unix + origin
        top["swf_header"] = header

        def job_lines() -> Iterator[str]:
            for line in jobs_spool.lines():
                head, submit, tail = line.split("\0")
                subtime = float(submit) - origin
                yield head + (float.__repr__(subtime) if type(subtime) is float and _isfinite(subtime)
                              else _encode(subtime)) + tail

        def profile_lines() -> Iterator[str]:
            if profile_spool is None:
                for pname, profile in cleaner.profiles.items():
                    yield f"{_encode(pname)}: {_encode(profile)}"
                return
            for line in profile_spool.lines():
                pname, _, delay = line.partition("\t")
                yield f"{_encode(pname)}: {_encode({'type': 'delay', 'delay': float(delay)})}"

        out.mkdir(parents=True, exist_ok=True)
        stem = name or trace_stem(trace)
        workload_path = write_workload_lines(out / f"{stem}.json", top, job_lines(), profile_lines())
    finally:
        jobs_spool.close()
        if profile_spool is not None:
            profile_spool.close()
    # Imported lazily: reading SWF does not need the platform generator.
    from batfeed.platforms.generate import write_homogeneous_platform

    platform_path = Path(write_homogeneous_platform(out / f"{stem}_platform.xml", size))
    report = cleaner.tally.report(path, cleaner.read, cleaner.nb_kept, nb_res=size, platform_size_from=size_src,
                                  options=opts.summary())
    report_path = write_report(out / f"{stem}_report.json", report)
    return ConversionResult(workload_path, platform_path, report_path, report, size)
