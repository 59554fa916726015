"""Batsim 4.2 workload JSON: jobs, profiles and their validation (reference: batsim-protocol.md §6, §8, §12);
reading a file is :mod:`batfeed.engine.workload_file`.

The embedded engine models ``delay``, ``parallel``, ``parallel_homogeneous`` and
``parallel_homogeneous_total`` (computation and communication, :mod:`batfeed.engine.ptask`) and
``composed`` profiles (:mod:`batfeed.engine.executor`).  SMPI, usage traces, PFS, data staging and
send/recv profiles are valid Batsim input that only real Batsim can simulate, and are refused with
:class:`~batfeed.errors.UnsupportedInput`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from batfeed.errors import InputError, UnsupportedInput

SEP = "!"
MODELLED = ("delay", "parallel", "parallel_homogeneous", "parallel_homogeneous_total", "composed")
LEGACY = {"msg_par": "parallel", "msg_par_hg": "parallel_homogeneous",
          "msg_par_hg_tot": "parallel_homogeneous_total"}
KNOWN_UNMODELLED = ("parallel_homogeneous_pfs", "data_staging", "send", "recv",
                    "smpi", "usage_trace")
USE_BATSIM = "the embedded engine cannot model it: run this workload with real Batsim"
# Batsim 4.2 writes job names, workload and profile names unquoted into _jobs.csv (export.cpp,
# JobsTracer::write_job): with one of these characters the file no longer parses, so they are refused.
CSV_UNSAFE = (",", '"', "\n", "\r")

# Job states (names as in Batsim's protocol and _jobs.csv)
NOT_SUBMITTED = "NOT_SUBMITTED"
SUBMITTED = "SUBMITTED"
RUNNING = "RUNNING"
SUCCESS = "COMPLETED_SUCCESSFULLY"
FAILED = "COMPLETED_FAILED"
WALLTIME = "COMPLETED_WALLTIME_REACHED"
KILLED = "COMPLETED_KILLED"
REJECTED = "REJECTED"
FINAL_STATES = (SUCCESS, FAILED, WALLTIME, KILLED, REJECTED)


def r6(x: float) -> float:
    """A double as Batsim writes it in protocol messages (``"%6f"``, protocol.hpp): 6 decimals."""
    return x if x.is_integer() else float(f"{x:f}")


def round_json(value: Any) -> Any:
    """``value`` with every JSON double rounded like Batsim's protocol writer (ints unchanged)."""
    if isinstance(value, float):
        return r6(value)
    if isinstance(value, dict):
        return {k: round_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [round_json(v) for v in value]
    return value


def _wire(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as a scheduler receives it from Batsim (the same object when nothing is rounded)."""
    return round_json(data) if _needs_rounding(data) else data


def _needs_rounding(value: Any) -> bool:
    t = type(value)
    if t is float:
        return not value.is_integer() and float(f"{value:f}") != value
    if t is dict:
        for v in value.values():
            tv = type(v)
            if (tv is float and not v.is_integer()) or tv is dict or tv is list:
                if _needs_rounding(v):
                    return True
        return False
    if t is list:
        for v in value:
            if _needs_rounding(v):
                return True
    return False


#: A flat job object as :mod:`batfeed.engine.workload_file` reads it: a tuple ``(keys, value, value, …)``, one key tuple
#: shared by every job with the same keys (its ``_pack``).  152 B instead of a 464-B dict for a converted SWF
#: job (14 members): the loaded workload is most of a run's memory.  JSON gives no tuples, so a tuple in the
#: parsed document is always one of these.  ``Job.json_dict`` unpacks it, with the engine's full id, when
#: something reads it (:func:`unpack`).
Packed = tuple


def unpack(raw: Packed, full_id: str | None = None) -> dict[str, Any]:
    """The dict ``json.load`` would have given for ``raw`` (last value of a repeated key, at its first
    position), its ``id`` replaced by ``full_id`` when given."""
    data = dict(zip(raw[0], raw[1:], strict=True))
    if full_id is not None:
        data["id"] = full_id
    return data


@dataclass(slots=True)
class Profile:
    """One profile; ``work`` is the delay (s) or the per-host / total flop amount; ``json`` is the
    object as read, ``wire`` as Batsim sends it (doubles with 6 decimals).  ``com``: a homogeneous
    profile's bytes per pair, or a ``parallel`` profile's matrix (with ``cpu``, its flops per rank);
    ``seq``/``repeat``/``subs``: a ``composed`` profile's names, repetitions and resolved profiles."""

    name: str
    type: str
    work: float
    ret: int
    json: dict[str, Any]
    wire: dict[str, Any]
    com: Any = 0.0
    cpu: tuple[float, ...] = ()
    seq: tuple[str, ...] = ()
    repeat: int = 1
    subs: tuple[Profile, ...] = ()

    def matrices(self, n: int) -> tuple[list[float], list[float] | None]:
        """Flops per rank and bytes per rank pair (row-major; None: no communication) on ``n`` ranks
        (``generate_parallel_task``, ``generate_parallel_homogeneous``, ``..._total_amount``)."""
        if self.type == "parallel":
            return list(self.cpu), list(self.com)
        cpu, com = (self.work, self.com) if self.type == "parallel_homogeneous" else (self.work / n, self.com / n)
        if com > 0:
            return [cpu] * n, [0.0 if i == j else com for i in range(n) for j in range(n)]
        return [cpu] * n, None

    def duration(self, nb_hosts: int, speed: float) -> float:
        """Execution time on ``nb_hosts`` hosts of ``speed`` flop/s (before walltime)."""
        if self.type == "delay":
            return self.work
        if self.type == "parallel_homogeneous":
            return self.work / speed
        return self.work / (nb_hosts * speed)  # parallel_homogeneous_total


class Job:
    """A job and its simulation state (times are simulated seconds).

    Field names follow pybatsim's ``Job`` where a scheduler reads them (``id``, ``submit_time``,
    ``requested_time``, ``requested_resources``, ``profile`` (the name), ``profile_dict``,
    ``json_dict``, ``allocation``, ``job_state``, ``finish_time``, ``return_code``, ``progress``), so
    the direct driver (:mod:`batfeed.engine.direct`) hands these very objects to batfeed's schedulers;
    the engine's own state is ``state`` (Batsim's job state name), ``start``, ``runtime``, ``intervals``.
    ``subtime``/``walltime`` are the exact values the engine simulates with; ``submit_time``/
    ``requested_time`` are what a scheduler reads in Batsim's messages (doubles with 6 decimals).
    """

    __slots__ = ("id", "workload", "subtime", "walltime", "submit_time", "requested_resources",
                 "requested_time", "prof", "profile", "_js", "state", "start", "runtime", "intervals",
                 "return_code", "metadata", "kill_requested", "job_state", "allocation", "finish_time",
                 "progress")

    def __init__(self, id: str, workload: str, subtime: float, requested_resources: int,
                 walltime: float, prof: Profile, json_dict: dict[str, Any] | Packed):
        self.id = id                            # "w0!1"
        self.workload = workload                # id = workload + "!" + name
        self.subtime = subtime
        self.walltime = walltime                # -1 = none
        self.submit_time = r6(subtime)
        self.requested_resources = requested_resources
        self.requested_time = r6(walltime)
        self.prof = prof
        self.profile = prof.name
        self._js = json_dict
        self.state = NOT_SUBMITTED
        self.start = -1.0
        self.runtime = -1.0
        self.intervals: list[tuple[int, int]] | tuple[()] = ()   # set by EXECUTE_JOB
        self.return_code = 0
        self.metadata = ""
        self.kill_requested = False
        self.job_state: Any = None              # pybatsim's Job.State, kept by the direct driver
        self.allocation: Any = None             # set by the scheduler (ProcSet)
        self.finish_time: float | None = None
        self.progress: Any = None

    @property
    def name(self) -> str:
        """The part of the id after ``workload!`` (the ``_jobs.csv`` job_id)."""
        return self.id[len(self.workload) + 1:]

    @property
    def json_dict(self) -> dict[str, Any]:
        """The job's JSON object as Batsim forwards it (full id, doubles with 6 decimals); a loaded
        :data:`Packed` record is unpacked (and rounded) on the first read and kept."""
        js = self._js
        if isinstance(js, tuple):                # a Packed record (JSON itself gives no tuples)
            data = self._js = _wire(unpack(js, self.id))
            return data
        return js

    @json_dict.setter
    def json_dict(self, value: dict[str, Any]) -> None:
        self._js = value

    @property
    def profile_dict(self) -> dict[str, Any]:
        return self.prof.wire

    @property
    def alloc(self) -> str:
        """Batsim's hyphen form of the allocation (``0-3 5``)."""
        return " ".join([f"{a}-{b}" if b > a else str(a) for a, b in self.intervals])

    def __repr__(self) -> str:
        return f"<Job {self.id} sub={self.submit_time:g} res={self.requested_resources} state={self.state}>"


@dataclass(slots=True)
class Workload:
    name: str
    path: str
    nb_res: int
    profiles: dict[str, Profile]
    jobs: list[Job]


def parse_profile(name: str, data: Any, where: str) -> Profile:
    """Validate one profile the way Batsim does at load or REGISTER_PROFILE time."""
    if not isinstance(data, dict):
        raise InputError(f"profile '{name}' is not a JSON object", where)
    ptype = data.get("type")
    if not isinstance(ptype, str):
        raise InputError(f"profile '{name}' has no string 'type'", where)
    ret = data.get("ret", 0)
    if not isinstance(ret, int) or isinstance(ret, bool):
        raise InputError(f"profile '{name}': 'ret' must be an integer", where)
    if ptype == "delay":
        delay: Any = data.get("delay")
        if not _is_number(delay) or delay <= 0:
            raise InputError(f"profile '{name}': 'delay' must be a number > 0 (got {delay!r})", where)
        return Profile(name, ptype, float(delay), ret, data, _wire(data))
    if ptype in ("parallel_homogeneous", "parallel_homogeneous_total"):
        cpu: Any = data.get("cpu")
        com: Any = data.get("com")
        if not _is_number(cpu) or cpu < 0 or not _is_number(com) or com < 0:
            raise InputError(f"profile '{name}' ({ptype}): 'cpu' and 'com' must be numbers >= 0", where)
        return Profile(name, ptype, float(cpu), ret, data, _wire(data), com=float(com))
    if ptype == "parallel":
        cpu, com = data.get("cpu"), data.get("com")
        if not isinstance(cpu, list) or not cpu or not all(_is_number(x) and x >= 0 for x in cpu):
            raise InputError(f"profile '{name}' (parallel): 'cpu' must be a non-empty array of numbers >= 0", where)
        n = len(cpu)
        if not isinstance(com, list) or len(com) != n * n or not all(_is_number(x) and x >= 0 for x in com):
            raise InputError(f"profile '{name}' (parallel) is incoherent: 'com' must be an array of {n}x{n} "
                             "numbers >= 0", where)
        return Profile(name, ptype, 0.0, ret, data, _wire(data), com=tuple(float(x) for x in com),
                       cpu=tuple(float(x) for x in cpu))
    if ptype == "composed":
        repeat, seq = data.get("repeat", 1), data.get("seq")
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat <= 0:
            raise InputError(f"profile '{name}' (composed): 'repeat' must be an integer > 0 (got {repeat!r})", where)
        if not isinstance(seq, list) or not seq or not all(isinstance(x, str) for x in seq):
            raise InputError(f"profile '{name}' (composed): 'seq' must be a non-empty array of profile names", where)
        return Profile(name, ptype, 0.0, ret, data, _wire(data), seq=tuple(seq), repeat=repeat)
    if ptype in LEGACY:
        raise InputError(f"profile '{name}': type '{ptype}' is a pre-3.0 name that Batsim 4.2 refuses "
                         f"(\"no 'trace' field\"); rename it '{LEGACY[ptype]}'", where)
    if ptype in KNOWN_UNMODELLED:
        raise UnsupportedInput(f"profile '{name}' has type '{ptype}': {USE_BATSIM}", where)
    raise InputError(f"profile '{name}' has unknown type '{ptype}' (Batsim 4.2 aborts: "
                     f"\"profile has no 'trace' field\")", where)


def resolve_composed(profiles: dict[str, Profile], where: str, names: Any = None) -> None:
    """``Workload::check_validity``: the ``seq`` of each composed profile (of ``names``, default all) names
    profiles of ``profiles``; they become its ``subs``.  A profile that contains itself is refused (Batsim
    would recurse until it crashes)."""
    chosen = [profiles[n] for n in names] if names is not None else list(profiles.values())
    chosen = [prof for prof in chosen if prof.type == "composed"]
    for prof in chosen:
        for sub in prof.seq:
            if sub not in profiles:
                raise InputError(f"invalid composed profile '{prof.name}': the used profile '{sub}' does not "
                                 "exist (Batsim aborts)", where)
        prof.subs = tuple(profiles[sub] for sub in prof.seq)
    for prof in chosen:
        path = [prof]
        stack = [iter(prof.subs)]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                path.pop()
            elif any(nxt is p for p in path):
                at = next(i for i, p in enumerate(path) if p is nxt)
                cycle = " -> ".join(p.name for p in path[at:]) + f" -> {nxt.name}"
                raise InputError(f"composed profile '{nxt.name}' contains itself ({cycle}): Batsim would recurse "
                                 "forever", where)
            elif nxt.subs:
                path.append(nxt)
                stack.append(iter(nxt.subs))


def check_csv_name(text: str, what: str, where: str) -> None:
    """Refuse a name that Batsim would write unquoted into ``_jobs.csv`` and break it (:data:`CSV_UNSAFE`)."""
    for c in CSV_UNSAFE:
        if c in text:
            raise InputError(f"{what} {json.dumps(text)} contains {json.dumps(c)}: Batsim 4.2 writes it unquoted "
                             "into _jobs.csv, which then cannot be parsed; rename it", where)


def split_job_id(raw: Any, workload: str, where: str) -> tuple[str, str]:
    """Apply Batsim's id rule: ids without the workload name get ``wl!`` prepended."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise InputError(f"job id {raw!r} must be a string or an integer", where)
    sid = str(raw)
    if workload not in sid:
        if SEP in sid:
            raise InputError(f"job id '{sid}' contains '{SEP}' but not the workload name '{workload}' "
                             "(Batsim aborts; never use '!' in job names)", where)
        return f"{workload}{SEP}{sid}", sid
    parts = sid.split(SEP)
    if len(parts) != 2 or parts[0] != workload or not parts[1]:
        raise InputError(f"job id '{sid}' contains the workload name '{workload}' but is not of the form "
                         f"'{workload}{SEP}NAME' (Batsim aborts on it)", where)
    return sid, parts[1]


def parse_job(data: Any, workload: str, profiles: dict[str, Profile], where: str, copy: bool = True,
              check_names: bool = True) -> Job:
    """Validate one job JSON object (static or dynamically registered); ``copy=False`` keeps ``data``
    itself as the job's JSON (its id rewritten), which a loader that drops its own copy can afford;
    ``check_names=False`` leaves the CSV check of the names to the caller (a loader checks them at once)."""
    if not isinstance(data, dict):
        raise InputError("a job is not a JSON object", where)
    if "id" not in data:
        raise InputError("a job has no 'id'", where)
    full_id, name = split_job_id(data["id"], workload, where)
    ctx = f"job {full_id}: "
    sub: Any = data.get("subtime")
    if not _is_number(sub):
        raise InputError(ctx + f"'subtime' must be a number (got {sub!r})", where)
    res = data.get("res")
    if not isinstance(res, int) or isinstance(res, bool) or res < 0:
        raise InputError(ctx + f"'res' must be a JSON integer >= 0 (got {res!r})", where)
    wall = data.get("walltime", -1)
    if not _is_number(wall) or (wall <= 0 and wall != -1):
        raise InputError(ctx + f"'walltime' must be -1 or > 0 (got {wall!r})", where)
    pname = data.get("profile")
    if not isinstance(pname, str):
        raise InputError(ctx + "'profile' must be a string", where)
    if pname not in profiles:
        raise InputError(ctx + f"profile '{pname}' does not exist in workload '{workload}'", where)
    prof = profiles[pname]
    if prof.cpu and res != len(prof.cpu):          # a parallel profile: one rank per resource
        raise InputError(ctx + f"requests {res} resources but its parallel profile '{pname}' has {len(prof.cpu)} "
                         "(Batsim aborts)", where)
    if check_names:
        _check_job_names(workload, name, pname, full_id, where)
    js = dict(data) if copy else data
    js["id"] = full_id
    if _needs_rounding(js):
        js = round_json(js)
    return Job(full_id, workload, float(sub), res, float(wall), profiles[pname], js)


def _check_job_names(workload: str, name: str, profile: str, full_id: str, where: str) -> None:
    check_csv_name(name, "job id", where)
    check_csv_name(workload, f"job {json.dumps(full_id)}: workload name", where)
    check_csv_name(profile, f"job {json.dumps(full_id)}: profile name", where)


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))
