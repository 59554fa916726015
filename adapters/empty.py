"""The error of a conversion that keeps nothing: why (the main drop reasons) and what to try.

``batfeed convert`` never writes an empty workload (or events file, or SWF) and exits 0: the
converters raise :class:`EmptyConversion` before writing when asked to (``require_kept``).
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from batfeed.adapters.report import Tally

from batfeed.errors import BatfeedError

__all__ = ["EmptyConversion", "empty_error"]

FORMAT_NAMES = {"swf": "an SWF trace", "pbs": "a PBS/TORQUE accounting file", "maui": "a Maui workload trace",
                "sacct": "a Slurm sacct --parsable2 file", "downtimes": "an outage / node-state / maintenance CSV",
                "to-swf": "a Batsim _jobs.csv", "to-maui": "a Batsim workload"}

HINTS = {
    "filtered_status": "check --status (values as written in the trace, e.g. 1 for SWF's completed)",
    "filtered_user": "check --user (names or ids as written in the trace)",
    "beyond_max_jobs": "give --max-jobs N with N > 0",
    "larger_than_machine": "give the platform size with --nb-res (or count nodes with --unit nodes)",
    "zero_runtime": "--zero-runtime one_second keeps them (run time 1 s)",
    "runtime_over_request": "--over-request keep (or cap) keeps them",
    "never_started": "no job of this log ever started",
    "not_run": "no job of this log ever ran",
    "no_end_record": "no job has its end record: add the accounting files of the following days",
    "negative_runtime": "the records have no run time",
    "no_processors": "the records give no job size: check the columns (is it the right format?)",
    "no_nodes": "the records give no job size in nodes: try --unit procs",
    "shorter_than_threshold": "lower --min-duration (default 240 s)",
    "outside_horizon": "check --origin and --horizon (or --workload): the outages fall outside the simulation",
    "unknown_node": "the nodes are not the platform's: check --platform / --nb-nodes",
    "not_a_delay_job": "only delay-profile jobs can be exported",
}


class EmptyConversion(BatfeedError):
    """A conversion that would keep no record; the message says why and suggests a fix."""


def _share(n: int, read: int, plural: str, singular: str) -> str:
    """``all 5 records fall`` / ``1 of the 5 records falls`` / ``the only record falls``."""
    if n == read:
        return f"the only record {singular}" if n == 1 else f"all {n} records {plural}"
    return f"{n} of the {read} records {singular if n == 1 else plural}"


def _why_window(n: int, read: int, tally: Tally, opts: Any) -> tuple[str, str]:
    from batfeed.adapters.window import format_span, format_window

    given = opts.window_given if opts.window_given != (None, None) else opts.window
    zero, tz = opts.time_base
    span = (f" (the trace's submit times span {format_span(*tally.submit_span, zero, tz or UTC)})"
            if tally.submit_span else "")
    what = _share(n, read, "fall", "falls")
    return (f"{what} outside --window {format_window(given)}{span}",
            "choose a window within that span (seconds on the trace's time axis, or dates)")


def _why_corrupt(n: int, read: int, tally: Tally, fmt: str) -> tuple[str, str]:
    first = tally.first_error.get("corrupt_line", "")
    why = f"{_share(n, read, 'are', 'is')} corrupt" + (f" (first: {first})" if first else "")
    m = re.search(r"expected 18 fields, found (\d+)", first)
    if fmt == "swf" and m and int(m.group(1)) > 18:
        return why, "this looks like an extended SWF (more than 18 columns): add --extended"
    return why, f"is it {FORMAT_NAMES.get(fmt, 'the right format')}?" if 2 * n >= read else ""


def empty_error(source: Any, read: int, tally: Tally, *, fmt: str, opts: Any = None,
                what: str = "job") -> EmptyConversion:
    """The :class:`EmptyConversion` of a conversion of ``source`` that read ``read`` records, kept none.

    Message: ``SOURCE: no job kept: WHY [and WHY2]; FIX[; FIX2]`` (the two main drop reasons)."""
    where = source if isinstance(source, str) else (f"{source[0]} (+{len(source) - 1} more)" if len(source) > 1
                                                    else str(source[0]))
    if read == 0:
        if fmt.startswith("to-"):
            return EmptyConversion(f"{where}: no {what} to export (the file has none)")
        return EmptyConversion(f"{where}: no {what} record found: is it {FORMAT_NAMES.get(fmt, 'the right format')}?")
    parts: list[tuple[str, str]] = []
    for reason, n in tally.dropped.most_common(2):
        if reason == "outside_window" and opts is not None:
            parts.append(_why_window(n, read, tally, opts))
        elif reason == "corrupt_line":
            parts.append(_why_corrupt(n, read, tally, fmt))
        else:
            parts.append((f"{_share(n, read, 'were', 'was')} dropped as {reason}", HINTS.get(reason, "")))
    if not parts:  # nothing dropped and nothing kept (e.g. only job steps merged away)
        parts.append((f"none of the {read} records is a {what}", f"is it {FORMAT_NAMES.get(fmt, 'the right format')}?"))
    whys = " and ".join(w for w, _ in parts)
    fixes = "; ".join(dict.fromkeys(f for _, f in parts if f))
    return EmptyConversion(f"{where}: no {what} kept: {whys}" + (f"; {fixes}" if fixes else ""))
