"""What every trace adapter shares: opening (plain/gzip/xz) files, the internal job record, the
cleaning rules and options, and writing the Batsim workload.

Reference: trace-formats.md (introduction and §1 "Conversion rules"); batsim-protocol.md §8 for
the workload JSON (integer ``res``, ``walltime`` -1 or > 0, ``delay`` > 0, safe integer ids).
"""

from __future__ import annotations

import gzip
import lzma
import math
import re
import zlib
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from batfeed.adapters.report import Tally

from batfeed.errors import InputError

__all__ = ["BadRecord", "ConvertOptions", "Cleaned", "TraceJob", "clean_jobs", "fmt_number", "job_res",
           "is_int_text", "open_text", "parse_duration", "read_lines", "trace_stem"]

UNITS = ("procs", "nodes")
PROFILE_MODES = ("runtime", "job")
OVER_REQUEST = ("keep", "cap", "drop", "raise")
ZERO_RUNTIME = ("one_second", "drop")
# Drop reasons that are a user's choice or a normal record, not a bad one: --strict does not stop on them.
BENIGN = frozenset({"filtered_status", "filtered_user", "outside_window", "beyond_max_jobs", "never_started",
                    "job_step", "array_parent", "no_end_record", "not_run"})


class BadRecord(InputError):
    """A record that cannot be parsed (file:line, and the job id when known)."""

    def __init__(self, message: str, path: str, line: int | None, job: Any = None):
        if isinstance(job, str) and not job.isprintable():
            job = repr(job)  # keep the message on one line
        super().__init__(f"job {job}: {message}" if job is not None else message, path, line)
        self.reason = message
        self.job = job


def open_text(path: str | Path) -> TextIO:
    """Open a text trace, gzip- or xz-compressed or plain (detected from its first bytes)."""
    path = Path(path)
    try:
        with path.open("rb") as raw:
            magic = raw.read(6)
        if magic[:2] == b"\x1f\x8b":
            return gzip.open(path, "rt", encoding="utf-8", errors="replace")
        if magic == b"\xfd7zXZ\x00":
            return lzma.open(path, "rt", encoding="utf-8", errors="replace")
        if path.name.endswith((".gz", ".xz")):
            raise InputError(f"not a {path.suffix[1:]} file", str(path))
        return path.open(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise InputError("no such file", str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", str(path)) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", str(path)) from None


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end) of a text file; read errors become InputError."""
    stream = open_text(path)
    lineno = 0
    with stream:
        try:
            for text in stream:
                lineno += 1
                yield lineno, text.rstrip("\r\n")
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as err:
            raise InputError(f"cannot read: {err}", str(path), lineno + 1) from None


_DIGITS = re.compile(r"[0-9]+")


def is_int_text(text: str) -> bool:
    """True for a plain ASCII decimal integer (``"0042"``), False for anything else."""
    return _DIGITS.fullmatch(text) is not None


def parse_duration(text: str) -> float:
    """Seconds of ``[D-]HH:MM:SS``, ``MM:SS``, ``SS`` or ``DD:HH:MM:SS`` (Moab); ValueError otherwise."""
    body = text.strip()
    days = 0
    if "-" in body:
        head, _, body = body.partition("-")
        if not is_int_text(head):
            raise ValueError(f"not a duration: {text!r}")
        days = int(head)
    parts = body.split(":")
    if not 1 <= len(parts) <= 4 or not all(map(is_int_text, parts)) or (days and len(parts) == 4):
        raise ValueError(f"not a duration: {text!r}")
    if len(parts) == 4:
        days, parts = int(parts[0]), parts[1:]
    secs = 0
    for part in parts:
        secs = secs * 60 + int(part)
    return float(days * 86400 + secs)


def fmt_number(x: float) -> str:
    """``12`` for integral values, else Python's shortest repr (``12.5``)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def trace_stem(path: str | Path) -> str:
    """File name without compression and format suffixes (``KTH.swf.gz`` -> ``KTH``)."""
    name = Path(path).name
    for suffix in (".gz", ".xz", ".swf", ".log", ".csv", ".txt", ".json"):
        name = name.removesuffix(suffix)
    return name or Path(path).name


