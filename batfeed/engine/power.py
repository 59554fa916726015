"""Hosts' power properties under Batsim's ``-E``: SimGrid's wattages and Batsim's sleep pstates.

- ``wattage_per_state`` / ``wattage_off`` are read by SimGrid 3.32's energy plugin for every host of the
  platform (``HostEnergy::init_watts_range_list`` and ``HostEnergy::HostEnergy`` in
  ``src/plugins/host_energy.cpp``): one ``Idle:Epsilon:AllCores`` (or ``Idle:AllCores``, Epsilon = Idle)
  group per pstate, comma-separated, each value read by ``xbt_str_parse_double`` (``strtod`` of the whole
  string, leading blanks allowed); ``wattage_off`` by ``std::stod`` (a leading number, the rest ignored),
  0 when absent.  A host without ``wattage_per_state`` consumes 0 W, and SimGrid aborts as soon as its
  energy is asked (``sg_host_get_consumed_energy``), which Batsim does for every machine at the first job
  submission: the engine refuses such a machine at load time.
- ``sleep_pstates`` is read by Batsim 4.2.1 for every host (``Machines::create_machines``,
  ``src/machines.cpp``): comma-separated ``sleep:off:on`` triplets (``boost::split`` with token compression;
  in this order, whatever its own message says) of pstates that exist; the sleep pstate cannot compute, the
  switching-off (``off``) and switching-on (``on``) virtual pstates are where a switch runs its one flop
  (``switch_off_machine_process``, ``switch_on_machine_process`` in ``src/pstate.cpp``); every other pstate is
  a computation pstate and a compute node's must have a positive speed.

Errors are one-line :class:`~batfeed.errors.InputError` naming the platform file and the host.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from batfeed.errors import InputError

COMPUTATION, SLEEP, TRANSITION = "computation", "sleep", "transition"

_SPACE = " \t\n\v\f\r"
_DECIMAL = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_HEX = r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?"
_SPECIAL = r"[+-]?(?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN](?:\([0-9A-Za-z_]*\))?)"
_STRTOD = re.compile(rf"[{_SPACE}]*({_HEX}|{_DECIMAL}|{_SPECIAL})")


def _number(text: str) -> float:
    if text.lstrip("+-")[:2].lower() == "0x":
        body = text.lstrip("+-")
        value = float.fromhex(body if "p" in body.lower() else body + "p0")
        return -value if text.startswith("-") else value
    if "(" in text:                       # nan(chars)
        text = text[:text.index("(")]
    return float(text)


def strtod_all(text: str) -> float | None:
    """``xbt_str_parse_double``: the whole string is one C number (leading blanks allowed), else None."""
    match = _STRTOD.match(text)
    if match is None or match.end() != len(text):
        return None
    return _number(match.group(1))


def strtod_prefix(text: str) -> float | None:
    """``std::stod``: the number at the start of the string (leading blanks allowed), else None."""
    match = _STRTOD.match(text)
    return None if match is None else _number(match.group(1))


@dataclass(frozen=True, slots=True)
class PowerRange:
    """One pstate's wattages (``simgrid::plugin::PowerRange``): slope = AllCores - Epsilon."""

    idle: float
    epsilon: float
    max: float
    slope: float


@dataclass(frozen=True, slots=True)
class HostPower:
    """What the energy model needs of one machine: its pstates' speeds and wattages and their types."""

    name: str
    speeds: tuple[float, ...]
    pstate: int                               # the initial pstate (the host's ``pstate`` attribute)
    cores: int
    ranges: tuple[PowerRange, ...]
    watts_off: float
    types: dict[int, str]                     # pstate -> COMPUTATION, SLEEP or TRANSITION (Machine::pstates)
    sleep: dict[int, tuple[int, int]]         # sleep pstate -> (switching-on pstate, switching-off pstate)


