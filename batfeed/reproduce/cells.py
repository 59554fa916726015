"""One cell of a reproduced table: *paper | batfeed [band] | verdict* (issue 28, ``batfeed reproduce``).

A verdict is one of:

- ``within band``: the paper's value lies in batfeed's band over seeds or resamples;
- ``close``: within the table's tolerance (absolute points, or relative for positive quantities);
- ``sign agrees``: a change (an improvement in %, a lateness) has the paper's sign;
- ``differs: REASON``: none of the above, with the documented reason (docs/reproductions.md);
- ``DIFFERS``: none of the above and no documented reason;
- ``not run`` / ``no paper value``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Cell", "counts", "markdown", "verdict"]


@dataclass(frozen=True)
class Cell:
    """``value``: batfeed's (pooled or mean) value; ``lo``/``hi``: its band (None: a single run)."""

    paper: float | None
    value: float | None
    lo: float | None = None
    hi: float | None = None
    reason: str | None = None       # documented reason for a difference
    signed: bool = True             # a change whose sign is a finding (Impr %, lateness)
    tol: float = 0.0                # "close" within tol (absolute) ...
    rel: float = 0.0                # ... or within rel × |paper| (relative)
    digits: int = 0

    @property
    def verdict(self) -> str:
        return verdict(self)

    def text(self, sep: str = " | ") -> str:
        """``paper | batfeed [lo, hi] | verdict`` (fields joined by ``sep``)."""
        return sep.join((_num(self.paper, self.digits, self.signed), self.batfeed(), self.verdict))

    def batfeed(self) -> str:
        if self.value is None or _nan(self.value):
            return "-"
        band = ""
        if self.lo is not None and self.hi is not None:
            band = f" [{_num(self.lo, self.digits, self.signed)}, {_num(self.hi, self.digits, self.signed)}]"
        return _num(self.value, self.digits, self.signed) + band


def verdict(c: Cell) -> str:
    if c.value is None or _nan(c.value):
        return "not run"
    if c.paper is None:
        return "no paper value"
    if c.lo is not None and c.hi is not None and c.lo <= c.paper <= c.hi:
        return "within band"
    diff = abs(c.value - c.paper)
    if (c.tol and diff <= c.tol) or (c.rel and diff <= c.rel * abs(c.paper)):
        return "close"
    if c.signed and _sign(c.value, c.digits) == _sign(c.paper, c.digits) != 0:
        return "sign agrees"
    return f"differs: {c.reason}" if c.reason else "DIFFERS"


def markdown(header: list[str], rows: list[tuple[str, list[Cell]]]) -> str:
    """A table with one column per cell, each cell as *paper | batfeed | verdict* in one column
    (the three fields joined by " · " so that a Markdown table keeps its columns)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, cells in rows:
        out.append(f"| {label} | " + " | ".join(c.text(" · ") for c in cells) + " |")
    return "\n".join(out)


def counts(cells: list[Cell]) -> dict[str, int]:
    """How many cells got each verdict kind (``differs: ...`` counted as ``differs``)."""
    out: dict[str, int] = {}
    for c in cells:
        v = c.verdict.split(":")[0]
        out[v] = out.get(v, 0) + 1
    return out


def _sign(x: float, digits: int) -> int:
    """The sign of ``x`` as printed with ``digits`` decimals (0 when it prints as zero)."""
    return 0 if abs(x) < 0.5 * 10.0 ** -digits else (1 if x > 0 else -1)


def _nan(x: float) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _num(x: float | None, digits: int, signed: bool) -> str:
    if x is None or _nan(x):
        return "-"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