@dataclass(slots=True)
class TraceJob:
    """The internal job record every reader produces (trace-formats.md, introduction).

    Times are in the trace's own time base (SWF: s since log start; the others: Unix epoch).
    ``meta`` holds the provenance fields copied verbatim into the Batsim job.
    """

    path: str
    line: int | None
    id: Any
    submit: float
    run: float                 # wall-clock s; < 0 = unknown
    procs: int = -1
    nodes: int = -1
    walltime: float = -1.0     # requested time; <= 0 = unknown
    status: Any = None
    user: Any = None
    queue: Any = None
    ran: bool = True           # False: never started (cancelled in the queue)
    skip: str | None = None    # a benign drop reason decided by the reader (job step, still running ...)
    meta: dict[str, Any] = field(default_factory=dict)
    raw: Any = None            # the adapter's own record (SWF's extra_drop hook)


@dataclass
class ConvertOptions:
    """Conversion choices shared by the workload adapters (every one reported in the JSON report).

    ``unit``: a Batsim resource is a processor ("procs") or a node ("nodes"; procs are divided by
    ``procs_per_node`` when a record has no node count).  ``walltime_fallback`` for a missing
    request: "none" (-1), "runtime", "<k>x" (k × run time), "max" (largest request of the trace),
    "queue" (largest of the job's queue) or a number of seconds.  ``over_request`` when run ≥
    request: "keep" (Batsim stops the job at its walltime), "cap" (run time = request), "drop",
    "raise" (request = run + 1 s).  Filters: ``statuses``, ``users``, ``window`` (trace submit
    times, start inclusive), ``max_jobs`` (first N kept).  ``speed`` divides run times and requests;
    ``size_scale`` multiplies job and platform sizes (rounded up).
    """

    unit: str = "procs"
    procs_per_node: int | None = None
    walltime_fallback: str = "none"
    over_request: str = "keep"
    zero_runtime: str = "one_second"
    statuses: Collection[str] | None = None
    users: Collection[str] | None = None
    window: tuple[float | None, float | None] = (None, None)
    max_jobs: int | None = None
    speed: float = 1.0
    size_scale: float = 1.0
    profiles: str = "runtime"
    origin: float | None = None

    def check(self) -> None:
        """Raise ValueError on an invalid option."""
        for name, value, allowed in (("unit", self.unit, UNITS), ("profiles", self.profiles, PROFILE_MODES),
                                     ("over_request", self.over_request, OVER_REQUEST),
                                     ("zero_runtime", self.zero_runtime, ZERO_RUNTIME)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
        _fallback_spec(self.walltime_fallback)
        for name, value in (("speed", self.speed), ("size_scale", self.size_scale)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        if self.max_jobs is not None and self.max_jobs < 0:
            raise ValueError(f"max_jobs must be >= 0, not {self.max_jobs}")
        if self.procs_per_node is not None and self.procs_per_node < 1:
            raise ValueError(f"procs_per_node must be >= 1, not {self.procs_per_node}")

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v not in (None, (None, None))}
        for key in ("statuses", "users"):
            if key in out:
                out[key] = sorted(map(str, out[key]))
        return out


def _fallback_spec(spec: str) -> tuple[str, float]:
    spec = str(spec).strip().lower()
    if spec in ("none", "runtime", "max", "queue"):
        return spec, 1.0
    try:
        if spec.endswith("x"):
            k = float(spec[:-1])
            if math.isfinite(k) and k > 0:
                return "factor", k
        else:
            s = float(spec)
            if math.isfinite(s) and s > 0:
                return "seconds", s
    except ValueError:
        pass
    raise ValueError(f"walltime_fallback must be none, runtime, <k>x, max, queue or seconds > 0, not {spec!r}")


def job_res(job: TraceJob, opts: ConvertOptions) -> int:
    """Batsim ``res`` of a record (before ``size_scale``): processors or nodes; <= 0 if unknown."""
    if opts.unit == "procs":
        return job.procs
    if job.nodes > 0:
        return job.nodes
    if job.procs > 0:
        return -(-job.procs // (opts.procs_per_node or 1))
    return -1


def scale_size(n: int, opts: ConvertOptions) -> int:
    return max(1, math.ceil(n * opts.size_scale - 1e-9)) if n > 0 and opts.size_scale != 1 else n


@dataclass
class Cleaned:
    """Result of :func:`clean_jobs`: Batsim jobs and profiles, the time origin, the tally."""

    jobs: list[dict[str, Any]]
    profiles: dict[str, dict[str, Any]]
    origin: float
    tally: Tally


def _drop_reason(job: TraceJob, res: int, size: int, seen: dict[Any, int | None], opts: ConvertOptions,
                 no_res_message: Callable[[Any], str] | None) -> tuple[str, str] | None:
    what = "processors" if opts.unit == "procs" else "nodes"
    if not job.ran:
        return "never_started", f"never started (status {job.status})"
    if not math.isfinite(job.submit):
        return "bad_submit_time", f"submit time {job.submit} is not a finite number"
    if res <= 0:
        message = no_res_message(job.raw) if no_res_message else f"no {what} (procs {job.procs}, nodes {job.nodes})"
        return f"no_{what}", message
    if res > size:
        return "larger_than_machine", f"needs {res} {what}, more than the platform's {size}"
    if job.run < 0 or not math.isfinite(job.run):
        return "negative_runtime", f"negative or unknown run time {fmt_number(job.run)}"
    if job.id in seen:
        return "duplicate_id", f"duplicate job id (first kept on line {seen[job.id]})"
    return None


def _filter_reason(job: TraceJob, opts: ConvertOptions, statuses: set[str] | None,
                   users: set[str] | None) -> str | None:
    if statuses is not None and str(job.status).lower() not in statuses:
        return "filtered_status"
    if users is not None and str(job.user) not in users:
        return "filtered_user"
    lo, hi = opts.window
    if (lo is not None and job.submit < lo) or (hi is not None and job.submit >= hi):
        return "outside_window"
    return None


def clean_jobs(items: list[TraceJob | BadRecord], size: int, opts: ConvertOptions, *, strict: bool = False,
               extra_drop: Callable[[Any, int], tuple[str, str] | None] | None = None,
               no_res_message: Callable[[Any], str] | None = None, tally: Tally | None = None,
               sort: bool = False) -> Cleaned:
    """Apply the cleaning rules to every record: drop (with a reason), repair or keep it.

    Order: corrupt records, filters, never started, no resources, larger than the machine,
    negative run time, duplicate id, ``extra_drop``, zero run time, missing request, run ≥ request,
    ``max_jobs``.  ``strict`` raises :class:`InputError` (file:line: job: reason) on the first record
    dropped for a non-benign reason.  Ids: the original integer ids when all are integers and
    unique, else 1..N in file order (the original id is kept in ``original_id``).  ``sort``: process
    the jobs in submit order (stable; unparsable records first) instead of file order.
    """
    tally = tally or Tally()
    if sort:
        items = [i for i in items if isinstance(i, BadRecord)] + sorted(
            (i for i in items if isinstance(i, TraceJob)), key=lambda j: j.submit)
    kind, factor = _fallback_spec(opts.walltime_fallback)
    longest: dict[Any, float] = {}
    if kind in ("max", "queue"):
        for it in items:
            if isinstance(it, TraceJob) and it.walltime > 0 and math.isfinite(it.walltime):
                longest[None] = max(longest.get(None, 0.0), it.walltime)
                longest[it.queue] = max(longest.get(it.queue, 0.0), it.walltime)
    statuses = None if opts.statuses is None else {str(x).lower() for x in opts.statuses}
    users = None if opts.users is None else {str(u) for u in opts.users}
    filtering = statuses is not None or users is not None or opts.window != (None, None)
    kept: list[tuple[TraceJob, int, float, float]] = []
    seen: dict[Any, int | None] = {}
    for it in items:
        if isinstance(it, BadRecord):
            if strict:
                raise it
            tally.drop("corrupt_line", it.line, it.job, it.path)
            continue
        reason = it.skip or (_filter_reason(it, opts, statuses, users) if filtering else None)
        if reason:
            tally.drop(reason, it.line, it.id, it.path)
            continue
        res = scale_size(job_res(it, opts), opts)
        found = _drop_reason(it, res, size, seen, opts, no_res_message) or (extra_drop and extra_drop(it.raw, size))
        if found:
            reason, message = found
            if strict and reason not in BENIGN:
                raise InputError(f"job {it.id}: {message}", it.path, it.line)
            tally.drop(reason, it.line, it.id, it.path)
            continue
        delay = it.run
        if delay == 0:
            if opts.zero_runtime == "drop":
                tally.drop("zero_runtime", it.line, it.id, it.path)
                continue
            delay = 1.0
            tally.modify("zero_runtime_set_to_1s")
        walltime = it.walltime if it.walltime > 0 and math.isfinite(it.walltime) else -1.0
        if walltime < 0:
            tally.modify("missing_request")
            walltime = {"none": -1.0, "runtime": delay, "factor": factor * delay, "seconds": factor,
                        "max": longest.get(None, -1.0), "queue": longest.get(it.queue, longest.get(None, -1.0))
                        }[kind]
        if walltime > 0 and delay >= walltime:
            if opts.over_request == "drop" and delay > walltime:
                tally.drop("runtime_over_request", it.line, it.id, it.path)
                continue
            if opts.over_request == "cap" and delay > walltime:
                delay = walltime
                tally.modify("runtime_capped_at_request")
            elif opts.over_request == "raise":
                walltime = math.floor(delay) + 1.0
                tally.modify("request_raised_above_runtime")
            else:
                tally.warn("runtime_reaches_request")
        if kept and it.submit < kept[-1][0].submit:
            tally.warn("submit_not_sorted")
        if opts.max_jobs is not None and len(kept) >= opts.max_jobs:
            tally.drop("beyond_max_jobs", it.line, it.id, it.path)
            continue
        seen[it.id] = it.line
        kept.append((it, res, delay / opts.speed, walltime / opts.speed if walltime > 0 else -1.0))
    return _to_batsim(kept, opts, tally)


def _to_batsim(kept: list[tuple[TraceJob, int, float, float]], opts: ConvertOptions, tally: Tally) -> Cleaned:
    origin = opts.origin if opts.origin is not None else min((j.submit for j, *_ in kept), default=0.0)
    ints = [int(j.id) if isinstance(j.id, int) or (isinstance(j.id, str) and is_int_text(j.id)) else None
            for j, *_ in kept]
    renumber = None in ints or len(set(ints)) != len(ints)
    if renumber and kept:
        tally.warn("ids_renumbered", len(kept))
    jobs: list[dict[str, Any]] = []
    profiles: dict[str, dict[str, Any]] = {}
    for n, (job, res, delay, walltime) in enumerate(kept, start=1):
        jid = n if renumber else ints[n - 1]
        pname = f"p{jid}" if opts.profiles == "job" else f"d{fmt_number(delay)}"
        profiles.setdefault(pname, {"type": "delay", "delay": float(delay)})
        entry: dict[str, Any] = {"id": jid, "subtime": job.submit - origin, "res": res,
                                 "walltime": walltime if walltime > 0 else -1, "profile": pname}
        if job.id != jid:  # a text id, or renumbered
            entry["original_id"] = str(job.id)
        entry.update(job.meta)
        if "original_id" in entry and entry["original_id"] == str(jid):
            del entry["original_id"]
        jobs.append(entry)
    return Cleaned(jobs, profiles, origin, tally)