def parse_wattage(name: str, props: Mapping[str, str], nb_pstates: int,
                  path: str) -> tuple[tuple[PowerRange, ...] | None, float]:
    """A host's power ranges (None without ``wattage_per_state``) and its off wattage, as SimGrid reads them."""
    text = props.get("wattage_off")
    watts_off = 0.0
    if text is not None:
        value = strtod_prefix(text)
        if value is None:
            raise InputError(f"host '{name}': invalid wattage_off '{text}' (SimGrid's energy plugin aborts: "
                             f"\"Invalid value for property wattage_off of host {name}\")", path)
        watts_off = value
    text = props.get("wattage_per_state")
    if text is None:
        return None, watts_off
    groups = text.split(",")
    if len(groups) != nb_pstates:
        raise InputError(f"host '{name}': wattage_per_state has {len(groups)} comma-separated group(s) but the host "
                         f"has {nb_pstates} pstate(s) (SimGrid's energy plugin aborts: \"Found {len(groups)} "
                         f"energetic profiles for {nb_pstates} pstates\")", path)
    ranges = []
    for i, group in enumerate(groups):
        parts = group.split(":")
        if len(parts) not in (2, 3):
            raise InputError(f"host '{name}': wattage_per_state group {i} '{group.strip()}' must be Idle:AllCores or "
                             "Idle:Epsilon:AllCores (SimGrid's energy plugin aborts)", path)
        values = []
        for what, part in zip(("Idle", "Epsilon", "AllCores") if len(parts) == 3 else ("Idle", "AllCores"),
                              parts, strict=True):
            value = strtod_all(part)
            if value is None:
                raise InputError(f"host '{name}': invalid {what} value '{part}' for pstate {i} in wattage_per_state "
                                 "(SimGrid's energy plugin aborts)", path)
            values.append(value)
        idle, epsilon, top = (values[0], values[0], values[1]) if len(values) == 2 else values
        ranges.append(PowerRange(idle, epsilon, top, top - epsilon))
    return tuple(ranges), watts_off


def parse_sleep_pstates(name: str, props: Mapping[str, str], nb_pstates: int,
                        path: str) -> tuple[dict[int, str], dict[int, tuple[int, int]]]:
    """Batsim's pstate types and sleep pstates of a host (``Machines::create_machines`` under ``-E``)."""
    types: dict[int, str] = {}
    sleep: dict[int, tuple[int, int]] = {}
    text = props.get("sleep_pstates")
    if text is not None:
        for triplet in re.split(",+", text):          # boost::split(..., token_compress_on)
            parts = re.split(":+", triplet)
            if len(parts) != 3:
                raise InputError(f"host '{name}': invalid sleep_pstates part '{triplet}': it must be three "
                                 "colon-separated pstates sleep:off:on, e.g. 13:14:15 (Batsim aborts)", path)
            numbers = []
            for part in parts:
                part = part.strip().removeprefix("+")      # boost::trim, lexical_cast<unsigned int>
                if not part.isdecimal():
                    raise InputError(f"host '{name}': invalid sleep_pstates part '{triplet}': '{part}' is not an "
                                     "unsigned integer (Batsim aborts)", path)
                numbers.append(int(part))
            sleep_ps, off_ps, on_ps = numbers
            for ps in numbers:
                if ps >= nb_pstates:
                    raise InputError(f"host '{name}': sleep_pstates part '{triplet}': pstate {ps} does not exist "
                                     f"(the host has {nb_pstates}) (Batsim aborts)", path)
            for ps in (on_ps, off_ps):
                if types.get(ps, TRANSITION) != TRANSITION:
                    raise InputError(f"host '{name}': sleep_pstates: pstate {ps} is a virtual transition pstate and "
                                     "a sleep pstate (Batsim aborts)", path)
            # Batsim only logs an error when a sleep pstate is given twice, or was a transition pstate
            sleep[sleep_ps] = (on_ps, off_ps)
            types[sleep_ps] = SLEEP
            types[on_ps] = TRANSITION
            types[off_ps] = TRANSITION
    for ps in range(nb_pstates):
        types.setdefault(ps, COMPUTATION)
    return types, sleep


def check_host(name: str, speeds: tuple[float, ...], props: Mapping[str, str], compute: bool, machine: bool,
               path: str) -> None:
    """The checks SimGrid's energy plugin and Batsim make on one host of the platform under ``-E``
    (``machine``: a compute or storage resource, whose energy Batsim asks)."""
    ranges, _ = parse_wattage(name, props, len(speeds), path)
    types, _ = parse_sleep_pstates(name, props, len(speeds), path)
    if machine and ranges is None:
        raise InputError(f"host '{name}' has no wattage_per_state property, which -E needs on every compute and "
                         f"storage host (SimGrid aborts: \"No power range properties specified for host {name}\")",
                         path)
    if compute:
        for ps, kind in sorted(types.items()):
            if kind == COMPUTATION and not speeds[ps] > 0:
                raise InputError(f"host '{name}' has an invalid (non-positive computing speed) computing pstate "
                                 f"{ps} (Batsim aborts)", path)


def host_power(host: Any, path: str) -> HostPower:
    """The :class:`HostPower` of a platform :class:`~batfeed.engine.platform.Host` (checked by :func:`check_host`)."""
    speeds = host.speeds or (host.speed,)
    ranges, watts_off = parse_wattage(host.name, host.properties, len(speeds), path)
    types, sleep = parse_sleep_pstates(host.name, host.properties, len(speeds), path)
    if ranges is None:
        raise InputError(f"host '{host.name}' has no wattage_per_state property, which -E needs on every compute "
                         "and storage host", path)
    return HostPower(host.name, speeds, host.pstate, host.cores, ranges, watts_off, types, sleep)
