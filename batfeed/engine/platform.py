"""Batsim 4.2 platform reader: SimGrid XML -> master host + compute/storage resources with Batsim ids.

Rules (reference: batsim-protocol.md §9), as Batsim 4.2 applies them on top of SimGrid 3.34:

- Roles come from the host property ``role`` (``master``, ``compute_node`` or ``storage``; absent or
  empty means ``compute_node``).  The host named by ``--master-host`` (default ``master_host``) gets the
  role ``master``; if it also has a ``role`` property Batsim appends ``,master`` to it, and since a role
  must be exactly one of the three words Batsim then aborts.  Exactly one master is allowed.
- **Resource ids follow host-name order, not XML order**: SimGrid keeps hosts in a name-sorted map, so
  compute hosts get ids 0..N-1 in lexicographic name order (``node_10`` < ``node_2``), then storage
  hosts.  ``--mmax N`` keeps the first N compute hosts of that order.
- Compute hosts need a positive speed (speed of the initial pstate, the ``pstate`` attribute).
- ``<cluster>`` properties become both host and zone properties of its hosts (as in SimGrid 3.34);
  a host's zone properties merge those of its enclosing zones, inner zones overriding outer ones.

Only host-defining elements are read (``host``, ``cluster``, ``cabinet``, ``peer``, zones and props);
links, routes and the like are ignored.  Parsing uses expat directly (100k hosts: about a second).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from xml.parsers import expat

from batfeed.engine.routing import Network, NetworkBuilder, NotRoutable
from batfeed.errors import InputError, UnsupportedInput

MASTER, COMPUTE, STORAGE = "master", "compute_node", "storage"
ROLES = (MASTER, COMPUTE, STORAGE)


def _speed_units() -> dict[str, float]:
    """SimGrid's speed units: f/flops with decimal prefixes (k/M/.../Y and kilo/mega/.../yotta)."""
    units = {"f": 1.0, "flops": 1.0}
    for unit, prefixes in (("f", "k M G T P E Z Y"), ("flops", "kilo mega giga tera peta exa zeta yotta")):
        value = 1.0
        for prefix in prefixes.split():
            value *= 1000.0  # same successive products as SimGrid's unit_scale
            units[prefix + unit] = value
    return units


SPEED_UNITS = _speed_units()
_NUMBER = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def parse_speed(text: str) -> float:
    """Parse one SimGrid speed (``"1Gf"``, ``"98.095Mf"``, ``"2e9"``); raise ValueError if invalid."""
    match = _NUMBER.match(text)
    if match is None:
        raise ValueError(f"cannot parse speed '{text}'")
    value = float(match.group())
    unit = text[match.end():]
    if unit:
        if unit not in SPEED_UNITS:
            raise ValueError(f"unknown speed unit '{unit}' in '{text}' (SimGrid accepts f, kf, Mf, Gf, Tf, "
                             "Pf, Ef, Zf, Yf, flops, kiloflops, ..., yottaflops)")
        value *= SPEED_UNITS[unit]
    if value < 0:
        raise ValueError(f"negative speed '{text}'")
    return value


def _rate_units() -> dict[str, float]:
    """SimGrid's bandwidth units: Bps / bps with decimal (k..Y) or binary (Ki..Yi) prefixes."""
    units: dict[str, float] = {}
    for base, factor in (("Bps", 1.0), ("bps", 0.125)):
        units[base] = factor
        for i, p in enumerate("kMGTPEZY", 1):
            units[p + base] = factor * 1000.0 ** i
            units[p.upper() + "i" + base] = factor * 1024.0 ** i
    return units


RATE_UNITS = _rate_units()
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0, "d": 86400.0,
              "w": 604800.0, "": 1.0}


