"""``--window START:END``: the submit-time filter, in trace seconds or as dates.

A bound is a number (seconds on the trace's own time axis: SWF seconds since the log start, the
other formats Unix epochs) or an ISO date / date-time (``2020-01-31``, ``2020-01-31T12:00``,
``2020-01-31T12:00+01:00``).  A date without a UTC offset is a local time of the trace's zone:
the SWF ``TimeZoneString`` header, ``--tz`` for pbs and sacct, else UTC.  A date becomes trace
seconds through the trace's epoch of time 0 (SWF ``UnixStartTime``; 0 for the epoch formats).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, tzinfo
from typing import Any

__all__ = ["format_span", "format_window", "parse_window", "resolve_window", "zone"]

Bound = float | datetime | None


def _bound(text: str) -> Bound:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise ValueError(f"--window bound {text!r} is not a finite number")
        return value
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--window bound {text!r} is neither seconds nor an ISO date "
                         "(e.g. 2020-01-31 or 2020-01-31T12:00)") from None


def parse_window(text: str) -> tuple[Bound, Bound]:
    """``START:END`` or ``START..END`` (either side may be empty) -> two bounds; ValueError if bad.

    ``..`` is needed when a bound has a time of day (``2020-01-31T12:00..2020-02-01``)."""
    if ".." in text:
        lo, _, hi = text.partition("..")
    elif text.count(":") == 1:
        lo, _, hi = text.partition(":")
    else:
        raise ValueError(f"--window must be START:END or START..END (use '..' when a bound has a time of day), "
                         f"got {text!r}")
    bounds = (_bound(lo), _bound(hi))
    a, b = bounds
    if isinstance(a, float) and isinstance(b, float) and a >= b:
        raise ValueError(f"--window {text} is empty: START must be before END")
    return bounds


def zone(name: str | None) -> tzinfo:
    """The time zone named ``name`` (None or empty: UTC); ValueError if unknown."""
    if not name:
        return UTC
    from zoneinfo import ZoneInfo

    try:
        return ZoneInfo(name)
    except (ValueError, KeyError, OSError):
        raise ValueError(f"unknown time zone {name!r}") from None


def resolve_window(window: tuple[Any, Any], zero: float | None, tz: tzinfo) -> tuple[float | None, float | None]:
    """Window bounds in trace seconds: numbers as they are, dates minus ``zero`` (the epoch of trace
    time 0; None: unknown, then a date is a ValueError).  Naive dates are local times of ``tz``."""
    out: list[float | None] = []
    for bound in window:
        if isinstance(bound, datetime):
            if zero is None:
                raise ValueError("--window dates need the trace's start time, which this trace does not give "
                                 "(no UnixStartTime header): give the window in seconds since the trace start")
            stamp = bound if bound.tzinfo else bound.replace(tzinfo=tz)
            out.append(stamp.timestamp() - zero)
        else:
            out.append(bound)  # seconds, kept as given (the report shows them)
    lo, hi = out
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(f"--window {format_window(window)} is empty: START must be before END")
    return lo, hi


def _text(bound: Bound) -> str:
    if bound is None:
        return ""
    if isinstance(bound, datetime):
        return bound.isoformat(timespec="minutes") if (bound.hour, bound.minute, bound.second) != (0, 0, 0) \
            or bound.tzinfo else bound.date().isoformat()
    return str(int(bound)) if float(bound).is_integer() else repr(float(bound))


def format_window(window: tuple[Any, Any]) -> str:
    """The window as a user writes it (``2020-01-01:2020-02-01``, ``0:3600``)."""
    lo, hi = _text(window[0]), _text(window[1])
    return f"{lo}{'..' if ':' in lo + hi else ':'}{hi}"


def format_span(lo: float, hi: float, zero: float | None, tz: tzinfo) -> str:
    """``599850 .. 29363221 s = 1996-09-30 .. 1997-08-29 Europe/Stockholm``: trace seconds, and dates
    when the epoch of trace time 0 is known."""
    seconds = f"{_text(lo)} .. {_text(hi)} s"
    if zero is None:
        return seconds
    try:
        a, b = (datetime.fromtimestamp(zero + t, tz) for t in (lo, hi))
    except (OverflowError, OSError, ValueError):
        return seconds
    fmt = "%Y-%m-%d" if (b - a).days >= 2 else "%Y-%m-%d %H:%M"
    return f"{seconds} = {a.strftime(fmt)} .. {b.strftime(fmt)} {tz}"
