"""Platform XML reader (Batsim 4.2 id/role rules) and the homogeneous platform generator."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from batfeed.platforms import generate
from batfeed.platforms.generate import (
    SHIPPED,
    homogeneous_platform_xml,
    host_names,
    write_homogeneous_platform,
)

from batfeed.engine.platform import (
    Host,
    Platform,
    load_platform,
    parse_radical,
    parse_speed,
    parse_speeds,
)
from batfeed.errors import InputError, UnsupportedInput

pytestmark = pytest.mark.filterwarnings("ignore::batfeed.engine.platform.LatencyWarning")

PLATFORMS = Path(generate.__file__).resolve().parent
HEADER = ("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
          '<platform version="4.1">\n<zone id="AS0" routing="Full">\n')  # zone content starts at line 5


@pytest.fixture
def pdir(test_data: Path) -> Path:
    return test_data / "platforms"


def write(tmp_path: Path, body: str, header: str = HEADER, footer: str = "</zone>\n</platform>\n") -> Path:
    path = tmp_path / "p.xml"
    path.write_text(header + body + footer)
    return path


def names(hosts: tuple[Host, ...]) -> list[str]:
    return [h.name for h in hosts]


# --- ids follow host-name order -------------------------------------------------------------------

def test_ids_follow_name_order_not_xml_order(pdir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # its routes are modelled (batfeed.engine.routing): no warning
        plat = load_platform(pdir / "small_platform.xml")
    assert isinstance(plat, Platform) and plat.network is not None
    assert plat.path == str(pdir / "small_platform.xml")
    assert plat.master == "master_host"
    # XML order Jupiter, Fafard, Ginette, Bourassa -> ids by name
    assert [(h.id, h.name) for h in plat.compute] == [(0, "Bourassa"), (1, "Fafard"), (2, "Ginette"),
                                                      (3, "Jupiter")]
    assert [h.speed for h in plat.compute] == [48.492e6, 76.296e6, 48.492e6, 76.296e6]
    assert all(h.role == "compute_node" and h.cores == 1 for h in plat.compute)
    assert all(h.properties == {} and h.zone_properties == {} for h in plat.compute)
    assert plat.storage == ()
    assert plat.nb_compute == 4


def test_unpadded_numbers_sort_lexicographically(pdir: Path) -> None:
    plat = load_platform(pdir / "numeric_names.xml")
    # XML order node_1, node_2, node_10, but "node_10" < "node_2": this is why generated names are padded
    assert names(plat.compute) == ["node_1", "node_10", "node_2"]
    assert [h.id for h in plat.compute] == [0, 1, 2]


# --- clusters, zones, properties, storage, pstates ------------------------------------------------

def test_cluster_zones_storage_and_properties(pdir: Path) -> None:
    plat = load_platform(pdir / "cluster_zones.xml")
    assert plat.master == "frontend"  # by role property
    # radical 0-3,5,8-9 -> c-0 c-1 c-2 c-3 c-5 c-8 c-9 (no padding); "big" < "c-..."
    assert names(plat.compute) == ["big", "c-0.acme", "c-1.acme", "c-2.acme", "c-3.acme", "c-5.acme",
                                   "c-8.acme", "c-9.acme"]
    assert [h.id for h in plat.compute] == list(range(8))
    # storage ids come after every compute id, in name order
    assert [(h.id, h.name, h.role) for h in plat.storage] == [(8, "disk0", "storage"),
                                                              (9, "disk1", "storage")]
    big, c0 = plat.compute[0], plat.compute[1]
    assert (big.speed, big.cores) == (50e6, 2)  # speed of the initial pstate (pstate="1")
    assert big.properties == {"Hdd": "180"}  # the <disk>'s prop is not the host's
    assert big.zone_properties == {"site": "lyon", "level": "misc"}  # inner zone overrides
    assert (c0.speed, c0.cores) == (2e9, 4)
    assert c0.properties == {"level": "cluster"}  # SimGrid 3.34: cluster props go to hosts and zone
    assert c0.zone_properties == {"site": "lyon", "level": "cluster"}
    disk0 = plat.storage[0]
    assert (disk0.speed, disk0.properties) == (0.0, {"role": "storage", "size": "10TB"})
    assert disk0.zone_properties == {"site": "lyon", "level": "world"}


def test_host_properties_are_read_only(pdir: Path) -> None:
    """Hosts share their property views (memory: one per distinct set, one per zone), so a change to one
    host's properties cannot reach another: the views are read-only."""
    plat = load_platform(pdir / "cluster_zones.xml")
    c0, c1 = plat.compute[1], plat.compute[2]
    assert c0.properties == c1.properties == {"level": "cluster"}
    for props in (c0.properties, c0.zone_properties):
        with pytest.raises(TypeError):
            props["level"] = "x"  # type: ignore[index]
    assert c1.properties == {"level": "cluster"} and c1.zone_properties["level"] == "cluster"


