"""The cleaning rules shared by the trace adapters, applied one record at a time (streamed).

:class:`Cleaner` decides every record (drop with a reason, repair, keep) and hands the kept jobs'
Batsim entries to the workload writer as they come, so a conversion's memory does not grow with
the trace (reference: trace-formats.md §1 "Conversion rules"); :func:`clean_jobs` is the
list-in/list-out form the non-SWF adapters use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from batfeed.adapters.common import (
    BENIGN,
    BadRecord,
    ConvertOptions,
    TraceJob,
    _fallback_spec,
    fmt_number,
    is_int_text,
    overrun_seconds,
)
from batfeed.adapters.kept import DelayProfiles, JobProfiles, KeptJobs
from batfeed.adapters.report import Tally

from batfeed.errors import InputError

__all__ = ["Cleaned", "Cleaner", "IdSet", "clean_jobs", "job_res", "needs_request_maxima",
           "request_maxima", "scale_size"]


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


def needs_request_maxima(opts: ConvertOptions) -> bool:
    """True when ``walltime_fallback`` is "max" or "queue": a pass over the whole trace comes first."""
    return _fallback_spec(opts.walltime_fallback)[0] in ("max", "queue")


def request_maxima(records: Iterable[TraceJob | BadRecord]) -> dict[Any, float]:
    """Largest valid request (walltime > 0) of all records (key None) and of each queue.

    Every record counts, kept or not (the "max" and "queue" walltime fallbacks).
    """
    longest: dict[Any, float] = {}
    for it in records:
        if isinstance(it, TraceJob) and it.walltime > 0 and math.isfinite(it.walltime):
            longest[None] = max(longest.get(None, 0.0), it.walltime)
            longest[it.queue] = max(longest.get(it.queue, 0.0), it.walltime)
    return longest


class IdSet:
    """A set of job ids (duplicate detection), lean for the usual dense integer ids.

    Integers within reach of the ones already stored are bits of a bytearray (one bit per integer
    of the covered range, which may always span 8 Mi ids and otherwise at most 64 per stored id);
    other ids (text, far-away integers) go to a Python set (~60-90 bytes each).  Membership is
    Python's set membership (``2``, ``2.0`` and ``True``/``1`` are equal ids).
    """

    __slots__ = ("_bits", "_base", "_count", "_other")
    SLACK_BITS = 1 << 23

    def __init__(self) -> None:
        self._bits = bytearray()
        self._base = 0        # integer of bit 0; a multiple of 8
        self._count = 0       # integers stored as bits
        self._other: set[Any] = set()

    @staticmethod
    def _integer(x: Any) -> int | None:
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float) and x.is_integer():
            return int(x)
        return None

    def __contains__(self, x: Any) -> bool:
        v = x if type(x) is int else self._integer(x)
        if v is not None:
            k = v - self._base
            if 0 <= k < 8 * len(self._bits) and self._bits[k >> 3] >> (k & 7) & 1:
                return True
        return x in self._other

    def add(self, x: Any) -> None:
        v = x if type(x) is int else self._integer(x)
        if v is None or not self._cover(v):
            self._other.add(x)
            return
        k = v - self._base
        self._bits[k >> 3] |= 1 << (k & 7)
        self._count += 1

    def _cover(self, v: int) -> bool:
        """Grow the bitmap to reach ``v`` if that keeps it dense enough; False if ``v`` stays out."""
        nbytes = len(self._bits)
        lo, hi = self._base, self._base + 8 * nbytes
        if lo <= v < hi:
            return True
        if not nbytes:
            self._base = v - (v & 7)
            self._bits.extend(bytes(64))
            return True
        if max(hi, v + 1) - min(lo, v) > 64 * self._count + self.SLACK_BITS:
            return False
        if v >= hi:  # grow upwards, at least doubling (amortised)
            need = (v - hi) // 8 + 1
            self._bits.extend(bytes(max(need, nbytes)))
        else:        # grow downwards, at least doubling (amortised)
            need = (lo - v + 7) // 8
            extra = max(need, nbytes)
            self._bits[:0] = bytes(extra)
            self._base -= 8 * extra
        return True


@dataclass
class Cleaned:
    """Result of :func:`clean_jobs`: Batsim jobs and profiles, the time origin, the tally.

    ``jobs`` (and ``profiles`` with ``profiles="job"``) are built on access from the records, not
    stored: iterate them (each pass builds the dicts again), ``len()`` is immediate.
    """

    jobs: Sequence[dict[str, Any]]
    profiles: Mapping[str, dict[str, Any]]
    origin: float
    tally: Tally


def _drop_reason(job: TraceJob, res: int, size: int | None, seen: IdSet, opts: ConvertOptions,
                 no_res_message: Callable[[Any], str] | None) -> tuple[str, str | None] | None:
    """First drop rule a record breaks; a duplicate id's message is None (built only if needed)."""
    what = "processors" if opts.unit == "procs" else "nodes"
    if not job.ran:
        return "never_started", f"never started (status {job.status})"
    if not math.isfinite(job.submit):
        return "bad_submit_time", f"submit time {job.submit} is not a finite number"
    if res <= 0:
        message = no_res_message(job.raw) if no_res_message else f"no {what} (procs {job.procs}, nodes {job.nodes})"
        return f"no_{what}", message
    if size is not None and res > size:
        return "larger_than_machine", f"needs {res} {what}, more than the platform's {size}"
    if job.run < 0 or not math.isfinite(job.run):
        return "negative_runtime", f"negative or unknown run time {fmt_number(job.run)}"
    if job.id in seen:
        return "duplicate_id", None
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


