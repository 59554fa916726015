"""Downtimes -> Batsim external events (adapters/downtimes.py); every events file written here is read
back with the engine's own reader (batfeed.engine.events.load_events).

Platform used: nodes n01 (2 procs), n02 (2), n03 (1), one host per processor -> ids n01 0-1,
n02 2-3, n03 4.  Time 0 = 2020-01-01T00:00:00Z = 1577836800 (``ORIGIN``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batfeed.adapters.downtimes import convert_downtimes, parse_time
from batfeed.adapters.nodes import node_resource_ids, write_node_platform

from batfeed.engine.events import load_events
from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "adapters"
ORIGIN = 1577836800


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    return write_node_platform(tmp_path / "p.xml", [("n01", 2), ("n02", 2), ("n03", 1)], unit="procs")


def _events(path: Path, nb: int = 5) -> list[tuple[float, str, str]]:
    from batfeed.engine.intervals import format_hyphen
    return [(e.timestamp, e.type, format_hyphen(e.resources)) for e in load_events([path], nb)]


def test_node_ids_follow_host_name_order(platform: Path) -> None:
    assert node_resource_ids(platform) == {"n01": [0, 1], "n02": [2, 3], "n03": [4]}


def test_outage_csv(platform: Path, tmp_path: Path) -> None:
    res = convert_downtimes([DATA / "outages.csv"], tmp_path, platform=platform, origin=ORIGIN, horizon=10_000)
    rep = res.report
    assert (rep["read"], rep["kept"], rep["records"]) == (11, 4, 11)
    assert rep["dropped"] == {"merged_overlap": 2, "shorter_than_threshold": 1, "outside_horizon": 1,
                              "unknown_node": 1, "end_before_start": 1, "corrupt_line": 1}
    assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
    assert rep["modified"] == {"clipped_start": 1, "clipped_end": 1}
    assert rep["first_dropped"]["unknown_node"] == ["line 10: node n99"]
    assert _events(res.events_path) == [
        (0, "machine_unavailable", "0-1 4"),   # n01 [0, 600] + [200, 1200] + [1200, 1800] merged; n03 clipped
        (1000, "machine_available", "4"),
        (1800, "machine_available", "0-1"),
        (3600, "machine_unavailable", "2-3"),  # ISO times
        (7200, "machine_available", "2-3"),
        (9200, "machine_unavailable", "4"),
        (10000, "machine_available", "4"),     # clipped to the horizon
    ]
    assert res.events_path.name == "outages_events.txt" and rep["events"] == 7


def test_strict_outages(platform: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        convert_downtimes([DATA / "outages.csv"], tmp_path, platform=platform, origin=ORIGIN, strict=True)
    assert str(err.value) == f"{DATA / 'outages.csv'}:10: node n99: unknown node"


def test_threshold_is_configurable(platform: Path, tmp_path: Path) -> None:
    res = convert_downtimes([DATA / "outages.csv"], tmp_path, platform=platform, origin=ORIGIN, horizon=10_000,
                            min_duration=0)
    assert "shorter_than_threshold" not in res.report["dropped"]
    assert (1577837000 - ORIGIN, "machine_unavailable", "2-3") in _events(res.events_path)


def test_node_states_log(platform: Path, tmp_path: Path) -> None:
    res = convert_downtimes([DATA / "node_states.csv"], tmp_path, platform=platform, origin="2020-01-01T00:00:00",
                            horizon=5000)
    rep = res.report
    assert (rep["read"], rep["kept"], rep["dropped"]) == (3, 2, {"shorter_than_threshold": 1})
    assert rep["modified"] == {"clipped_end": 1}  # n03 still down at the end of the log
    assert _events(res.events_path) == [(600, "machine_unavailable", "0-1"), (1200, "machine_available", "0-1"),
                                        (2400, "machine_unavailable", "4"), (5000, "machine_available", "4")]
    # without a horizon the open outage has no end event
    res = convert_downtimes([DATA / "node_states.csv"], tmp_path / "b", platform=platform, origin=ORIGIN)
    assert _events(res.events_path)[-1] == (2400, "machine_unavailable", "4")


def test_maintenance_windows_and_merge_across_files(platform: Path, tmp_path: Path) -> None:
    res = convert_downtimes([DATA / "maintenance.csv", DATA / "outages.csv"], tmp_path, platform=platform,
                            origin=ORIGIN, horizon=40_000, name="all")
    rep = res.report
    assert res.events_path.name == "all_events.txt"
    # maintenance: 3 nodes (ALL) + 2 (0-1) + 1 (n03) node outages, the rest from outages.csv
    assert rep["read"] == 6 + 11 and rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
    ev = _events(res.events_path)
    # rack A (n01, n02: 0-600) and rack B (n03: 300-900) merge with the outages of n01 (0-1800), n03 (0-1000)
    assert ev[:3] == [(0, "machine_unavailable", "0-4"), (600, "machine_available", "2-3"),
                      (1000, "machine_available", "4")]
    assert (28_800, "machine_unavailable", "0-4") in ev and (32_400, "machine_available", "0-4") in ev
    assert rep["first_dropped"]["unknown_node"] == ["outages.csv line 10: node n99"]


def test_lanl_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"holds 2 systems \(2-20\): choose one"):
        convert_downtimes([DATA / "lanl_sample.csv"], tmp_path, nb_nodes=4)
    res = convert_downtimes([DATA / "lanl_sample.csv"], tmp_path, nb_nodes=4, system=20, tz="America/Denver")
    rep = res.report
    assert rep["origin"] == parse_time("2020-01-01T07:00:00+00:00", None) == 1577862000  # earliest outage, MST
    assert rep["dropped"] == {"corrupt_line": 1, "shorter_than_threshold": 1, "unknown_node": 1}
    assert _events(res.events_path, 4) == [(0, "machine_unavailable", "0"), (3600, "machine_available", "0"),
                                           (7200, "machine_unavailable", "1"), (9000, "machine_available", "1")]


def test_origin_and_horizon_from_workload(tmp_path: Path) -> None:
    """Without a platform, ``nb_nodes`` gives nodes node_0000...; time 0 and the horizon come from the
    workload: unix_start, and max(subtime + max(delay, walltime)) = 500 + 1000."""
    wl = {"nb_res": 2, "unix_start": ORIGIN + 600, "jobs": [
        {"id": 1, "subtime": 0, "res": 1, "profile": "d", "walltime": 100},
        {"id": 2, "subtime": 500, "res": 1, "profile": "d"}], "profiles": {"d": {"type": "delay", "delay": 1000}}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(wl))
    outages = tmp_path / "o.csv"
    outages.write_text(f"node,start,end\nnode_0001,{ORIGIN},{ORIGIN + 1200}\n2,{ORIGIN + 1000},{ORIGIN + 5000}\n"
                       f"node_0003,{ORIGIN},{ORIGIN + 1200}\n")
    res = convert_downtimes([outages], tmp_path / "out", nb_nodes=3, workload=path)
    assert (res.report["origin"], res.report["horizon"]) == (ORIGIN + 600, 1500)
    assert res.report["dropped"] == {"unknown_node": 1}
    assert _events(res.events_path, 3) == [(0, "machine_unavailable", "1"), (400, "machine_unavailable", "2"),
                                           (600, "machine_available", "1"), (1500, "machine_available", "2")]


def test_bad_inputs(platform: Path, tmp_path: Path) -> None:
    bad = tmp_path / "x.csv"
    bad.write_text("foo,bar\n1,2\n")
    with pytest.raises(InputError, match="cannot tell the downtime format"):
        convert_downtimes([bad], tmp_path, platform=platform)
    with pytest.raises(ValueError, match="platform or nb_nodes"):
        convert_downtimes([DATA / "outages.csv"], tmp_path)


def test_events_drive_a_simulation(platform: Path, tmp_path: Path) -> None:
    """The engine runs FCFS on the platform with the converted outages (no Batsim rule broken)."""
    from batfeed.runner import run_simulation

    res = convert_downtimes([DATA / "outages.csv"], tmp_path, platform=platform, origin=ORIGIN, horizon=10_000)
    wl = {"nb_res": 5, "jobs": [{"id": i, "subtime": 100 * i, "res": 1 + i % 3, "profile": "d"} for i in range(20)],
          "profiles": {"d": {"type": "delay", "delay": 700}}}
    wpath = tmp_path / "w.json"
    wpath.write_text(json.dumps(wl))
    result = run_simulation(platform, [wpath], scheduler="fcfs", events=[res.events_path], export=tmp_path / "sim")
    assert result.counts["submitted"] == 20 == result.counts["completed_successfully"]
