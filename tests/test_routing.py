"""SimGrid 3.32's routes (batfeed/engine/routing.py) and the message steps built on them (clock.py).

``SIMGRID`` (tests/data/platforms/routing/simgrid_routes.txt) is what SimGrid 3.32 itself says (Debian's
libsimgrid 3.32, ``Host::route_to`` after ``Engine::seal_platform``, with ``host/model:ptask_L07`` as Batsim
sets it; printed with %.17g) for the platforms of that folder (``# NAME`` lines), from every host to the
master.  The engine must give the same links, bandwidths, latencies and route latency, bit for bit.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from batfeed.engine.clock import SimGridTimers
from batfeed.engine.platform import LatencyWarning, load_platform
from batfeed.engine.routing import TCP_GAMMA

DATA = Path(__file__).resolve().parent / "data" / "platforms" / "routing"

SIMGRID = (DATA / "simgrid_routes.txt").read_text()


def _oracle() -> dict[str, dict[str, tuple[float, list[tuple[str, float, float]]]]]:
    """platform name -> source host -> (route latency, [(link, bandwidth, latency)]) to the master."""
    out: dict[str, dict[str, tuple[float, list[tuple[str, float, float]]]]] = {}
    for line in SIMGRID.splitlines():
        if line.startswith("# "):
            platform = out.setdefault(line[2:], {})
            continue
        m = re.fullmatch(r"(\S+) -> (\S+) lat=(\S+) links=(.*)", line.strip())
        assert m, line
        links = [(n, float(b), float(lat)) for n, b, lat in re.findall(r"(\S+?)\(([^,]+),([^)]+)\)", m[4])]
        platform[m[1]] = (float(m[3]), links)
    return out


@pytest.mark.parametrize("name,master", [("full_routes", "master_host"), ("clusters", "master_host0"),
                                         ("nested", "master_host")])
def test_routes_are_simgrids(name: str, master: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plat = load_platform(DATA / f"{name}.xml")
    assert plat.master == master and plat.network is not None
    expected = _oracle()[name]
    assert set(expected) == {plat.master, *(h.name for h in plat.compute)}
    for src, (lat, links) in expected.items():
        got, got_lat = plat.network.route(src, master)
        assert [(link.name, link.bandwidth, link.latency) for link in got] == links, src
        assert got_lat == lat, (src, got_lat, lat)


def test_message_rates_follow_l07() -> None:
    """A lone 1-byte message: latency, then each link's bandwidth (divided by the times a SHARED link is
    crossed, not a FATPIPE one), bounded by TCP-gamma / (2 latency); no link: nothing to transfer."""
    net = load_platform(DATA / "full_routes.xml").network
    assert net is not None
    assert net.message_delay("master_host", "master_host") == (15 * 1e-6, 498e6)    # FATPIPE loopback ("15us")
    assert net.message_delay("h1", "master_host") == (0.000559904, 41279125.0)      # l1, then sd_DOWN
    assert net.message_delay("h2", "master_host") == (0.0010194639999999999, 10099625.0 / 2)   # l2 twice
    assert net.message_delay("h3", "master_host") == (0.0, 0.0)                      # no route: instant
    nested = load_platform(DATA / "nested.xml").network
    assert nested is not None
    assert nested.message_delay("master_host", "master_host") == (0.0, 10e9)        # the model's loopback
    assert nested.message_delay("w2", "master_host") == (1e-06, min(100e9, TCP_GAMMA / 2e-06))


def test_routes_the_engine_does_not_compute_fall_back_with_a_warning(tmp_path: Path) -> None:
    """Floyd routing through an intermediate host: not modelled, so the old approximation (every message
    crosses the slowest link, no latency) with a LatencyWarning naming why."""
    xml = tmp_path / "floyd.xml"
    xml.write_text("""<?xml version='1.0'?>
<platform version="4.1">
  <zone id="f" routing="Floyd">
    <host id="master_host" speed="1Gf"/><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
    <link id="l1" bandwidth="1GBps" latency="1ms"/><link id="l2" bandwidth="10MBps" latency="2ms"/>
    <route src="master_host" dst="a"><link_ctn id="l1"/></route>
    <route src="a" dst="b"><link_ctn id="l2"/></route>
  </zone>
</platform>
""")
    with pytest.warns(LatencyWarning, match=r"floyd\.xml: the route from b to master_host in zone f \(routing "
                                            r"Floyd/Dijkstra\) chains declared routes: not modelled"):
        plat = load_platform(xml)
    assert plat.network is None and plat.min_bandwidth == 10e6


def _no_early(date: float, due: list) -> None:
    raise AssertionError(f"nothing ends before the message arrives (at {date}: {due})")


def test_a_message_pays_its_latency_then_its_byte() -> None:
    """Two SimGrid steps: the latency (the comm's bound is not set before), then 1 / rate for the byte."""
    sg = SimGridTimers()
    sg.add(0.0, 100.0, 1, 0, "far")
    clock, due = sg.message_step(10.0, 0.0006000000000000001, 125e6, _no_early)
    assert due == [] and clock == (10.0 + 0.0006000000000000001) + 1 / 125e6
    assert sg.live[0][0] == (100.0 - 0.0006000000000000001) - 1 / 125e6


def test_sleeps_ending_during_a_message_post_before_it_arrives() -> None:
    """A sleep ending inside the latency is its own step, and its actor posts before the message arrives;
    one ending with the byte is returned with the arrival (it posts after the server's check)."""
    sg = SimGridTimers()
    sg.add(0.0, 0.0002, 1, 0, "early")
    sg.add(0.0, 0.0006 + 1 / 125e6, 2, 0, "late")
    posted = []
    clock, due = sg.message_step(0.0, 0.0006, 125e6, lambda t, d: posted.append((t, [e[3] for e in d])))
    assert posted == [(0.0002, ["early"])]
    assert [e[3] for e in due] == ["late"] and clock == pytest.approx(0.0006 + 8e-9, abs=1e-15)
