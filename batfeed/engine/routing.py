"""SimGrid 3.32's routing, as far as Batsim's messages need it: which links a message from one host to
another crosses, and how long a lone 1-byte message takes on them under Batsim's ``ptask_L07`` model.

Followed from SimGrid 3.32's source:

- ``NetZoneImpl::get_global_route_with_netzones`` and ``find_common_ancestors``: a route between two
  netpoints of one zone is that zone's local route; otherwise the common ancestor's route between the
  two child zones gives gateways and links, and the route is src → gw_src, those links, gw_dst → dst;
  latencies are added to one running total (``add_link_latency``) as they are met: the common
  ancestor's links first, then the src → gw_src part, then gw_dst → dst (so bits match SimGrid's);
- ``FullZone``: explicit ``<route>``/``<zoneRoute>`` (symmetrical by default: the reverse route has the
  links in reverse order and UP/DOWN swapped, ``RoutedZone::new_extended_route``); a zone holding no
  child zone gives every netpoint without a self-route the model's loopback (``FullZone::do_seal``:
  ``__loopback__``, ``network/loopback-bw`` 10 GBps, ``network/loopback-lat`` 0, FATPIPE);
- ``StarZone`` (``<cluster>``, ``sg_platf_new_cluster_flat``): node *i*'s route up is [limiter], its
  private link (``ID_link_i``, ``_UP`` when SPLITDUPLEX, the default), [the backbone ``ID_backbone``];
  down is the reverse; a link met twice in one local route counts once; a self-route uses the node's
  loopback (``loopback_bw``/``loopback_lat``) if any, else up then down; the router
  ``PREFIXID_routerSUFFIX`` has empty routes;
- ``VivaldiZone``: the star part (no links for plain hosts) plus the euclidean distance of the
  coordinates (+ |z| of both ends), in ms, even from a host to itself;
- ``EmptyZone`` (``routing="None"``): no links;
- ``L07Action``: a message's latency is its route's; after it, 1 byte at the rate the max-min system
  gives a lone action: each link's bandwidth divided by the times the route crosses it (once for a
  FATPIPE link), bounded by ``network/TCP-gamma`` / (2 × latency) (``L07Action::calculate_network_bound``).

Not modelled (the platform is then refused by :func:`Network.check`): Floyd and Dijkstra routing with
routes through intermediate netpoints, ``<bypassRoute>``, ``<peer>`` and ``<host_link>``, irregular
clusters (``<zone routing="Cluster">``), torus/fat-tree/dragonfly clusters.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LOOPBACK_BW = 10e9          # network/loopback-bw (sg_config.cpp)
LOOPBACK_LAT = 0.0          # network/loopback-lat
TCP_GAMMA = 4194304.0       # network/TCP-gamma (NetworkModel::cfg_tcp_gamma)

UP, DOWN, NONE = "UP", "DOWN", "NONE"


@dataclass(frozen=True, slots=True)
class Link:
    name: str
    bandwidth: float
    latency: float
    fatpipe: bool = False


MODEL_LOOPBACK = Link("__loopback__", LOOPBACK_BW, LOOPBACK_LAT, True)


@dataclass(slots=True)
class _Star:
    up: list[Link] = field(default_factory=list)
    down: list[Link] = field(default_factory=list)
    loopback: list[Link] | None = None
    gateway: str | None = None


_NO_STAR = _Star()      # the star of a netpoint that has none (read only)


class NotRoutable(ValueError):
    """A route this module does not compute (see the module docstring)."""


class Zone:
    """One netzone: its routing kind, parent, and what its kind routes with."""

    def __init__(self, name: str, kind: str, parent: Zone | None):
        self.name, self.kind, self.parent = name, kind, parent
        self.has_children = False
        self.multi_hop = False         # Floyd/Dijkstra: a missing route may chain declared ones
        self.netpoints: list[str] = []
        # Full: (src, dst) -> (gw_src, gw_dst, links)
        self.table: dict[tuple[str, str], tuple[str | None, str | None, list[Link]]] = {}
        self.star: dict[str, _Star] = {}                     # StarZone / Vivaldi
        self.coords: dict[str, tuple[float, float, float]] = {}

    def local_route(self, src: str, dst: str) -> tuple[str | None, str | None, list[Link], float]:
        """(gw_src, gw_dst, links, extra latency) of the local route (``*Zone::get_local_route``); the
        extra latency (Vivaldi's distance) is added after the links' own."""
        kind = self.kind
        if kind == "none":
            return None, None, [], 0.0
        if kind == "full":
            got = self.table.get((src, dst))
            if got is None:
                if self.multi_hop:
                    raise NotRoutable(f"the route from {src} to {dst} in zone {self.name} (routing Floyd/Dijkstra) "
                                      "chains declared routes")
                return None, None, [], 0.0
            return got[0], got[1], got[2], 0.0
        s, d = self.star.get(src, _NO_STAR), self.star.get(dst, _NO_STAR)
        if src == dst and s.loopback is not None:
            links = list(s.loopback)
        else:
            links = s.up + d.down
            if len(links) > 1 and not _distinct(links):
                links = list(dict.fromkeys(links))            # a link met twice counts once
        extra = 0.0
        if kind == "vivaldi" and (src in self.coords or dst in self.coords):
            (x1, y1, z1), (x2, y2, z2) = self.coords.get(src, (0, 0, 0)), self.coords.get(dst, (0, 0, 0))
            extra = (math.sqrt((x1 - x2) * (x1 - x2) + (y1 - y2) * (y1 - y2)) + abs(z1) + abs(z2)) / 1000.0
        return s.gateway, d.gateway, links, extra

    def seal(self) -> None:
        """``FullZone::do_seal``: the model's loopback for the netpoints of a zone without child zones."""
        if self.kind == "full" and not self.has_children:
            for p in self.netpoints:
                self.table.setdefault((p, p), (None, None, [MODEL_LOOPBACK]))


class Network:
    """The zones of a platform and the netpoints they hold (hosts, routers, child zones)."""

    def __init__(self) -> None:
        self.zones: dict[str, Zone] = {}
        self.where: dict[str, Zone] = {}          # netpoint -> englobing zone (a zone's: its parent)
        self.unsupported: list[str] = []          # what this module does not route (see the docstring)
        self.has_links = False
        self._cache: dict[tuple[str, str], tuple[float, float]] = {}
        self._parts_cache: dict[tuple[str, str], tuple[tuple[Link, ...], tuple[float, ...]]] = {}
        self._anc_cache: dict[tuple[Zone, Zone], tuple[Zone, Zone, Zone]] = {}

    def delay_free(self) -> bool:
        """No link and no non-zero Vivaldi coordinate: every message takes no time (batfeed's own
        platforms), without computing any route."""
        return not self.has_links and not any(any(c) for z in self.zones.values() for c in z.coords.values())

    def add_zone(self, name: str, kind: str, parent: Zone | None) -> Zone:
        zone = Zone(name, kind, parent)
        self.zones[name] = zone
        if parent is not None:
            parent.has_children = True
            parent.netpoints.append(name)
            self.where[name] = parent
        return zone

    def add_netpoint(self, zone: Zone, name: str) -> None:
        zone.netpoints.append(name)
        self.where[name] = zone

    def route(self, src: str, dst: str) -> tuple[list[Link], float]:
        """The links from netpoint ``src`` to ``dst`` and the route's latency (``get_global_route``)."""
        links, latencies = self._parts(src, dst)
        lat = 0.0
        for x in latencies:            # the latencies added one by one, in SimGrid's order
            lat += x
        return list(links), lat

    def _parts(self, src: str, dst: str, keep: bool = False) -> tuple[tuple[Link, ...], tuple[float, ...]]:
        """The links of the route from ``src`` to ``dst`` and the latencies ``get_global_route_with_netzones``
        adds to its running total, in its order (so the sum is SimGrid's to the bit).  ``keep``: memoize it
        (the part from a gateway to the destination, which the routes of all the hosts of a zone share)."""
        key = (src, dst)
        got = self._parts_cache.get(key)
        if got is not None:
            return got
        common, src_anc, dst_anc = self._ancestors(src, dst)
        if src_anc is dst_anc:
            _, _, local, extra = common.local_route(src, dst)
            got = tuple(local), (*[link.latency for link in local], extra)
        else:
            gw_src, gw_dst, local, extra = common.local_route(src_anc.name, dst_anc.name)
            if gw_src is None or gw_dst is None:
                raise NotRoutable(f"no route from {src} to {dst}: no <zoneRoute> from {src_anc.name} to "
                                  f"{dst_anc.name} in zone {common.name}")
            # get_local_route counts these latencies first, then the two ends'
            links: list[Any] = []
            latencies = [link.latency for link in local]
            if extra:
                latencies.append(extra)
            if src != gw_src:
                up, up_lat = self._parts(src, gw_src)
                links.extend(up)
                latencies.extend(up_lat)
            links.extend(local)
            if gw_dst != dst:
                down, down_lat = self._parts(gw_dst, dst, keep=True)
                links.extend(down)
                latencies.extend(down_lat)
            got = tuple(links), tuple(latencies)
        if keep:
            self._parts_cache[key] = got
        return got

    def _ancestors(self, src: str, dst: str) -> tuple[Zone, Zone, Zone]:
        """``find_common_ancestors``: (common, src's ancestor below it, dst's ancestor below it)."""
        zs, zd = self.where[src], self.where[dst]
        if zs is zd:
            return zs, zs, zs
        got = self._anc_cache.get((zs, zd))
        if got is None:
            got = self._anc_cache[zs, zd] = self._zone_ancestors(zs, zd)
        return got

    @staticmethod
    def _zone_ancestors(zs: Zone, zd: Zone) -> tuple[Zone, Zone, Zone]:
        path_s, path_d = _path(zs), _path(zd)
        parent = None
        while len(path_s) > 1 and len(path_d) > 1 and path_s[-1] is path_d[-1]:
            parent = path_s.pop()
            path_d.pop()
        sa, da = path_s[-1], path_d[-1]
        if sa is da:
            return sa, sa, da
        assert parent is not None
        return parent, sa, da

    def message_delay(self, src: str, dst: str) -> tuple[float, float]:
        """(latency, rate in bytes/s) of a lone 1-byte message from host ``src`` to host ``dst``
        (``L07Action``); rate 0: a route without links (the message arrives once the latency is paid)."""
        key = (src, dst)
        got = self._cache.get(key)
        if got is None:
            links, lat = self.route(src, dst)
            rate = 0.0
            if links:
                if _distinct(links):     # each link crossed once: its bandwidth (bandwidth / 1, FATPIPE or not)
                    rate = min([link.bandwidth for link in links])
                else:
                    rate = min(link.bandwidth if link.fatpipe else link.bandwidth / n
                               for link, n in Counter(links).items())
                if lat > 0:
                    rate = min(rate, TCP_GAMMA / (2.0 * lat))
            got = self._cache[key] = (lat, rate)
        return got


def _distinct(links: list[Link]) -> bool:
    """No two links of ``links`` are the same (links are equal only if named alike; names hash faster)."""
    return len({link.name for link in links}) == len(links)


def _path(zone: Zone) -> list[Zone]:
    out = []
    z: Zone | None = zone
    while z is not None:
        out.append(z)
        z = z.parent
    return out


KINDS = {"full": "full", "none": "none", "vivaldi": "vivaldi", "floyd": "full", "dijkstra": "full",
         "dijkstracache": "full"}
MULTI_HOP = ("floyd", "dijkstra", "dijkstracache")   # routes may chain declared routes: not modelled


class NetworkBuilder:
    """Builds a :class:`Network` from the platform's XML elements, as SimGrid's parser does
    (``surfxml_sax_cb.cpp``, ``sg_platf.cpp``); ``parse_bw``/``parse_lat`` turn ``"10Gbps"``/``"50us"`` into floats.
    What it cannot route is listed in ``network.unsupported`` (the caller decides)."""

    def __init__(self, parse_bw: Callable[[str], float], parse_lat: Callable[[str], float]) -> None:
        self.net = Network()
        self.bw, self.lat = parse_bw, parse_lat
        self.zones: list[Zone] = []
        self.links: dict[str, tuple[Link, Link] | Link] = {}     # SPLITDUPLEX: (UP, DOWN)
        self.route: tuple[str, str, str | None, str | None, bool] | None = None
        self.ctn: list[tuple[str, str]] = []
        self.points: dict[str, tuple[float, float, float]] = {}   # coordinates text -> one shared tuple

    def unsupported(self, what: str) -> None:
        if what not in self.net.unsupported:
            self.net.unsupported.append(what)

    # ----------------------------------------------------------------------------- elements
    def zone(self, attrs: dict[str, str]) -> None:
        routing = attrs.get("routing", "None").lower()
        kind = KINDS.get(routing)
        if kind is None:
            self.unsupported(f"routing=\"{attrs.get('routing')}\" (zone {attrs.get('id')})")
            kind = "none"
        zone = self.net.add_zone(attrs.get("id", f"zone{len(self.net.zones)}"), kind,
                                 self.zones[-1] if self.zones else None)
        zone.multi_hop = routing in MULTI_HOP
        self.zones.append(zone)

    def end_zone(self) -> None:
        self.zones.pop().seal()

    def host(self, name: str, attrs: dict[str, str]) -> None:
        zone = self.zones[-1]
        self.net.add_netpoint(zone, name)
        self._coords(zone, name, attrs)

    def router(self, attrs: dict[str, str]) -> None:
        zone = self.zones[-1]
        self.net.add_netpoint(zone, attrs["id"])
        self._coords(zone, attrs["id"], attrs)

    def _coords(self, zone: Zone, name: str, attrs: dict[str, str]) -> None:
        text = attrs.get("coordinates")
        if zone.kind == "vivaldi" and text:
            point = self.points.get(text)
            if point is None:
                parts = [float(x) for x in text.split()]
                if len(parts) != 3:
                    raise ValueError(f"coordinates of {name} must be 3 numbers, got '{text}'")
                point = self.points[text] = (parts[0], parts[1], parts[2])
            zone.coords[name] = point

    def link(self, attrs: dict[str, str]) -> None:
        name = attrs["id"]
        bw, lat = self.bw(attrs["bandwidth"]), self.lat(attrs.get("latency", "0"))
        policy = attrs.get("sharing_policy", "SHARED").upper()
        self.net.has_links = True
        if policy in ("SPLITDUPLEX", "FULLDUPLEX"):
            self.links[name] = (Link(name + "_UP", bw, lat), Link(name + "_DOWN", bw, lat))
        else:
            if policy == "WIFI":
                self.unsupported(f"WIFI link {name}")
            self.links[name] = Link(name, bw, lat, policy == "FATPIPE")

    def start_route(self, tag: str, attrs: dict[str, str]) -> None:
        symmetrical = attrs.get("symmetrical", "YES").upper() == "YES"
        if tag == "route":
            self.route = (attrs["src"], attrs["dst"], None, None, symmetrical)
        else:                                       # zoneRoute / ASroute
            self.route = (attrs["src"], attrs["dst"], attrs.get("gw_src"), attrs.get("gw_dst"), symmetrical)
        self.ctn = []

    def link_ctn(self, attrs: dict[str, str]) -> None:
        self.ctn.append((attrs["id"], attrs.get("direction", NONE).upper()))

    def end_route(self) -> None:
        assert self.route is not None
        src, dst, gw_src, gw_dst, symmetrical = self.route
        zone = self.zones[-1]
        recursive = zone.has_children
        forward = self._resolve(self.ctn, back=False)
        zone.table[(src, dst)] = (gw_src if recursive else None, gw_dst if recursive else None, forward)
        if symmetrical and src != dst:
            back = self._resolve(self.ctn, back=True)[::-1]
            zone.table[(dst, src)] = (gw_dst if recursive else None, gw_src if recursive else None, back)
        self.route = None

    def _resolve(self, ctn: list[tuple[str, str]], back: bool) -> list[Link]:
        """``NetZoneImpl::get_link_list_impl``: a SPLITDUPLEX link's UP or DOWN half (swapped on the way back)."""
        out = []
        for name, direction in ctn:
            link = self.links.get(name)
            if link is None:
                raise ValueError(f"<link_ctn id='{name}'>: no such link")
            if isinstance(link, tuple):
                if direction == NONE:
                    raise ValueError(f"<link_ctn id='{name}'>: a SPLITDUPLEX link needs direction UP or DOWN")
                out.append(link[(direction == UP) == back])
            else:
                out.append(link)
        return out

    def cluster(self, attrs: dict[str, str], names: list[str], radicals: list[int]) -> None:
        """``sg_platf_new_cluster_flat``: a StarZone of the nodes, their links, the backbone and a router."""
        cid = attrs["id"]
        if attrs.get("topology", "FLAT").upper() != "FLAT":
            self.unsupported(f"{attrs['topology']} cluster {cid}")
        zone = self.net.add_zone(cid, "star", self.zones[-1] if self.zones else None)
        policy = attrs.get("sharing_policy", "SPLITDUPLEX").upper()
        bw, lat = self.bw(attrs["bw"]), self.lat(attrs.get("lat", "0"))
        self.net.has_links = True
        backbone = None
        bb_bw, bb_lat = self.bw(attrs.get("bb_bw", "0Bps")), self.lat(attrs.get("bb_lat", "0"))
        if bb_bw > 0 or bb_lat > 0:
            backbone = Link(f"{cid}_backbone", bb_bw, bb_lat, attrs.get("bb_sharing_policy", "SHARED").upper()
                            == "FATPIPE")
        lb_bw, lb_lat = self.bw(attrs.get("loopback_bw", "0Bps")), self.lat(attrs.get("loopback_lat", "0"))
        limiter_bw = self.bw(attrs.get("limiter_link", "0Bps"))
        for name, i in zip(names, radicals, strict=True):
            self.net.add_netpoint(zone, name)
            link_id = f"{cid}_link_{i}"
            star = zone.star.setdefault(name, _Star())
            if lb_bw > 0 or lb_lat > 0:
                star.loopback = [Link(f"{link_id}_loopback", lb_bw, lb_lat, True)]
            limiter = [Link(f"{link_id}_limiter", limiter_bw, 0.0)] if limiter_bw > 0 else []
            if policy in ("SPLITDUPLEX", "FULLDUPLEX"):
                up, down = Link(f"{link_id}_UP", bw, lat), Link(f"{link_id}_DOWN", bw, lat)
            else:
                up = down = Link(link_id, bw, lat, policy == "FATPIPE")
            bb = [backbone] if backbone is not None else []
            star.up = [*limiter, up, *bb]
            star.down = [*bb, down, *limiter]
        router = attrs.get("router_id") or f"{attrs.get('prefix', '')}{cid}_router{attrs.get('suffix', '')}"
        self.net.add_netpoint(zone, router)
        zone.star[router] = _Star()
