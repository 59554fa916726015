"""A campaign's inputs: converted traces, generated platforms, shaken and resampled workloads, cached in the
campaign directory (``inputs/``) and shared by every run that uses them.

Every cache entry is written under a temporary name and renamed into place as the last step, so a
killed campaign never leaves a half-written input that a later run would read, and two workers
making the same entry at once both succeed (the contents are equal, the last rename wins).

An entry found damaged (cut short, edited, a file missing: :func:`conversion_problem`, a workload or
platform that does not parse) is never used: it is moved away, made again, and ``note(line)`` says
which file and why.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from batfeed.campaign.checks import filters
from batfeed.campaign.expand import file_sha256
from batfeed.campaign.jsonfile import read_json
from batfeed.campaign.model import MAX_HOSTS, PlatformSpec, TraceSpec
from batfeed.errors import BatfeedError

Note = Callable[[str], None]
CONVERSION = "conversion.json"


@dataclass(frozen=True)
class Converted:
    """A converted trace: its workload, the platform sized by the conversion (None: unknown size)."""

    workload: Path | None           # None: a generated trace (the user model makes the jobs)
    platform: Path | None
    nb_res: int | None
    kept: int


def _tmp_name(final: Path) -> Path:
    return final.with_name(f".tmp-{final.name}-{os.getpid()}-{secrets.token_hex(3)}")


@contextlib.contextmanager
def _atomic(final: Path) -> Iterator[Path]:
    """A temporary path next to ``final`` (same suffix, so ``.gz`` still means gzip) to write; renamed
    to ``final`` when the block ends without an exception, removed in any case."""
    tmp = final.with_name(f".tmp-{os.getpid()}-{secrets.token_hex(3)}-{final.name}")
    try:
        yield tmp
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)


def _quiet(_line: str) -> None:
    pass


def discard(path: Path) -> None:
    """Move a damaged cache entry (file or folder) away at once (a rename), then delete it."""
    gone = path.with_name(f".tmp-damaged-{path.name}-{os.getpid()}-{secrets.token_hex(3)}")
    try:
        os.rename(path, gone)
    except FileNotFoundError:           # another worker moved it first
        return
    if gone.is_dir():
        shutil.rmtree(gone, ignore_errors=True)
    else:
        gone.unlink(missing_ok=True)


def workload_problem(path: Path) -> str | None:
    """Why the cached workload ``path`` cannot be used (its one-line read error, naming it), else None."""
    try:
        read_workload(path)
    except (BatfeedError, OSError, EOFError, ValueError) as err:
        return str(err).splitlines()[0] if str(err) else f"{path}: {type(err).__name__}"
    return None


def read_workload(path: str | Path) -> dict[str, Any]:
    """A Batsim workload JSON, plain or compressed (:func:`batfeed.adapters.workload.load_workload_json`:
    one-line errors naming the file)."""
    from batfeed.adapters.workload import load_workload_json

    return load_workload_json(path)


def write_workload_atomic(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` (one job per line, as the converters do) under a temporary name, then rename."""
    from batfeed.adapters.workload import write_workload

    top = {k: v for k, v in data.items() if k not in ("jobs", "profiles")}
    with _atomic(path) as tmp:
        write_workload(tmp, top, data["jobs"], data.get("profiles", {}))
    return path


def convert_trace(trace: TraceSpec, key: str, inputs: Path, note: Note = _quiet) -> Converted:
    """The trace converted with its options into ``inputs/KEY/`` (reused when there and sound, else
    made again: :func:`conversion_problem`)."""
    final = inputs / key
    meta = final / CONVERSION
    if final.exists():
        info, problem = conversion_problem(final)
        if info is not None:
            return _converted(final, info)
        note(f"{problem}: conversion redone")
        discard(final)
    inputs.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_name(final)
    tmp.mkdir()
    try:
        info = _convert_swf(trace, tmp) if trace.format == "swf" else _convert_json(trace, tmp)
        info.update(trace=str(trace.path), name=trace.name, format=trace.format, options=trace.convert)
        info["sha256"] = {name: file_sha256(tmp / name) for name in (info["workload"], info.get("platform")) if name}
        (tmp / CONVERSION).write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
        try:
            os.rename(tmp, final)
        except OSError:                 # made meanwhile by another process: use that one
            if not meta.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _converted(final, json.loads(meta.read_text(encoding="utf-8")))


