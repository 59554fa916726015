"""The harness that runs Batsim 4.2.1's own test scenarios with real Batsim and with ``batfeed batsim``.

The enumeration and the classification are checked on a small fake Batsim test directory and fake runs;
the harness itself runs on a few real scenarios when ``BATSIM_REFS`` (e.g. /root/refs/batsim) and
``BATSIM_SRC`` (Batsim's git repository) are set.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from conformance import batsim_suite as suite
from conformance.batsim_suite_enum import OUT, enumerate_scenarios

HELPER = '''
import os
from collections import namedtuple
glob_with_valgrind = False
def set_with_valgrind(v):
    global glob_with_valgrind
    glob_with_valgrind = v
class RobinInstance(object):
    def __init__(self, output_dir, batcmd, schedcmd, simulation_timeout, ready_timeout, success_timeout,
                 failure_timeout):
        self.output_dir, self.batcmd, self.schedcmd = output_dir, batcmd, schedcmd
    def to_file(self, filename):
        write_file(filename, "yaml")
def gen_batsim_cmd(platform, workload, output_dir, more_flags, is_workload=True):
    return f"batsim -p '{platform}' {'-w' if is_workload else '-W'} '{workload}' -e '{output_dir}/batres' {more_flags}"
def write_file(filename, content):
    open(filename, "w").write(content)
def run_robin(filename):
    raise RuntimeError("robin must not run")
def init_instance(test_name):
    raise RuntimeError("no test-out directory")
'''

CONFTEST = '''
import pytest
import pandas as pd
import helper
from collections import namedtuple
from os.path import abspath, dirname, realpath
P = namedtuple('Platform', ['name', 'filename'])
A = namedtuple('Algorithm', ['name', 'sched_implem', 'sched_algo_name'])
RedisMode = namedtuple('RedisMode', ['name', 'enabled'])
def pytest_generate_tests(metafunc):
    root = realpath(dirname(realpath(__file__)) + '/..')
    helper.set_with_valgrind(metafunc.config.option.with_valgrind)
    if 'small_platform' in metafunc.fixturenames:
        metafunc.parametrize('small_platform', [P('small', abspath(root + '/platforms/small.xml'))])
    if 'small_workload' in metafunc.fixturenames:
        metafunc.parametrize('small_workload', [P('delays', root + '/w/d.json'), P('mixed', root + '/w/m.json')])
    if 'algo' in metafunc.fixturenames:
        metafunc.parametrize('algo', [A('fcfs', 'batsched', 'fcfs_fast'), A('py', 'pybatsim', 'fillerSched')])
    if 'redis_mode' in metafunc.fixturenames:
        metafunc.parametrize('redis_mode', [RedisMode('redis', True), RedisMode('noredis', False)])
@pytest.fixture(scope="session", autouse=True)
def configure_pandas():
    pd.set_option('display.max_rows', None)
'''

TEST_A = '''
import json
import pandas as pd
import pytest
from helper import *
Delay = namedtuple('Delay', ['name', 'value'])
def run(platform, workload, algorithm, flags, conf=None):
    output_dir, robin_filename, schedconf_filename = init_instance(f'a-{algorithm.name}-{workload.name}')
    sched = f"batsched -v '{algorithm.sched_algo_name}'" if algorithm.sched_implem == 'batsched' else \\
        f"pybatsim {algorithm.sched_algo_name}"
    if conf is not None:
        write_file(schedconf_filename, json.dumps({"output_dir": output_dir, **conf}))
        sched += f" --variant_options_filepath '{schedconf_filename}'"
    instance = RobinInstance(output_dir=output_dir, batcmd=gen_batsim_cmd(platform.filename, workload.filename,
        output_dir, flags), schedcmd=sched, simulation_timeout=30, ready_timeout=5, success_timeout=10,
        failure_timeout=0)
    instance.to_file(robin_filename)
    return run_robin(robin_filename)
@pytest.mark.parametrize("delay", [Delay('after5', 5), Delay('after10', 10)])
def test_plain(small_platform, small_workload, algo, redis_mode, delay):
    flags = "--forward-profiles-on-submission" + (" --enable-redis" if redis_mode.enabled else "")
    ret = run(small_platform, small_workload, algo, flags, {"delay": delay.value})
    if ret.returncode != 0: raise Exception('Bad robin return code')
    jobs = pd.read_csv(open('whatever').name)
def test_must_fail(small_platform, small_workload, algo):
    ret = run(small_platform, small_workload, algo, '')
    if ret.returncode == 0: raise Exception('Batsim should complain (really)')
def helper_not_a_test(small_platform):
    pass
'''


@pytest.fixture()
def fake_tests(tmp_path: Path) -> Path:
    test = tmp_path / "test"
    test.mkdir()
    for name, text in (("helper.py", HELPER), ("conftest.py", CONFTEST), ("test_a.py", TEST_A),
                       ("test_redis.py", "def test_redis(small_platform):\n    raise RuntimeError\n")):
        (test / name).write_text(textwrap.dedent(text))
    return test


def test_enumeration_follows_the_parametrisation(fake_tests: Path) -> None:
    sc = enumerate_scenarios(fake_tests)
    root = str(fake_tests.parent.resolve())
    plain = [s for s in sc if s.test == "test_plain"]
    assert len(plain) == 1 * 2 * 2 * 2 and len(sc) == 8 + 4        # redis and test_redis.py left out
    first = plain[0]
    assert first.id == "test_a.py::test_plain[small-delays-fcfs-noredis-after5]"
    assert first.params == {"small_platform": "small", "small_workload": "delays", "algo": "fcfs",
                            "redis_mode": "noredis", "delay": "after5"}
    assert first.batsim_args == ["-p", f"{root}/platforms/small.xml", "-w", f"{root}/w/d.json",
                                 "-e", f"{OUT}/batres", "--forward-profiles-on-submission"]
    assert first.sched_args == ["batsched", "-v", "fcfs_fast", "--variant_options_filepath", f"{OUT}/schedconf.json"]
    assert json.loads(first.files["schedconf.json"]) == {"output_dir": OUT, "delay": 5}
    assert first.instance == "a-fcfs-delays" and first.expects_failure == ""
    assert first.platform.endswith("small.xml") and first.workloads == [f"{root}/w/d.json"] and first.events == []
    bat, sched, files = first.resolved("/tmp/run")
    assert bat[5] == "/tmp/run/batres" and sched[-1] == "/tmp/run/schedconf.json"
    assert json.loads(files["schedconf.json"])["output_dir"] == "/tmp/run"
    py = [s for s in sc if s.params.get("algo") == "py"]
    assert py and all(s.sched_args[:2] == ["pybatsim", "fillerSched"] for s in py)
    fail = [s for s in sc if s.test == "test_must_fail"]
    assert len(fail) == 4 and all(s.expects_failure == "Batsim should complain" for s in fail)
    assert len({s.id for s in sc}) == len(sc)
    (fake_tests.parent / "w").mkdir()
    (fake_tests.parent / "w" / "m.json").write_text('{"profiles": {"p": {"type": "smpi"}}, "jobs": []}')
    assert {suite.exemption(s) for s in sc if s.params["small_workload"] == "mixed"} == {"SMPI"}
    assert {suite.exemption(s) for s in sc if s.params["small_workload"] == "delays"} == {""}
    assert not (fake_tests / "test-out").exists() and not Path(OUT).exists()


def _run(tmp: Path, side: str, rc: int | None, files: dict[str, str], stderr: str = "") -> suite.Run:
    d = tmp / side
    d.mkdir(parents=True, exist_ok=True)
    for suffix, text in files.items():
        (d / f"batres{suffix}").write_text(text)
    return suite.Run(rc=rc, stderr=stderr, outputs=str(d / "batres"))


def test_classification(fake_tests: Path, tmp_path: Path) -> None:
    sc = enumerate_scenarios(fake_tests)[0]
    out = {"_jobs.csv": "h\n1\n", "_machine_states.csv": "m\n"}
    warn = "/x/engine.py:27: LatencyWarning: links have latencies\n  plat = load(p)\n"
    refusal = "batfeed batsim: error: -E/--energy needs the energy model; run this with real Batsim"
    cases = [
        ((None, {}), (0, out, ""), "batsim-failed"),
        ((134, {}), (0, out, ""), "batsim-failed"),
        ((0, out), (0, out, warn + "batfeed batsim: simulated\n"), "identical"),
        ((0, out), (1, {}, warn + refusal + "\n"), "refused"),
        ((0, out), (1, {}, "one\ntwo\n"), "batfeed-failed"),
        ((0, out), (1, {}, "Traceback (most recent call last):\n  x\nKeyError: 1\n"), "batfeed-failed"),
        ((0, out), (None, {}, ""), "batfeed-failed"),
        ((0, out), (0, {"_jobs.csv": "h\n2\n", "_machine_states.csv": "m\n"}, ""), "differs"),
        ((0, out), (0, {"_jobs.csv": "h\n1\n"}, ""), "differs"),
        ((0, {**out, "_consumed_energy.csv": "e\n"}), (0, out, ""), "differs"),
    ]
    for k, ((brc, bfiles), (frc, ffiles, ferr), want) in enumerate(cases):
        bs = _run(tmp_path / str(k), "batsim", brc, bfiles)
        bf = _run(tmp_path / str(k), "batfeed", frc, ffiles, ferr)
        status, detail, extra = suite.classify(sc, bs, bf)
        assert status == want, (k, status, detail)
        assert status in suite.STATUSES
    status, detail, extra = suite.classify(sc, _run(tmp_path / "r", "batsim", 0, out),
                                           _run(tmp_path / "r", "batfeed", 1, {}, warn + refusal))
    assert detail == refusal and extra["batfeed_warnings"] == ["LatencyWarning: links have latencies"]
    assert suite.refusal_reason(refusal) == "-E/--energy needs the energy model"
    assert suite.refusal_reason("batfeed batsim: error: /a/b.json: profile 'p 1' has type 'smpi': cannot; x") == \
        "<path>: profile <name> has type 'smpi': cannot"
    status, detail, extra = suite.classify(sc, _run(tmp_path / "d", "batsim", 0, out),
                                           _run(tmp_path / "d", "batfeed", 0, {**out, "_jobs.csv": "h\n1\n3\n"}))
    assert extra["diff"] == {"file": "_jobs.csv", "line": 3, "batsim": "<end of file>", "batfeed": "3"}


@pytest.mark.batsim
@pytest.mark.skipif(not (os.environ.get("BATSIM_REFS") and os.environ.get("BATSIM_SRC")),
                    reason="needs BATSIM_REFS (the reference Batsim 4.2.1 installation) and BATSIM_SRC (its git "
                           "repository)")
def test_harness_on_real_batsim(tmp_path: Path) -> None:
    script = Path(suite.__file__)
    out = tmp_path / "suite"
    proc = subprocess.run([sys.executable, str(script), "--batsim-src", os.environ["BATSIM_SRC"], "--refs",
                           os.environ["BATSIM_REFS"], "--out", str(out), "-k", "test_basic1[small-delays-",
                           "--jobs", "2", "--timeout", "60"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "results.json").read_text())
    results, summary = data["results"], data["summary"]
    assert len(results) == data["selected"] == 3 and data["enumerated"] >= 200
    assert all(r["status"] in suite.STATUSES for r in results)
    assert sum(summary["counts"].values()) == summary["scenarios"] == 3
    assert summary["counted"] == 3 - summary["counts"]["batsim-failed"]
    assert all(r["batsim"]["rc"] == 0 for r in results)             # real Batsim runs these tests
    with (out / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == [r["id"] for r in results]
    assert "3 scenarios" in proc.stdout
    leftover = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout.split()
    assert not leftover, f"processes left behind: {leftover}"


@pytest.mark.parametrize("repeats,want", [(True, "differs"), (False, "batsim-unstable")])
def test_a_difference_is_blamed_on_batsim_only_when_batsim_does_not_repeat_itself(
        fake_tests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, repeats: bool, want: str) -> None:
    sc = enumerate_scenarios(fake_tests)[0]
    ref = {"_jobs.csv": "h\n1\n", "_machine_states.csv": "m\n"}
    runs: list[str] = []

    def fake_run_side(sc: object, sim: list[str], refs: Path, work: Path, timeout: float) -> suite.Run:
        runs.append(work.name)
        if work.name == "batfeed":
            files = {**ref, "_jobs.csv": "h\n2\n"}
        else:
            files = ref if work.name == "batsim" or repeats else {**ref, "_jobs.csv": "h\n3\n"}
        return _run(work.parent, work.name, 0, files)

    monkeypatch.setattr(suite, "run_side", fake_run_side)
    args = SimpleNamespace(refs=tmp_path, batfeed=tmp_path / "batfeed", timeout=5.0)
    result = suite.run_scenario(sc, args, tmp_path / "out")
    assert result["status"] == want
    assert runs[:3] == ["batsim", "batfeed", "batsim-2"]
    summary = suite.summarise([result])
    assert summary["counted"] == (1 if want == "differs" else 0)