@pytest.mark.parametrize(("radical", "expected"), [
    ("0-3", [0, 1, 2, 3]), ("0-3,5,8-9", [0, 1, 2, 3, 5, 8, 9]), ("7", [7]), ("10-12", [10, 11, 12]),
])
def test_parse_radical(radical: str, expected: list[int]) -> None:
    assert parse_radical(radical) == expected


@pytest.mark.parametrize("radical", ["", "a-3", "1-2-3", "0-", "1,,2"])
def test_bad_radical(radical: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        parse_radical(radical)
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n'
                           f'<cluster id="c" prefix="n" suffix="" radical="{radical}" speed="1Gf" bw="1GBps" '
                           'lat="0us"/>\n')
    with pytest.raises(InputError, match="radical") as err:
        load_platform(path)
    assert err.value.line == 6


def test_peer_and_cabinet_hosts(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n'
                           '<peer id="p" speed="3Gf" bw_in="1GBps" bw_out="1GBps" coordinates="0 0 0"/>\n'
                           '<zone id="cab" routing="Cluster"><prop id="k" value="v"/>\n'
                           '<cabinet id="c" prefix="r" suffix="" radical="1-2" speed="2Gf" bw="1GBps" '
                           'lat="0us"/>\n</zone>\n')
    plat = load_platform(path)
    assert [(h.id, h.name, h.speed) for h in plat.compute] == [(0, "p", 3e9), (1, "r1", 2e9), (2, "r2", 2e9)]
    assert plat.compute[1].zone_properties == {"k": "v"} and plat.compute[1].properties == {}


@pytest.mark.parametrize(("body", "message"), [
    ('<trace_connect kind="SPEED" trace="t" element="n0"/>\n', "trace_connect"),
    ('<include file="other.xml"/>\n', "include"),
])
def test_unsupported_elements(body: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(UnsupportedInput, match=message) as err:
        load_platform(write(tmp_path, '<host id="master_host" speed="1Gf"/>\n' + body))
    assert err.value.line == 6


def test_root_must_be_platform(tmp_path: Path) -> None:
    path = tmp_path / "p.xml"
    path.write_text('<?xml version="1.0"?>\n<zone id="a" routing="Full"/>\n')
    with pytest.raises(InputError, match="expected <platform>") as err:
        load_platform(path)
    assert err.value.line == 2


# --- speeds -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "flops"), [
    ("1Gf", 1e9), ("1f", 1.0), ("42", 42.0), ("0f", 0.0), ("98.095Mf", 98.095 * 1e6), ("2e3kf", 2e6),
    ("1.5Tf", 1.5e12), ("3Pf", 3e15), ("1Ef", 1e18), ("1Zf", 1e21), ("7flops", 7.0),
    ("2megaflops", 2e6), ("1gigaflops", 1e9), (".5Gf", 5e8), (" 1Gf", 1e9),
])
def test_parse_speed(text: str, flops: float) -> None:
    assert parse_speed(text) == flops


def test_parse_speeds_pstates() -> None:
    assert parse_speeds("100Mf, 50Mf") == (1e8, 5e7)
    assert parse_speeds("1Gf") == (1e9,)


@pytest.mark.parametrize("text", ["1Gif", "1GF", "1 Gf", "1Gf ", "Gf", "", "abc", "-1Gf", "1e", "1Kf"])
def test_bad_speed(text: str) -> None:
    with pytest.raises(ValueError):
        parse_speed(text)


def test_unknown_unit_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n<host id="n0" speed="3Gflop"/>\n')
    with pytest.raises(InputError, match="unknown speed unit 'Gflop'") as err:
        load_platform(path)
    assert (err.value.path, err.value.line) == (str(path), 6)
    assert str(err.value).startswith(f"{path}:6: ")


