"""Real files of ../shared/data (skipped with a reason when absent): KTH-SP2 counts, the Torque-derived
wagap trace (Alea extended SWF + .machines), the LANL failure data.  (The sacct and PBS samples are
tested in test_adapters_sacct.py and test_adapters_pbs.py.)  Expected numbers: shared/data/README.md.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from batfeed.adapters.downtimes import convert_downtimes
from batfeed.adapters.swf import convert_swf

from batfeed.engine.events import load_events

LANL = "failures/LA-UR-05-7318-failure-data-1996-2005.csv.xz"


def test_kth_sp2_counts(shared_data: Path, tmp_path: Path) -> None:
    res = convert_swf(shared_data / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz", tmp_path)
    rep = res.report
    # 28,476 jobs; job 27313 has no processors; 8 run 0 s; 475 run > request + 38 run = request
    assert (rep["read"], rep["kept"]) == (28_476, 28_475)
    assert rep["dropped"] == {"no_processors": 1} and rep["first_dropped"]["no_processors"] == ["line 27323: job 27313"]
    assert rep["modified"] == {"zero_runtime_set_to_1s": 8}
    assert rep["warnings"] == {"runtime_reaches_request": 513}
    wl = json.loads(res.workload_path.read_text())
    assert Counter(j["status"] for j in wl["jobs"])[0] == 7_946
    assert len({j["user"] for j in wl["jobs"]}) == 214
    over = convert_swf(shared_data / "swf" / "KTH-SP2-1996-2.1-cln.swf.gz", tmp_path / "d", over_request="drop")
    assert over.report["dropped"]["runtime_over_request"] == 475


def test_wagap_torque_trace(shared_data: Path, tmp_path: Path) -> None:
    base = shared_data / "alea_metacentrum"
    res = convert_swf(base / "wagap-2013.swf.gz", tmp_path, extended=True, machines=base / "wagap-2013.swf.machines")
    rep = res.report
    assert (rep["read"], rep["kept"]) == (17_900, 17_898)
    assert rep["dropped"] == {"negative_runtime": 2}
    assert rep["warnings"] == {"runtime_reaches_request": 702}
    assert (res.nb_res, rep["platform_size_from"]) == (2_176, "wagap-2013.swf.machines")  # 20 x 80 + 48 x 12
    wl = json.loads(res.workload_path.read_text())
    assert wl["unix_start"] == 1_356_996_147  # absolute epoch submits (2012-12-31)
    assert len({j["user"] for j in wl["jobs"]}) == 75
    assert 88 < max(j["subtime"] for j in wl["jobs"]) / 86400 < 90
    queues = Counter(j["queue_name"] for j in wl["jobs"])
    assert {"q_1d", "q_2d", "q_4d", "q_1w", "q_2w"} <= set(queues)
    nodes = convert_swf(base / "wagap-2013.swf.gz", tmp_path / "nodes", extended=True, unit="nodes",
                        machines=base / "wagap-2013.swf.machines")
    assert nodes.nb_res == 68 and nodes.report["kept"] == 17_898


def test_lanl_failures(shared_data: Path, tmp_path: Path) -> None:
    """System 20 (512 nodes): 2,478 records -> 2,455 outages, 4,555 events the engine accepts.
    Over all systems every one of the 23,739 records is accounted for."""
    path = shared_data / LANL
    res = convert_downtimes([path], tmp_path, nb_nodes=512, system=20, tz="America/Denver")
    rep = res.report
    assert (rep["read"], rep["kept"], rep["events"]) == (2_478, 2_455, 4_555)
    assert rep["dropped"] == {"shorter_than_threshold": 6, "merged_overlap": 17}
    assert len(load_events([res.events_path], 512)) == 4_555
    totals: Counter[str] = Counter()
    read = kept = 0
    for system in range(2, 25):
        rep = convert_downtimes([path], tmp_path / "all", nb_nodes=1_100, system=system, tz="America/Denver",
                                name=f"s{system}").report
        read, kept = read + rep["read"], kept + rep["kept"]
        totals.update(rep["dropped"])
        totals.update(rep["warnings"])
    assert read == 23_739 and kept == 22_767
    # < 4 min: 438 short + 122 zero-length; system 17 has no node numbers (126 records)
    assert totals == {"shorter_than_threshold": 438, "zero_length": 122, "merged_overlap": 286, "corrupt_line": 126,
                      "lanl_down_time_disagrees_with_fixed_minus_started": 2}


def test_lanl_down_time_column_follows_local_time(shared_data: Path, tmp_path: Path) -> None:
    """Read as UTC, 24 records disagree with their 'Down Time' by > 1 min (as the data README says);
    read in America/Denver, 22 of them are daylight-saving changes."""
    warned = 0
    for system in range(2, 25):
        rep = convert_downtimes([shared_data / LANL], tmp_path, nb_nodes=1_100, system=system, tz="UTC").report
        warned += rep["warnings"].get("lanl_down_time_disagrees_with_fixed_minus_started", 0)
    assert warned == 24


@pytest.mark.parametrize("missing", ["nothing-here.swf"])
def test_missing_shared_file_is_an_input_error(shared_data: Path, tmp_path: Path, missing: str) -> None:
    from batfeed.errors import InputError

    with pytest.raises(InputError, match="no such file"):
        convert_swf(shared_data / missing, tmp_path)