class Cleaner:
    """The cleaning rules of :func:`clean_jobs`, applied one record at a time (streaming).

    :meth:`feed` every record in processing order (it returns True when the record is kept, and
    raises the ``strict`` error), then call :meth:`finish` once: ``origin``, ``renumber``,
    ``nb_kept``, ``read``, ``tally`` and ``profiles`` are then final.  The Batsim jobs are then
    rebuilt by :meth:`entry` from the records given again (:meth:`kept_of`: still in memory, or read
    again) -- or, when the ids are final as soon as kept (integer ids), written as they are kept
    with :meth:`entry_text`, whose JSON only misses the subtime.

    Memory, whatever the number of records: the tally (counts and 5 examples per reason); per
    record, one bit (kept or not, by rank among the :class:`TraceJob` records fed); per kept job,
    its id in an :class:`IdSet` (one bit for dense integer ids, else ~70 bytes) and, for text ids
    that are digits, their int value (renumbering check); with ``profiles="runtime"``, one
    name -> delay per distinct run time (~100 bytes).  No record is referenced after :meth:`feed`
    returns.

    ``size`` None means "the largest job", not known yet: no job is larger than the machine
    (``extra_drop`` then needs the size: give it).  ``longest``: :func:`request_maxima` of all the
    records, needed by the "max" and "queue" walltime fallbacks.  ``replay()`` returns the
    :class:`TraceJob` records again in feed order; ``strict`` uses it only to name the line of the
    first kept job when it stops at a duplicate id.
    """

    def __init__(self, size: int | None, opts: ConvertOptions, *, strict: bool = False,
                 extra_drop: Callable[[Any, int], tuple[str, str] | None] | None = None,
                 no_res_message: Callable[[Any], str] | None = None, tally: Tally | None = None,
                 longest: dict[Any, float] | None = None,
                 replay: Callable[[], Iterable[TraceJob]] | None = None):
        self.size, self.opts, self.strict = size, opts, strict
        if extra_drop is not None and size is None:
            raise ValueError("extra_drop needs the platform size")
        self.extra_drop, self.no_res_message, self.replay = extra_drop, no_res_message, replay
        self.tally = tally or Tally()
        self.kind, self.factor = _fallback_spec(opts.walltime_fallback)
        if self.kind in ("max", "queue") and longest is None:
            raise ValueError(f"walltime_fallback {opts.walltime_fallback!r} needs request_maxima() of the trace")
        self.longest = longest or {}
        self.overrun = None if opts.overrun is None else overrun_seconds(opts.overrun)
        if self.overrun is not None:
            self.tally.overrun = {"seconds": self.overrun, "completed_past_request": 0, "killed_at_limit": 0}
        self.statuses = None if opts.statuses is None else {str(x).lower() for x in opts.statuses}
        self.users = None if opts.users is None else {str(u) for u in opts.users}
        self.windowed = opts.window != (None, None)
        self.filtering = self.statuses is not None or self.users is not None or self.windowed
        self._span = (math.inf, -math.inf)              # submit times seen, with a window (error messages)
        self.read = 0            # records fed (corrupt ones included)
        self.nb_jobs = 0         # TraceJob records fed
        self.nb_kept = 0
        self.renumber = False
        self.origin: float = 0.0
        self._delays: dict[str, float] = {}             # profiles="runtime": name -> delay, one per distinct delay
        self.profiles: Mapping[str, dict[str, Any]] = DelayProfiles(self._delays)
        self._has_text_ids = False
        self._flags = bytearray()                       # bit r: the r-th TraceJob fed was kept
        self._seen = IdSet()
        self._text_ints = IdSet()                       # int values of the kept text ids
        self._last_submit = 0.0
        self._min_submit = 0.0

    # -- first pass ------------------------------------------------------------------------------

    def feed(self, it: TraceJob | BadRecord) -> bool:
        """Apply the rules to the next record: count it in the tally; True if it is kept."""
        self.read += 1
        tally = self.tally
        if isinstance(it, BadRecord):
            if self.strict:
                raise it
            tally.drop("corrupt_line", it.line, it.job, it.path, str(it))
            return False
        rank = self.nb_jobs
        self.nb_jobs += 1
        if not rank & 7:
            self._flags.append(0)
        opts = self.opts
        if self.windowed and math.isfinite(it.submit):
            self._span = (min(self._span[0], it.submit), max(self._span[1], it.submit))
        reason = it.skip or (_filter_reason(it, opts, self.statuses, self.users) if self.filtering else None)
        if reason:
            tally.drop(reason, it.line, it.id, it.path)
            return False
        res = scale_size(job_res(it, opts), opts)
        found = _drop_reason(it, res, self.size, self._seen, opts, self.no_res_message) or (
            self.extra_drop and self.extra_drop(it.raw, self.size))  # type: ignore[arg-type]
        if found:
            reason, message = found
            if self.strict and reason not in BENIGN:
                if message is None:
                    message = f"duplicate job id (first kept on line {self._kept_line(it.id)})"
                raise InputError(f"job {it.id}: {message}", it.path, it.line)
            tally.drop(reason, it.line, it.id, it.path)
            return False
        settled = self._settle(it, tally)
        if settled is None:
            return False
        if self.nb_kept and it.submit < self._last_submit:
            tally.warn("submit_not_sorted")
        if opts.max_jobs is not None and self.nb_kept >= opts.max_jobs:
            tally.drop("beyond_max_jobs", it.line, it.id, it.path)
            return False
        self._keep_id(it.id)
        self._flags[rank >> 3] |= 1 << (rank & 7)
        if not self.nb_kept or it.submit < self._min_submit:
            self._min_submit = it.submit
        self.nb_kept += 1
        self._last_submit = it.submit
        if self.overrun is not None and settled[1] > 0:
            self._count_overrun(settled[0] / opts.speed, settled[1] / opts.speed, self.overrun)
        if opts.profiles == "runtime":
            delay = settled[0] / opts.speed
            pname = f"d{fmt_number(delay)}"
            if pname not in self._delays:
                self._delays[pname] = float(delay)
        return True

    def _count_overrun(self, delay: float, request: float, seconds: float) -> None:
        """Count a kept job that reaches its request (Batsim kills a job whose delay >= walltime):
        it now completes if it ends before the extended limit request + ``seconds``."""
        if delay >= request:
            over = self.tally.overrun
            assert over is not None
            over["completed_past_request" if delay < request + seconds else "killed_at_limit"] += 1

    def _keep_id(self, jid: Any) -> None:
        """Record a kept id; ids are renumbered unless all kept ids are distinct integers (or digits)."""
        if not self.renumber:
            if isinstance(jid, int):
                self.renumber = self._has_text_ids and int(jid) in self._text_ints
            elif isinstance(jid, str) and is_int_text(jid):
                value = int(jid)
                self.renumber = value in self._seen or value in self._text_ints
                self._text_ints.add(value)
                self._has_text_ids = True
            else:
                self.renumber = True
        self._seen.add(jid)

    def _kept_line(self, jid: Any) -> int | None:
        if self.replay is None:
            return None
        return next((j.line for j in self.kept_of(self.replay()) if j.id == jid), None)

    def _settle(self, it: TraceJob, tally: Tally | None) -> tuple[float, float] | None:
        """Repairs of a record that passed the drop rules: (run time, walltime) in trace seconds
        (walltime -1: none), or None if dropped.  Counted in ``tally`` if given (first pass)."""
        opts = self.opts
        delay = it.run
        if delay == 0:
            if opts.zero_runtime == "drop":
                if tally is not None:
                    tally.drop("zero_runtime", it.line, it.id, it.path)
                return None
            delay = 1.0
            if tally is not None:
                tally.modify("zero_runtime_set_to_1s")
        walltime = it.walltime if it.walltime > 0 and math.isfinite(it.walltime) else -1.0
        if walltime < 0:
            if tally is not None:
                tally.modify("missing_request")
            kind, longest = self.kind, self.longest
            if kind == "none":
                walltime = -1.0
            elif kind == "runtime":
                walltime = delay
            elif kind == "factor":
                walltime = self.factor * delay
            elif kind == "seconds":
                walltime = self.factor
            elif kind == "max":
                walltime = longest.get(None, -1.0)
            else:
                walltime = longest.get(it.queue, longest.get(None, -1.0))
        if walltime > 0 and delay >= walltime:
            if opts.over_request == "drop" and delay > walltime:
                if tally is not None:
                    tally.drop("runtime_over_request", it.line, it.id, it.path)
                return None
            if opts.over_request == "cap" and delay > walltime:
                delay = walltime
                if tally is not None:
                    tally.modify("runtime_capped_at_request")
            elif opts.over_request == "raise":
                walltime = math.floor(delay) + 1.0
                if tally is not None:
                    tally.modify("request_raised_above_runtime")
            elif tally is not None:
                tally.warn("runtime_reaches_request")
        return delay, walltime

    def finish(self) -> None:
        """After the last record: the time origin and the ``ids_renumbered`` warning."""
        if self.opts.origin is not None:
            self.origin = self.opts.origin
        else:
            self.origin = self._min_submit if self.nb_kept else 0.0
        if self.renumber and self.nb_kept:
            self.tally.warn("ids_renumbered", self.nb_kept)
        if self._span[0] <= self._span[1]:
            self.tally.submit_span = self._span

    # -- second pass -----------------------------------------------------------------------------

    def kept(self, rank: int) -> bool:
        """Was the ``rank``-th TraceJob fed (0-based) kept?"""
        return rank >> 3 < len(self._flags) and bool(self._flags[rank >> 3] >> (rank & 7) & 1)

    def kept_of(self, jobs: Iterable[TraceJob]) -> Iterator[TraceJob]:
        """The kept ones of ``jobs``: the TraceJob records fed, given again in the same order."""
        flags = self._flags
        for rank, job in enumerate(jobs):
            if flags[rank >> 3] >> (rank & 7) & 1:
                yield job

    def entry(self, job: TraceJob, n: int) -> tuple[dict[str, Any], str, float]:
        """(Batsim job dict, profile name, delay) of ``job``, the ``n``-th kept job (1-based)."""
        return self._entry(job, n, job.submit - self.origin)

    def entry_text(self, job: TraceJob, n: int) -> tuple[str, str, str, float]:
        """``entry`` as JSON text cut around its subtime, for a job written before the time origin is
        known: (head, tail, profile name, delay), the JSON being ``head + encode(job.submit -
        origin) + tail`` -- exactly ``json.dumps(entry(job, n)[0])`` once :meth:`finish` has run.
        Needs the job's id final (``renumber`` can only become True for text ids)."""
        entry, pname, delay = self._entry(job, n, _HOLE)
        jid = entry.pop("id")
        if entry.pop("subtime") is not _HOLE:
            raise ValueError(f"job {job.id}: its meta sets 'subtime'")
        rest = _encode(entry)
        return f'{{"id": {_encode(jid)}, "subtime": ', (", " + rest[1:]) if entry else "}", pname, delay

    def _entry(self, job: TraceJob, n: int, subtime: Any) -> tuple[dict[str, Any], str, float]:
        opts = self.opts
        res = scale_size(job_res(job, opts), opts)
        settled = self._settle(job, None)
        assert settled is not None, f"job {job.id} was kept, it cannot be dropped now"
        delay = settled[0] / opts.speed
        walltime = settled[1] / opts.speed if settled[1] > 0 else -1.0
        jid = n if self.renumber else int(job.id)
        pname = f"p{jid}" if opts.profiles == "job" else f"d{fmt_number(delay)}"
        entry: dict[str, Any] = {"id": jid, "subtime": subtime, "res": res,
                                 "walltime": walltime if walltime > 0 else -1, "profile": pname}
        if self.overrun is not None and walltime > 0:  # Maui's JOBMAXOVERRUN: Batsim kills at request + overrun
            entry["walltime"] = walltime + self.overrun
            entry["requested_walltime"] = walltime
        if job.id != jid:  # a text id, or renumbered
            entry["original_id"] = str(job.id)
        entry.update(job.meta)
        if "original_id" in entry and entry["original_id"] == str(jid):
            del entry["original_id"]
        return entry, pname, delay


_HOLE = object()  # entry_text's placeholder for the subtime
_encode = json.JSONEncoder().encode  # json.dumps with its default arguments


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

    Streaming (:class:`Cleaner`): besides ``items`` (which the result refers to), this keeps one
    bit per record and the kept ids (about one bit each for dense integer ids); the Batsim job
    dicts (and per-job profiles) are built only while ``Cleaned.jobs`` is iterated.
    """
    if sort:
        items = [i for i in items if isinstance(i, BadRecord)] + sorted(
            (i for i in items if isinstance(i, TraceJob)), key=lambda j: j.submit)
    longest = request_maxima(items) if needs_request_maxima(opts) else None
    order = items
    cleaner = Cleaner(size, opts, strict=strict, extra_drop=extra_drop, no_res_message=no_res_message,
                      tally=tally, longest=longest,
                      replay=lambda: (i for i in order if isinstance(i, TraceJob)))
    for it in items:
        cleaner.feed(it)
    cleaner.finish()
    jobs = KeptJobs(cleaner, items)
    profiles = cleaner.profiles if opts.profiles == "runtime" else JobProfiles(jobs)
    return Cleaned(jobs, profiles, cleaner.origin, cleaner.tally)