def parse_quantity(text: str, units: dict[str, float], what: str) -> float:
    """A SimGrid bandwidth (``"10Gbps"``) or latency (``"50us"``); ValueError if invalid."""
    match = _NUMBER.match(text)
    unit = text[match.end():].strip() if match else ""
    if match is None or unit not in units:
        raise ValueError(f"cannot parse {what} '{text}'")
    return float(match.group()) * units[unit]


def parse_speeds(text: str) -> tuple[float, ...]:
    """Parse a host ``speed`` attribute: one speed per pstate, comma-separated."""
    if "," not in text:
        return (parse_speed(text),)
    return tuple(parse_speed(part.strip()) for part in text.split(","))


def parse_radical(text: str) -> list[int]:
    """Expand a cluster radical (``"0-3,5,8-9"``) into its numbers; raise ValueError if malformed."""
    numbers: list[int] = []
    for group in text.split(","):
        ends = group.split("-")
        if len(ends) > 2 or not all(e.strip().isdecimal() for e in ends):
            raise ValueError(f"malformed radical '{group}' in '{text}'")
        lo, hi = int(ends[0]), int(ends[-1])
        numbers.extend(range(lo, hi + 1))
    return numbers


class LatencyWarning(UserWarning):
    """The platform's routes are not modelled (batfeed.engine.routing): messages take the smallest bandwidth's
    time and no latency."""


@dataclass(frozen=True, slots=True)
class Host:
    """One Batsim resource (compute or storage host).  ``properties`` and ``zone_properties`` are read-only
    views, shared by the hosts with equal properties and by the hosts of a zone (93,312 copies of the
    same small dicts were a fifth of CEA-Curie's platform in memory)."""

    id: int
    name: str
    speed: float
    cores: int
    role: str
    properties: Mapping[str, str]
    zone_properties: Mapping[str, str]
    speeds: tuple[float, ...] = ()        # the speed of every pstate (``speed`` is that of ``pstate``)
    pstate: int = 0                       # the initial pstate (the host's ``pstate`` attribute)


@dataclass(frozen=True, slots=True)
class Platform:
    """The resources Batsim 4.2 builds from a platform file (the master is not a resource)."""

    path: str
    master: str
    compute: tuple[Host, ...]
    storage: tuple[Host, ...]
    # Batsim's actors exchange 1-byte SimGrid messages along SimGrid's routes (batfeed.engine.routing);
    # None where they are not modelled: then each message crosses a link of min_bandwidth (the smallest
    # of all links, 0: none) with no latency, and load_platform warned (LatencyWarning)
    network: Network | None = None
    min_bandwidth: float = 0.0

    @property
    def nb_compute(self) -> int:
        """Number of compute resources (ids 0..nb_compute-1)."""
        return len(self.compute)


class _Zone:
    __slots__ = ("props", "parent", "_merged")

    def __init__(self, parent: _Zone | None, props: dict[str, str] | None = None):
        self.parent = parent
        self.props: dict[str, str] = {} if props is None else props
        self._merged: Mapping[str, str] | None = None

    def merged(self) -> Mapping[str, str]:
        """Properties of this zone and its ancestors, inner zones winning: one read-only view, which the
        zone's hosts share as their ``zone_properties``."""
        if self._merged is None:
            base = self.parent.merged() if self.parent is not None else {}
            self._merged = MappingProxyType({**base, **self.props})
        return self._merged


class _RawHost:
    __slots__ = ("name", "speeds", "pstate", "cores", "props", "zone", "line")

    def __init__(self, name: str, speeds: tuple[float, ...], pstate: int, cores: int,
                 props: dict[str, str], zone: _Zone, line: int):
        self.name, self.speeds, self.pstate, self.cores = name, speeds, pstate, cores
        self.props, self.zone, self.line = props, zone, line


class _Cluster:
    __slots__ = ("names", "speeds", "cores", "zone", "line")

    def __init__(self, names: list[str], speeds: tuple[float, ...], cores: int, zone: _Zone, line: int):
        self.names, self.speeds, self.cores, self.zone, self.line = names, speeds, cores, zone, line


