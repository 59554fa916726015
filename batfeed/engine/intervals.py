"""Batsim interval-set strings (``"0-3 5 7-8"``) as sorted, disjoint, merged interval lists.

procset.ProcSet is the user-facing type (pybatsim uses it); the engine's hot path only needs
to parse, check and print these strings, which plain tuples do several times faster.
"""

from __future__ import annotations


def parse(text: str) -> list[tuple[int, int]]:
    """Parse an interval-set string; raise ValueError on a malformed one.

    Overlapping or unsorted parts are accepted and normalised, like Batsim's IntervalSet.
    """
    out: list[tuple[int, int]] = []
    for part in text.split():
        lo, sep, hi = part.partition("-")
        a = int(lo)
        b = int(hi) if sep else a
        if a < 0 or b < a:
            raise ValueError(f"bad interval '{part}'")
        out.append((a, b))
    if len(out) > 1:
        out.sort()
        merged = [out[0]]
        for a, b in out[1:]:
            la, lb = merged[-1]
            if a <= lb + 1:
                if b > lb:
                    merged[-1] = (la, b)
            else:
                merged.append((a, b))
        out = merged
    return out


def size(intervals: list[tuple[int, int]]) -> int:
    return sum(b - a + 1 for a, b in intervals)


def format_hyphen(intervals: list[tuple[int, int]]) -> str:
    """Batsim's ``to_string_hyphen(" ")``: ``0-3 5 7-8``."""
    return " ".join(f"{a}-{b}" if b > a else str(a) for a, b in intervals)