def test_compute_host_needs_positive_speed(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n<host id="n0" speed="0f"/>\n')
    with pytest.raises(InputError, match="non-positive speed") as err:
        load_platform(path)
    assert err.value.line == 6


def test_pstate_out_of_range(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n'
                           '<host id="n0" speed="1Gf, 2Gf" pstate="2"/>\n')
    with pytest.raises(InputError, match="pstate 2") as err:
        load_platform(path)
    assert err.value.line == 6


# --- master and roles --------------------------------------------------------------------------------

def test_master_by_name_argument(pdir: Path) -> None:
    plat = load_platform(pdir / "no_master.xml", master_host="head")
    assert plat.master == "head"
    assert names(plat.compute) == ["node_0"]


def test_master_by_role_property(pdir: Path) -> None:
    plat = load_platform(pdir / "cluster_zones.xml")
    assert plat.master == "frontend"
    assert "frontend" not in names(plat.compute + plat.storage)


def test_missing_master(pdir: Path) -> None:
    with pytest.raises(InputError, match='Cannot find the "master" role') as err:
        load_platform(pdir / "no_master.xml")
    assert err.value.path == str(pdir / "no_master.xml")


def test_two_masters(pdir: Path) -> None:
    # master_host by name and z_head by role property
    with pytest.raises(InputError, match="There are two master hosts") as err:
        load_platform(pdir / "two_masters.xml")
    assert err.value.line == 7  # z_head, the second master in name order
    # naming a compute host as master also gives two masters (big by name, frontend by role)
    with pytest.raises(InputError, match="There are two master hosts"):
        load_platform(pdir / "cluster_zones.xml", master_host="big")


def test_master_name_plus_role_property_is_rejected(pdir: Path) -> None:
    # Batsim 4.2 makes frontend's role "master,master" and aborts
    with pytest.raises(InputError, match="master,master") as err:
        load_platform(pdir / "cluster_zones.xml", master_host="frontend")
    assert err.value.line == 8


@pytest.mark.parametrize("role", ["compute_node,storage", "worker", "Master"])
def test_invalid_role(role: str, tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n'
                           f'<host id="n0" speed="1Gf"><prop id="role" value="{role}"/></host>\n')
    with pytest.raises(InputError, match="exactly one of master, compute_node, storage") as err:
        load_platform(path)
    assert err.value.line == 6


def test_empty_role_means_compute(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n'
                           '<host id="n0" speed="1Gf"><prop id="role" value=""/></host>\n')
    assert load_platform(path).compute[0].properties == {"role": ""}


# --- mmax ------------------------------------------------------------------------------------------

def test_mmax_keeps_first_compute_hosts_in_name_order(pdir: Path) -> None:
    plat = load_platform(pdir / "cluster_zones.xml", mmax=3)
    assert names(plat.compute) == ["big", "c-0.acme", "c-1.acme"]
    assert [(h.id, h.name) for h in plat.storage] == [(3, "disk0"), (4, "disk1")]
    assert load_platform(pdir / "small_platform.xml", mmax=0).nb_compute == 4  # 0 = no limit (Batsim)
    assert load_platform(pdir / "small_platform.xml", mmax=4).nb_compute == 4


def test_mmax_too_large(pdir: Path) -> None:
    with pytest.raises(InputError, match="M=5 machines: only 4"):
        load_platform(pdir / "small_platform.xml", mmax=5)
    with pytest.raises(InputError):
        load_platform(pdir / "small_platform.xml", mmax=-1)


# --- malformed input -------------------------------------------------------------------------------

def test_malformed_xml_names_file_and_line(pdir: Path) -> None:
    path = pdir / "malformed.xml"
    with pytest.raises(InputError, match="malformed XML: mismatched tag") as err:
        load_platform(path)
    assert (err.value.path, err.value.line) == (str(path), 7)
    assert str(err.value).startswith(f"{path}:7: ")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read platform file") as err:
        load_platform(tmp_path / "nope.xml")
    assert err.value.path == str(tmp_path / "nope.xml")


def test_duplicate_host_names(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n<host id="n0" speed="1Gf"/>\n'
                           '<cluster id="c" prefix="n" suffix="" radical="0-1" speed="1Gf" bw="1GBps" '
                           'lat="0us"/>\n')
    with pytest.raises(InputError, match="duplicate host name 'n0' .first defined at line 6.") as err:
        load_platform(path)
    assert err.value.line == 7


@pytest.mark.parametrize(("body", "message"), [
    ('<host speed="1Gf"/>\n', "no 'id' attribute"),
    ('<host id="n0"/>\n', "no 'speed' attribute"),
    ('<host id="n0" speed="1Gf" core="0"/>\n', "core='0' must be an integer >= 1"),
])
def test_bad_host_attributes(body: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=message) as err:
        load_platform(write(tmp_path, body))
    assert err.value.line == 5


def test_old_platform_version(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n', header=HEADER.replace("4.1", "3"))
    with pytest.raises(InputError, match="version 3") as err:
        load_platform(path)
    assert err.value.line == 3


def test_speed_trace_is_unsupported(tmp_path: Path) -> None:
    path = write(tmp_path, '<host id="master_host" speed="1Gf"/>\n'
                           '<host id="n0" speed="1Gf" availability_file="n0.trace"/>\n')
    with pytest.raises(UnsupportedInput) as err:
        load_platform(path)
    assert err.value.line == 6


# --- generator ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_platforms_round_trip(name: str) -> None:
    nb_hosts, cores = SHIPPED[name]
    path = PLATFORMS / name
    assert path.read_text() == homogeneous_platform_xml(nb_hosts, cores=cores)  # up to date
    plat = load_platform(path)
    assert plat.master == "master_host"
    assert plat.nb_compute == nb_hosts and plat.storage == ()
    assert names(plat.compute) == [f"node_{i:04d}" for i in range(nb_hosts)]
    assert [h.id for h in plat.compute] == list(range(nb_hosts))
    assert {(h.cores, h.speed, h.role) for h in plat.compute} == {(cores, 1e9, "compute_node")}
    assert all(h.properties == {"role": "compute_node"} for h in plat.compute)


def test_shipped_sizes() -> None:
    assert SHIPPED == {"small_4.xml": (4, 1), "cluster_16.xml": (16, 1), "kth_sp2_100.xml": (100, 1),
                       "hpc2n_120x2.xml": (120, 2)}


def test_generated_xml_is_vivaldi_zero_latency() -> None:
    xml = homogeneous_platform_xml(2, cores=3, speed="2.5Gf", prefix="cpu-")
    assert '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">' in xml
    assert '<platform version="4.1">' in xml and 'routing="Vivaldi"' in xml and "<link" not in xml
    assert xml.count('coordinates="0 0 0"') == 3
    assert '<host id="cpu-0001" speed="2.5Gf" core="3" coordinates="0 0 0">' in xml


def test_name_padding() -> None:
    assert host_names(3) == ["node_0000", "node_0001", "node_0002"]
    assert host_names(10_000)[-1] == "node_9999"
    assert host_names(10_001)[-1] == "node_10000"
    assert host_names(100_001)[:2] == ["node_000000", "node_000001"]
    generated = host_names(12_345)
    assert sorted(generated) == generated


def test_write_and_load_with_options(tmp_path: Path) -> None:
    path = write_homogeneous_platform(tmp_path / "c.xml", 12, cores=4, speed="100Mf, 50Mf", prefix="n",
                                      master="head")
    assert path == tmp_path / "c.xml"
    plat = load_platform(path)  # master found by its role property (not named master_host)
    assert plat.master == "head"
    assert names(plat.compute) == [f"n{i:04d}" for i in range(12)]
    assert {(h.cores, h.speed) for h in plat.compute} == {(4, 1e8)}
    assert names(load_platform(path, mmax=2).compute) == ["n0000", "n0001"]


@pytest.mark.parametrize("kwargs", [
    {"nb_hosts": 0}, {"nb_hosts": -3}, {"nb_hosts": 2.0}, {"nb_hosts": True}, {"nb_hosts": 2, "cores": 0},
    {"nb_hosts": 2, "speed": "1Gif"}, {"nb_hosts": 2, "speed": "0f"}, {"nb_hosts": 2, "speed": "fast"},
    {"nb_hosts": 2, "prefix": ""}, {"nb_hosts": 2, "master": "node_0001"},
])
def test_generator_validates_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        homogeneous_platform_xml(**kwargs)


def test_hundred_thousand_hosts(tmp_path: Path) -> None:
    path = write_homogeneous_platform(tmp_path / "big.xml", 100_000)
    plat = load_platform(path)
    assert plat.nb_compute == 100_000
    assert (plat.compute[0].id, plat.compute[0].name) == (0, "node_00000")
    assert (plat.compute[-1].id, plat.compute[-1].name) == (99_999, "node_99999")
    assert plat.compute[12_345].name == "node_12345"
