"""Writing an adapter's outputs: Batsim workload JSON (batsim-protocol.md §8), platform XML and the
cleaning report, under ``DIR/<stem>.json``, ``<stem>_platform.xml`` and ``<stem>_report.json``."""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from batfeed.adapters.cleaning import Cleaned
from batfeed.adapters.common import ConvertOptions
from batfeed.adapters.nodes import write_node_platform
from batfeed.adapters.report import write_report

__all__ = ["SWF_SUFFIXES", "ConversionResult", "finish_conversion", "is_swf", "load_workload_json", "workload_or_swf",
           "write_workload", "write_workload_lines", "write_workload_stream"]

SWF_SUFFIXES = (".swf", ".swf.gz", ".swf.xz")


@dataclass
class ConversionResult:
    """Paths of the files written by a converter, its report and the platform size."""

    workload_path: Path
    platform_path: Path
    report_path: Path
    report: dict[str, Any]
    nb_res: int


def write_workload(path: Path, top: dict[str, Any], jobs: Iterable[dict], profiles: Mapping[str, dict]) -> Path:
    """Write the workload JSON with one job / profile per line (diff- and grep-friendly).

    Streamed: ``jobs`` is consumed once, job by job, before ``profiles.items()`` is asked for (so
    both may be built while they are written, e.g. :class:`~batfeed.adapters.kept.KeptJobs`).
    """
    return write_workload_lines(path, top, (_encode(job) for job in jobs), _profile_lines(profiles))


def write_workload_lines(path: Path, top: dict[str, Any], job_lines: Iterable[str],
                         profile_lines: Iterable[str]) -> Path:
    """:func:`write_workload` from JSON texts: each job's ``json.dumps``, each profile's
    ``json.dumps(name): json.dumps(profile)``; both iterables are consumed once, in that order."""
    with path.open("w", encoding="utf-8") as out:
        write_workload_stream(out, top, job_lines, profile_lines)
    return path


def write_workload_stream(out: TextIO, top: dict[str, Any], job_lines: Iterable[str],
                          profile_lines: Iterable[str]) -> None:
    """:func:`write_workload_lines` into an open text stream (e.g. a gzip one)."""
    out.write("{\n")
    for key, value in top.items():
        out.write(f"  {json.dumps(key)}: {json.dumps(value)},\n")
    out.write('  "jobs": [')
    _write_lines(out, iter(job_lines))
    out.write('\n  ],\n  "profiles": {')
    _write_lines(out, iter(profile_lines))
    out.write("\n  }\n}\n")


_encode = json.JSONEncoder().encode  # what json.dumps(x) does with default arguments
_CHUNK = 1024


def _profile_lines(profiles: Mapping[str, dict]) -> Iterator[str]:
    for name, profile in profiles.items():  # asked for only once the jobs are written
        yield f"{_encode(name)}: {_encode(profile)}"


def _write_lines(out: TextIO, texts: Iterator[str]) -> None:
    """``",".join("\\n    " + t for t in texts)`` written in chunks, never held whole."""
    first = True
    for chunk in iter(lambda: list(itertools.islice(texts, _CHUNK)), []):
        body = ",\n    ".join(chunk)
        out.write(("\n    " if first else ",\n    ") + body)
        first = False


def load_workload_json(path: str | Path) -> dict[str, Any]:
    """Read a Batsim workload JSON (plain or compressed) as a dict; InputError if it is not one."""
    from batfeed.adapters.common import open_text

    from batfeed.errors import InputError

    with open_text(path) as stream:
        try:
            data = json.load(stream)
        except json.JSONDecodeError as err:
            raise InputError(f"invalid JSON: {err.msg} (column {err.colno})", str(path), err.lineno) from None
        except (OSError, EOFError, ValueError) as err:
            raise InputError(f"cannot read: {err}", str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        raise InputError("not a Batsim workload (no 'jobs' array)", str(path))
    return data


def is_swf(path: str | Path) -> bool:
    """True for an SWF trace's name (``.swf``, ``.swf.gz`` or ``.swf.xz``, any case)."""
    return Path(path).name.lower().endswith(SWF_SUFFIXES)


@contextmanager
def workload_or_swf(path: str | Path, command: str | None = None) -> Iterator[tuple[Path, dict[str, Any] | None]]:
    """``(workload JSON, cleaning report)`` for ``path``, a Batsim workload (``(path, None)``) or an SWF trace.

    An SWF trace is converted with ``batfeed convert swf``'s cleaning (an error if it keeps no job) into
    a temporary directory, removed on exit, and its report summarised on one stderr line, so that no
    dropped record goes unseen: ``batfeed[ COMMAND]: note: PATH converted on the fly (as by 'batfeed
    convert swf'): read 200 records, kept 199; ...; dropped 1: duplicate_id 1 (first: line 202: job 199)``.
    """
    if not is_swf(path):
        yield Path(path), None
        return
    from batfeed.adapters.report import format_summary
    from batfeed.adapters.swf import convert_swf

    with tempfile.TemporaryDirectory(prefix="batfeed-swf-") as tmp:
        conv = convert_swf(path, tmp, require_kept=True)
        print(f"batfeed{f' {command}' if command else ''}: note: {path} converted on the fly (as by 'batfeed "
              f"convert swf'): {format_summary(conv.report)}", file=sys.stderr)
        yield conv.workload_path, conv.report


def finish_conversion(out_dir: str | Path, stem: str, cleaned: Cleaned, *, inputs: list[str], read: int,
                      size: int, size_src: str, opts: ConvertOptions, fmt: str,
                      nodes: Sequence[tuple[str, int]] | None = None, speeds: Sequence[float] | None = None,
                      unix_origin: bool = True,
                      **report_extra: Any) -> ConversionResult:
    """Write workload, platform (named ``nodes``, relative ``speeds``, or ``size`` homogeneous hosts), report.

    ``unix_origin``: the trace times are Unix epochs, so subtime 0 is epoch ``origin``
    (top-level ``unix_start``, used to align downtimes).
    """
    if opts.require_kept and not len(cleaned.jobs):
        from batfeed.adapters.empty import empty_error

        raise empty_error(inputs[0] if len(inputs) == 1 else inputs, read, cleaned.tally, fmt=fmt, opts=opts)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    top: dict[str, Any] = {"nb_res": size, "origin": cleaned.origin}
    if unix_origin:
        top["unix_start"] = cleaned.origin
    top["source"] = {"format": fmt, "inputs": inputs}
    workload_path = write_workload(out / f"{stem}.json", top, cleaned.jobs, cleaned.profiles)
    if nodes:
        platform_path = write_node_platform(out / f"{stem}_platform.xml", nodes, opts.unit, speeds=speeds or None)
    else:
        from batfeed.platforms.generate import write_homogeneous_platform

        platform_path = Path(write_homogeneous_platform(out / f"{stem}_platform.xml", size))
    report = cleaned.tally.report(inputs[0] if len(inputs) == 1 else inputs, read, len(cleaned.jobs),
                                  nb_res=size, platform_size_from=size_src, options=opts.summary(),
                                  **report_extra)
    report_path = write_report(out / f"{stem}_report.json", report)
    return ConversionResult(workload_path, platform_path, report_path, report, size)
