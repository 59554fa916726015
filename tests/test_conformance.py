"""Conformance of the embedded engine with real Batsim 4.2.1, message by message.

Every recording in ``tests/data/conformance/`` (made by ``tests/conformance/record.py`` with real
Batsim 4.2.1 and the probe scheduler of ``tests/conformance/probe.py``) and the three golden
recordings of ``tests/data/batsim_golden/`` are replayed on batfeed's engine, driven in-process by the
same probe.  Each scenario is recorded twice: on a cluster platform with (zero-latency, 1000TBps) links
like ``platform_100.xml`` (``<name>``), where every internal Batsim message is a 1e-15 s SimGrid
communication and SimGrid's clock can drift by a few ulps, and on its link-less twin (``<name>_nolink``,
a Vivaldi platform like batfeed's generated ones), where internal messages take exactly 0 s.

The engine must send the same messages (same events, order, boundaries, ``now`` and
timestamps, same JSON types) and write the same ``_jobs.csv`` / ``_machine_states.csv`` and
``_schedule.csv`` (bar its wall-clock fields and ``batsim_version``); see ``conformance.compare`` for
the only normalisation (workload paths in SIMULATION_BEGINS).

The other tests check the kit itself: the probe reproduces the recorded replies from the recorded
Batsim messages (it is deterministic and the recordings are consistent), the generator reproduces the
stored inputs byte for byte, and every recording is a complete run of real Batsim.
"""

from __future__ import annotations

import json

import pytest
from conformance import compare, scenarios

RECORDED = compare.recorded_names()
LINKED = [n for n in RECORDED if not n.endswith(scenarios.NOLINK)]
NOLINK = [n for n in RECORDED if n.endswith(scenarios.NOLINK)]
GOLDEN = list(compare.GOLDEN)
ALL = [("linked", n) for n in LINKED] + [("nolink", n) for n in NOLINK] + [("golden", n) for n in GOLDEN]


def _load(kind: str, name: str) -> compare.Recording:
    if kind == "golden":
        return compare.load_golden(name)
    return compare.load_recording(compare.CONFORMANCE_DATA / name)


def test_recordings_present():
    assert len(LINKED) >= 40, f"expected ~40 recorded scenarios in {compare.CONFORMANCE_DATA}"
    assert sorted(NOLINK) == sorted(n + scenarios.NOLINK for n in LINKED), "every scenario has a _nolink twin"
    for name in GOLDEN:
        assert (compare.GOLDEN_DATA / f"{name}.messages.jsonl.gz").exists()


@pytest.mark.parametrize("name", NOLINK)
def test_nolink_twin(name):
    """A ``_nolink`` recording is its twin's scenario on a link-less platform: same hosts, ids and
    properties (SIMULATION_BEGINS equal bar the workload paths), same switches and probe options."""
    twin = name[:-len(scenarios.NOLINK)]
    rec, ref = compare.load_recording(compare.CONFORMANCE_DATA / name), compare.load_recording(
        compare.CONFORMANCE_DATA / twin)
    assert "<link" not in rec.platform.read_text() and 'routing="Vivaldi"' in rec.platform.read_text()
    assert "<link" in ref.platform.read_text()
    meta = json.loads((rec.dir / scenarios.SCENARIO_FILE).read_text())
    meta_ref = json.loads((ref.dir / scenarios.SCENARIO_FILE).read_text())
    assert meta["links"] is False and "links" not in meta_ref
    for key in ("batsim_args", "probe_options", "workloads", "events", "master_host", "mmax"):
        assert meta[key] == meta_ref[key], key
    begins = [compare.normalise(r.messages()[0])["recv"] for r in (rec, ref)]
    assert begins[0] == begins[1]


@pytest.mark.parametrize("kind,name", ALL, ids=[n for _, n in ALL])
def test_engine_matches_real_batsim(kind, name, tmp_path):
    diff = compare.compare(_load(kind, name), tmp_path)
    assert diff is None, diff


@pytest.mark.parametrize("kind,name", ALL, ids=[n for _, n in ALL])
def test_probe_replays_recording(kind, name):
    rec = _load(kind, name)
    diff = compare.probe_replay_difference(rec)
    assert diff is None, diff
    msgs = rec.messages()
    assert msgs[0]["recv"]["events"][0]["type"] == "SIMULATION_BEGINS"
    assert [e["type"] for e in msgs[-1]["recv"]["events"]] == ["SIMULATION_ENDS"]


@pytest.mark.parametrize("name", RECORDED)
def test_recording_metadata(name):
    meta = json.loads((compare.CONFORMANCE_DATA / name / scenarios.SCENARIO_FILE).read_text())
    assert meta["recorded_with"]["batsim_version"] == "4.2.1"
    assert meta["recorded_with"]["command"][0] == "batsim"


@pytest.mark.parametrize("name", RECORDED)
def test_generator_reproduces_inputs(name, tmp_path):
    stored = compare.CONFORMANCE_DATA / name
    sc = scenarios.make(name, tmp_path)
    for f in sc.files():
        assert (tmp_path / f).read_bytes() == (stored / f).read_bytes(), f"{name}: {f} differs"
    meta = json.loads((stored / scenarios.SCENARIO_FILE).read_text())
    meta.pop("recorded_with")
    assert json.loads((tmp_path / scenarios.SCENARIO_FILE).read_text()) == meta