class _Reader:
    """expat callbacks collecting hosts and zones (errors carry the element's line)."""

    def __init__(self, path: str):
        self.path = path
        self.parser = expat.ParserCreate()
        self.parser.StartElementHandler = self.start
        self.parser.EndElementHandler = self.end
        # one entry per open element: (element object or None, dict receiving its <prop>s or None)
        self.stack: list[tuple[object, dict[str, str] | None]] = []
        self.zones: list[_Zone] = []
        self.hosts: list[_RawHost] = []
        self.lines: dict[str, int] = {}
        self.speed_cache: dict[str, tuple[float, ...]] = {}
        self.min_bw = float("inf")
        self.max_lat = 0.0
        self.net = NetworkBuilder(lambda t: parse_quantity(t, RATE_UNITS, "bandwidth"),
                                  lambda t: parse_quantity(t, TIME_UNITS, "latency"))

    def link(self, tag: str, attrs: dict[str, str], bw_key: str, lat_key: str) -> None:
        """Smallest bandwidth and largest latency of the platform's links (Batsim's message delays)."""
        bw, lat = attrs.get(bw_key), attrs.get(lat_key)
        try:
            if bw is not None:
                self.min_bw = min(self.min_bw, parse_quantity(bw, RATE_UNITS, "bandwidth"))
            if lat is not None:
                self.max_lat = max(self.max_lat, parse_quantity(lat, TIME_UNITS, "latency"))
        except ValueError as err:
            raise self.error(f"<{tag} id='{attrs.get('id', '?')}'>: {err}") from None

    def error(self, message: str, line: int | None = None, cls: type[InputError] = InputError) -> InputError:
        return cls(message, self.path, self.parser.CurrentLineNumber if line is None else line)

    def attr(self, tag: str, attrs: dict[str, str], key: str, default: str | None = None) -> str:
        value = attrs.get(key, default)
        if value is None:
            raise self.error(f"<{tag}> has no '{key}' attribute")
        return value

    def speeds(self, tag: str, attrs: dict[str, str]) -> tuple[float, ...]:
        text = self.attr(tag, attrs, "speed")
        speeds = self.speed_cache.get(text)
        if speeds is None:
            try:
                speeds = self.speed_cache[text] = parse_speeds(text)
            except ValueError as err:
                raise self.error(f"<{tag} id='{attrs.get('id', '?')}'>: {err}") from None
        return speeds

    def integer(self, tag: str, attrs: dict[str, str], key: str, default: int, minimum: int) -> int:
        text = attrs.get(key)
        if text is None:
            return default
        if not text.strip().isdecimal() or int(text) < minimum:
            raise self.error(f"<{tag} id='{attrs.get('id', '?')}'>: {key}='{text}' must be an integer "
                             f">= {minimum}")
        return int(text)

    def add_host(self, host: _RawHost) -> None:
        first = self.lines.get(host.name)
        if first is not None:
            raise self.error(f"duplicate host name '{host.name}' (first defined at line {first})", host.line)
        self.lines[host.name] = host.line
        self.hosts.append(host)

    def no_traces(self, tag: str, attrs: dict[str, str]) -> None:
        for key in ("availability_file", "state_file", "speed_file"):
            if attrs.get(key):
                raise self.error(f"<{tag} id='{attrs.get('id', '?')}'>: {key} (speed/availability trace) "
                                 "cannot be modelled by the embedded engine; use real Batsim",
                                 cls=UnsupportedInput)

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        try:
            self.route_element(tag, attrs)
        except (ValueError, KeyError) as err:
            what = f"no '{err.args[0]}' attribute" if isinstance(err, KeyError) else str(err)
            raise self.error(f"<{tag} id='{attrs.get('id', '?')}'>: {what}") from None
        self.element(tag, attrs)

    def route_element(self, tag: str, attrs: dict[str, str]) -> None:
        """What SimGrid routes with (batfeed.engine.routing): zones, netpoints, links, routes."""
        net = self.net
        if tag in ("zone", "AS"):
            net.zone(attrs)
        elif tag == "host" and net.zones:
            net.host(attrs["id"], attrs)
        elif tag == "router":
            net.router(attrs)
        elif tag == "link":
            net.link(attrs)
        elif tag in ("route", "zoneRoute", "ASroute"):
            net.start_route(tag, attrs)
        elif tag == "link_ctn":
            net.link_ctn(attrs)
        elif tag == "cluster" and net.zones:
            net.cluster(attrs, self.names(tag, attrs), parse_radical(attrs["radical"]))
        elif tag in ("backbone", "host_link", "peer", "cabinet", "bypassRoute", "bypassZoneRoute", "bypassASroute"):
            net.unsupported(f"<{tag}>")

    def element(self, tag: str, attrs: dict[str, str]) -> None:
        owner: _Zone | _RawHost | _Cluster | None = None
        if not self.stack:
            if tag != "platform":
                raise self.error(f"root element is <{tag}>, expected <platform>")
            self.check_version(attrs.get("version", "0.0"))
        elif tag == "prop":
            props = self.stack[-1][1]
            if props is not None:
                props[self.attr(tag, attrs, "id")] = self.attr(tag, attrs, "value")
        elif tag == "host":
            self.no_traces(tag, attrs)
            speeds = self.speeds(tag, attrs)
            pstate = self.integer(tag, attrs, "pstate", 0, 0)
            if pstate >= len(speeds):
                raise self.error(f"<host id='{attrs.get('id', '?')}'>: pstate {pstate} does not exist "
                                 f"({len(speeds)} speed(s) given)")
            cores = self.integer(tag, attrs, "core", 1, 1)
            owner = _RawHost(self.attr(tag, attrs, "id"), speeds, pstate, cores, {}, self.zone(tag),
                             self.parser.CurrentLineNumber)
        elif tag in ("zone", "AS"):
            owner = _Zone(self.zones[-1] if self.zones else None)
            self.zones.append(owner)
        elif tag in ("link", "backbone"):
            self.link(tag, attrs, "bandwidth", "latency")
        elif tag == "cluster":
            self.link(tag, attrs, "bw", "lat")
            self.link(tag, attrs, "bb_bw", "bb_lat")
            self.no_traces(tag, attrs)
            owner = _Cluster(self.names(tag, attrs), self.speeds(tag, attrs),
                             self.integer(tag, attrs, "core", 1, 1), _Zone(self.zone(tag)),
                             self.parser.CurrentLineNumber)
        elif tag in ("cabinet", "peer"):
            line, zone, speeds = self.parser.CurrentLineNumber, self.zone(tag), self.speeds(tag, attrs)
            for name in self.names(tag, attrs) if tag == "cabinet" else [self.attr(tag, attrs, "id")]:
                self.add_host(_RawHost(name, speeds, 0, 1, {}, zone, line))
        elif tag == "trace_connect" and attrs.get("kind", "HOST_AVAIL") in ("HOST_AVAIL", "SPEED"):
            raise self.error(f"<trace_connect> of kind {attrs.get('kind', 'HOST_AVAIL')} on "
                             f"'{attrs.get('element', '?')}' cannot be modelled by the embedded engine; "
                             "use real Batsim", cls=UnsupportedInput)
        elif tag == "include":
            raise self.error("<include> is not supported (removed from SimGrid's platform format)",
                             cls=UnsupportedInput)
        if owner is None:
            self.stack.append((None, None))
        else:  # a cluster's <prop>s are host and zone properties (SimGrid 3.34)
            self.stack.append((owner, owner.zone.props if isinstance(owner, _Cluster) else owner.props))

    def end(self, tag: str) -> None:
        owner = self.stack.pop()[0]
        if tag in ("route", "zoneRoute", "ASroute"):
            try:
                self.net.end_route()
            except ValueError as err:
                raise self.error(f"<{tag}>: {err}") from None
        if owner is None:
            return
        if isinstance(owner, _Zone):
            self.net.end_zone()
            self.zones.pop()
        elif isinstance(owner, _RawHost):
            self.add_host(owner)
        elif isinstance(owner, _Cluster):
            for name in owner.names:
                props = dict(owner.zone.props)
                self.add_host(_RawHost(name, owner.speeds, 0, owner.cores, props, owner.zone, owner.line))

    def zone(self, tag: str) -> _Zone:
        if not self.zones:
            raise self.error(f"<{tag}> outside any <zone>")
        return self.zones[-1]

    def names(self, tag: str, attrs: dict[str, str]) -> list[str]:
        prefix, suffix = attrs.get("prefix", ""), attrs.get("suffix", "")
        try:
            radicals = parse_radical(self.attr(tag, attrs, "radical"))
        except ValueError as err:
            raise self.error(f"<{tag} id='{attrs.get('id', '?')}'>: {err}") from None
        return [f"{prefix}{i}{suffix}" for i in radicals]

    def check_version(self, text: str) -> None:
        try:
            version = float(text)
        except ValueError:
            raise self.error(f"<platform> version '{text}' is not a number") from None
        if not 4.0 <= version <= 4.1:
            raise self.error(f"<platform> version {text} is not supported by SimGrid 3.34 (use "
                             "version=\"4.1\"; older files can be upgraded with simgrid_update_xml)")

    def read(self) -> None:
        try:
            with open(self.path, "rb") as stream:
                head = stream.read(1024)
                late = _LATE_DECLARATION.match(head)
                if late is None:
                    stream.seek(0)
                    self.parser.ParseFile(stream)
                else:
                    self.parser.Parse(_without_declaration(head + stream.read(), late), True)
        except (LookupError, UnicodeDecodeError) as err:
            raise InputError(f"cannot decode the platform file ({err})", self.path) from None
        except OSError as err:
            raise InputError(f"cannot read platform file: {err.strerror or err}", self.path) from None
        except expat.ExpatError as err:
            raise InputError(f"malformed XML: {expat.errors.messages[err.code]} (column {err.offset + 1})",
                             self.path, err.lineno) from None


