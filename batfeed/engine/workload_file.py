"""Reading a Batsim 4.2 workload file (``Workload::load_from_json``): the jobs kept as :data:`Packed` records.

A converted log's workload is most of what a run holds in memory: read as dicts, CEA-Curie's 312,807 jobs
take about 1.1 kB each.  :func:`load_workload` has ``json`` pack every flat job object into a tuple of its
values behind one shared tuple of keys (:func:`_pack`), and the :class:`~batfeed.engine.workload.Job` keeps
it until something reads its ``json_dict``.  Validation is :mod:`batfeed.engine.workload`'s.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import operator
import sys
import zlib
from pathlib import Path
from typing import Any

from batfeed.engine.workload import (
    CSV_UNSAFE,
    SEP,
    Job,
    Packed,
    Profile,
    Workload,
    _check_job_names,
    parse_job,
    parse_profile,
    resolve_composed,
    unpack,
)
from batfeed.errors import InputError


def _pack(obj: dict[str, Any]) -> Any:
    """``json.load``'s ``object_hook``: a flat object with ``id`` and ``subtime`` (a job) becomes a
    :data:`Packed` record (its profile name interned); any other object, or a job with a nested array or
    object, stays a dict."""
    if "subtime" in obj and "id" in obj:
        name = obj.get("profile")
        if type(name) is str:                # one string per profile name, not one per job (17 MB on Curie)
            obj["profile"] = sys.intern(name)
        values = tuple(obj.values())
        if _flat(values):
            keys = tuple(obj)
            return (_KEYSETS.setdefault(keys, keys),) + values
    return obj


def _flat(values: tuple[Any, ...]) -> bool:
    """No value is an object or an array (a loop: compiled, it beats ``isdisjoint(map(type, ...))``)."""
    for v in values:
        t = type(v)
        if t is dict or t is list or t is tuple:
            return False
    return True


_KEYSETS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """``value`` as plain ``json.load`` gives it: every :data:`Packed` in it unpacked (a profile, or a job
    that fails the fast checks, is validated on this); an object that holds no object or array is itself."""
    t = type(value)
    if t is Packed:
        return unpack(value)
    if t is dict:
        if _flat(tuple(value.values())):
            return value
        return {k: _plain(v) for k, v in value.items()}
    if t is list:
        return [_plain(v) for v in value]
    return value


def load_workload(path: str | Path, name: str) -> Workload:
    """Load ``path`` as Batsim workload ``name`` (w0, w1, …), with Batsim's checks."""
    p = Path(path)
    where = str(path)
    gz = False
    try:
        with open(p, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"          # gzip magic: .json.gz (whatever the file is called)
        with (gzip.open(p, "rt", encoding="utf-8") if gz else open(p, encoding="utf-8")) as fh:
            data = json.load(fh, object_hook=_pack)
    except FileNotFoundError:
        raise InputError("workload file not found", where) from None
    except json.JSONDecodeError as err:
        if err.pos == 0 and err.msg.startswith("Unexpected UTF-8 BOM"):
            raise InputError("the file starts with a UTF-8 byte-order mark, which Batsim 4.2 refuses (\"Invalid "
                             "JSON file: could not be parsed\"): save it without one", where, 1) from None
        raise InputError(f"invalid JSON: {err.msg} (column {err.colno})", where, err.lineno) from None
    except (OSError, EOFError, zlib.error) as err:
        what = "gzip-compressed workload" if gz else "workload"
        raise InputError(f"cannot read {what}: {getattr(err, 'strerror', None) or err}", where) from None
    except UnicodeDecodeError as err:
        raise InputError(f"cannot read workload: not UTF-8 text ({err.reason})", where) from None
    if type(data) is Packed:
        data = unpack(data)
    if not isinstance(data, dict):
        raise InputError("a workload must be a JSON object", where)
    for key in ("nb_res", "jobs", "profiles"):
        if key not in data:
            raise InputError(f"workload has no '{key}' member (Batsim requires it)", where)
    nb_res = data["nb_res"]
    if not isinstance(nb_res, int) or isinstance(nb_res, bool) or nb_res <= 0:
        raise InputError(f"'nb_res' must be a JSON integer > 0 (got {nb_res!r})", where)
    if not isinstance(data["jobs"], list) or not isinstance(data["profiles"], dict):
        raise InputError("'jobs' must be an array and 'profiles' an object", where)
    # Batsim checks every profile, then drops the ones that no static job references.
    profiles = {n: parse_profile(n, _plain(p), where) for n, p in data["profiles"].items()}
    jobs = _static_jobs(data["jobs"], name, profiles, where)
    resolve_composed(profiles, where)
    used = {j.profile for j in jobs}
    todo = [sub for n in used for sub in profiles[n].subs]
    while todo:                      # a composed profile keeps the profiles of its sequence
        prof = todo.pop()
        if prof.name not in used:
            used.add(prof.name)
            todo.extend(prof.subs)
    profiles = {n: prof for n, prof in profiles.items() if n in used}
    text = "\t".join([j.id for j in jobs] + list(used))     # one scan (the ids hold the names), not one per job
    if any(c in text for c in CSV_UNSAFE):
        for j in jobs:
            _check_job_names(name, j.name, j.profile, j.id, where)
    return Workload(name, str(p.resolve()), nb_res, profiles, jobs)


def _static_jobs(raws: list[Any], workload: str, profiles: dict[str, Profile], where: str) -> list[Job]:
    """A workload's jobs in file order, as :func:`parse_job` (``copy=False``, names checked by the caller) makes
    them, duplicate ids refused.

    The usual job (a :data:`Packed` record with an integer or plain string id, JSON numbers, an existing
    profile that is not ``parallel``) passes the same checks here, inline, and keeps its record (rounded when
    it is unpacked, as :func:`parse_job` rounds); any other is unpacked and goes through :func:`parse_job`
    itself, which raises its error: both paths build the same :class:`Job`.  The first repeated id, in file
    order, is refused where it stands (before any later error); it is looked for once, at the end or at an
    error, in a sorted list of the ids: a set of them would be the largest object at the load's peak."""
    jobs: list[Job] = []
    prefix = workload + SEP
    isfinite = math.isfinite
    where_is: dict[tuple[str, ...], tuple[int, int, int, int, int] | None] = {}   # keys -> positions
    for raw in raws:
        job = None
        if type(raw) is Packed:
            keys = raw[0]
            if keys in where_is:
                at = where_is[keys]
            else:                          # id, subtime, res, walltime (0: none, i.e. -1), profile
                pos = {k: i for i, k in enumerate(keys, 1)}
                at = where_is[keys] = ((pos["id"], pos["subtime"], pos["res"], pos.get("walltime", 0), pos["profile"])
                                       if "res" in pos and "profile" in pos else None)
            if at is not None:
                rid = raw[at[0]]
                sid = str(rid) if type(rid) is int else rid if type(rid) is str else None
                if sid is not None and workload not in sid and SEP not in sid:
                    sub, res, pname = raw[at[1]], raw[at[2]], raw[at[4]]
                    wall = raw[at[3]] if at[3] else -1
                    prof = profiles.get(pname) if type(pname) is str else None
                    if ((type(sub) is float or type(sub) is int) and isfinite(sub)
                            and type(res) is int and res >= 0
                            and (type(wall) is float or type(wall) is int) and isfinite(wall)
                            and (wall > 0 or wall == -1)
                            and prof is not None and not prof.cpu):
                        job = Job(prefix + sid, workload, float(sub), res, float(wall), prof, raw)
        if job is None:
            try:
                job = parse_job(_plain(raw), workload, profiles, where, copy=False, check_names=False)
            except Exception:
                _refuse_duplicates(jobs, where)
                raise
        jobs.append(job)
    _refuse_duplicates(jobs, where)
    return jobs


def _refuse_duplicates(jobs: list[Job], where: str) -> None:
    """Raise at the first job whose id an earlier job has (Batsim: "duplicate job id")."""
    ids = sorted([j.id for j in jobs])
    if any(map(operator.eq, ids, itertools.islice(ids, 1, None))):
        seen: set[str] = set()
        for job in jobs:
            if job.id in seen:
                raise InputError(f"duplicate job id '{job.id}'", where)
            seen.add(job.id)
