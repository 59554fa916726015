"""Slurm sacct --parsable2 (adapters/sacct.py).

Fixture tests/data/adapters/sacct_sample.txt (header line, 2020-01-01 UTC): 1001 ran 1 h on n[01-02]
(8 CPUs), its step 1001.batch, array element 1002_1 cancelled after 1 day, 1003 pending (start
Unknown), 1004 still running, 1005 limit UNLIMITED, 1006 limit Partition_Limit (elapsed "01:00" =
60 s), a 5-field line, 1007 with month 13, 1008 cancelled at start (elapsed 0).
"""

from __future__ import annotations

import gzip
import json
import math
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from batfeed.adapters.common import TraceJob
from batfeed.adapters.nodes import expand_hostlist, node_resource_ids, peak_use, safe_name, split_procs
from batfeed.adapters.sacct import DEFAULT_FIELDS, convert_sacct, read_sacct, read_slurm_nodes, sacct_nodes
from cli_helpers import error_line, run_cli

from batfeed.errors import InputError

DATA = Path(__file__).resolve().parent / "data" / "adapters"
SAMPLE = DATA / "sacct_sample.txt"
JAN1 = 1577836800  # 2020-01-01T00:00:00 UTC


def test_hostlists() -> None:
    assert expand_hostlist("cpn-f13-03-[01-02],cpn-f13-04-[01-02]") == [
        "cpn-f13-03-01", "cpn-f13-03-02", "cpn-f13-04-01", "cpn-f13-04-02"]
    assert expand_hostlist("n[1,3-4]x,m") == ["n1x", "n3x", "n4x", "m"]
    assert expand_hostlist("r[1-2]n[08-09]") == ["r1n08", "r1n09", "r2n08", "r2n09"]
    for bad in ("n[1-", "n[a-b]", "n[3-1]"):
        with pytest.raises(ValueError):
            expand_hostlist(bad)


def test_sample(tmp_path: Path) -> None:
    res = convert_sacct([SAMPLE], tmp_path)
    rep = res.report
    assert (rep["read"], rep["kept"]) == (10, 5)
    assert rep["dropped"] == {"job_step": 1, "never_started": 1, "no_end_record": 1, "corrupt_line": 2}
    assert rep["first_dropped"]["corrupt_line"] == ["line 9: job 1099", "line 10: job 1007"]
    assert rep["modified"] == {"missing_request": 2, "zero_runtime_set_to_1s": 1}
    wl = json.loads(res.workload_path.read_text())
    assert wl["unix_start"] == JAN1
    assert [(j["original_id"], j["subtime"], j["res"], j["walltime"], wl["profiles"][j["profile"]]["delay"],
             j["status"]) for j in wl["jobs"]] == [
        ("1001", 0, 8, 7200, 3600, "COMPLETED"), ("1002_1", 600, 4, 172800, 86400, "CANCELLED"),
        ("1005", 3000, 4, -1, 300, "TIMEOUT"), ("1006", 3600, 2, -1, 60, "COMPLETED"),
        ("1008", 4800, 1, 1800, 1, "CANCELLED")]
    first = wl["jobs"][0]
    assert (first["user"], first["account"], first["partition"], first["trace_wait"], first["hosts"]) == (
        "alice", "acc1", "batch", 10, ["n01", "n02"])
    # platform: the most CPUs in use at once on each node of the node lists: n01, n02 4 (1001: 8 over 2
    # nodes; its step 1001.batch not counted), n03 4, n04 5 (1004, still running, 1 CPU [00:41, 00:51) and 1005,
    # 4 CPUs [00:50, 00:55): the old rule, the most one job used, said 4), n05 1
    assert res.nb_res == 18 and rep["platform_size_from"] == "max concurrent use: 5 nodes, 18 resources"


def test_time_zone_and_nodes_unit(tmp_path: Path) -> None:
    res = convert_sacct([SAMPLE], tmp_path, tz="Europe/Prague", unit="nodes")
    wl = json.loads(res.workload_path.read_text())
    assert wl["unix_start"] == JAN1 - 3600 and res.report["time_zone"] == "Europe/Prague"
    assert [j["res"] for j in wl["jobs"]] == [2, 1, 1, 1, 1] and res.nb_res == 5


