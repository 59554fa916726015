"""Study-specific cleaning rules for :func:`batfeed.adapters.swf.convert_swf` (``extra_drop``).

Each rule takes an SWF record and the platform size and returns ``(reason, message)`` to drop the
record (the converter counts it in its report under ``reason``) or None to keep it.
"""

from __future__ import annotations

from collections.abc import Callable

from batfeed.adapters.swf import SwfRecord

__all__ = ["FILTERS", "tune_filter"]


def tune_filter(rec: SwfRecord, size: int) -> tuple[str, str] | None:
    """Extra filtering of Gaussier, Lelong, Reis, Trystram, *Online Tuning of EASY-Backfilling*
    (models.md §A "Protocol"): drop jobs whose allocated processors exceed MaxProcs, run time
    ≤ 0, submit < 0, and (as the authors' code does) requested time ≤ 0 or below the run time, so
    that no job reaches its walltime.  Requested > MaxProcs and "no processors" are already
    dropped by the converter itself (it uses requested processors, else allocated ones).
    """
    if rec.alloc_procs > size:
        return "tune_alloc_larger_than_machine", f"allocated {rec.alloc_procs} processors > {size}"
    if rec.run <= 0:
        return "tune_runtime_not_positive", f"run time {rec.run:g} <= 0"
    if rec.submit < 0:
        return "tune_negative_submit", f"submit time {rec.submit:g} < 0"
    if rec.req_time <= 0:
        return "tune_no_requested_time", f"requested time {rec.req_time:g} <= 0"
    if rec.req_time < rec.run:
        return "tune_request_below_runtime", f"requested time {rec.req_time:g} < run time {rec.run:g}"
    return None


FILTERS: dict[str, Callable[[SwfRecord, int], tuple[str, str] | None]] = {"tune": tune_filter}
"""The rules ``batfeed convert swf --filter NAME`` knows (``adapters/cli_parser.py`` lists their names)."""