# Blank lines before the XML declaration: XML forbids them (expat: "XML or text declaration not at start of
# entity"), SimGrid's platform parser skips them, so Batsim runs such files (three of its own test platforms).
_LATE_DECLARATION = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]+(<\?xml\b[^>]*\?>)")
_ENCODING = re.compile(rb"""encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _without_declaration(data: bytes, late: re.Match[bytes]) -> bytes:
    """``data`` with its late XML declaration replaced by blanks (so line and column numbers stay), as
    UTF-8 (expat's default once the declaration is gone)."""
    declaration = late.group(1)
    encoding = _ENCODING.search(declaration)
    data = data[:late.start(1)] + b" " * len(declaration) + data[late.end(1):]
    if encoding and encoding.group(1).decode().lower().replace("_", "-") not in ("utf-8", "utf8", "us-ascii"):
        data = data.decode(encoding.group(1).decode()).encode("utf-8")
    return data


def _role(host: _RawHost, master_host: str, path: str) -> str:
    """Batsim 4.2's role of a host (Machines::create_machines + permissions_from_role)."""
    role = host.props.get("role")
    if host.name == master_host:
        role = MASTER if role is None else role + "," + MASTER
    if not role:
        return COMPUTE
    if role not in ROLES:
        hint = ""
        if host.name == master_host:
            hint = (f"; the host is named like the master host '{master_host}', so Batsim appends ',master' "
                    "to its role property: remove that property or choose another master host name")
        raise InputError(f"host '{host.name}' has role '{role}', but a role must be exactly one of "
                         f"{', '.join(ROLES)} (Batsim 4.2 aborts: \"Cannot create any role from string "
                         f"description '{role}'\"){hint}", path, host.line)
    return role


def load_platform(path: str | Path, master_host: str = "master_host", mmax: int | None = None,
                  energy: bool = False) -> Platform:
    """Read a SimGrid platform file the way Batsim 4.2 does (``-p path -m master_host --mmax mmax [-E]``).

    ``mmax`` None or 0 keeps every compute host.  ``energy``: also check every host's power properties
    as SimGrid's energy plugin and Batsim do under ``-E`` (:func:`batfeed.engine.power.check_host`).  Raise
    InputError (UnsupportedInput for valid input the engine cannot model) naming the file and line.
    """
    path = str(path)
    reader = _Reader(path)
    reader.read()
    raws = sorted(reader.hosts, key=lambda h: h.name)
    master: _RawHost | None = None
    compute: list[_RawHost] = []
    storage: list[_RawHost] = []
    for raw in raws:
        role = _role(raw, master_host, path)
        if role == MASTER:
            if master is not None:
                raise InputError(f"There are two master hosts: '{master.name}' (line {master.line}) and "
                                 f"'{raw.name}' (line {raw.line}); Batsim needs exactly one (the host named "
                                 f"'{master_host}' or a host with role property 'master')", path, raw.line)
            master = raw
        elif role == COMPUTE:
            if not raw.speeds[raw.pstate] > 0:
                raise InputError(f"host '{raw.name}' is a compute node but has a non-positive speed",
                                 path, raw.line)
            compute.append(raw)
        else:
            storage.append(raw)
    if master is None:
        raise InputError("Cannot find the \"master\" role in the platform file: no host is named "
                         f"'{master_host}' and no host has <prop id=\"role\" value=\"master\"/>", path)
    computing = {raw.name for raw in compute} if energy else set()     # before --mmax: Batsim checks them all
    if mmax:
        if mmax < 0 or mmax > len(compute):
            raise InputError(f"Impossible to compute on M={mmax} machines: only {len(compute)} compute "
                             "machines are described in the platform file", path)
        compute = compute[:mmax]
    if energy:
        from batfeed.engine.power import check_host

        kept = {raw.name for raw in compute} | {raw.name for raw in storage}
        for raw in raws:        # SimGrid's energy plugin reads every host; Batsim asks the machines' energy
            check_host(raw.name, raw.speeds, raw.props, raw.name in computing, raw.name in kept, path)
    roles = [(raw, COMPUTE) for raw in compute] + [(raw, STORAGE) for raw in storage]
    views: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}      # equal properties: one view
    hosts = [Host(i, raw.name, raw.speeds[raw.pstate], raw.cores, role,
                  views.setdefault(tuple(raw.props.items()), MappingProxyType(raw.props)), raw.zone.merged(),
                  raw.speeds, raw.pstate) for i, (raw, role) in enumerate(roles)]
    network = _network(reader, master.name, [raw.name for raw in compute], path)
    return Platform(path, master.name, tuple(hosts[:len(compute)]), tuple(hosts[len(compute):]), network,
                    reader.min_bw if reader.min_bw < float("inf") else 0.0)


def _network(reader: _Reader, master: str, compute: list[str], path: str) -> Network | None:
    """The platform's routes, checked from every compute host and the master to the master (where Batsim's
    actors send their messages); None, with a :class:`LatencyWarning`, where they are not modelled."""
    net = reader.net.net
    why = ", ".join(net.unsupported)
    if not why and net.has_links:
        try:
            for host in (master, *compute):
                net.message_delay(host, master)
        except NotRoutable as err:
            why = str(err)
    if not why:
        return net
    warnings.warn(f"{path}: {why}: not modelled by the engine's routing, so each of Batsim's messages takes "
                  f"1 / the smallest bandwidth and no latency (up to {reader.max_lat:g} s here): their times, and "
                  "decisions taken on them, may differ from real Batsim's by that much", LatencyWarning, stacklevel=3)
    return None
