"""The engine's energy model (``-E``): power properties, long double sums, machine states, and replays of real
Batsim 4.2.1 energy runs whose four output files must be byte-identical.

The replays (tests/data/engine/energy/, recorded by tests/conformance/record_suite.py with Batsim's own
``test_energy``/``test_energy_minimal`` scenarios and batsched's ``sleeper``, ``energy_watcher`` and
``energy_bf_idle_sleeper``; ``run.json`` gzipped) answer each message with batsched's recorded reply after
checking that the engine's message equals Batsim's: switches off and on with their virtual pstates,
RESOURCE_STATE_CHANGED, QUERY/ANSWER consumed_energy, parallel tasks loading the CPUs, composed profiles,
message latencies on cluster_energy_128.xml and none on the Vivaldi platform.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import platform
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from batfeed.engine import EngineConfig, load_simulation
from batfeed.engine import longdouble as ld
from batfeed.engine.energy import EnergyModel
from batfeed.engine.machines import COMPUTING, IDLE, SLEEPING, SWITCHING_OFF, SWITCHING_ON, EnergyMachines
from batfeed.engine.platform import load_platform
from batfeed.engine.power import (
    COMPUTATION,
    SLEEP,
    TRANSITION,
    HostPower,
    PowerRange,
    parse_sleep_pstates,
    parse_wattage,
    strtod_all,
    strtod_prefix,
)
from batfeed.errors import InputError, ProtocolError

DATA = Path(__file__).resolve().parent / "data" / "engine" / "energy"
RUNS = sorted(p.name for p in DATA.iterdir() if (p / "run.json.gz").is_file())
FILES = ("_jobs.csv", "_machine_states.csv", "_consumed_energy.csv", "_pstate_changes.csv")


# -- long double ---------------------------------------------------------------------------------------------

def test_long_double_keeps_64_bits_and_rounds_to_even() -> None:
    big = ld.from_float(2.0 ** 64)
    assert ld.to_fraction(ld.add(big, ld.from_float(1.0))) == 2 ** 64            # 2^64 + 1: tie, to even
    assert ld.to_fraction(ld.add(big, ld.from_float(3.0))) == 2 ** 64 + 4        # tie, to even (upwards)
    assert ld.to_fraction(ld.add(ld.from_float(2.0 ** 63), ld.from_float(1.0))) == 2 ** 63 + 1   # 64 bits: exact
    s = ld.sum_floats([0.1] * 10)
    assert ld.to_float(s) == 1.0 and sum([0.1] * 10) != 1.0                       # the extra bits show
    assert ld.fmt(ld.from_float(-1.0)) == "-1.000000"
    assert ld.fmt(ld.from_float(0.5e-6)) == "0.000000"          # 5e-7 is just below the tie as a double
    assert ld.fmt(ld.from_float(2.5)) == "2.500000"
    third = ld.div(ld.from_float(1.0), ld.from_float(3.0))
    assert third == (round(Fraction(2 ** 65, 3)), -65)                             # 1/3 to 64 bits
    assert abs(ld.to_float(third) - 1 / 3) <= 2 ** -54


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x87 long double only on x86")
def test_long_double_matches_x87() -> None:
    np = pytest.importorskip("numpy")
    if np.finfo(np.longdouble).nmant != 63:
        pytest.skip("numpy's longdouble is not the x87 format here")
    import random

    rng = random.Random(7)
    for _ in range(2000):
        xs = [rng.uniform(0, 1e7) * 10 ** rng.randint(-12, 3) for _ in range(rng.randint(1, 40))]
        s, t = ld.ZERO, np.longdouble(0)
        for x in xs:
            s, t = ld.add(s, ld.from_float(x)), t + np.longdouble(x)
        assert ld.to_fraction(s) == _frac(np, t)
        y = rng.uniform(1e-6, 1e3)
        q, u = ld.div(s, ld.from_float(y)), t / np.longdouble(y)
        assert ld.to_fraction(q) == _frac(np, u) and ld.to_float(q) == float(u)
        d = ld.sub(s, ld.from_float(xs[0]))
        assert ld.to_fraction(d) == _frac(np, t - np.longdouble(xs[0]))


def _frac(np: Any, x: Any) -> Fraction:
    m, e = np.frexp(x)
    return Fraction(int(np.ldexp(m, 64))) * Fraction(2) ** (int(e) - 64)


# -- power properties ----------------------------------------------------------------------------------------

def test_wattage_per_state_as_simgrid_reads_it() -> None:
    ranges, off = parse_wattage("h", {"wattage_per_state": "95.0:190.738, 9.75:9.75", "wattage_off": " 10 W"}, 2,
                                "p.xml")
    assert ranges == (PowerRange(95.0, 95.0, 190.738, 190.738 - 95.0), PowerRange(9.75, 9.75, 9.75, 0.0))
    assert off == 10.0                                           # std::stod: the leading number
    ranges, off = parse_wattage("h", {"wattage_per_state": "100:120:200"}, 1, "p.xml")
    assert ranges == (PowerRange(100.0, 120.0, 200.0, 80.0),) and off == 0.0
    assert parse_wattage("h", {}, 3, "p.xml") == (None, 0.0)
    assert strtod_all(" 1e3") == 1000.0 and strtod_all("1e3 ") is None and strtod_all("0x10") == 16.0
    assert strtod_prefix("12abc") == 12.0 and strtod_prefix("abc") is None


@pytest.mark.parametrize("props,pstates,words", [
    ({"wattage_per_state": "95:190, 95:180"}, 3, ["2 comma-separated group(s)", "3 pstate(s)"]),
    ({"wattage_per_state": "95:190:200:210"}, 1, ["group 0", "Idle:AllCores"]),
    ({"wattage_per_state": "95:19O"}, 1, ["invalid AllCores value '19O'", "pstate 0"]),
    ({"wattage_per_state": "95 :190"}, 1, ["invalid Idle value '95 '"]),
    ({"wattage_per_state": "95:190", "wattage_off": "ten"}, 1, ["invalid wattage_off 'ten'"]),
])
def test_bad_wattages_are_one_line_errors_naming_file_and_host(props: dict[str, str], pstates: int,
                                                              words: list[str]) -> None:
    with pytest.raises(InputError) as err:
        parse_wattage("node_7", props, pstates, "plat.xml")
    text = str(err.value)
    assert "\n" not in text and "plat.xml" in text and "'node_7'" in text
    for w in words:
        assert w in text


def test_sleep_pstates_are_sleep_off_on_triplets() -> None:
    types, sleep = parse_sleep_pstates("h", {"sleep_pstates": "3:4:5"}, 6, "p.xml")
    assert sleep == {3: (5, 4)}                  # Batsim reads sleep:off:on (sleep_ps, off_ps, on_ps)
    assert types == {0: COMPUTATION, 1: COMPUTATION, 2: COMPUTATION, 3: SLEEP, 4: TRANSITION, 5: TRANSITION}
    types, sleep = parse_sleep_pstates("h", {"sleep_pstates": "1:2:3,,4:2:3"}, 5, "p.xml")    # compressed ","
    assert sleep == {1: (3, 2), 4: (3, 2)} and types[0] == COMPUTATION
    assert parse_sleep_pstates("h", {}, 2, "p.xml") == ({0: COMPUTATION, 1: COMPUTATION}, {})
    for bad, word in (("3:4", "three colon-separated"), ("3:4:9", "pstate 9 does not exist"),
                      ("a:4:5", "'a' is not an unsigned integer"), ("3:4:5,1:3:2", "pstate 3 is a virtual"),
                      ("3:4:5,", "part ''")):
        with pytest.raises(InputError, match=word) as err:
            parse_sleep_pstates("h2", {"sleep_pstates": bad}, 6, "p.xml")
        assert "'h2'" in str(err.value) and "p.xml" in str(err.value)


def _platform(tmp_path: Path, hosts: str) -> Path:
    path = tmp_path / "p.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                    f'<platform version="4.1"><zone id="z" routing="Full">{hosts}</zone></platform>\n')
    return path


HOST = ('<host id="{name}" speed="1Gf, 0.5Gf, 0f, 1f, 2f"><prop id="wattage_per_state" '
        'value="100:200, 90:150, 10:10, 50:50, 60:60"/><prop id="sleep_pstates" value="2:3:4"/></host>')


def test_platform_under_energy_checks_every_host(tmp_path: Path) -> None:
    good = HOST.format(name="a") + HOST.format(name="b") + '<host id="master_host" speed="1Gf"/>'
    plat = load_platform(_platform(tmp_path, good), energy=True)
    assert plat.compute[0].speeds == (1e9, 5e8, 0.0, 1.0, 2.0) and plat.compute[0].pstate == 0
    # without -E nothing is read
    load_platform(_platform(tmp_path, good.replace("100:200,", "")))
    for hosts, words in (
            (good.replace("100:200,", ""), ["'a'", "4 comma-separated", "5 pstate(s)"]),
            (HOST.format(name="a") + '<host id="b" speed="1Gf"/><host id="master_host" speed="1Gf"/>',
             ["'b'", "no wattage_per_state"]),
            (good.replace('<host id="master_host" speed="1Gf"/>', '<host id="master_host" speed="1Gf">'
                          '<prop id="wattage_per_state" value="1:2:3:4"/></host>'), ["'master_host'"]),
            (good.replace("0.5Gf", "0f", 1), ["'a'", "computing pstate 1"])):
        with pytest.raises(InputError) as err:
            load_platform(_platform(tmp_path, hosts), energy=True)
        assert "\n" not in str(err.value) and "p.xml" in str(err.value)
        for w in words:
            assert w in str(err.value)


# -- machine states and the energy of one host ---------------------------------------------------------------

def test_machine_states_and_time_in_states() -> None:
    m = EnergyMachines(["a", "b", "c"])
    m.set_state(0, SWITCHING_OFF, 1.0)
    m.set_state(1, SWITCHING_OFF, 1.0)
    m.write_row(1.0)
    m.set_state(0, SLEEPING, 7.1)
    m.set_state(1, SLEEPING, 7.1)
    m.write_row(7.1)
    m.start([(2, 2)], 8.0)
    m.set_state(0, SWITCHING_ON, 9.0)
    m.write_row(9.0)
    m.end([(2, 2)], 18.0)
    m.set_state(0, IDLE, 160.5)
    assert m.rows == [(1.0, 0, 0, 2, 1, 0), (7.1, 2, 0, 0, 1, 0), (8.0, 2, 0, 0, 0, 1), (9.0, 1, 1, 0, 0, 1),
                      (18.0, 1, 1, 0, 1, 0)]
    assert m.st == [IDLE, SLEEPING, IDLE] and m.count[COMPUTING] == 0
    times = m.time_in_states()
    assert times[SWITCHING_OFF] == pytest.approx(12.2) and times[SLEEPING] == pytest.approx(1.9)
    assert times[SWITCHING_ON] == 151.5 and times[COMPUTING] == 10.0 and times[IDLE] == 1.0 + 1.0 + 8.0


def _power(speeds: tuple[float, ...] = (100.0, 50.0, 0.5, 1.0), cores: int = 1) -> HostPower:
    ranges = (PowerRange(95.0, 100.0, 200.0, 100.0), PowerRange(90.0, 90.0, 150.0, 60.0),
              PowerRange(9.75, 9.75, 9.75, 0.0), PowerRange(120.0, 120.0, 120.0, 0.0))
    return HostPower("h", speeds, 0, cores, ranges, 10.0, {0: COMPUTATION, 1: COMPUTATION, 2: SLEEP, 3: TRANSITION},
                     {2: (3, 3)})


def test_host_energy_follows_simgrid_update_rule() -> None:
    load = {0: 0.0}
    e = EnergyModel([_power(cores=2)], lambda h: load[h])
    e.update(0, 10.0)
    assert e.total[0] == 950.0                            # idle at pstate 0
    load[0] = 100.0                                       # one core of two at full speed: epsilon + 0.5 x slope
    e.update(0, 12.0)
    assert e.total[0] == 950.0 + 150.0 * 2
    e.set_pstate(0, 2, 12.0)                              # interval [10, 12] was already charged
    load[0] = 0.0
    e.update(0, 22.0)
    assert e.total[0] == 1250.0 + 97.5
    e.refresh(0, 22.0)
    assert e.saved[0] == 2 and e.last[0] == 22.0
    assert ld.fmt(e.total_energy(22.0)) == "1347.500000" and ld.fmt(e.wattmin()) == "9.750000"
    assert e.pstate_rows == ["0,0,0\n"]


def test_energy_rows_epower_and_na() -> None:
    e = EnergyModel([_power(), _power()], lambda h: 0.0)
    assert e.add_entry(0.0, "p") == ld.ZERO
    e.add_entry(2.0, "s")
    e.add_entry(2.0, "e")
    assert e.energy_rows == ["0.000000,0.000000,p,200.000000,NA\n", "2.000000,380.000000,s,200.000000,190.000000\n",
                             "2.000000,380.000000,e,200.000000,NA\n"]


# -- whole runs --------------------------------------------------------------------------------------------------

class Replay:
    """Answers the engine with batsched's recorded replies, after checking each message equals Batsim's."""

    def __init__(self, messages: list[list[Any]]):
        self.messages, self.i = messages, 0

    def exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        sent, reply = self.messages[self.i]
        got = json.loads(json.dumps(message))
        for m in (got, sent):
            for ev in m["events"]:
                if ev["type"] == "SIMULATION_BEGINS":
                    ev["data"]["workloads"] = {k: Path(v).name for k, v in ev["data"]["workloads"].items()}
        assert got == sent, f"message {self.i}: batsim {str(sent)[:300]} / batfeed {str(got)[:300]}"
        self.i += 1
        return reply

    def close(self) -> None:
        pass


def _inputs(where: Path, tmp_path: Path, run: dict[str, Any]) -> tuple[str, list[str]]:
    args = run["batsim_args"]
    files = {}
    for flag, name in zip(args, args[1:], strict=False):
        if flag in ("-p", "-w"):
            src = where / name if (where / name).is_file() else where / (name + ".gz")
            dst = tmp_path / name
            if src.suffix == ".gz":
                dst.write_bytes(gzip.decompress(src.read_bytes()))
            else:
                shutil.copyfile(src, dst)
            files.setdefault(flag, []).append(str(dst))
    return files["-p"][0], files["-w"]


@pytest.mark.parametrize("name", RUNS)
def test_replay_equals_real_batsim(tmp_path: Path, name: str) -> None:
    where = DATA / name
    run = json.loads(gzip.decompress((where / "run.json.gz").read_bytes()))
    assert {"--energy", "-E"} & set(run["batsim_args"])
    plat, wls = _inputs(where, tmp_path, run)
    sim = load_simulation(plat, wls, config=EngineConfig(energy=True))
    replay = Replay(run["messages"])
    result = sim.run(replay, tmp_path / "out")
    assert replay.i == len(run["messages"])
    for suffix in FILES:
        assert (tmp_path / f"out{suffix}").read_bytes() == (where / f"batsim{suffix}").read_bytes(), suffix
    rows = list(csv.DictReader((where / "batsim_consumed_energy.csv").open()))
    last_e = [r for r in rows if r["event_type"] == "e"][-1]["energy"]
    assert float(result.schedule["consumed_joules"]) <= float(last_e)
    assert int(result.schedule["nb_machine_switches"]) >= 0


def test_the_recordings_cover_what_they_claim() -> None:
    text = {n: gzip.decompress((DATA / n / "run.json.gz").read_bytes()).decode() for n in RUNS}
    joined = "".join(text.values())
    for what in ('"SET_RESOURCE_STATE"', '"RESOURCE_STATE_CHANGED"', '"QUERY"', '"consumed_energy"',
                 '"CALL_ME_LATER"', '"parallel_homogeneous"', '"composed"'):
        assert what in joined, what
    assert any("cluster_energy_128" in n or "cluster" in n for n in RUNS)
    assert any("notopo" in n for n in RUNS)


# -- errors and the run without -E -------------------------------------------------------------------------------

def test_energy_requests_without_energy_abort_like_batsim() -> None:
    from batfeed.engine.protocol import MSG_HANDLERS

    sim = load_simulation(DATA / "test_energy_energy128cluster-delays-sleeper" / "cluster_energy_128.xml", [])
    with pytest.raises(ProtocolError, match="SET_RESOURCE_STATE needs the energy model: run with -E"):
        MSG_HANDLERS["SET_RESOURCE_STATE"](sim, {"resources": "0", "state": "13"})
    with pytest.raises(ProtocolError, match="QUERY needs the energy model"):
        MSG_HANDLERS["QUERY"](sim, {"requests": {"consumed_energy": {}}})


def test_bad_set_resource_state_requests(tmp_path: Path) -> None:
    good = HOST.format(name="a") + HOST.format(name="b") + '<host id="master_host" speed="1Gf"/>'
    sim: Any = load_simulation(_platform(tmp_path, good), [], config=EngineConfig(energy=True))
    for data, word in (({"resources": "0", "state": "9"}, "pstate 9 does not exist"),
                       ({"resources": "5", "state": "1"}, "machine 5 does not exist"),
                       ({"resources": "0", "state": "3"}, "virtual transition pstate"),
                       ({"resources": "0", "state": "x"}, "not an integer string"),
                       ({"resources": "", "state": "1"}, "non-empty interval set"),
                       ({"resources": "0"}, "exactly")):
        with pytest.raises(ProtocolError, match=word):
            sim._msg_set_resource_state(data)
    with pytest.raises(ProtocolError, match="unknown request 'waiting_time'"):
        sim._msg_query({"requests": {"waiting_time": {}}})
    sim._msg_set_resource_state({"resources": "0-1", "state": "1"})      # computation -> computation: at once
    assert sim.energy.pstate == [1, 1] and sim.speed == [5e8, 5e8]
    assert sim.out[-1][0] != 0 and sim.out[-1][2] == [(0, 1)] and sim.out[-1][3] == "1"
    sim._msg_set_resource_state({"resources": "1", "state": "2"})        # a switch off: machine 1 switches
    assert sim.machines.st == [IDLE, SWITCHING_OFF] and sim.nb_switching == 1
    assert not math.isnan(sim.energy.total[0])


# -- the command lines ----------------------------------------------------------------------------------------

def _energy_inputs(tmp: Path) -> tuple[Path, Path]:
    hosts = "".join(HOST.format(name=f"n{i}") for i in range(4)) + '<host id="master_host" speed="1Gf"/>'
    workload = tmp / "w.json"
    workload.write_text(json.dumps({"nb_res": 4, "jobs": [
        {"id": 1, "subtime": 0, "res": 2, "walltime": 100, "profile": "d10"},
        {"id": 2, "subtime": 3, "res": 1, "walltime": 100, "profile": "c"}],
        "profiles": {"d10": {"type": "delay", "delay": 10},
                     "c": {"type": "parallel_homogeneous", "cpu": 4e9, "com": 0}}}))
    return _platform(tmp, hosts), workload


def test_batsim_and_simulate_command_lines_with_energy(tmp_path: Path) -> None:
    import subprocess

    from cli_helpers import CLI, run_cli

    from batfeed.runner import free_tcp_port

    platform, workload = _energy_inputs(tmp_path)
    ref = run_cli(["simulate", str(platform), str(workload), "--scheduler", "fcfs", "-E", "-o", "ref/out"], tmp_path)
    assert ref.returncode == 0, ref.stderr
    endpoint = f"tcp://127.0.0.1:{free_tcp_port()}"
    sched = subprocess.Popen([*CLI, "schedule", "fcfs", "--socket", endpoint, "--timeout", "60"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc = run_cli(["batsim", "-p", str(platform), "-w", str(workload), "-E", "-e", "bs/out", "-q", "-s",
                        endpoint], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert sched.wait(timeout=30) == 0
    finally:
        if sched.poll() is None:
            sched.kill()
        sched.wait(timeout=10)
    for suffix in FILES:
        assert (tmp_path / f"bs/out{suffix}").read_text() == (tmp_path / f"ref/out{suffix}").read_text(), suffix
    jobs = list(csv.DictReader((tmp_path / "bs/out_jobs.csv").open()))
    # job 2: 4 s at full load, 200 W; job 1: 2 machines idle (a delay) at 100 W for 10 s; the 4 machines over
    # [0, 10]: 2000 + 1000 + 200 x 4 + 100 x 6 = 4400 J
    assert [(j["job_id"], j["consumed_energy"]) for j in jobs] == [("2", "800.000000"), ("1", "2000.000000")]
    energy = (tmp_path / "bs/out_consumed_energy.csv").read_text().splitlines()
    assert energy[0] == "time,energy,event_type,wattmin,epower" and energy[1].startswith("0.000000,0.000000,s,")
    assert (tmp_path / "bs/out_pstate_changes.csv").read_text() == "time,machine_id,new_pstate\n0,0-3,0\n"
    schedule = next(csv.DictReader((tmp_path / "bs/out_schedule.csv").open()))
    assert schedule["consumed_joules"] == "4400.000000" and schedule["nb_machine_switches"] == "0"


def test_batsim_energy_needs_wattages(tmp_path: Path) -> None:
    from cli_helpers import error_line, run_cli, write_inputs

    platform, workload = write_inputs(tmp_path)
    proc = run_cli(["batsim", "-p", str(platform), "-w", str(workload), "-E"], tmp_path, timeout=60)
    error_line(proc, "batsim", r".*p4\.xml: host 'node_0000' has no wattage_per_state property, which -E needs on "
                               r"every compute and storage host \(SimGrid aborts: .*\)")
    proc = run_cli(["batsim", "-p", str(platform), "-w", str(workload), "-E", "--no-sched"], tmp_path, timeout=60)
    error_line(proc, "batsim", r"-E/--energy with --no-sched is not modelled by batfeed's engine .*")
