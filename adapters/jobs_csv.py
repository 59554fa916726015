"""Batsim ``PREFIX_jobs.csv`` (batsim-protocol.md §10) -> SWF 2.2 (trace-formats.md §1), so simulated
schedules feed standard SWF tools.

Per row: job number = ``job_id`` (renumbered 1..N in submit order if not all integers or not
unique), submit = ``submission_time`` (+ the workload's ``swf_origin`` when the workload is given,
so an SWF -> Batsim -> SWF round trip keeps the original submit times), wait, run = execution time,
allocated processors = size of ``allocated_resources``, requested processors = ``res``, requested
time = ``requested_time`` (-1 stays -1), status 1 completed / 0 failed or walltime reached /
5 killed or rejected (rejected: wait, run and allocation -1).  User, group, queue, partition,
preceding job and think time come from the workload's job fields when given.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batfeed.adapters.common import BadRecord, fmt_number, is_int_text, open_text, trace_stem
from batfeed.adapters.report import Tally, write_report
from batfeed.adapters.workload import load_workload_json

from batfeed.errors import InputError

__all__ = ["SwfExport", "jobs_csv_to_swf"]

NEEDED = ("job_id", "workload_name", "submission_time", "requested_number_of_resources", "requested_time",
          "final_state", "starting_time", "execution_time", "waiting_time", "allocated_resources")
STATUS = {"COMPLETED_SUCCESSFULLY": 1, "COMPLETED_FAILED": 0, "COMPLETED_WALLTIME_REACHED": 0,
          "COMPLETED_KILLED": 5, "REJECTED": 5}
PROVENANCE = ("user", "group", "queue", "partition", "preceding_job", "think_time")


@dataclass
class SwfExport:
    """Files written by :func:`jobs_csv_to_swf` and its report."""

    swf_path: Path
    report_path: Path
    report: dict[str, Any]


def _alloc_size(text: str) -> int:
    total = 0
    for part in text.split():
        lo, dash, hi = part.partition("-")
        if not is_int_text(lo) or (dash and not is_int_text(hi)):
            raise ValueError(f"bad allocated_resources {text[:40]!r}")
        total += int(hi) - int(lo) + 1 if dash else 1
    return total


def _num(row: dict[str, str], key: str, empty: float | None = None) -> float:
    text = (row.get(key) or "").strip()
    if not text and empty is not None:
        return empty
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{key} is {text!r}")
    return value


def _swf_int(x: Any) -> str:
    return str(int(x)) if isinstance(x, (int, float)) and math.isfinite(x) and float(x).is_integer() else "-1"


def jobs_csv_to_swf(jobs_csv: str | Path, out_dir: str | Path, *, workloads: Iterable[str | Path] = (),
                    strict: bool = False, name: str | None = None, require_kept: bool = False) -> SwfExport:
    """Write ``<stem>.swf`` and ``<stem>_swf_report.json`` from a Batsim ``_jobs.csv``.

    ``workloads``: the simulated workload JSONs, in ``w0, w1 ...`` order (optional provenance).
    ``require_kept``: no job row is an :class:`~batfeed.adapters.empty.EmptyConversion` (nothing written).
    """
    path = str(jobs_csv)
    wl: dict[str, dict[str, Any]] = {}
    jobs_of: dict[tuple[str, str], dict[str, Any]] = {}
    for i, wpath in enumerate(workloads):
        data = load_workload_json(wpath)
        wl[f"w{i}"] = data
        for job in data["jobs"]:
            jobs_of[(f"w{i}", str(job.get("id")).split("!")[-1])] = job
    tally = Tally()
    names: dict[str, dict[str, int]] = {}
    rows: list[tuple[float, list[str]]] = []
    read = 0
    with open_text(jobs_csv) as stream:
        reader = csv.DictReader(stream)
        if reader.fieldnames is None or (missing := [c for c in NEEDED if c not in reader.fieldnames]):
            raise InputError(f"not a Batsim _jobs.csv (missing columns: {', '.join(missing or NEEDED)})", path, 1)
        for row in reader:
            read += 1
            line = reader.line_num
            try:
                rows.append(_row(row, wl, jobs_of, tally, names))
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                bad = BadRecord(f"corrupt row: {err}", path, line, (row.get("job_id") or None))
                if strict:
                    raise bad from None
                tally.drop("corrupt_line", line, bad.job, message=str(bad))
    if require_kept and not rows:
        from batfeed.adapters.empty import empty_error

        raise empty_error(path, read, tally, fmt="to-swf")
    rows.sort(key=lambda r: (r[0], r[1][0]))
    ids = [r[1][0] for r in rows]
    if not all(is_int_text(i) for i in ids) or len(set(map(int, ids))) != len(ids):
        tally.warn("ids_renumbered", len(rows))
        for n, (_, fields) in enumerate(rows, start=1):
            fields[0] = str(n)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = name or trace_stem(jobs_csv).removesuffix("_jobs")
    first = next(iter(wl.values()), {})
    header = {"Version": "2.2", "Computer": "Batsim simulation (batfeed)",
              "Conversion": f"batfeed jobs_csv_to_swf from {Path(path).name}"}
    if isinstance(first.get("nb_res"), int):
        header["MaxProcs"] = str(max(d.get("nb_res", 0) for d in wl.values()))
    swf_header = first.get("swf_header") if isinstance(first.get("swf_header"), dict) else {}
    if "UnixStartTime" in swf_header:
        header["UnixStartTime"] = swf_header["UnixStartTime"]
    elif isinstance(first.get("unix_start"), (int, float)):
        header["UnixStartTime"] = _swf_int(first["unix_start"])
    for key in ("TimeZoneString", "Acknowledge"):
        if key in swf_header:
            header[key] = swf_header[key]
    swf_path = out / f"{stem}.swf"
    with swf_path.open("w", encoding="utf-8") as f:
        f.writelines(f"; {k}: {v.splitlines()[0] if v else ''}\n" for k, v in header.items())
        f.writelines(" ".join(fields) + "\n" for _, fields in rows)
    report = tally.report(path, read, len(rows), unit="rows", numbered_names={k: len(v) for k, v in names.items()})
    report_path = write_report(out / f"{stem}_swf_report.json", report)
    return SwfExport(swf_path, report_path, report)


def _provenance(key: str, value: Any, names: dict[str, dict[str, int]]) -> str:
    """SWF field text of a workload job field; text values (PBS user names ...) are numbered 1, 2 ..."""
    if isinstance(value, str) and value:
        numbers = names.setdefault(key, {})
        return str(numbers.setdefault(value, len(numbers) + 1))
    if key == "think_time":
        return fmt_number(value) if isinstance(value, (int, float)) and math.isfinite(value) else "-1"
    return _swf_int(value)


def _row(row: dict[str, str], wl: dict[str, dict[str, Any]], jobs_of: dict[tuple[str, str], dict[str, Any]],
         tally: Tally, names: dict[str, dict[str, int]]) -> tuple[float, list[str]]:
    if None in row or None in row.values():
        raise ValueError(f"expected {len(row) - (None in row)} fields")
    jid, wname, state = row["job_id"].strip(), row["workload_name"].strip(), row["final_state"].strip()
    if not jid or state not in STATUS:
        raise ValueError(f"bad job_id or final_state {state[:30]!r}")
    sub = _num(row, "submission_time")
    origin = wl.get(wname, {}).get("swf_origin", 0.0)
    submit = sub + (origin if isinstance(origin, (int, float)) else 0.0)
    res = int(_num(row, "requested_number_of_resources"))
    req = _num(row, "requested_time")
    if state == "REJECTED":
        wait = run = -1.0
        alloc = -1
    else:
        wait, run = _num(row, "waiting_time"), _num(row, "execution_time")
        alloc = _alloc_size(row["allocated_resources"])
    job = jobs_of.get((wname, jid), {})
    if wl and not job:
        tally.warn("job_not_in_workload")
    prov = [_provenance(k, job.get(k, -1), names) for k in PROVENANCE]
    fields = [jid, fmt_number(submit), fmt_number(wait), fmt_number(run), str(alloc), "-1", "-1", str(res),
              fmt_number(req) if req > 0 else "-1", "-1", str(STATUS[state]), prov[0], prov[1], "-1", prov[2],
              prov[3], prov[4], prov[5]]
    return submit, fields
