"""What every trace adapter shares: opening (plain/gzip/xz) files, the internal job record and the
conversion options (the cleaning rules themselves are in :mod:`batfeed.adapters.cleaning`).

Reference: trace-formats.md (introduction and §1 "Conversion rules"); batsim-protocol.md §8 for
the workload JSON (integer ``res``, ``walltime`` -1 or > 0, ``delay`` > 0, safe integer ids).
"""

from __future__ import annotations

import gzip
import lzma
import math
import re
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any, TextIO

from batfeed.errors import InputError

__all__ = ["BadRecord", "ConvertOptions", "TraceJob", "fmt_number", "is_int_text", "open_text", "parse_duration",
           "read_lines", "trace_stem"]

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
    """Open a text trace, gzip- or xz-compressed or plain (detected from its first bytes); a leading
    UTF-8 byte-order mark (Windows editors, Excel's "CSV UTF-8") is dropped, so line 1 reads as written."""
    path = Path(path)
    try:
        with path.open("rb") as raw:
            magic = raw.read(6)
        if magic[:2] == b"\x1f\x8b":
            return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace")
        if magic == b"\xfd7zXZ\x00":
            return lzma.open(path, "rt", encoding="utf-8-sig", errors="replace")
        if path.name.endswith((".gz", ".xz")):
            raise InputError(f"not a {path.suffix[1:]} file", str(path))
        return path.open(encoding="utf-8-sig", errors="replace")
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
    host_procs: dict[str, int] | None = None  # processors on each host of meta["hosts"], where the log says
    slot_floor: dict[str, int] | None = None  # host -> at least this many processors (TORQUE slot index + 1)


@dataclass
class ConvertOptions:
    """Conversion choices shared by the workload adapters (every one reported in the JSON report).

    ``unit``: a Batsim resource is a processor ("procs") or a node ("nodes"; procs are divided by
    ``procs_per_node`` when a record has no node count).  ``walltime_fallback`` for a missing
    request: "none" (-1), "runtime", "<k>x" (k × run time), "max" (largest request of the trace),
    "queue" (largest of the job's queue) or a number of seconds.  ``over_request`` when run ≥
    request: "keep" (Batsim stops the job at its walltime), "cap" (run time = request), "drop",
    "raise" (request = run + 1 s).  ``overrun`` (seconds >= 0, None = off; Maui's JOBMAXOVERRUN): a
    job's final request w > 0 is kept in ``requested_walltime`` and its Batsim ``walltime`` becomes
    w + overrun (simulated seconds, after ``speed``), so the job may run past its request.
    Filters: ``statuses``, ``users``, ``window`` (trace submit times, start inclusive; each bound
    seconds or a ``datetime``, see :meth:`resolve_window`),
    ``max_jobs`` (first N kept).  ``speed`` divides run times and requests; ``size_scale``
    multiplies job and platform sizes (rounded up).  ``require_kept``: keeping no job is an error
    (:class:`~batfeed.adapters.empty.EmptyConversion`, raised before any output is written); not
    reported, nor ``window_given`` and ``time_base`` (set by :meth:`resolve_window`).
    """

    unit: str = "procs"
    procs_per_node: int | None = None
    walltime_fallback: str = "none"
    over_request: str = "keep"
    overrun: float | None = None
    zero_runtime: str = "one_second"
    statuses: Collection[str] | None = None
    users: Collection[str] | None = None
    window: tuple[Any, Any] = (None, None)
    max_jobs: int | None = None
    speed: float = 1.0
    size_scale: float = 1.0
    profiles: str = "runtime"
    origin: float | None = None
    require_kept: bool = False
    window_given: tuple[Any, Any] = (None, None)
    time_base: tuple[float | None, Any] = (0.0, None)  # (epoch of trace time 0 or None, tzinfo or None = UTC)

    def resolve_window(self, zero: float | None, tz: Any = None) -> None:
        """Turn date bounds of ``window`` into trace seconds: ``zero`` is the epoch of trace time 0
        (None: unknown, then a date is a ValueError), ``tz`` the zone of dates without offset."""
        from batfeed.adapters.window import resolve_window

        self.time_base = (zero, tz)
        if self.window != (None, None):
            self.window_given = self.window
            self.window = resolve_window(self.window, zero, tz or UTC)

    def check(self) -> None:
        """Raise ValueError on an invalid option."""
        for name, value, allowed in (("unit", self.unit, UNITS), ("profiles", self.profiles, PROFILE_MODES),
                                     ("over_request", self.over_request, OVER_REQUEST),
                                     ("zero_runtime", self.zero_runtime, ZERO_RUNTIME)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
        _fallback_spec(self.walltime_fallback)
        if self.overrun is not None:
            self.overrun = overrun_seconds(self.overrun)
        for name, value in (("speed", self.speed), ("size_scale", self.size_scale)):
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        if self.max_jobs is not None and self.max_jobs < 0:
            raise ValueError(f"max_jobs must be >= 0, not {self.max_jobs}")
        if self.procs_per_node is not None and self.procs_per_node < 1:
            raise ValueError(f"procs_per_node must be >= 1, not {self.procs_per_node}")

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items()
               if v not in (None, (None, None)) and k not in ("require_kept", "window_given", "time_base")}
        for key in ("statuses", "users"):
            if key in out:
                out[key] = sorted(map(str, out[key]))
        return out


def overrun_seconds(value: Any) -> float:
    """``overrun`` as seconds (a finite number >= 0, or its text); ValueError otherwise."""
    seconds = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(value.strip())
        except ValueError:
            pass
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"overrun must be a number of seconds >= 0, not {value!r}")
    return seconds


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