def test_headerless_default_fields_gzip_and_walltime_fallback(tmp_path: Path) -> None:
    lines = SAMPLE.read_text().splitlines()[1:]
    path = tmp_path / "noheader.log.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert len(DEFAULT_FIELDS) == 26
    res = convert_sacct([path], tmp_path / "out", walltime_fallback="2x")
    wl = json.loads(res.workload_path.read_text())
    assert res.report["read"] == 10 and res.workload_path.name == "noheader.json"
    assert [j["walltime"] for j in wl["jobs"]][2:4] == [600, 120]


def test_strict(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        convert_sacct([SAMPLE], tmp_path, strict=True)
    assert str(err.value) == f"{SAMPLE}:9: job 1099: corrupt line: expected 26 '|'-separated fields, found 5"


def test_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text("JobID|Submit|End\n1|2020-01-01T00:00:00|2020-01-01T00:00:01\n")
    with pytest.raises(InputError, match=r"x.txt:2: the sacct columns lack start, state"):
        convert_sacct([path], tmp_path)


@pytest.mark.parametrize("name,jobs,states", [
    ("pozidriv", 11_704, {"COMPLETED": 10_134, "FAILED": 1_007, "CANCELLED": 468, "PREEMPTED": 86, "TIMEOUT": 9}),
    ("phillips", 4_285, {"COMPLETED": 2_324, "FAILED": 1_717, "CANCELLED": 243, "TIMEOUT": 1}),
])
def test_real_xdmod_files(shared_data: Path, tmp_path: Path, name: str, jobs: int, states: dict) -> None:
    path = shared_data / "slurm_sacct" / f"xdmod-referencedata-{name}.sacct.log.gz"
    res = convert_sacct([path], tmp_path)
    rep = res.report
    assert rep["read"] == rep["kept"] == jobs and rep["dropped"] == {}
    wl = json.loads(res.workload_path.read_text())
    counts: dict[str, int] = {}
    for j in wl["jobs"]:
        counts[j["status"]] = counts.get(j["status"], 0) + 1
    assert counts == states
    assert max(j["nodes"] for j in wl["jobs"]) == (4 if name == "pozidriv" else 8)
    assert max(j["res"] for j in wl["jobs"]) == (80 if name == "pozidriv" else 64)
    # elapsed 00:00:00 jobs: run time set to 1 s; Partition_Limit time limits: missing request
    expected = {"pozidriv": {"missing_request": 58, "zero_runtime_set_to_1s": 1031},
                "phillips": {"zero_runtime_set_to_1s": 261}}[name]
    assert rep["modified"] == expected


# --- platform size: max concurrent use per node, or --nodes FILE (issue 25) -------------------------------------

# n1: jobs 1 [00:00, 01:00) and 2 [00:30, 01:30), 1 CPU each, overlap -> 2 CPUs at once (the old rule, the most
# one job used, said 1); n2: job 3 alone, 4 CPUs, [02:00, 03:00).
HAND = """JobID|Submit|Start|End|Elapsed|State|NCPUS|NNodes|NodeList
1|2020-01-01T00:00:00|2020-01-01T00:00:00|2020-01-01T01:00:00|01:00:00|COMPLETED|1|1|n1
2|2020-01-01T00:00:00|2020-01-01T00:30:00|2020-01-01T01:30:00|01:00:00|COMPLETED|1|1|n1
3|2020-01-01T00:00:00|2020-01-01T02:00:00|2020-01-01T03:00:00|01:00:00|COMPLETED|4|1|n2
"""


def _hand(tmp_path: Path, text: str = HAND) -> Path:
    path = tmp_path / "hand.txt"
    path.write_text(text)
    return path


def _node_sizes(platform: Path) -> dict[str, int]:
    return {node: len(ids) for node, ids in node_resource_ids(platform).items()}


def test_peak_use_and_split() -> None:
    assert peak_use([("a", 0, 10, 1), ("a", 5, 15, 1), ("a", 15, 20, 3)]) == {"a": 3}  # 15: one ends, one starts
    assert peak_use([("a", 0, 10, 2), ("a", 10, 20, 2)]) == {"a": 2}                   # back to back: no overlap
    assert peak_use([("a", 0, math.inf, 1), ("a", 100, 200, 4)]) == {"a": 5}           # still running (no end)
    # zero-length: adds to the uses spanning its instant, not to those starting then nor to another zero-length
    assert peak_use([("a", 0, 10, 1), ("a", 5, 5, 4), ("a", 5, 5, 4), ("a", 5, 6, 2)]) == {"a": 5}
    assert peak_use([("a", 3, 3, 4), ("b", 0, 1, 1)]) == {"a": 4, "b": 1}
    assert split_procs(8, 3) == [3, 3, 2] and split_procs(8, 2) == [4, 4] and split_procs(1, 2) == [1, 1]


def test_max_concurrent_use(tmp_path: Path) -> None:
    res = convert_sacct([_hand(tmp_path)], tmp_path / "o")
    assert _node_sizes(res.platform_path) == {"n1": 2, "n2": 4}
    rep = res.report
    assert (res.nb_res, rep["platform_size_from"]) == (6, "max concurrent use: 2 nodes, 6 resources")
    assert rep["node_sizes"] == {"max_concurrent_use": {"nodes": 2, "resources": 6}} and "nodes_file" not in rep
    res = convert_sacct([_hand(tmp_path)], tmp_path / "u", unit="nodes")
    assert (res.nb_res, res.report["node_sizes"]) == (2, {"max_concurrent_use": {"nodes": 2, "resources": 2}})


def test_nodes_file(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("# sinfo -N -h -o '%N %c'\nn[1-2] 8\nn3 16  # idle in the log\n")
    res = convert_sacct([_hand(tmp_path)], tmp_path / "o", nodes_file=nodes)
    assert _node_sizes(res.platform_path) == {"n1": 8, "n2": 8, "n3": 16}
    rep = res.report
    assert (res.nb_res, rep["platform_size_from"]) == (32, "--nodes nodes.txt: 3 nodes, 32 resources")
    assert rep["node_sizes"] == {"nodes_file": {"nodes": 3, "resources": 32}}
    assert (rep["nodes_file"], rep["nodes_file_unused"]) == (str(nodes), 1) and "not_in_nodes_file" not in rep
    # --nb-res wins (the file is still read)
    assert convert_sacct([_hand(tmp_path)], tmp_path / "a", nodes_file=nodes, nb_res=10).report[
        "platform_size_from"] == "argument"


def test_nodes_file_formats(tmp_path: Path) -> None:
    scontrol = tmp_path / "scontrol.txt"
    scontrol.write_text("NodeName=n1 Arch=x86_64 CoresPerSocket=4\n   CPUAlloc=0 CPUEfctv=8 CPUTot=8 CPULoad=0.01\n"
                        "   OS=Linux 5.14.0 #1 SMP PREEMPT_DYNAMIC\n   RealMemory=128000 Sockets=2 Boards=1\n"
                        "   Reason=Not responding [slurm@2023-09-01T10:00:00]\n\n"
                        "NodeName=n2 Arch=x86_64 CoresPerSocket=8\n   CPUAlloc=0 CPUTot=16\n")
    assert read_slurm_nodes(scontrol) == {"n1": 8, "n2": 16}
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=toy\nNodeName=DEFAULT Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n"
                    "nodename=n1  # 2 x 4 x 2\nNodeName=n[2-3] CPUs=32 State=UNKNOWN\n"
                    "PartitionName=batch Nodes=n[1-3] Default=YES\n")
    assert read_slurm_nodes(conf) == {"n1": 16, "n2": 32, "n3": 32}
    # sinfo -N lists a node once per partition: the same count again is fine
    (tmp_path / "sinfo.txt").write_text("n1 4\nn[1-2] 4\n")
    assert read_slurm_nodes(tmp_path / "sinfo.txt") == {"n1": 4, "n2": 4}
    res = convert_sacct([_hand(tmp_path)], tmp_path / "o", nodes_file=conf)
    assert res.report["platform_size_from"] == "--nodes slurm.conf: 3 nodes, 80 resources"


def test_node_missing_from_the_file_is_sized_by_use_and_counted(tmp_path: Path) -> None:
    nodes = tmp_path / "n1.txt"
    nodes.write_text("n1 8\n")
    rep = convert_sacct([_hand(tmp_path)], tmp_path / "o", nodes_file=nodes).report
    assert rep["platform_size_from"] == ("--nodes n1.txt: 1 node, 8 resources; "
                                         "max concurrent use (not in n1.txt): 1 node, 4 resources")
    assert rep["node_sizes"] == {"nodes_file": {"nodes": 1, "resources": 8},
                                 "max_concurrent_use": {"nodes": 1, "resources": 4}}
    assert rep["not_in_nodes_file"] == {"count": 1, "first": ["n2"]} and rep["nb_res"] == 12


def largest_job_per_node(items: list) -> dict[str, int]:
    """The rule before issue 25: each node sized by the most processors one job used there (rounded up)."""
    slots: dict[str, int] = {}
    for it in items:
        if hosts := getattr(it, "meta", {}).get("hosts"):
            for h in map(safe_name, hosts):
                slots[h] = max(slots.get(h, 1), -(-max(it.procs, 1) // len(hosts)))
    return slots


def test_real_platform_sizes(shared_data: Path) -> None:
    """phillips: 46 nodes, 351 processors, as with the old rule (the most one job used); pozidriv: 1,214 -> 1,228."""
    def load(name: str) -> list:
        return list(read_sacct([shared_data / "slurm_sacct" / f"xdmod-referencedata-{name}.sacct.log.gz"]))

    phillips = load("phillips")
    sizing = sacct_nodes(phillips)
    assert sizing is not None and sizing.describe("procs") == "max concurrent use: 46 nodes, 351 resources"
    # equal to the old rule on every node: no two jobs of this log overlap on a node beyond its largest job.
    # Hand check, cpn-f12-19-02 (sized 1): four 1-CPU jobs one after the other on 2017-01-01, 196264
    # [18:53:32, 19:05:29), 196275 [19:05:30, 19:12:00), 196288 [19:12:00, 19:15:55), 196289 [19:15:56,
    # 19:22:34): 196288 starts the second 196275 ends, which is no overlap (closed intervals: 2 here, 373 in all).
    assert dict(sizing.nodes) == largest_job_per_node(phillips)
    on = [(j.id, j.procs) for j in phillips if isinstance(j, TraceJob) and j.meta.get("hosts") == ["cpn-f12-19-02"]]
    assert on == [("196264", 1), ("196275", 1), ("196288", 1), ("196289", 1)]
    assert dict(sizing.nodes)["cpn-f12-19-02"] == 1

    pozidriv = load("pozidriv")
    sizing = sacct_nodes(pozidriv)
    assert sizing is not None and sizing.describe("procs") == "max concurrent use: 105 nodes, 1228 resources"
    old, new = largest_job_per_node(pozidriv), dict(sizing.nodes)
    assert sum(old.values()) == 1214 and all(new[n] >= old[n] for n in old)
    assert {n: (old[n], new[n]) for n in old if new[n] != old[n]} == {"cpn-p27-07-01": (4, 14),
                                                                      "cpn-p27-10-02": (12, 16)}
    # Hand check, cpn-p27-07-01: at 2016-12-29T21:48:37 (1003583 starts) five jobs run there at once:
    # 995612 (1 CPU, since 12-27), 999183, 999188, 999193 (4 CPUs each, since 12-29 04:00) and 1003583 (1 CPU)
    t = datetime(2016, 12, 29, 21, 48, 37, tzinfo=UTC).timestamp()
    running = {j.id: j.procs for j in pozidriv if isinstance(j, TraceJob) and j.meta.get("hosts") == ["cpn-p27-07-01"]
               and (start := j.submit + j.meta["trace_wait"]) <= t < start + j.run}
    assert running == {"995612": 1, "999183": 4, "999188": 4, "999193": 4, "1003583": 1}
    assert sum(running.values()) == 14


# --- the real CLI -------------------------------------------------------------------------------------------------


def test_cli_max_concurrent_use_and_nodes_file(tmp_path: Path) -> None:
    log = _hand(tmp_path)
    proc = run_cli(["convert", "sacct", str(log), "-o", str(tmp_path / "o")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "read 3 jobs, kept 3; platform 6 resources (from max concurrent use: 2 nodes, 6 resources)" in proc.stdout
    report = json.loads((tmp_path / "o" / "hand_report.json").read_text())
    assert report["node_sizes"] == {"max_concurrent_use": {"nodes": 2, "resources": 6}}
    (tmp_path / "nodes.txt").write_text("NodeName=n[1-2] CPUs=8\n")
    proc = run_cli(["convert", "sacct", str(log), "-o", str(tmp_path / "f"), "--nodes", "nodes.txt"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "platform 16 resources (from --nodes nodes.txt: 2 nodes, 16 resources)" in proc.stdout
    assert json.loads((tmp_path / "f" / "hand_report.json").read_text())["node_sizes"] == {
        "nodes_file": {"nodes": 2, "resources": 16}}
    assert _node_sizes(tmp_path / "f" / "hand_platform.xml") == {"n1": 8, "n2": 8}
    help_text = " ".join(run_cli(["convert", "sacct", "--help"], tmp_path).stdout.split())
    assert "--nodes FILE node CPUs (default: the most in use at once on each node)" in help_text


BAD_NODE_FILES = [
    ("n1 8\nn2 eight\n", r"{f}:2: expected 'NODE CPUS', a slurm.conf 'NodeName=NODES CPUs=N' line or "
                         r"'scontrol show node' output"),
    ("n1 8\nn2 0\n", r"{f}:2: node n2: 0 CPUs \(at least 1\)"),
    ("n[1-2] 8\nn2 16\n", r"{f}:2: node n2 has 16 CPUs here but 8 on line 1"),
    ("n[2-1] 8\n", r"{f}:1: bad hostlist range '2-1'"),
    ("NodeName=n[1-2] RealMemory=64000\n", r"{f}:1: node n\[1-2\] has no CPU count \(CPUs=, CPUTot= or "
                                           r"Sockets=/CoresPerSocket=\)"),
    ("NodeName=n1 Arch=x86_64\n   CPUAlloc=0 CPUTot=many\nNodeName=n2 CPUTot=4\n", r"{f}:2: CPUTot=many: not a "
                                                                                  r"positive integer"),
    ("# nothing\n", r"{f}: no node in the node file"),
]


@pytest.mark.parametrize("text,pattern", BAD_NODE_FILES, ids=range(len(BAD_NODE_FILES)))
def test_cli_bad_nodes_file(tmp_path: Path, text: str, pattern: str) -> None:
    (tmp_path / "nodes.txt").write_text(text)
    proc = run_cli(["convert", "sacct", str(_hand(tmp_path)), "-o", "o", "--nodes", "nodes.txt"], tmp_path)
    error_line(proc, "convert", pattern.format(f="nodes.txt"))
    assert not (tmp_path / "o" / "hand.json").exists()


def test_cli_nodes_file_against_the_log(tmp_path: Path) -> None:
    log = _hand(tmp_path)

    def convert(nodes: str, *more: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "nodes.txt").write_text(nodes)
        return run_cli(["convert", "sacct", "hand.txt", "-o", "o", "--nodes", "nodes.txt", *more], tmp_path)

    # a job given more CPUs than the file gives its node(s)
    error_line(convert("n1 8\nn2 2\n"), "convert", r"hand.txt:4: job 3 uses 4 CPUs on node n2, but nodes.txt "
                                                   r"gives n2 2 CPUs")
    log.write_text(HAND.replace("|4|1|n2", "|20|2|n[2-3]"))
    error_line(convert("n1 8\nn[2-3] 8\n"), "convert", r"hand.txt:4: job 3 uses 20 CPUs on its 2 nodes n2, n3, "
                                                        r"but nodes.txt gives them 16 CPUs in all")
    log.write_text(HAND)
    # a node of the log not in the file: sized by use and counted, an error with --strict or if none is listed
    proc = convert("n1 8\n")
    assert proc.returncode == 0, proc.stderr
    assert ("platform 12 resources (from --nodes nodes.txt: 1 node, 8 resources; max concurrent use (not in "
            "nodes.txt): 1 node, 4 resources)") in proc.stdout
    error_line(convert("n1 8\n", "--strict"), "convert",
               r"nodes.txt: node n2 \(job 3, hand.txt:4\) is not listed \(missing: 1 of the log's 2 nodes; without "
               r"--strict, sized by max concurrent use\)")
    error_line(convert("x[1-2] 8\n"), "convert", r"nodes.txt: no node of the log is listed \(2 nodes; first: n1, "
                                                  r"job 1, hand.txt:2\): not this cluster's node list\?")