def conversion_problem(folder: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``inputs/KEY``'s conversion record, or None and why it cannot be used (naming the file): no or
    an unreadable ``conversion.json``, a file it names missing, or not the file converted (its SHA-256,
    recorded since; for older records, a workload that does not parse)."""
    meta = folder / CONVERSION
    try:
        info, unread = read_json(meta)
    except FileNotFoundError:
        return None, f"{meta}: missing"
    if unread:
        return None, unread
    kept, plat, sums = (info.get(k) for k in ("kept", "platform", "sha256")) if isinstance(info, dict) else [None] * 3
    if not (isinstance(info, dict) and isinstance(info.get("workload"), str) and isinstance(kept, int)
            and (plat is None or isinstance(plat, str)) and (sums is None or isinstance(sums, dict))):
        return None, f"{meta}: not a conversion record (workload, platform, kept)"
    for name in (info["workload"], plat):
        if name is None:
            continue
        path = folder / name
        if not path.is_file():
            return None, f"{path}: missing (named by {CONVERSION})"
        if sums is not None and sums.get(name) != file_sha256(path):
            return None, f"{path}: not the file converted (its SHA-256 differs from {CONVERSION}'s)"
    if sums is None:
        problem = workload_problem(folder / info["workload"])
        if problem:
            return None, problem
    return info, None


def _converted(folder: Path, info: dict[str, Any]) -> Converted:
    plat = info.get("platform")
    return Converted(folder / info["workload"], folder / plat if plat else None, info.get("nb_res"), info["kept"])


def _convert_swf(trace: TraceSpec, out: Path) -> dict[str, Any]:
    from batfeed.adapters.swf import convert_swf

    opts = dict(trace.convert)
    name = opts.pop("filter", None)
    load = opts.pop("load", None)
    if "window" in opts:
        opts["window"] = tuple(opts["window"])
    conv = convert_swf(trace.path, out, name="workload", extra_drop=filters()[name] if name else None,
                       require_kept=True, **opts)
    if load is not None:
        data = read_workload(conv.workload_path)
        scale_load(data["jobs"], load)
        write_workload_atomic(conv.workload_path, data)
    return {"workload": conv.workload_path.name, "platform": conv.platform_path.name, "nb_res": conv.nb_res,
            "kept": conv.report.get("kept"), "read": conv.report.get("read"), "dropped": conv.report.get("dropped")}


def _convert_json(trace: TraceSpec, out: Path) -> dict[str, Any]:
    from batfeed.platforms.generate import write_homogeneous_platform

    data = read_workload(trace.path)
    limit = trace.convert.get("max_jobs")
    if limit is not None:       # the first N jobs in submission order, as Batsim submits them
        data["jobs"] = sorted(data["jobs"], key=lambda j: (float(j.get("subtime", 0)), str(j.get("id"))))[:limit]
        used = {j.get("profile") for j in data["jobs"]}
        data["profiles"] = {k: v for k, v in data.get("profiles", {}).items() if k in used}
    if trace.convert.get("load") is not None:
        scale_load(data["jobs"], trace.convert["load"])
    write_workload_atomic(out / "workload.json", data)
    nb_res = data.get("nb_res")
    plat = None
    if isinstance(nb_res, int) and not isinstance(nb_res, bool) and nb_res > 0:
        plat = write_homogeneous_platform(out / "workload_platform.xml", nb_res).name
    return {"workload": "workload.json", "platform": plat, "nb_res": nb_res, "kept": len(data["jobs"])}


def scale_load(jobs: list[dict[str, Any]], load: float) -> None:
    """Trace option ``load = F``: every submit time divided by F (arrival rate × F, the offered load × F
    on the same platform); sizes, run times, walltimes and recorded waits unchanged.  A submit time
    that would overflow is a :class:`BatfeedError`."""
    for job in jobs:
        t = float(job["subtime"]) / load
        if not math.isfinite(t):
            raise BatfeedError(f"load = {load:g}: job {job.get('id')}'s submit time {job['subtime']} / {load:g} "
                               "overflows: give a larger load factor")
        job["subtime"] = t


def platform_path(plat: PlatformSpec, conv: Converted, inputs: Path, where: str, note: Note = _quiet) -> Path:
    """The platform file of a run: the conversion's, a generated cluster, or the given XML."""
    if plat.kind == "xml":
        return Path(plat.value)
    if plat.kind == "trace":
        if conv.platform is None:
            raise BatfeedError(f"{where}: " + ("a generated trace" if conv.workload is None else "the workload gives "
                               "no nb_res, so it") + " has no platform of its own: use nb_machines or xml")
        return conv.platform
    if plat.kind == "scale":
        if conv.nb_res is None:
            raise BatfeedError(f"{where}: the workload gives no nb_res to scale: use nb_machines or xml")
        size = conv.nb_res * plat.value
        if not size <= MAX_HOSTS:
            raise BatfeedError(f"{where}: {conv.nb_res} hosts × {plat.value:g} is more than {MAX_HOSTS} hosts")
        n = max(1, math.ceil(size - 1e-9))   # rounded up, as convert's size_scale
    else:
        n = int(plat.value)
    return generated_platform(n, inputs, note)


_SOUND: set[tuple[str, int, int]] = set()     # generated platforms found sound: (path, size, mtime)


def generated_platform(n: int, inputs: Path, note: Note = _quiet) -> Path:
    """``inputs/platforms/nN.xml``: N homogeneous hosts (``batfeed platform N``); made again when the
    file there does not parse as a platform."""
    from batfeed.platforms.generate import write_homogeneous_platform

    final = inputs / "platforms" / f"n{n}.xml"
    if final.is_file():
        problem = _xml_problem(final)
        if problem is None:
            return final
        note(f"{final}: {problem}: platform made again")
        discard(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with _atomic(final) as tmp:
        write_homogeneous_platform(tmp, n)
    return final


def _xml_problem(path: Path) -> str | None:
    import xml.etree.ElementTree as ET

    st = path.stat()
    memo = (str(path), st.st_size, st.st_mtime_ns)
    if memo in _SOUND:
        return None
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as err:
        return f"not a platform XML ({err})"
    if root.tag != "platform":
        return f"not a platform XML (root <{root.tag}>)"
    _SOUND.add(memo)
    return None


def shake_jobs(jobs: list[dict[str, Any]], shake: float, seed: int) -> None:
    """Input shaking (Tsafrir, Ouaknine, Feitelson, "Reducing performance evaluation sensitivity and
    variability by input shaking", MASCOTS 2007): each job's submit time moves by an independent
    amount drawn uniformly in [-shake, +shake] from ``numpy.random.default_rng(seed)``, in the
    workload's job order, clipped at 0.  When every submit time is a whole number of seconds (SWF
    conversions), the shaken times are rounded to whole seconds too.  Job ids and profiles are
    unchanged; Batsim and the engine submit jobs by (subtime, id), so the order follows the new times."""
    if not jobs:
        return
    sub = np.array([float(j["subtime"]) for j in jobs])
    new = np.maximum(sub + np.random.default_rng(seed).uniform(-shake, shake, size=len(sub)), 0.0)
    if np.all(sub == np.floor(sub)):
        new = np.rint(new)
    for job, t in zip(jobs, new.tolist(), strict=True):
        job["subtime"] = t


def _cached(dest: Path, note: Note) -> bool:
    """``dest`` is a sound cached workload: its SHA-256 is the one recorded beside it when it was made
    (``dest.sha256``; hashing costs a few % of parsing it), or, with no record (made before, or the
    writer was killed between the two renames), it parses, and the record is written now.  A damaged one
    is moved away, with a note."""
    if not dest.is_file():
        return False
    side = dest.with_name(dest.name + ".sha256")
    try:
        recorded: str | None = side.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        recorded = None
    if recorded is not None:
        if recorded == file_sha256(dest):
            return True
        problem: str | None = f"{dest}: not the workload made here (its SHA-256 differs from {side.name}'s)"
    else:
        problem = workload_problem(dest)
        if problem is None:
            _seal(dest)
            return True
    note(f"{problem}: workload made again")
    discard(dest)
    side.unlink(missing_ok=True)
    return False


def _seal(dest: Path) -> Path:
    """Record ``dest``'s SHA-256 beside it (``dest.sha256``, atomically), for :func:`_cached`."""
    with _atomic(dest.with_name(dest.name + ".sha256")) as tmp:
        tmp.write_text(file_sha256(dest) + "\n", encoding="utf-8")
    return dest


def shaken_workload(source: str | Path, shake: float, seed: int, dest: str | Path, note: Note = _quiet) -> Path:
    """``source`` shaken with ``seed`` (:func:`shake_jobs`), cached at ``dest`` (made once, atomically;
    again when found damaged)."""
    dest = Path(dest)
    if _cached(dest, note):
        return dest
    data = read_workload(source)
    shake_jobs(data["jobs"], shake, seed)
    data["batfeed_shake"] = {"seconds": shake, "seed": seed, "source": Path(source).name}
    dest.parent.mkdir(parents=True, exist_ok=True)
    return _seal(write_workload_atomic(dest, data))


def derived_workload(source: str | Path, weeks: int, shake: float, seed: int, dest: str | Path, *,
                     method: str = "weekly", load: float = 1.0, rb_npw: float = 0.0, note: Note = _quiet) -> Path:
    """``source`` resampled to ``weeks`` weeks with ``seed`` — ``method`` "weekly": the online-tuning
    paper's weekly user resampling (:mod:`batfeed.adapters.resample`); "permute": its authors' sampler,
    a permutation of the log's interior weeks per user, as long as the log (``weeks`` unused;
    :mod:`batfeed.adapters.resample_permute`); "users": Zakay & Feitelson's
    user-based resampling with load factor ``load`` and ``rb_npw`` rare-behaviour arrivals per week (the
    detected flurries; :mod:`batfeed.users.zf_resample`) — then shaken
    by ``shake`` s with the same seed (:func:`shake_jobs`); cached at ``dest`` (gzip; made once, atomically;
    again when found damaged)."""
    from batfeed.adapters.resample import resample_weekly, write_workload_file

    dest = Path(dest)
    if _cached(dest, note):
        return dest
    if method == "users":
        from batfeed.users.zf_resample import resample_users

        data = resample_users(read_workload(source), weeks, seed, load=load, rb_npw=rb_npw,
                              rb="detect" if rb_npw > 0 else None)
    elif method == "permute":
        from batfeed.adapters.resample_permute import resample_permute

        data = resample_permute(source, seed)  # the file: named in errors, its sha256 recorded
    else:
        data = resample_weekly(read_workload(source), weeks, seed)
    if shake > 0:
        shake_jobs(data["jobs"], shake, seed)
        data["batfeed_shake"] = {"seconds": shake, "seed": seed}
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _atomic(dest) as tmp:
        write_workload_file(tmp, data)
    return _seal(dest)
