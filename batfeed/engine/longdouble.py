"""x87 ``long double`` arithmetic (64-bit significand, round to nearest even), exactly, in pure Python.

Batsim 4.2.1 sums energies and times in ``long double`` (``Machines::total_consumed_energy``,
``consumed_energy_on_machines``, ``EnergyConsumptionTracer::add_entry``, ``Machine::update_machine_state``)
and prints them with ``%Lf``; on x86-64 Linux that type is the 80-bit x87 format.  The engine reproduces
those roundings with integers (``numpy.longdouble`` is not that format on every platform), so that the energy
outputs are byte-identical to Batsim's wherever the engine runs.

A value is a pair ``(m, e)`` meaning ``m * 2**e`` with ``|m| < 2**64`` (0 is ``(0, 0)``); every operation
is exact and then rounded once to 64 significant bits, as one x87 instruction does.  Only the operations
Batsim performs are provided: conversions from and to ``double``, ``+``, ``-``, ``/`` and ``%Lf``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fractions import Fraction

LD = tuple[int, int]
ZERO: LD = (0, 0)
_BITS = 64


def _round(m: int, e: int, sticky: bool = False) -> LD:
    """``m * 2**e`` (plus a nonzero amount below its last bit if ``sticky``) rounded to 64 bits, ties to even."""
    if m == 0:
        return ZERO
    a = -m if m < 0 else m
    extra = a.bit_length() - _BITS
    if extra <= 0:
        return (m, e)
    q = a >> extra
    r = a - (q << extra)
    half = 1 << (extra - 1)
    if r > half or (r == half and (sticky or q & 1)):
        q += 1
        if q >> _BITS:              # 2**64: one bit less, exactly
            q >>= 1
            extra += 1
    return (-q if m < 0 else q, e + extra)


def from_float(x: float) -> LD:
    """``static_cast<long double>(x)``: exact."""
    if x == 0.0:
        return ZERO
    n, d = x.as_integer_ratio()
    return (n, 1 - d.bit_length())


def add(a: LD, b: LD) -> LD:
    """``a + b``."""
    ma, ea = a
    mb, eb = b
    if not mb:
        return a
    if not ma:
        return b
    if ea <= eb:
        return _round(ma + (mb << (eb - ea)), ea)
    return _round((ma << (ea - eb)) + mb, eb)


def sub(a: LD, b: LD) -> LD:
    """``a - b``."""
    return add(a, (-b[0], b[1]))


def div(a: LD, b: LD) -> LD:
    """``a / b`` (``b`` nonzero)."""
    ma, ea = a
    mb, eb = b
    if not ma:
        return ZERO
    neg = (ma < 0) != (mb < 0)
    na, nb = abs(ma), abs(mb)
    k = max(0, _BITS + 2 + nb.bit_length() - na.bit_length())
    q, r = divmod(na << k, nb)
    m, e = _round(q, ea - eb - k, sticky=r != 0)
    return (-m if neg else m, e)


def sum_floats(values: list[float] | tuple[float, ...]) -> LD:
    """``long double s = 0; for (v : values) s += v;``"""
    s = ZERO
    for v in values:
        if v:
            s = add(s, from_float(v))
    return s


def to_float(a: LD) -> float:
    """``static_cast<double>(a)``: rounded to nearest even (an int of at most 64 bits converts exactly so)."""
    m, e = a
    return math.ldexp(float(m), e) if m else 0.0


def to_fraction(a: LD) -> Fraction:
    from fractions import Fraction  # used by fmt (-E outputs) and checks: not imported with the engine

    m, e = a
    return Fraction(m) * (Fraction(2) ** e)


def fmt(a: LD) -> str:
    """``printf("%Lf", a)`` (and ``std::to_string(long double)``): 6 decimals of the exact value, ties to even."""
    m = a[0]
    units = round(abs(to_fraction(a)) * 1_000_000)
    sign = "-" if m < 0 else ""
    return f"{sign}{units // 1_000_000}.{units % 1_000_000:06d}"
