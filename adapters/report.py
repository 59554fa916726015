"""Cleaning report shared by every adapter (trace-formats.md, introduction: "cleaning report").

Every record an adapter reads is either kept or dropped under one reason code; kept records may
also be *modified* (e.g. a zero run time set to 1 s) or carry *warnings*.  ``kept + dropped ==
read`` always holds (:meth:`Tally.report` asserts it).  The report is written as JSON next to the
converted files and printed as a table by :func:`format_report`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batfeed.adapters.common import fmt_number

__all__ = ["FIRST_DROPPED_MAX", "Tally", "format_report", "format_summary", "write_report"]

FIRST_DROPPED_MAX = 5


@dataclass
class Tally:
    """Counters of a cleaning report; ``first_dropped`` keeps a few examples per reason."""

    dropped: Counter[str] = field(default_factory=Counter)
    modified: Counter[str] = field(default_factory=Counter)
    warnings: Counter[str] = field(default_factory=Counter)
    first_dropped: dict[str, list[str]] = field(default_factory=dict)
    multi_file: bool = False  # examples name the file when several inputs are merged
    item: str = "job"         # what an example names ("job 12", "node n01")
    # not in the report, for the error of a conversion that keeps nothing (batfeed.adapters.empty):
    first_error: dict[str, str] = field(default_factory=dict)  # reason -> first message given to drop()
    submit_span: tuple[float, float] | None = None             # trace submit times seen (with a window)
    # with --overrun: {"seconds": S, "completed_past_request": N, "killed_at_limit": M} (kept jobs)
    overrun: dict[str, float] | None = None

    def drop(self, reason: str, line: int | None, job: Any = None, path: str | None = None,
             message: str | None = None) -> None:
        """Count one dropped record under ``reason`` (keeping its place, and ``message``, as an example)."""
        self.dropped[reason] += 1
        if message is not None and reason not in self.first_error:
            self.first_error[reason] = message
        examples = self.first_dropped.setdefault(reason, [])
        if len(examples) < FIRST_DROPPED_MAX:
            where = f"{Path(path).name} " if self.multi_file and path else ""
            where += f"line {line}" if line is not None else "(no line)"
            examples.append(f"{where}: {self.item} {job}" if job is not None else where)

    def modify(self, reason: str, count: int = 1) -> None:
        self.modified[reason] += count

    def warn(self, reason: str, count: int = 1) -> None:
        self.warnings[reason] += count

    @property
    def nb_dropped(self) -> int:
        return sum(self.dropped.values())

    def report(self, inputs: str | list[str], read: int, kept: int, **extra: Any) -> dict[str, Any]:
        """The report dict: input(s), read, kept, dropped/modified/warnings, examples and ``extra``."""
        assert kept + self.nb_dropped == read, (
            f"cleaning report does not add up: kept {kept} + dropped {self.nb_dropped} != read {read}")
        rep: dict[str, Any] = {"input": inputs, "read": read, "kept": kept,
                               "dropped": dict(self.dropped), "modified": dict(self.modified),
                               "warnings": dict(self.warnings)}
        if self.overrun is not None:
            rep["overrun"] = dict(self.overrun)
        rep.update(extra)
        rep["first_dropped"] = self.first_dropped
        return rep


def write_report(path: str | Path, report: dict[str, Any]) -> Path:
    """Write ``report`` as indented JSON and return the path."""
    path = Path(path)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path


def format_report(report: dict[str, Any]) -> str:
    """Readable text table of a cleaning report (for the CLI)."""
    inputs = report["input"]
    what = report.get("unit", "records")
    lines = [f"input: {inputs if isinstance(inputs, str) else ', '.join(inputs)}"]
    summary = f"read {report['read']} {what}, kept {report['kept']}"
    if "nb_res" in report:
        summary += f"; platform {report['nb_res']} resources (from {report.get('platform_size_from', '?')})"
    lines.append(summary)
    rows = [(cat, reason, count) for cat, key in (("dropped", "dropped"), ("modified", "modified"),
                                                    ("warning", "warnings"))
            for reason, count in sorted(report.get(key, {}).items())]
    if rows:
        width = max(len("reason"), *(len(r) for _, r, _ in rows))
        lines.append(f"{'category':<9} {'reason':<{width}} {'count':>7}")
        lines += [f"{cat:<9} {reason:<{width}} {count:>7}" for cat, reason, count in rows]
    if (over := report.get("overrun")) is not None:
        line = (f"overrun: {over['completed_past_request']} jobs run past their request "
                f"(limit extended by {fmt_number(over['seconds'])} s)")
        if over.get("killed_at_limit"):
            line += f"; {over['killed_at_limit']} still reach the extended limit and are killed"
        lines.append(line)
    for reason, examples in sorted(report.get("first_dropped", {}).items()):
        lines.append(f"first {reason}: {', '.join(examples)}")
    return "\n".join(lines)


def format_summary(report: dict[str, Any]) -> str:
    """One line of a cleaning report (what an on-the-fly conversion prints): ``read 200 records, kept 199;
    platform 64 resources (from MaxProcs); dropped 1: duplicate_id 1 (first: line 202: job 199)``, then the
    modified records and warnings the same way (counts per reason, largest first)."""
    what = report.get("unit", "records")
    text = f"read {report['read']} {what}, kept {report['kept']}"
    if "nb_res" in report:
        text += f"; platform {report['nb_res']} resources (from {report.get('platform_size_from', '?')})"
    first = report.get("first_dropped", {})
    for label, key in (("dropped", "dropped"), ("modified", "modified"), ("warnings", "warnings")):
        counts = report.get(key) or {}
        if not counts:
            text += "; dropped 0" if key == "dropped" else ""
            continue
        parts = []
        for reason, n in sorted(counts.items(), key=lambda rc: (-rc[1], rc[0])):
            example = first.get(reason) if key == "dropped" else None
            parts.append(f"{reason} {n}" + (f" (first: {example[0]})" if example else ""))
        text += f"; {label} {sum(counts.values())}: " + ", ".join(parts)
    return text
