"""PBS/TORQUE/PBS Pro accounting logs (adapters/pbs.py).

Fixture (tests/data/adapters/torque_2020011{0,1}, epoch T = 1578643200 = 2020-01-10 08:00 UTC):
100 ran 1800 s on n01+n02 (4 slots); 101 queued then deleted; 102 started, requeued (R), ran again
on day 2 (last run 3600 s kept); 103[] array parent (Q only), 103[1]/103[2] elements; 104 started,
no E; 105 ran 900 s > walltime 600 s, Exit_status 271; 107 PBS Pro (select/exec_vnode/*ncpus, 16
procs); 108 E without qtime/ctime (submit from its Q stamp, 09:00 = T+3600); 109 E with start=abc;
plus a licence (L) record, a reservation (B) record and a junk line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batfeed.adapters.pbs import _chunks, _vnode_hosts, convert_pbs, parse_exec_host, read_nodes_file, read_pbs

from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "adapters"
DAYS = [DATA / "torque_20200110", DATA / "torque_20200111"]
T = 1578643200


def _jobs(result) -> dict[str, dict]:
    return {j["original_id"]: j for j in json.loads(result.workload_path.read_text())["jobs"]}


def test_exec_host_forms() -> None:
    assert parse_exec_host("n01/0+n01/1+n02/0") == {"n01": 2, "n02": 1}
    assert parse_exec_host("c1/0-3+c2/0-7") == {"c1": 4, "c2": 8}
    assert parse_exec_host("c1/0*13+c2/0*13") == {"c1": 13, "c2": 13}
    assert parse_exec_host("node0703/0-27") == {"node0703": 28}
    assert parse_exec_host("[hostname_2]/0*0") == {"[hostname_2]": 0}
    assert parse_exec_host("n1/0,2-3") == {"n1": 3}
    for bad in ("n1/x", "/0", "n1/3-1"):
        with pytest.raises(ValueError):
            parse_exec_host(bad)


def test_node_and_select_specs() -> None:
    assert _chunks("4:ppn=8") == (4, 32)
    assert _chunks("1:ppn=4:avx") == (1, 4)
    assert _chunks("n01+n02") == (2, 2)
    assert _chunks("2:ppn=8+1:ppn=4") == (3, 20)
    assert _chunks("5:ncpus=13") == (5, 65)
    assert _chunks("1:mpiprocs=48:ncpus=48:ngpus=4:mem=185547mb") == (1, 48)
    assert _vnode_hosts("(c1:ncpus=13)+(c2:ncpus=13)") == {"c1": 13, "c2": 13}
    assert _vnode_hosts("([h2][1]:mem=1kb:ngpus=2:ncpus=24+[h2][0]:ngpus=2:ncpus=24)") == {"[h2]": 48}


def test_two_days_joined(tmp_path: Path) -> None:
    res = convert_pbs(DAYS, tmp_path)
    rep = res.report
    # 11 job ids + 1 junk line; kept 100, 102, 103[1], 103[2], 108, 105, 107
    assert (rep["read"], rep["kept"]) == (12, 7)
    assert rep["kept"] + sum(rep["dropped"].values()) == rep["read"]
    assert rep["dropped"] == {"never_started": 1, "array_parent": 1, "no_end_record": 1, "corrupt_line": 2}
    assert rep["first_dropped"]["corrupt_line"] == ["torque_20200110 line 16", "torque_20200111 line 7: job 109"]
    assert rep["first_dropped"]["never_started"] == ["torque_20200110 line 4: job 101"]
    assert rep["warnings"]["requeued_last_run_kept"] == 1
    assert rep["warnings"]["submit_from_record_stamp"] == 1
    assert rep["warnings"]["runtime_reaches_request"] == 1  # 105
    assert rep["records"] == {"Q": 8, "S": 4, "D": 1, "E": 8, "L": 1, "R": 1, "B": 1}
    wl = json.loads(res.workload_path.read_text())
    assert wl["origin"] == wl["unix_start"] == T and wl["source"]["format"] == "pbs"
    jobs = _jobs(res)
    # renumbered 1..7 in submit order (array ids are not integers)
    assert [(j["id"], j["original_id"]) for j in wl["jobs"]] == [
        (1, "100.srv"), (2, "102.srv"), (3, "103[1].srv"), (4, "103[2].srv"), (5, "108.srv"), (6, "105.srv"),
        (7, "107.pbspro")]
    j100 = jobs["100.srv"]
    assert (j100["subtime"], j100["res"], j100["walltime"], wl["profiles"][j100["profile"]]["delay"]) == (
        0, 4, 3600, 1800)
    assert (j100["user"], j100["group"], j100["queue"], j100["status"], j100["nodes"], j100["hosts"]) == (
        "alice", "g1", "batch", "COMPLETED", 2, ["n01", "n02"])
    j102 = jobs["102.srv"]  # requeued: the last S/E pair
    assert wl["profiles"][j102["profile"]]["delay"] == 3600 and j102["trace_wait"] == 58000 - 180
    assert jobs["103[1].srv"]["subtime"] == 241 and jobs["103[1].srv"]["trace_eligible"] == T + 241
    assert jobs["108.srv"]["subtime"] == 3600 and jobs["108.srv"]["status"] == "FAILED"
    assert (jobs["105.srv"]["status"], jobs["105.srv"]["exit_status"], jobs["105.srv"]["walltime"]) == (
        "KILLED", 271, 600)
    j107 = jobs["107.pbspro"]  # PBS Pro: project, select, exec_vnode
    assert (j107["res"], j107["nodes"], j107["project"], j107["hosts"]) == (16, 2, "p1", ["c1", "c2"])
    # platform from exec_host, each host by the most processors in use on it at once: n01 2, n02 2, n03 1,
    # n04 2 (103[1] on n04/0 [08:15:00, 08:25:00) and 103[2] on n04/1 [08:15:10, 08:26:00) overlap: the most
    # one job used there, the rule before issue 25, gave 1), n05 4, c1 8, c2 8 (one host per processor)
    assert res.nb_res == 27 and rep["platform_size_from"] == "exec_host (max concurrent use)"
    from batfeed.engine.platform import load_platform
    names = [h.name for h in load_platform(res.platform_path).compute]
    assert len(names) == 27 and "n04_c01" in names
    assert names[:3] == ["c1_c00", "c1_c01", "c1_c02"] and "n05_c03" in names


def test_units_nodes_and_node_file(tmp_path: Path) -> None:
    res = convert_pbs(DAYS, tmp_path, unit="nodes", nodes_file=DATA / "pbs_nodes.txt")
    assert (res.nb_res, res.report["platform_size_from"]) == (7, "pbs_nodes.txt")
    jobs = _jobs(res)
    assert jobs["100.srv"]["res"] == 2 and jobs["107.pbspro"]["res"] == 2 and jobs["105.srv"]["res"] == 1
    from batfeed.engine.platform import load_platform
    hosts = load_platform(res.platform_path).compute
    assert [(h.name, h.cores) for h in hosts][:3] == [("c1", 8), ("c2", 8), ("n01", 2)]


def test_nb_res_and_filters(tmp_path: Path) -> None:
    res = convert_pbs(DAYS, tmp_path, nb_res=8, users=["alice"], name="alice")
    rep = res.report
    assert res.workload_path.name == "alice.json" and res.nb_res == 8
    assert rep["kept"] == 2 and rep["dropped"]["filtered_user"] == 5  # 100 and 108 kept
    assert "larger_than_machine" not in rep["dropped"]
    res = convert_pbs(DAYS, tmp_path / "b", nb_res=8)
    assert res.report["dropped"]["larger_than_machine"] == 1  # 107 needs 16 procs


def test_nodes_file_forms(tmp_path: Path) -> None:
    path = tmp_path / "pbsnodes.txt"
    path.write_text("n01\n     state = free\n     np = 8\n\nn02\n     state = down\n"
                    "     resources_available.ncpus = 4\nn03 2\n")
    assert read_nodes_file(path) == [("n01", 8), ("n02", 4), ("n03", 2)]
    path.write_text("n01 two\n")
    with pytest.raises(InputError, match=r"pbsnodes.txt:1: expected 'node \[procs\]'"):
        read_nodes_file(path)


def test_strict_stops_on_junk_line_with_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        convert_pbs(DAYS, tmp_path, strict=True)
    assert str(err.value).startswith(f"{DAYS[0]}:16: corrupt record")


def test_strict_job_error_names_the_job(tmp_path: Path) -> None:
    clean = tmp_path / "day2"
    clean.write_text(DAYS[1].read_text())
    with pytest.raises(InputError) as err:
        convert_pbs([clean], tmp_path / "out", strict=True)
    assert str(err.value) == f"{clean}:7: job 109: start='abc' is not an integer epoch"


def test_read_pbs_records_and_quoted_values() -> None:
    recs = [r for r in read_pbs([DAYS[0]], on_corrupt=lambda e: None)]
    e = next(r for r in recs if r.id == "103[1].srv" and r.type == "E")
    assert e.attrs["jobname"] == '"my job"' and e.attrs["Exit_status"] == "0" and e.line == 10


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope: no such file"):
        convert_pbs([tmp_path / "nope"], tmp_path)


def test_real_pbs_sample(shared_data: Path, tmp_path: Path) -> None:
    """The XDMoD fixture: 9 E records (TORQUE 2009-2020 and PBS Pro 2016/2020 styles), job 6 twice."""
    res = convert_pbs([shared_data / "pbs_torque" / "xdmod-unit-shredder-pbs-accounting-logs.log"], tmp_path)
    rep = res.report
    assert (rep["read"], rep["kept"], rep["dropped"]) == (8, 8, {})
    assert rep["records"] == {"E": 9} and rep["warnings"]["merged_end_records"] == 1
    jobs = {j["id"]: j for j in json.loads(res.workload_path.read_text())["jobs"]}
    assert sorted(jobs) == [6, 2994, 2995, 7904, 10711, 10712, 3073070, 6464684]
    assert {i: jobs[i]["res"] for i in jobs} == {6: 32, 6464684: 4, 2994: 65, 2995: 12, 7904: 28, 10711: 28,
                                                  10712: 28, 3073070: 48}
    assert jobs[6]["nodes"] == 4 and jobs[2994]["nodes"] == 5 and jobs[3073070]["status"] == "KILLED"
    assert jobs[10711]["walltime"] == -1 and rep["modified"] == {"missing_request": 1}
    # each host by the most processors in use on it at once, at least its highest TORQUE slot + 1: i02n30..33
    # 8 each (job 6); n404 6 (job 6464684 holds slots 2-5); c1 13 + 4 and c2 13 + 8 (2994 and 2995 start
    # together), c3..c5 13; node0703 28 + 28 (10711 and 10712 overlap 10 s apart); [hostname_2] 48.  The
    # most one job used (before issue 25) gave 32 + 4 + 65 + 28 + 48 = 177.
    assert res.nb_res == 4 * 8 + 6 + 17 + 21 + 3 * 13 + 56 + 48 == 219
