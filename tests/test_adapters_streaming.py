"""Streaming conversion (adapters/swf.py, common.py ``Cleaner``) against a straightforward reference.

The reference below is the materialising implementation the streaming one replaced: every record
read into a list, one TraceJob per record, the kept jobs as a list, one dict per Batsim job, the
workload text joined whole.  Both must write the same bytes (workload, platform, report) and raise
the same ``--strict`` error, on small traces with ties, unsorted submits (earliest kept submit in
the middle), duplicate ids, corrupt lines, filters, ``max_jobs`` and the "max"/"queue" walltime
fallbacks; ``clean_jobs`` (other formats) is compared on text ids, including renumbering.
The last tests check that a conversion's memory does not grow with the number of jobs.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from batfeed.adapters.cleaning import IdSet, _filter_reason, clean_jobs, job_res, scale_size
from batfeed.adapters.common import (
    BENIGN,
    BadRecord,
    ConvertOptions,
    TraceJob,
    _fallback_spec,
    fmt_number,
    is_int_text,
    trace_stem,
)
from batfeed.adapters.report import Tally
from batfeed.adapters.swf import (
    _COLUMNS,
    _NUMBER,
    EPOCH_THRESHOLD,
    SIZE_SOURCES,
    CorruptLine,
    SwfRecord,
    _header_int,
    _job_number,
    _no_procs,
    _parse_line,
    _to_job,
    convert_swf,
    read_machines,
    read_swf,
)
from batfeed.adapters.workload import write_workload
from batfeed.platforms.generate import homogeneous_platform_xml, write_homogeneous_platform
from hypothesis import given, settings
from hypothesis import strategies as st

from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data"


# --- the reference: the materialising implementation -----------------------------------------------


def _ref_clean(items: list, size: int, opts: ConvertOptions, *, strict: bool = False, extra_drop: Any = None,
               no_res_message: Any = None, sort: bool = False) -> tuple[list[dict], dict, float, Tally]:
    tally = Tally()
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
    what = "processors" if opts.unit == "procs" else "nodes"
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
        found = None
        if not it.ran:
            found = "never_started", f"never started (status {it.status})"
        elif not math.isfinite(it.submit):
            found = "bad_submit_time", f"submit time {it.submit} is not a finite number"
        elif res <= 0:
            found = f"no_{what}", (no_res_message(it.raw) if no_res_message
                                   else f"no {what} (procs {it.procs}, nodes {it.nodes})")
        elif res > size:
            found = "larger_than_machine", f"needs {res} {what}, more than the platform's {size}"
        elif it.run < 0 or not math.isfinite(it.run):
            found = "negative_runtime", f"negative or unknown run time {fmt_number(it.run)}"
        elif it.id in seen:
            found = "duplicate_id", f"duplicate job id (first kept on line {seen[it.id]})"
        found = found or (extra_drop and extra_drop(it.raw, size))
        if found:
            if strict and found[0] not in BENIGN:
                raise InputError(f"job {it.id}: {found[1]}", it.path, it.line)
            tally.drop(found[0], it.line, it.id, it.path)
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
                        "max": longest.get(None, -1.0), "queue": longest.get(it.queue, longest.get(None, -1.0))}[kind]
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
        if job.id != jid:
            entry["original_id"] = str(job.id)
        entry.update(job.meta)
        if "original_id" in entry and entry["original_id"] == str(jid):
            del entry["original_id"]
        jobs.append(entry)
    return jobs, profiles, origin, tally


def _ref_write_workload(path: Path, top: dict, jobs: list[dict], profiles: dict) -> None:
    with path.open("w", encoding="utf-8") as out:
        out.write("{\n")
        for key, value in top.items():
            out.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
        out.write('  "jobs": [')
        out.write(",".join(f"\n    {json.dumps(job)}" for job in jobs))
        out.write('\n  ],\n  "profiles": {')
        out.write(",".join(f"\n    {json.dumps(n)}: {json.dumps(p)}" for n, p in profiles.items()))
        out.write("\n  }\n}\n")


def _reference_convert_swf(trace: Path, out_dir: Path, *, strict: bool = False, profiles: str = "runtime",
                           nb_res: int | None = None, size_from: str = "procs", extra_drop: Any = None,
                           extended: bool = False, machines: Path | None = None, **options: Any) -> None:
    opts = ConvertOptions(profiles=profiles, **options)
    opts.check()
    path = str(trace)
    items: list = []
    header, records = read_swf(trace, on_corrupt=items.append, extended=extended)
    items.extend(_to_job(rec, path) for rec in records)
    if opts.unit == "nodes":
        size_from = "nodes"
        if opts.procs_per_node is None and (mp := _header_int(header, "MaxProcs")) and (
                mn := _header_int(header, "MaxNodes")):
            opts.procs_per_node = max(1, mp // mn)
    size, size_src = nb_res, "argument"
    if size is None and machines is not None:
        size_src = machines.name
        size = sum(n if opts.unit == "nodes" else n * c for _, n, c in read_machines(machines))
    if size is None:
        size_src = SIZE_SOURCES[size_from]
        size = _header_int(header, size_src)
    if size is None:
        size_src = "max_job"
        size = max((job_res(r, opts) for r in items if isinstance(r, TraceJob)), default=0)
        if size <= 0:
            raise InputError(f"no {SIZE_SOURCES[size_from]} header and no job with processors: pass nb_res", path)
    size = scale_size(size, opts)
    jobs, profs, origin, tally = _ref_clean(items, size, opts, strict=strict, extra_drop=extra_drop,
                                            no_res_message=_no_procs)
    unix = _header_int(header, "UnixStartTime")
    if unix is None and origin > EPOCH_THRESHOLD:
        unix = 0
    top: dict[str, Any] = {"nb_res": size, "swf_origin": origin}
    if unix is not None:
        top["unix_start"] = unix + origin
    top["swf_header"] = header
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = trace_stem(trace)
    _ref_write_workload(out_dir / f"{stem}.json", top, jobs, profs)
    (out_dir / f"{stem}_platform.xml").write_text(homogeneous_platform_xml(size), encoding="utf-8")
    report = tally.report(path, len(items), len(jobs), nb_res=size, platform_size_from=size_src,
                          options=opts.summary())
    (out_dir / f"{stem}_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def _same_as_reference(trace: Path, tmp_path: Path, **kwargs: Any) -> dict:
    """Convert with both; assert identical bytes (or identical errors, no output); return the report."""
    new, ref = tmp_path / "new", tmp_path / "ref"
    try:
        _reference_convert_swf(trace, ref, **kwargs)
    except InputError as err:
        with pytest.raises(InputError) as got:
            convert_swf(trace, new, **kwargs)
        assert (str(got.value), got.value.path, got.value.line) == (str(err), err.path, err.line)
        assert not new.exists()
        return {"error": str(err)}
    result = convert_swf(trace, new, **kwargs)
    names = sorted(p.name for p in ref.iterdir())
    assert sorted(p.name for p in new.iterdir()) == names
    for name in names:
        assert (new / name).read_bytes() == (ref / name).read_bytes(), name
    return result.report


# --- fixtures ---------------------------------------------------------------------------------------

HEADER = "; Version: 2.2\n; MaxProcs: 16\n; MaxNodes: 8\n; UnixStartTime: 1000000000\n"


def _line(jid: Any, submit: Any, run: Any = 10, procs: Any = 1, req: Any = 100, status: int = 1, user: int = 1,
          queue: int = 1, extra: str = "") -> str:
    return f"{jid} {submit} 0 {run} {procs} -1 -1 {procs} {req} -1 {status} {user} 1 -1 {queue} -1 -1 -1{extra}\n"


TIES = HEADER + "".join(_line(i, 100 * (i // 3), run=i % 4 * 7, req=-1 if i % 5 == 0 else 30, queue=i % 3)
                        for i in range(1, 16))
# earliest kept submit in the middle (line 5), after a job dropped with an earlier submit (line 4)
UNSORTED = HEADER + (_line(1, 500) + _line(2, 400, req=-1, queue=2) + _line(3, 700, run=0) + _line(4, 50, procs=0)
                     + _line(5, 300, run=250, req=-1, queue=1) + _line(6, 300.5, run=5.5) + _line(7, 650, req=-1)
                     + _line(8, 300, run=40, req=20, queue=2))
DUPLICATES = HEADER + (_line(7, 10) + _line(3, 20) + _line(7, 30, run=5) + _line(3, 5) + _line(9, 40, procs=32)
                       + _line(9, 50, run=999, req=-1) + _line(9, 60) + _line(1.0, 70) + _line(1, 80))
BAD_LINES = HEADER + (_line(1, 0) + "2 10 0 50 4 -1 -1 4 100\n" + _line(3, 20, run=-1)
                      + "4 x 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n" + _line(5, 30, req=-1, queue=4)
                      + _line(6, 25, run=300, req=-1, queue=5) + "; a late comment\n"
                      + "7 1_0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n" + _line(8, 40, run=1e400))
NO_HEADER = (_line(1, 10, procs=3, req=-1) + _line(2, 5, procs=5) + _line(3, 20, procs=0) + _line(2, 30)
             + _line(4, 1, run=77, req=-1, queue=2))
ALEA = ("; MaxProcs: 64\n"
        + _line(1, 1356994800, run=100, procs=2, extra=" {1,1} q_short 1:ppn=2")
        + _line(2, 1356994801, run=9000, procs=4, req=-1, extra=" {2,3,4,5} q_long 2:ppn=2")
        + _line(3, 1356994700, run=50, procs=2, req=7200, extra=" {1,2} q_long 2:ppn=1")
        + _line(4, 1356994802, run=30, procs=1, req=-1, extra=" {6} q_short")
        + _line(5, 1356994803, run=30, procs=8, req=-1, extra=" x y"))

TRACES = {"ties": TIES, "unsorted": UNSORTED, "duplicates": DUPLICATES, "bad_lines": BAD_LINES,
          "no_header": NO_HEADER, "alea": ALEA}

OPTIONS: list[dict[str, Any]] = [
    {},
    {"strict": True},
    {"walltime_fallback": "max"},
    {"walltime_fallback": "queue", "over_request": "drop"},
    {"walltime_fallback": "queue", "over_request": "cap", "profiles": "job"},
    {"walltime_fallback": "max", "over_request": "raise", "strict": True},
    {"walltime_fallback": "2x", "zero_runtime": "drop", "max_jobs": 3},
    {"walltime_fallback": "runtime", "statuses": ["1"], "users": ["1", "2"], "window": (20, 600)},
    {"unit": "nodes", "speed": 2.0, "size_scale": 1.5, "profiles": "job"},
    {"nb_res": 4, "origin": 0},
    {"max_jobs": 0},
    {"extended": True, "walltime_fallback": "queue"},
    {"extended": True, "strict": True, "walltime_fallback": "600"},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("trace", list(TRACES))
def test_swf_streaming_is_byte_identical_to_the_reference(trace: str, options: dict, tmp_path: Path) -> None:
    path = tmp_path / f"{trace}.swf"
    path.write_text(TRACES[trace])
    _same_as_reference(path, tmp_path, **options)


def test_fixture_traces_exercise_what_they_claim(tmp_path: Path) -> None:
    def report(trace: str, **kw: Any) -> dict:
        path = tmp_path / f"{trace}.swf"
        path.write_text(TRACES[trace])
        return _same_as_reference(path, tmp_path / trace / str(len(kw)), **kw)

    ties = report("ties")
    assert ties["warnings"].get("submit_not_sorted") is None and ties["modified"]["missing_request"] == 3
    unsorted = report("unsorted")
    assert unsorted["warnings"]["submit_not_sorted"] == 3
    wl = json.loads((tmp_path / "unsorted" / "0" / "new" / "unsorted.json").read_text())
    assert wl["swf_origin"] == 300.0 and wl["jobs"][0]["subtime"] == 200.0  # origin: line 5, not the first job
    dup = report("duplicates")
    assert dup["dropped"]["duplicate_id"] == 4 and dup["dropped"]["larger_than_machine"] == 1
    assert report("duplicates", strict=True)["error"].endswith("job 7: duplicate job id (first kept on line 5)")
    bad = report("bad_lines")
    assert bad["dropped"]["corrupt_line"] == 4 and bad["first_dropped"]["corrupt_line"][0] == "line 6: job 2"
    assert report("bad_lines", strict=True)["error"].endswith("bad_lines.swf:6: corrupt line: expected 18 fields, "
                                                              "found 9")
    assert report("bad_lines", walltime_fallback="queue")["modified"]["missing_request"] == 2
    q = json.loads((tmp_path / "bad_lines" / "1" / "new" / "bad_lines.json").read_text())
    assert [j["walltime"] for j in q["jobs"] if j["swf_submit"] in (25.0, 30.0)] == [100.0, 100.0]
    assert report("no_header")["platform_size_from"] == "max_job"
    alea = report("alea", extended=True, walltime_fallback="queue", nb_res=64)
    assert alea["modified"]["missing_request"] == 3
    wl = json.loads((tmp_path / "alea" / "3" / "new" / "alea.json").read_text())
    assert [j["walltime"] for j in wl["jobs"]] == [100.0, 7200.0, 7200.0, 100.0, 7200.0]  # queue names; else max


def test_strict_error_comes_after_read_and_size_errors(tmp_path: Path) -> None:
    # corrupt line 1 (strict) but no job with processors: the size error, as when the trace was read first
    path = tmp_path / "nosize.swf"
    path.write_text("bad line\n" + _line(1, 0, procs=0))
    assert "no MaxProcs header" in _same_as_reference(path, tmp_path / "a", strict=True)["error"]
    # corrupt line 1 (strict) then a truncated gzip: the read error
    gz = tmp_path / "cut.swf.gz"
    data = gzip.compress(("bad line\n" + _line(1, 0) * 4000).encode())
    gz.write_bytes(data[: len(data) // 2])
    for kw in ({"strict": True}, {"strict": True, "walltime_fallback": "max"}):
        assert "cannot read" in _same_as_reference(gz, tmp_path / f"b{len(kw)}", **kw)["error"]
    # strict error and a bad machines file: the machines file
    machines = tmp_path / "empty.machines"
    machines.write_text("# nothing\n")
    trace = tmp_path / "t.swf"
    trace.write_text(DUPLICATES)
    assert "no cluster" in _same_as_reference(trace, tmp_path / "c", strict=True, machines=machines)["error"]


def test_extra_drop_sees_the_platform_size_of_the_largest_job(tmp_path: Path) -> None:
    seen: list[int] = []

    def drop_big(rec: SwfRecord, size: int) -> tuple[str, str] | None:
        seen.append(size)
        return ("too_big", "half the machine") if rec.req_procs * 2 > size else None

    path = tmp_path / "t.swf"
    path.write_text(NO_HEADER)
    rep = _same_as_reference(path, tmp_path, extra_drop=drop_big)
    assert rep["dropped"]["too_big"] == 2 and set(seen) == {5}  # jobs 1 (3 procs) and 2 (5 procs)
    assert len(seen) == 2 * 4  # once per record reaching the hook (both jobs 2: the first is dropped), each run


def test_real_traces_are_byte_identical(kth_trace: Path, tmp_path: Path) -> None:
    _same_as_reference(kth_trace, tmp_path / "kth", walltime_fallback="queue", max_jobs=5000, profiles="job")
    _same_as_reference(DATA / "adapters" / "alea.swf", tmp_path / "alea", extended=True, walltime_fallback="max",
                       machines=DATA / "adapters" / "alea.swf.machines")


# --- clean_jobs (pbs, sacct, maui): text ids, renumbering, submit order ------------------------------


def _text_jobs() -> list:
    rows = [("007", 30, 10), ("7", 10, 5), ("12", 20, 0), ("12", 25, 3), ("a1", 5, 8), ("13", 40, -1), ("14", 35, 9)]
    items: list = [TraceJob("f", i + 1, jid, submit, run, procs=1, walltime=-1.0 if i % 2 else 60.0,
                            queue=f"q{i % 2}", meta={"user": f"u{i}"}) for i, (jid, submit, run) in enumerate(rows)]
    items.insert(3, BadRecord("bad", "f", 99, "x9"))
    return items


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("options", [{}, {"profiles": "job", "walltime_fallback": "queue"},
                                     {"max_jobs": 2, "walltime_fallback": "max", "over_request": "cap"}])
def test_clean_jobs_matches_the_reference(sort: bool, options: dict, tmp_path: Path) -> None:
    for items in (_text_jobs(), [j for j in _text_jobs() if isinstance(j, TraceJob) and j.id in ("007", "12", "13")],
                  [j for j in _text_jobs() if isinstance(j, TraceJob) and j.id != "a1" and j.id != "007"]):
        opts = ConvertOptions(**options)
        jobs, profiles, origin, tally = _ref_clean(list(items), 4, opts, sort=sort)
        got = clean_jobs(list(items), 4, ConvertOptions(**options), sort=sort)
        assert (list(got.jobs), dict(got.profiles.items()), got.origin) == (jobs, profiles, origin)
        assert len(got.jobs) == len(jobs) and list(got.jobs[1:]) == jobs[1:] and dict(got.profiles) == profiles
        assert (got.tally.dropped, got.tally.modified, got.tally.warnings, got.tally.first_dropped) == (
            tally.dropped, tally.modified, tally.warnings, tally.first_dropped)
        a, b = tmp_path / "a.json", tmp_path / "b.json"
        write_workload(a, {"origin": origin}, got.jobs, got.profiles)
        _ref_write_workload(b, {"origin": origin}, jobs, profiles)
        assert a.read_bytes() == b.read_bytes()
    assert "ids_renumbered" in clean_jobs(_text_jobs(), 4, ConvertOptions()).tally.warnings  # "007" and "7"


def test_clean_jobs_strict_duplicate_names_the_first_kept_line() -> None:
    items = [TraceJob("f", 3, "x", 0, 5, procs=1), TraceJob("f", 4, "y", 0, 5, procs=1, ran=False),
             TraceJob("f", 8, "y", 0, 5, procs=1), TraceJob("f", 9, "x", 1, 5, procs=1)]
    with pytest.raises(InputError, match=r"^f:9: job x: duplicate job id \(first kept on line 3\)$"):
        clean_jobs(items, 4, ConvertOptions(), strict=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(-50, 10**6), st.integers(-2**70, 2**70), st.sampled_from([2.0, 2.5, True]),
                          st.text("0123456789ab", max_size=3)), max_size=60))
def test_idset_is_a_set(ids: list) -> None:
    mine, ref = IdSet(), set()
    for x in ids:
        assert (x in mine) == (x in ref)
        mine.add(x)
        ref.add(x)
    assert all(x in mine for x in ref)


def test_idset_keeps_dense_ids_as_bits() -> None:
    ids = IdSet()
    for i in range(500_000, 0, -1):
        ids.add(i * 3)
    assert len(ids._bits) < 400_000 and not ids._other  # ~1.5 Mbits, not 500k set entries
    assert 3 * 250_000 in ids and 3 * 250_000 + 1 not in ids and 0 not in ids


# --- the SWF line parser's fast path -----------------------------------------------------------------


def _regex_parse_line(tokens: list[str], path: str, line: int) -> SwfRecord:
    """The parser before its float()-based fast path: every token must match _NUMBER."""
    if len(tokens) != 18:
        raise CorruptLine(f"corrupt line: expected 18 fields, found {len(tokens)}", path, line, _job_number(tokens))
    values: list = []
    for i, (tok, (name, kind)) in enumerate(zip(tokens, _COLUMNS, strict=True), start=1):
        if not _NUMBER.fullmatch(tok) or not math.isfinite(num := float(tok)) or (kind is int and not num.is_integer()):
            what = "an integer" if kind is int else "a number"
            raise CorruptLine(f"corrupt line: field {i} ({name}) is not {what}: {tok!r}", path, line,
                              _job_number(tokens))
        values.append(int(num) if kind is int else num)
    return SwfRecord(line, *values)


TOKEN = st.one_of(st.integers(-10, 10**6).map(str), st.sampled_from(["1.5", ".5", "5.", "1e3", "1E+2", "-0", "+3",
                                                                     "1e400", "1_0", "inf", "nan", "-Infinity", "٣",
                                                                     "１２", "0x1", "1e", "e1", ".", "--1", "1.5e-3"]),
                  st.text("0123456789.eE+-_", min_size=1, max_size=5))


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKEN, min_size=17, max_size=19))
def test_fast_parser_accepts_and_rejects_like_the_regex(tokens: list[str]) -> None:
    def run(parse: Any) -> Any:
        try:
            return parse(list(tokens), "t.swf", 3, False) if parse is _parse_line else parse(list(tokens), "t.swf", 3)
        except CorruptLine as err:
            return ("error", str(err), err.job)
    expected, got = run(_regex_parse_line), run(_parse_line)
    assert repr(got) == repr(expected)


def test_parser_keeps_huge_finite_values() -> None:
    tokens = ["1", "1e308", "0", "1e308", "1", "-1", "-1", "1", "-1", "-1", "1", "1", "1", "-1", "1", "-1", "-1", "-1"]
    assert repr(_parse_line(tokens, "t", 1, False)) == repr(_regex_parse_line(tokens, "t", 1))  # sum overflows


# --- writers --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 4096, 4097, 9000])
def test_streamed_writers_write_what_the_joined_text_was(n: int, tmp_path: Path) -> None:
    jobs = [{"id": i, "subtime": i / 3} for i in range(n)]
    profiles = {f"d{i}": {"type": "delay", "delay": float(i)} for i in range(n)}
    write_workload(tmp_path / "a.json", {"nb_res": 4}, iter(jobs), profiles)
    _ref_write_workload(tmp_path / "b.json", {"nb_res": 4}, jobs, profiles)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    if n:
        path = write_homogeneous_platform(tmp_path / "p.xml", n + 4086, cores=2)  # around the 4096-line chunks
        assert path.read_text(encoding="utf-8") == homogeneous_platform_xml(n + 4086, cores=2)


# --- memory does not grow with the trace -----------------------------------------------------------------


def _synthetic(path: Path, n: int) -> None:
    with path.open("w") as f:
        f.write("; MaxProcs: 64\n")
        for i in range(1, n + 1):  # dense ids, sorted submits, 500 distinct run times, some missing requests
            f.write(_line(i, 10 * i, run=1 + i % 500, procs=1 + i % 64, req=-1 if i % 7 == 0 else 600,
                          queue=i % 4, user=i % 50))


def _peak(trace: Path, out: Path, **kwargs: Any) -> int:
    tracemalloc.start()
    try:
        convert_swf(trace, out, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("options", [{}, {"walltime_fallback": "queue", "profiles": "job"}])
def test_conversion_memory_does_not_grow_with_the_jobs(options: dict, tmp_path: Path) -> None:
    small, large = tmp_path / "small.swf", tmp_path / "large.swf"
    _synthetic(small, 5_000)
    _synthetic(large, 50_000)
    convert_swf(small, tmp_path / "warm", **options)  # imports, caches
    p_small = _peak(small, tmp_path / "s", **options)
    p_large = _peak(large, tmp_path / "l", **options)
    per_job = (p_large - p_small) / 45_000
    print(f"tracemalloc peak: 5,000 jobs {p_small:,} B, 50,000 jobs {p_large:,} B, {per_job:.2f} B per more job")
    # the materialising converter held ~2,000 bytes per job: 10x the jobs gave ~8x the peak
    assert p_large < 1.5 * p_small, (p_small, p_large)
    assert per_job < 10, per_job
    assert re.search(r'"kept": 50000', (tmp_path / "l" / "large_report.json").read_text())
